"""`signoff demo` with a real model's settings: the bot it starts talks to that model, and the
start-up lines say which; settings that cannot work stop the demo before anything starts.

The model is a chat-completions stand-in on 127.0.0.1, reached through the real `openai` client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox.client import SandboxClient
from bot.sandbox.people import APPROVALS_CHANNEL
from tests.demo.conftest import DemoProcess
from tests.kit.chat_api import ChatAPI, serving
from tests.kit.e2e import text_of

REPLY = "All sorted: the stand-in model answered this ticket."


@pytest.fixture
async def chat_api() -> AsyncIterator[ChatAPI]:
    """A model that answers every conversation with `REPLY`, no tool call."""
    async with serving(lambda body: {"role": "assistant", "content": REPLY}, key="demo-key") as api:
        yield api


async def test_the_demo_s_agent_talks_to_the_model_the_environment_names(
    tmp_path: Path, chat_api: ChatAPI
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
