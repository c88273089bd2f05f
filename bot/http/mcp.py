"""The MCP server over streamable HTTP at `/mcp` in `signoff run`, for remote agents.

The MCP SDK's streamable HTTP transport is an ASGI application; `signoff run` is aiohttp. Here
each aiohttp request to `/mcp` is first authenticated (the bearer token of a `[services.NAME]`
section: missing or wrong is a 401 and nothing reaches the MCP server), its body checked
against the API's limits (`bot.http._limits`: strict JSON, each key once, nested at most 64
deep; else a JSON-RPC parse error, 400, on the audit log), then handed to the
SDK's session manager as one ASGI call: the request's body in, the response's status, headers
and body chunks (a server-sent event stream while a tool waits) written back as they come.

The session manager runs stateless: each POST is served on its own, so N replicas behind a
load balancer need no sticky sessions, and a tool's progress notifications go out on the
response stream of the call they belong to. Its DNS-rebinding check is off because every
request must carry a service's token, which a browser page never has.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web
from multidict import CIMultiDict

from ._limits import BodyRefused, read_json

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ..approvals.service import Signoff

__all__ = ["PATH", "mount_mcp"]

PATH = "/mcp"
"""Where `signoff run` serves MCP."""
PARSE_ERROR = -32700
"""JSON-RPC's code for a body that is not JSON (or, here, not within `bot.http._limits`)."""


def _session_manager(signoff: Signoff) -> StreamableHTTPSessionManager:
    """The MCP server's session manager (stateless), its tools asking as the service whose
    token each call carries."""
    # the MCP SDK takes most of a second to import: loaded for the first request to `/mcp`
    # (see `_Serving`), not by every start of the bot before its port is open
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings

    from ..mcp_server import build_mcp_server

    external = signoff.external

    def service_of(ctx: Any) -> str:
        # Checked again on each call: the request's own token, not what a session remembered.
        service = external.authenticate_header((ctx.headers or {}).get("authorization", ""))
        if service is None:
            raise ToolError("this request carries no valid service token")
        return service

    server = build_mcp_server(signoff, service_of)
    server.streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )  # creates the session manager; its Starlette app is not used
    return server.session_manager


class _Serving:
    """The session manager, built and started on the first request to `/mcp` (one request
    builds it; the others arriving meanwhile wait for it), stopped with the application. The
    SDK's modules are imported on a thread: the event loop serves clicks meanwhile."""

    def __init__(self, signoff: Signoff) -> None:
        self._signoff = signoff
        self._lock = asyncio.Lock()
        self._manager: StreamableHTTPSessionManager | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def manager(self) -> StreamableHTTPSessionManager:
        async with self._lock:
            if self._manager is None:
                await asyncio.to_thread(importlib.import_module, "bot.mcp_server")
                manager = _session_manager(self._signoff)
                await self._start(manager)
                self._manager = manager
        return self._manager

    async def _start(self, manager: StreamableHTTPSessionManager) -> None:
        # The manager's task group lives in a task of its own, entered and left there (anyio
        # wants that), not in the request's task nor in whichever stops the application.
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def hold() -> None:
            async with manager.run():
                ready.set_result(None)
                await self._stop.wait()

        task = asyncio.create_task(hold(), name="mcp-session-manager")
        await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # it failed to start: say why
        self._task = task

    async def close(self) -> None:
        if self._task is not None:
            self._stop.set()
            await self._task


def mount_mcp(app: web.Application, signoff: Signoff) -> None:
    """Serve the MCP server at `/mcp` (GET, POST, DELETE) on `app`, for as long as it runs.
    The MCP SDK is loaded, and its session manager started, by the first request."""

    external = signoff.external
    serving = _Serving(signoff)

    async def closing(app: web.Application) -> AsyncIterator[None]:
        yield
        await serving.close()

    async def handle(request: web.Request) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        service = external.authenticate_header(header)
        if service is None:
            reason = "no bearer token" if not header else "a wrong bearer token"
            await external.refuse_unauthenticated(
                reason, route=f"{request.method} {PATH}", source=request.remote
            )
            return web.json_response(
                {
                    "ok": False,
                    "error": f"{reason}: send Authorization: Bearer <token>, the token of a "
                    "service of the policy ([services.NAME] token_env names the variable that "
                    "holds it)",
                },
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="signoff"'},
            )
        if request.method == "POST":  # the SDK's parser takes duplicate keys and any depth
            try:
                await read_json(request)
            except BodyRefused as e:
                raw = await request.read() if e.status != 413 else None
                await external.refuse_malformed(service, e.message, body=raw, code=e.code)
                return web.json_response(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": PARSE_ERROR, "message": f"Parse error: {e.message}"},
                    },
                    status=e.status,
                )
        return await _asgi_call(request, await serving.manager())

    app.cleanup_ctx.append(closing)
    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, PATH, handle)


async def _asgi_call(
    request: web.Request, manager: StreamableHTTPSessionManager
) -> web.StreamResponse:
    """One aiohttp request through the session manager's ASGI handler."""
    body = await request.read()
    peer = request.transport.get_extra_info("peername") if request.transport else None
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": None,
    }
    delivered = False
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()  # the body is all read; this only says when the call is over
        return {"type": "http.disconnect"}

    response: web.StreamResponse | None = None

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            headers = CIMultiDict(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", ())
            )
            response = web.StreamResponse(status=message["status"], headers=headers)
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await manager.handle_request(scope, receive, send)
    finally:
        finished.set()
    if response is None:  # the transport answered nothing: a bug of ours or of the SDK
        return web.json_response(
            {"ok": False, "error": "the MCP transport sent no response"}, status=500
        )
    return response
