"""`signoff demo` with a real model's settings: the bot it starts talks to that model, and the
start-up lines say which; settings that cannot work stop the demo before anything starts.

The model is a chat-completions stand-in on 127.0.0.1, reached through the real `openai` client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.sandbox.client import SandboxClient
from bot.sandbox.people import APPROVALS_CHANNEL
from tests.demo.conftest import DemoProcess
from tests.kit.e2e import text_of

REPLY = "All sorted: the stand-in model answered this ticket."


class ChatStandIn:
    """`POST /v1/chat/completions` that answers every conversation with `REPLY`, no tool call."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    async def complete(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer demo-key"
        body = await request.json()
        self.requests.append(body)
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": REPLY},
                    }
                ],
            }
        )


@pytest.fixture
async def chat_api() -> AsyncIterator[ChatStandIn]:
    stand_in = ChatStandIn()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", stand_in.complete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    stand_in.url = f"http://{host}:{port}/v1"
    yield stand_in
    await runner.cleanup()


async def test_the_demo_s_agent_talks_to_the_model_the_environment_names(
    tmp_path: Path, chat_api: ChatStandIn
) -> None:
    settings = {
        "SIGNOFF_LLM_API_KEY": "demo-key",
        "SIGNOFF_LLM_MODEL": "stand-in-model",
        "SIGNOFF_LLM_BASE_URL": chat_api.url,
    }
    demo = DemoProcess(tmp_path, env=settings)
    try:
        url = await asyncio.to_thread(demo.wait_ready)
        assert f"the support agent's model: stand-in-model at {chat_api.url}" in demo.output()
        assert "demo-key" not in demo.output()
        async with SandboxClient(url) as slack:
            channel = APPROVALS_CHANNEL[0]
            await slack.command("U_CAROL", channel, 'run support_agent ticket="my kettle broke"')
            # The run ends with the model's answer, which the channel or the requester hears.
            await slack.wait_for(lambda state: REPLY in text_of(state), timeout=60)
        assert chat_api.requests, "the agent never called the model"
        assert chat_api.requests[0]["model"] == "stand-in-model"
    finally:
        demo.stop()


def test_model_settings_that_cannot_work_stop_the_demo_saying_what_to_set(tmp_path: Path) -> None:
    demo = DemoProcess(tmp_path, env={"SIGNOFF_LLM_API_KEY": "demo-key"})
    status = demo.proc.wait(60)
    demo.stop()
    assert status == 1
    assert "SIGNOFF_LLM_API_KEY is set: set SIGNOFF_LLM_MODEL too" in demo.output()
