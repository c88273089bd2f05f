"""Driving a fake Slack that runs in another process: `SandboxClient` and `start_fake_slack()`.

    async with start_fake_slack("--app-url", bot_url, "--signing-secret", secret) as slack:
        env["SIGNOFF_SLACK_API_URL"] = slack.url        # start the bot with it
        await slack.command("alice", "approvals", "status")
        state = await slack.wait_for(lambda s: any(...), timeout=10)

Every method is one request to the control API (`bot.sandbox.control` lists the routes).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

import aiohttp

from bot.sandbox.interactions import find_element
from bot.sandbox.signing import SlackRequest, block_actions

__all__ = ["SandboxClient", "SandboxError", "start_fake_slack"]

JSON = dict[str, Any]
READY_PREFIX = "SANDBOX_SLACK_URL="  # kept equal to bot.sandbox._cli.READY_PREFIX (tested)
CALLS_PAGE = 500
"""Calls per page when `SandboxClient.calls` reads the stand-in's call log."""


class SandboxError(Exception):
    """The control API refused a request; `status` and `body` say how."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"fake Slack control API answered {status}: {body}")
        self.status = status
        self.body = body


class SandboxClient:
    """The control API of a fake Slack at `url` (its Web API base URL, or its root URL).

    Args:
        url: `http://127.0.0.1:PORT/api/` (what the process printed) or `http://127.0.0.1:PORT/`.
    """

    def __init__(self, url: str) -> None:
        root = url.removesuffix("/").removesuffix("/api")
        self.base_url = root + "/"
        """The fake's root URL."""
        self.url = self.base_url + "api/"
        """The Web API base URL: what `SIGNOFF_SLACK_API_URL` and slack_sdk's `base_url` take."""
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session:
            await self._session.close()
            self._session = None

    async def _request(self, verb: str, path: str, body: JSON | None = None, **query: Any) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        params = {k: str(v) for k, v in query.items() if v is not None}
        url = f"{self.base_url}_sandbox/{path}"
        async with self._session.request(verb, url, json=body, params=params) as res:
            data = await res.json()
            if res.status >= 400:
                raise SandboxError(res.status, data)
            return data

    # inspection -------------------------------------------------------------------------------

    async def calls(self, method: str | None = None, *, since: int = 0) -> list[JSON]:
        """Recorded calls (`method`, `params`, `time`, `status`, `response`), oldest first,
        read in pages of `CALLS_PAGE` (a load test's log holds tens of thousands)."""
        found: list[JSON] = []
        while True:
            data = await self._request("GET", "calls", method=method, since=since, limit=CALLS_PAGE)
            found.extend(data["calls"])
            since = int(data["next"])
            if since >= int(data["total"]):
                return found

    async def call_counts(self, *, since: int = 0) -> dict[str, dict[int, int]]:
        """How many calls (from index `since`) each method got, by HTTP status:
        `{"chat.update": {200: 5, 429: 1}}`, without reading the calls themselves."""
        data = await self._request("GET", "calls/summary", since=since)
        return {
            method: {int(status): n for status, n in by_status.items()}
            for method, by_status in data["by_method"].items()
        }

    async def state(self, *, after: int | None = None, timeout: float = 25.0) -> JSON:
        """The workspace (`channels` with `messages`, `ephemerals`, `views`, `home`, `version`).

        Args:
            after: Wait until the version passes this (or `timeout` seconds) first.
        """
        return dict(
            await self._request(
                "GET", "state", after=after, timeout=timeout if after is not None else None
            )
        )

    async def messages(self, channel: str) -> list[JSON]:
        """Messages of one channel (by id or name), replies included, oldest first."""
        for ch in (await self.state())["channels"]:
            if channel in (ch["id"], ch["name"], "#" + ch["name"]):
                return list(ch["messages"])
        raise SandboxError(404, f"no channel {channel!r}")

    async def wait_for(self, predicate: Callable[[JSON], Any], *, timeout: float = 10.0) -> JSON:
        """The first workspace state for which `predicate(state)` is true.

        Raises:
            TimeoutError: not within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        state = await self.state()
        while not predicate(state):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"fake Slack state did not match within {timeout}s")
            state = await self.state(after=state["version"], timeout=min(left, 5.0))
        return state

    # control ----------------------------------------------------------------------------------

    async def fail_next(
        self,
        method: str,
        *,
        status: int | None = None,
        error: str | None = None,
        retry_after: int | None = None,
        count: int = 1,
    ) -> None:
        """Make the next `count` calls of `method` fail (see `FakeSlack.fail_next`)."""
        body = {"method": method, "status": status, "error": error, "retry_after": retry_after}
        await self._request("POST", "fail_next", {**body, "count": count})

    async def lose_next(self, method: str, *, count: int = 1) -> None:
        """Make the next `count` calls of `method` take effect and lose their answer (see
        `FakeSlack.lose_next`)."""
        await self._request("POST", "lose_next", {"method": method, "count": count})

    async def reset(self) -> None:
        """Back to the initial workspace, with no calls, faults or handles."""
        await self._request("POST", "reset", {})

    async def connect_app(self, url: str, signing_secret: str) -> None:
        """Tell the fake where the app listens and its signing secret."""
        await self._request("POST", "app", {"url": url, "signing_secret": signing_secret})

    async def trigger_id(self, user: str) -> str:
        """A fresh trigger_id for `user`."""
        return str((await self._request("POST", "triggers", {"user": user}))["trigger_id"])

    async def response_url(self, channel: str, user: str, message_ts: str | None = None) -> str:
        """A fresh response_url for an interaction by `user` in `channel` (on `message_ts`)."""
        body = {"channel": channel, "user": user, "message_ts": message_ts}
        return str((await self._request("POST", "response_urls", body))["response_url"])

    async def click_request(self, user: str, card: JSON, action_id: str) -> SlackRequest:
        """The request Slack sends when `user` clicks `action_id` on `card`, not yet signed.

        Args:
            card: A message as `state()` lists it (with its `channel`), maybe an old copy: what a
                client that has not refreshed yet shows. The trigger_id and response_url are
                issued by the fake for this click.

        Raises:
            LookupError: the message has no element `action_id`.
        """
        block_id, element = find_element(card["blocks"], action_id)
        message = {k: v for k, v in card.items() if k not in ("channel", "replies", "edits")}
        return block_actions(
            action_id=action_id, value=element.get("value"), block_id=block_id,
            user_id=user, channel_id=card["channel"], message=message,
            trigger_id=await self.trigger_id(user),
            response_url=await self.response_url(card["channel"], user, card["ts"]),
        )  # fmt: skip

    # acting as a person -----------------------------------------------------------------------

    async def click(
        self, user: str, channel: str, ts: str, action_id: str, *, value: str | None = None
    ) -> JSON:
        """`user` clicks a button; the app's answer as `{"status", "body", "json"}`."""
        body = {"user": user, "channel": channel, "ts": ts, "action_id": action_id, "value": value}
        return dict(await self._request("POST", "act/click", body))

    async def set_status(
        self, user: str, emoji: str = "", text: str = "", expiration: int = 0
    ) -> JSON:
        """`user` sets (all empty: clears) their status; `{"answers"}`: the app's answers to
        `user_change` and `user_status_changed`."""
        body = {"user": user, "emoji": emoji, "text": text, "expiration": expiration}
        return dict(await self._request("POST", "act/status", body))

    async def set_dnd(self, user: str, until: int | None) -> JSON:
        """`user` turns do-not-disturb on until `until` (None: off); the app's answer to
        `dnd_updated_user`."""
        return dict(await self._request("POST", "act/dnd", {"user": user, "until": until}))

    async def click_home(self, user: str, action_id: str) -> JSON:
        """`user` clicks a button on their Home tab; the app's answer."""
        body = {"user": user, "action_id": action_id}
        return dict(await self._request("POST", "act/home_click", body))

    async def submit(self, user: str, inputs: JSON, *, view_id: str | None = None) -> JSON:
        """`user` submits their modal; `{"response", "errors", "view"}`."""
        body = {"user": user, "inputs": inputs, "view_id": view_id}
        return dict(await self._request("POST", "act/submit", body))

    async def command(
        self,
        user: str,
        channel: str,
        text: str,
        command: str = "/agent",
        *,
        trigger_id: str | None = None,
    ) -> JSON:
        """`user` runs a slash command in `channel`; the app's answer. With `trigger_id` (see
        `trigger_id()`), the command carries that one instead of a fresh one: send it twice
        with the same one and the app sees the same command twice."""
        body: JSON = {"user": user, "channel": channel, "text": text, "command": command}
        if trigger_id is not None:
            body["trigger_id"] = trigger_id
        return dict(await self._request("POST", "act/command", body))

    async def open_home(self, user: str) -> JSON:
        """`user` opens the app's Home tab; the app's answer."""
        return dict(await self._request("POST", "act/home", {"user": user}))

    async def ssl_check(self) -> JSON:
        """Slack's unsigned ssl_check POST to the app's request URL; the app's answer."""
        return dict(await self._request("POST", "act/ssl_check", {}))

    async def use_socket_mode(self) -> None:
        """Send the user's actions over the app's Socket Mode connection from now on."""
        await self._request("POST", "app", {"transport": "socket"})

    async def delay(self, method: str, seconds: float) -> None:
        """Make `method`'s answers wait `seconds` (see `FakeSlack.delay`)."""
        await self._request("POST", "delay", {"method": method, "seconds": seconds})

    async def issue_token(self, token: str | None = None, *, app_level: bool = False) -> str:
        """The workspace issues `token` (or one made up), which it then takes: as installing
        the app does (see `FakeSlack.issue_token`)."""
        body: JSON = {"app_level": app_level}
        if token is not None:
            body["token"] = token
        return str((await self._request("POST", "issue_token", body))["token"])

    async def revoke_token(self, token: str, error: str = "token_revoked") -> None:
        """Calls with `token` get `error` from now on (see `FakeSlack.revoke_token`)."""
        await self._request("POST", "revoke", {"token": token, "error": error})

    async def set_rate_limits(self, enabled: bool) -> None:
        """Answer 429 past Slack's rate limits (True) or not (False)."""
        await self._request("POST", "rate_limits", {"enabled": enabled})

    async def socket_disconnect(self, reason: str = "refresh_requested") -> int:
        """Send Socket Mode `disconnect`; how many connections were told."""
        return int((await self._request("POST", "socket/disconnect", {"reason": reason}))["told"])


@asynccontextmanager
async def start_fake_slack(
    *args: str, startup_timeout: float = 20.0
) -> AsyncIterator[SandboxClient]:
    """Run `python -m bot.sandbox.slack_api --port 0 ARGS...` and yield a client for it.

    The process is stopped (SIGTERM, then SIGKILL after five seconds) when the block ends.

    Raises:
        RuntimeError: the process exited or printed no URL within `startup_timeout` seconds.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.sandbox.slack_api", "--port", "0", *args,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(startup_timeout):
            url = await _ready_url(proc.stdout)
    except (TimeoutError, EOFError) as exc:
        await _stop(proc)
        raise RuntimeError(f"fake Slack did not start (exit status {proc.returncode})") from exc
    try:
        async with SandboxClient(url) as client:
            yield client
    finally:
        await _stop(proc)


async def _ready_url(stdout: asyncio.StreamReader) -> str:
    while line := (await stdout.readline()).decode():
        if line.startswith(READY_PREFIX):
            return line.removeprefix(READY_PREFIX).strip()
    raise EOFError("the process closed its output before it was ready")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            async with asyncio.timeout(5):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
