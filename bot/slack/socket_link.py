"""Whether the Socket Mode connection holds.

slack_sdk reconnects a dropped connection by itself, for as long as the process lives: right
for a refresh or a network blip, invisible when the link is gone for good (the app-level token
revoked, Socket Mode switched off in the app's settings), when every click fails for users while
the process looks healthy. `SocketLink` watches the connection and, once it has been down for
`grace` seconds, says so where operators look: `/healthz` answers 503 with the reason, the gauge
`signoff_slack_socket_connected` reads 0, and one log line says what to check. The reason is
Slack's own when it refuses the app token (`apps.connections.open`, asked once per grace
period while the link is down). When the connection comes back, all three say so by themselves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["SocketLink"]

log = logging.getLogger("signoff.slack")


class _Connection(Protocol):
    """What is watched: slack_sdk's Socket Mode client (`AsyncBaseSocketModeClient`)."""

    async def is_connected(self) -> bool: ...


class SocketLink:
    """The Socket Mode connection's health, checked every `every` seconds (`watch`).

    Args:
        connection: slack_sdk's Socket Mode client.
        client: a Web API client, to ask Slack why a connection cannot be opened.
        app_token: the app-level token (`xapp-...`) the connection is opened with.
        grace: how long the connection may be down before it counts as gone, in seconds.
        on_change: told True or False when the link is found up or gone (the gauge).
    """

    def __init__(
        self,
        connection: _Connection,
        client: AsyncWebClient,
        app_token: str,
        *,
        grace: float,
        every: float = 1.0,
        on_change: Callable[[bool], None] = lambda up: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connection = connection
        self.client = client
        self.app_token = app_token
        self.grace = grace
        self.every = every
        self.on_change = on_change
        self.clock = clock
        self.down_since: float | None = None
        """When the connection was first seen down, while it is; None while it holds."""
        self.problem: str | None = None
        """Why the link counts as gone (down past `grace`), for `/healthz`; None while it holds
        or is within its grace."""
        self._asked_at: float | None = None

    async def check(self) -> None:
        """Look at the connection once; past the grace, find out why and say so."""
        now = self.clock()
        if await self.connection.is_connected():
            if self.problem is not None:
                log.warning(
                    "Socket Mode connection is back: Slack's events and clicks reach signoff"
                )
                self.on_change(True)
            self.down_since = self.problem = self._asked_at = None
            return
        if self.down_since is None:
            self.down_since = now
        down_for = now - self.down_since
        if down_for < self.grace:
            return
        if self._asked_at is not None and now - self._asked_at < self.grace:
            return
        self._asked_at = now
        first = self.problem is None
        self.problem = f"no Socket Mode connection for {down_for:.0f}s: {await self._why()}"
        if first:
            log.error("%s", self.problem)
            self.on_change(False)

    async def _why(self) -> str:
        """Slack's answer to `apps.connections.open` with the app token, in words."""
        try:
            await self.client.apps_connections_open(app_token=self.app_token)
        except SlackApiError as e:
            error = e.response.get("error") if e.response is not None else None
            return (
                f"Slack refuses the app-level token ({error}): no click or event reaches "
                "signoff. Generate a new one with the connections:write scope (Basic "
                "Information > App-Level Tokens on api.slack.com/apps), check that Socket Mode "
                "is on in the app's settings, set SLACK_APP_TOKEN and restart signoff"
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as e:  # Slack cannot be reached
            return f"Slack cannot be reached to open one ({type(e).__name__}: {e})"
        return (
            "Slack issues connection URLs but the connection does not hold (a proxy or "
            "firewall closing WebSockets?); slack_sdk keeps trying"
        )

    async def watch(self) -> None:
        """Check every `every` seconds until cancelled."""
        while True:
            try:
                await self.check()
            except Exception:  # a failed look is tried again, never fatal
                log.debug("could not check the Socket Mode connection", exc_info=True)
            await asyncio.sleep(self.every)

    def start(self) -> Callable[[], Awaitable[Any]]:
        """Start `watch` as a task; returns what stops it."""
        task = asyncio.ensure_future(self.watch())

        async def stop() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        return stop
