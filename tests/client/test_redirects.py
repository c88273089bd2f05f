"""`bot.client` never sends the token to another origin: an address that answers with a redirect
(a proxy in the way, a hijacked name) is an error that says so, and the server it points to
hears nothing, so its answer ("approved", 9999 where 10 was asked) is never taken for the
decision. Two real local HTTP servers, one redirecting to the other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from bot.client import Redirected, arequest_approval, request_approval

TOKEN = "billing-token-0123456789abcdef"
ASKED = {"customer_id": "cust_1", "amount": 10}


@dataclass
class Server:
    """A local HTTP server and what reached it (method, path, Authorization header)."""

    url: str = ""
    seen: list[tuple[str, str, str]] = field(default_factory=list)


async def _serve(app: web.Application, server: Server) -> AsyncIterator[Server]:
    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        server.seen.append((request.method, request.path, request.headers.get("Authorization", "")))
        response: web.StreamResponse = await handler(request)
        return response

    app.middlewares.append(record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


def _approval(status: str) -> dict[str, Any]:
    approved = status == "approved"
    approval: dict[str, Any] = {"approval_id": "api.billing.x", "status": status}
    if status != "pending":
        approval["approved"] = approved
        approval["decision"] = {
            "approval_id": "api.billing.x",
            "action": "send_refund",
            "approved": approved,
            "status": status,
            "by": ["U_MALLORY"],
            "at": "2026-01-01T00:00:00+00:00",
            "note": "",
            "edits": {},
            "args": {**ASKED, "amount": 9999},
        }
    return approval


@pytest.fixture
async def elsewhere() -> AsyncIterator[Server]:
    """Another origin, answering every request with an approval of 9999."""
    app = web.Application()

    async def answer(request: web.Request) -> web.Response:
        return web.json_response(_approval("approved"), status=200)

    app.router.add_route("*", "/{tail:.*}", answer)
    async for server in _serve(app, Server()):
        yield server


@pytest.fixture(params=["POST", "GET"])
async def redirecting(request: pytest.FixtureRequest, elsewhere: Server) -> AsyncIterator[Server]:
    """An address that redirects the request for the approval (POST, a 307) or the long poll
    for its decision (GET, a 302) to `elsewhere`."""
    app = web.Application()
    which = request.param

    async def ask(req: web.Request) -> web.Response:
        if which == "POST":
            raise web.HTTPTemporaryRedirect(f"{elsewhere.url}{req.path_qs}")
        return web.json_response({"approval_id": "api.billing.x", "status": "pending"}, status=202)

    async def poll(req: web.Request) -> web.Response:
        raise web.HTTPFound(f"{elsewhere.url}{req.path_qs}")

    app.router.add_post("/api/approvals", ask)
    app.router.add_get("/api/approvals/{approval_id}", poll)
    async for server in _serve(app, Server()):
        yield server


async def test_a_redirect_is_an_error_and_the_token_goes_nowhere_else(
    redirecting: Server, elsewhere: Server
) -> None:
    with pytest.raises(Redirected) as sync:
        await asyncio.to_thread(
            request_approval, "send_refund", ASKED, url=redirecting.url, token=TOKEN, wait=5
        )
    with pytest.raises(Redirected) as async_:
        await arequest_approval("send_refund", ASKED, url=redirecting.url, token=TOKEN, wait=5)
    for raised in (sync.value, async_.value):
        assert raised.location.startswith(elsewhere.url)
        message = str(raised)
        assert f"a redirect to {elsewhere.url}" in message
        assert "follows no redirect" in message and "bearer token" in message
        assert raised.status in (302, 307)
    assert elsewhere.seen == []  # neither the token nor the request reached the other origin
    assert {auth for _, _, auth in redirecting.seen} == {f"Bearer {TOKEN}"}
