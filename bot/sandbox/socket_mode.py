"""Socket Mode, as Slack serves it: the WebSocket an app opens instead of a public request URL.

The app calls `apps.connections.open` with its app-level token (`xapp-...`) and gets a one-use
URL (`ws://127.0.0.1:PORT/link/?ticket=...`: Slack's is `wss://`, slack_sdk connects to either);
on connecting it is greeted with `hello`. Slack then sends each request as an envelope,

    {"envelope_id": "...", "type": "interactive" | "slash_commands" | "events_api",
     "payload": {...}, "accepts_response_payload": bool,
     "retry_attempt": 0, "retry_reason": ""}          # the retry fields on events only

and the app acknowledges it by sending `{"envelope_id": "...", "payload": {...}}` back (the
payload only where `accepts_response_payload`). `disconnect` (reason `refresh_requested`, or
`warning` some seconds before) asks the app to open a new connection; Slack then closes the old
one. `SocketModeHub` is that server side; `transports.SocketTransport` uses it to deliver what
the user does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["Ack", "SocketModeHub"]

JSON = dict[str, Any]
LINK_PATH = "/link/"
"""Where the WebSocket is served."""
_HOST = "applink-sandbox-1"


@dataclass(frozen=True)
class Ack:
    """An app's acknowledgement of one envelope."""

    envelope_id: str
    payload: JSON | None
    """The response payload, when the app sent one."""
    raw: JSON = field(compare=False)
    """The whole message as received."""


class SocketModeHub:
    """The Socket Mode side of the fake: tickets, open connections, envelopes and their acks.

    Args:
        app_id: The app's id, for `hello`'s `connection_info` (read when a connection opens).
    """

    def __init__(self, app_id: Callable[[], str]) -> None:
        self._app_id = app_id
        self._tickets: set[str] = set()
        self.connections: list[web.WebSocketResponse] = []
        """Open connections, oldest first. Envelopes go to any of them, in turn, as Slack
        spreads them over an app's connections (not only to the newest)."""
        self._leaving: set[web.WebSocketResponse] = set()
        """Connections told to `disconnect` for good: no envelope goes to them any more."""
        self._turn = 0
        self.sent: list[JSON] = []
        """Every message sent to the app (hello, envelopes, disconnects), oldest first."""
        self.acks: list[Ack] = []
        """Every acknowledgement received, oldest first (late ones too)."""
        self.opened = 0
        """Connections accepted so far."""
        self._pending: dict[str, asyncio.Future[Ack]] = {}
        self._changed = asyncio.Condition()

    def add_routes(self, app: web.Application) -> None:
        """Serve the WebSocket at `LINK_PATH` on `app`."""
        app.router.add_get(LINK_PATH, self._serve)

    def issue_url(self, base_url: str) -> str:
        """A fresh one-use connection URL (what apps.connections.open answers)."""
        ticket = secrets.token_hex(16)
        self._tickets.add(ticket)
        ws_base = base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        return f"{ws_base.rstrip('/')}{LINK_PATH}?ticket={ticket}&app_id={self._app_id()}"

    async def wait_connected(self, timeout: float = 10.0, *, count: int = 1) -> None:
        """Wait until `count` connections have been opened in all (`opened`).

        Raises:
            TimeoutError: not within `timeout` seconds.
        """
        async with self._changed:
            try:
                async with asyncio.timeout(timeout):
                    await self._changed.wait_for(
                        lambda: self.opened >= count and bool(self.connections)
                    )
            except TimeoutError:
                raise TimeoutError(
                    f"Socket Mode: {self.opened} connection(s) opened, not {count}, "
                    f"within {timeout}s (is the app running with its xapp- token?)"
                ) from None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid or used ticket: call apps.connections.open")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections.append(ws)
        self.opened += 1
        await self._send(
            ws,
            {
                "type": "hello",
                "num_connections": len(self.connections),
                "debug_info": {
                    "host": _HOST,
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": self._app_id()},
            },
        )
        await self._notify()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._receive(message.data)
        finally:
            if ws in self.connections:
                self.connections.remove(ws)
            self._leaving.discard(ws)
            await self._notify()
        return ws

    def _receive(self, data: str) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict) or "envelope_id" not in message:
            return
        payload = message.get("payload")
        ack = Ack(
            str(message["envelope_id"]), payload if isinstance(payload, dict) else None, message
        )
        self.acks.append(ack)
        future = self._pending.pop(ack.envelope_id, None)
        if future is not None and not future.done():
            future.set_result(ack)

    async def _send(self, ws: web.WebSocketResponse, message: JSON) -> None:
        self.sent.append(message)
        await ws.send_str(json.dumps(message))

    async def deliver(
        self,
        kind: str,
        payload: JSON,
        *,
        accepts_response_payload: bool,
        retry_attempt: int | None = None,
        retry_reason: str = "",
        timeout: float,
    ) -> Ack | None:
        """Send one envelope on one of the open connections (each in turn) and wait up to
        `timeout` for its ack.

        Args:
            kind: `interactive`, `slash_commands` or `events_api`.
            retry_attempt: For events: 0 the first time, then the retry's number.
            timeout: Seconds to wait for a connection and the ack, together.

        Returns:
            The ack, or None when there was no connection or no ack in time.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        with contextlib.suppress(TimeoutError):
            if not self.connections:
                await self.wait_connected(timeout, count=1)
        if not self.connections:
            return None
        envelope: JSON = {
            "envelope_id": str(uuid.uuid4()),
            "payload": payload,
            "type": kind,
            "accepts_response_payload": accepts_response_payload,
        }
        if retry_attempt is not None:
            envelope |= {"retry_attempt": retry_attempt, "retry_reason": retry_reason}
        future: asyncio.Future[Ack] = loop.create_future()
        self._pending[envelope["envelope_id"]] = future
        try:
            await self._send(self._next_connection(), envelope)
            async with asyncio.timeout_at(deadline):
                return await future
        except (TimeoutError, ConnectionError):
            return None
        finally:
            self._pending.pop(envelope["envelope_id"], None)

    async def disconnect(
        self, reason: str = "refresh_requested", *, close_after: float = 1.0
    ) -> int:
        """Send `disconnect` on every open connection, as Slack does before it drops them.

        Args:
            reason: `refresh_requested` (the connections are then closed after `close_after`
                seconds, unless the app closed them first), `warning` (they stay open), or
                another of Slack's reasons (`link_disabled`: closed the same way).
            close_after: Grace before closing, so the app can open its new connection first.

        Returns:
            How many connections were told.
        """
        told = list(self.connections)
        if reason != "warning":
            self._leaving.update(told)
        for ws in told:
            await self._send(
                ws, {"type": "disconnect", "reason": reason, "debug_info": {"host": _HOST}}
            )
        if reason != "warning" and told:
            asyncio.get_running_loop().call_later(
                close_after, lambda: [asyncio.ensure_future(ws.close()) for ws in told]
            )
        return len(told)

    def _next_connection(self) -> web.WebSocketResponse:
        """The connection the next envelope goes to: the open ones in turn, those told to
        disconnect left out while another is open."""
        staying = [ws for ws in self.connections if ws not in self._leaving] or self.connections
        self._turn += 1
        return staying[self._turn % len(staying)]

    async def close(self) -> None:
        """Close every connection."""
        for ws in list(self.connections):
            await ws.close()
        self.connections.clear()
