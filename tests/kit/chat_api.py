"""A chat-completions API on 127.0.0.1, for the agents that talk to a model through the real
`openai` client: it speaks the wire format (`POST /v1/chat/completions`, a bearer key, the
completion object), records what it is sent, and answers with what the test's model function
says. One stand-in for every test that needs a model; each test brings its own model."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

__all__ = ["ChatAPI", "Message", "chat_api", "serving", "support_model", "tool_call"]

Message = dict[str, Any]
"""An assistant message: `{"role": "assistant", "content": ..., "tool_calls": [...]}`."""


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One function call of an assistant message, its arguments as JSON text (as the API sends
    them)."""
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip


@dataclass
class ChatAPI:
    """The stand-in while it serves: its base URL and every request body it was sent."""

    url: str
    key: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextlib.asynccontextmanager
async def serving(
    model: Callable[[dict[str, Any]], Message], *, key: str = "test-key"
) -> AsyncIterator[ChatAPI]:
    """Serve `model` (a request body -> the assistant message to answer with) until the block
    ends. A request without `Authorization: Bearer KEY` is answered 401, as the API does."""
    api = ChatAPI(url="", key=key)

    async def complete(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {key}":
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error",
                     "code": "invalid_api_key"}  # fmt: skip
            return web.json_response({"error": error}, status=401)
        body = await request.json()
        api.requests.append(body)
        return web.json_response(
            {
                "id": f"chatcmpl-{len(api.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "stand-in"),
                "choices": [{"index": 0, "message": model(body), "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", complete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    api.url = f"http://{host}:{port}/v1"
    try:
        yield api
    finally:
        await runner.cleanup()


def support_model(body: dict[str, Any], *, said: str | None = None) -> Message:
    """Looks the order up, proposes a refund and an email (with `said` as its words beside
    them), then apologises with what the tools said."""
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    if turn == 0:
        return {"role": "assistant", "content": None,
                "tool_calls": [tool_call("call_a1", "lookup_order", {"order_id": "o-1002"})]}  # fmt: skip
    if turn == 1:
        order = json.loads(body["messages"][-1]["content"])
        return {"role": "assistant", "content": said, "tool_calls": [
            tool_call("call_a2", "send_refund", {"customer_id": order["customer_id"],
                "order_id": order["order_id"], "amount": order["total"], "reason": "broken"}),
            tool_call("call_a3", "email_customer", {"to": order["email"], "subject": "Refund",
                "body": "Refunded."}),
        ]}  # fmt: skip
    told = [m["content"] for m in body["messages"] if m["role"] == "tool"][-2:]
    return {"role": "assistant", "content": "Sorry! " + " | ".join(told)}


@pytest.fixture
async def chat_api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatAPI]:
    """`support_model` served, and the agent's settings pointing at it."""
    async with serving(support_model) as api:
        monkeypatch.setenv("SIGNOFF_LLM_BASE_URL", api.url)
        monkeypatch.setenv("SIGNOFF_LLM_MODEL", "stand-in")
        monkeypatch.setenv("SIGNOFF_LLM_API_KEY", api.key)
        yield api
