"""How what the user does reaches the app: over HTTP to its request URL, or over Socket Mode.

Both take a `SlackRequest` (built by `signing`) and return the app's `AppResponse`, marked
`late` when it came after Slack's `ACK_DEADLINE`, so `AppDriver` works the same over either.

- `HttpTransport` POSTs it, signed, to `.../slack/events`; a redelivered event carries
  `X-Slack-Retry-Num` / `X-Slack-Retry-Reason`.
- `SocketTransport` sends it as an envelope on the app's WebSocket (`socket_mode`) and waits for
  the ack; the ack's payload is the answer's body.
"""

from __future__ import annotations

import json
import time
from typing import Literal, Protocol

import aiohttp

from bot.sandbox import limits
from bot.sandbox.signing import FORM, AppResponse, SlackRequest, SlackSigner
from bot.sandbox.socket_mode import SocketModeHub

__all__ = ["HttpTransport", "SocketTransport", "Transport", "TransportName", "envelope_type"]

TransportName = Literal["http", "socket"]
SOCKET_ACK_WAIT = 2 * limits.ACK_DEADLINE
"""How long Socket Mode waits for an ack, so that one after the deadline is seen (and `late`)."""


class Transport(Protocol):
    """One way to the app."""

    name: TransportName

    async def send(
        self, request: SlackRequest, *, retry_attempt: int = 0, retry_reason: str = ""
    ) -> AppResponse:
        """Deliver `request` (a retry when `retry_attempt` > 0); the app's timed answer."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def envelope_type(request: SlackRequest) -> str:
    """Socket Mode's name for what `request` is: `events_api`, `slash_commands`, `interactive`."""
    if request.content_type == "application/json":
        return "events_api"
    return "slash_commands" if "command" in request.payload else "interactive"


class HttpTransport:
    """Signed POSTs to the app's request URL.

    Args:
        url: The request URL (`http://127.0.0.1:3000/slack/events`).
        signer: Signs with the app's signing secret.
    """

    name: TransportName = "http"

    def __init__(self, url: str, signer: SlackSigner) -> None:
        self.url = url
        self.signer = signer
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        return self._session

    async def send(
        self, request: SlackRequest, *, retry_attempt: int = 0, retry_reason: str = ""
    ) -> AppResponse:
        """POST `request`, signed; `aiohttp.ClientError` when the app cannot be reached."""
        extra = (
            {"X-Slack-Retry-Num": str(retry_attempt), "X-Slack-Retry-Reason": retry_reason}
            if retry_attempt
            else {}
        )
        started = time.monotonic()
        response = await self.signer.send(
            self.url, request, session=self._client(), extra_headers=extra
        )
        late = time.monotonic() - started > limits.ACK_DEADLINE
        return AppResponse(response.status, response.body, response.headers, late=late)

    async def ssl_check(self, token: str = "sandbox-verification-token") -> AppResponse:
        """What Slack sends to check the request URL's certificate: an unsigned form POST,
        `ssl_check=1&token=...`, to be answered 200."""
        body = f"ssl_check=1&token={token}"
        async with self._client().post(
            self.url, data=body.encode(), headers={"Content-Type": FORM}
        ) as res:
            return AppResponse(res.status, await res.text(), dict(res.headers))

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session:
            await self._session.close()
            self._session = None


class SocketTransport:
    """Envelopes on the app's Socket Mode connection.

    Args:
        hub: The fake's Socket Mode server.
        ack_wait: Seconds to wait for an ack before answering `AppResponse(0, "", late=True)`.
    """

    name: TransportName = "socket"

    def __init__(self, hub: SocketModeHub, *, ack_wait: float = SOCKET_ACK_WAIT) -> None:
        self.hub = hub
        self.ack_wait = ack_wait

    async def send(
        self, request: SlackRequest, *, retry_attempt: int = 0, retry_reason: str = ""
    ) -> AppResponse:
        """Send `request` as an envelope; the ack as an answer (body: its payload as JSON)."""
        kind = envelope_type(request)
        accepts = kind == "slash_commands" or (
            kind == "interactive"
            and request.payload.get("type") in ("view_submission", "block_suggestion")
        )
        started = time.monotonic()
        ack = await self.hub.deliver(
            kind,
            request.payload,
            accepts_response_payload=accepts,
            retry_attempt=retry_attempt if kind == "events_api" else None,
            retry_reason=retry_reason,
            timeout=self.ack_wait,
        )
        if ack is None:
            return AppResponse(0, "", late=True)
        body = json.dumps(ack.payload) if ack.payload else ""
        late = time.monotonic() - started > limits.ACK_DEADLINE
        return AppResponse(200, body, {"Content-Type": "application/json"}, late=late)

    async def close(self) -> None:
        """Nothing of its own to close (the hub's connections belong to the fake)."""
