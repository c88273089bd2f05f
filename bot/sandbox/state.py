"""`SlackState`: the fake Slack without its HTTP server.

It holds the `Workspace` and everything Slack keeps about the calls made to it: every call
recorded, programmed faults, lost answers and delays, revoked tokens, rate limits, the
trigger_ids and response_urls it issued. `answer()` gives one Web API call's answer as Slack
would; `click()`, `submit()`, `command()`, `open_home()` play the user through an `AppDriver`
(`interactions.py`). `FakeSlack` (`slack_api.py`) serves it over HTTP, with the control API
(`control.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from bot.sandbox import limits
from bot.sandbox._web_api import METHODS, ApiContext, decode_json_fields
from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.handles import ResponseUrls, TriggerIds
from bot.sandbox.interactions import AppDriver, SubmitResult
from bot.sandbox.ratelimits import RateLimiter
from bot.sandbox.scopes import check_scopes
from bot.sandbox.signing import AppResponse, SlackSigner
from bot.sandbox.socket_mode import SocketModeHub
from bot.sandbox.transports import HttpTransport, SocketTransport
from bot.sandbox.workspace import JSON, Workspace

__all__ = ["Call", "Fault", "SlackState"]

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One request the fake received."""

    method: str
    """Web API method (`chat.postMessage`), or `response_url` for a post to a response_url."""
    params: JSON
    """Its parameters, merged from query, form and JSON; the token is left out."""
    time: float
    """Clock time it arrived."""
    status: int
    """HTTP status answered."""
    response: JSON
    """Body answered."""
    lost: bool = False
    """Done, but its answer never reached the app: the connection was dropped (`lose_next`)."""

    def to_json(self) -> JSON:
        """JSON-ready form, as `GET /_sandbox/calls` lists it."""
        out = {
            "method": self.method,
            "params": self.params,
            "time": self.time,
            "status": self.status,
            "response": self.response,
        }
        if self.lost:
            out["lost"] = True
        return out


@dataclass(frozen=True)
class Fault:
    """A programmed answer, used instead of the real handling for one call."""

    status: int
    """HTTP status: 429, 5xx, or 200 with `error`."""
    error: str
    """Slack error code in the body."""
    retry_after: int | None = None
    """Seconds for the Retry-After header (429)."""


def _default_error(status: int) -> str:
    return {429: "ratelimited", 200: "fatal_error"}.get(status, "internal_error")


class SlackState:
    """Slack's state and its Web API's answers, in process, over a `Workspace`; `FakeSlack`
    serves it. The arguments are `FakeSlack`'s."""

    def __init__(
        self,
        workspace: Workspace | Callable[[], Workspace] | None = None,
        *,
        tokens: set[str] | None = None,
        app_tokens: set[str] | None = None,
        app_url: str | None = None,
        signing_secret: str | None = None,
        socket_mode: bool = False,
        rate_limits: bool = False,
        event_retry_delays: tuple[float, ...] = limits.EVENT_RETRY_DELAYS,
        trigger_ttl: float = limits.TRIGGER_ID_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(workspace, Workspace):
            self._make_workspace: Callable[[], Workspace] = workspace.fresh_copy
            self.workspace = workspace
        else:
            self._make_workspace = workspace or Workspace.demo
            self.workspace = self._make_workspace()
        """The current workspace; inspect it freely from tests in the same process."""
        self.tokens: set[str] = set()
        """The bot (and user) tokens this workspace issued: the only ones it takes."""
        self.app_tokens: set[str] = set()
        """The app-level (`xapp-`) tokens it issued, for `apps.connections.open`."""
        self.bot_token = self._issue_all(tokens, app_level=False)
        """The bot token it issued at start (the first of `tokens`, or one made up)."""
        self.app_token = self._issue_all(app_tokens, app_level=True)
        """The app-level token it issued at start (the first of `app_tokens`, or made up)."""
        self.revoked: dict[str, str] = {}
        """Tokens killed at run time, with the error they now get (`revoke_token()`)."""
        self.latency: dict[str, float] = {}
        """Seconds each method waits before answering (`delay()`)."""
        self.rate_limits = rate_limits
        """Whether calls past Slack's limits get 429 (switch it any time)."""
        self.limiter = RateLimiter()
        self.event_retry_delays = event_retry_delays
        self.sockets = SocketModeHub(lambda: self.workspace.team.app_id)
        """The Socket Mode server: open connections, envelopes sent, acks received."""
        self.clock = clock
        self.calls: list[Call] = []
        """Every call so far, oldest first."""
        self.faults: dict[str, list[Fault]] = {}
        """Programmed answers still to give, per method."""
        self.losses: dict[str, int] = {}
        """How many more calls of each method are done and then not answered (`lose_next()`)."""
        self.triggers = TriggerIds(trigger_ttl, clock)
        self.responses = ResponseUrls(clock=clock)
        self.version = 0
        """Goes up by one whenever the workspace may have changed."""
        self._changed = asyncio.Event()
        self._driver: AppDriver | None = None
        if app_url and signing_secret:
            self.connect_app(app_url, signing_secret)
        if socket_mode:
            self.use_socket_mode()
        self.base_url = ""
        """`http://host:port/` once started (or, when served elsewhere, once a request came)."""

    # inspection and control -------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        """The calls of one method, oldest first."""
        return [c for c in self.calls if c.method == method]

    def fail_next(
        self,
        method: str,
        *,
        status: int | None = None,
        error: str | None = None,
        retry_after: int | None = None,
        count: int = 1,
    ) -> None:
        """Make the next `count` calls of `method` fail before any normal handling.

        Args:
            method: Web API method, e.g. `chat.postMessage`.
            status: HTTP status; 429 when `retry_after` is given, 200 when only `error` is,
                500 otherwise.
            error: Slack error code in the body (`ratelimited` for 429, `internal_error` for
                5xx, `fatal_error` for 200 by default).
            retry_after: Retry-After seconds (429 defaults to 1).
            count: How many calls in a row fail this way.

        Raises:
            ValueError: `method` is not one the fake answers (a typo would never fire), or
                `count` is below 1.
        """
        if method not in METHODS:
            raise ValueError(
                f"fail_next: unknown method {method!r}; the fake answers {sorted(METHODS)}"
            )
        if count < 1:
            raise ValueError(f"fail_next: count must be at least 1, got {count}")
        if status is None:
            status = 429 if retry_after is not None else 200 if error else 500
        if status == 429 and retry_after is None:
            retry_after = 1
        fault = Fault(status, error or _default_error(status), retry_after)
        self.faults.setdefault(method, []).extend([fault] * count)

    def lose_next(self, method: str, *, count: int = 1) -> None:
        """Make the next `count` calls of `method` take effect (a message is posted) and then
        drop the connection before the answer: the request reached Slack, its answer was lost
        (a timeout or a reset on the way back). A client that sends it again does it twice.

        Raises:
            ValueError: an unknown method, or `count` below 1.
        """
        if method not in METHODS:
            raise ValueError(
                f"lose_next: unknown method {method!r}; the fake answers {sorted(METHODS)}"
            )
        if count < 1:
            raise ValueError(f"lose_next: count must be at least 1, got {count}")
        self.losses[method] = self.losses.get(method, 0) + count

    def delay(self, method: str, seconds: float) -> None:
        """Make every later call of `method` wait `seconds` before it is answered (0: no wait).

        Raises:
            ValueError: an unknown method, or a negative delay.
        """
        if method not in METHODS:
            raise ValueError(
                f"delay: unknown method {method!r}; the fake answers {sorted(METHODS)}"
            )
        if seconds < 0:
            raise ValueError(f"delay: seconds must be at least 0, got {seconds}")
        self.latency[method] = seconds

    def issue_token(self, token: str | None = None, *, app_level: bool = False) -> str:
        """Issue a token, as installing the app (or generating an app-level token) does; the
        stand-in takes no other. Returns it: `token`, or one made up in Slack's shape.

        Raises:
            ValueError: `token` does not start as its kind does (`xoxb-`/`xoxp-`, or `xapp-`).
        """
        prefixes = ("xapp-",) if app_level else ("xoxb-", "xoxp-")
        if token is None:
            token = f"{prefixes[0]}{'1-' if app_level else ''}sandbox-{secrets.token_hex(12)}"
        if not token.startswith(prefixes):
            raise ValueError(
                f"issue_token: {'an app-level' if app_level else 'a bot'} token starts with "
                f"{' or '.join(prefixes)}, got {token[:12]!r}"
            )
        (self.app_tokens if app_level else self.tokens).add(token)
        return token

    def _issue_all(self, tokens: set[str] | None, *, app_level: bool) -> str:
        """Issue `tokens` (one made up when None); the first of them, or "" when none."""
        issued = [self.issue_token(t, app_level=app_level) for t in sorted(tokens or ())]
        if tokens is None:
            issued.append(self.issue_token(app_level=app_level))
        return issued[0] if issued else ""

    def revoke_token(self, token: str, error: str = "token_revoked") -> None:
        """From now on, calls with `token` get `error`.

        Args:
            error: `token_revoked` (the app was uninstalled or the token revoked),
                `account_inactive` (the bot user or workspace was deleted) or `invalid_auth`.

        Raises:
            ValueError: another error code.
        """
        if error not in ("token_revoked", "account_inactive", "invalid_auth"):
            raise ValueError(
                f"revoke_token: error must be token_revoked, account_inactive or invalid_auth, "
                f"got {error!r}"
            )
        self.revoked[token] = error

    def reset(self) -> None:
        """Back to the initial workspace; forget calls, faults, delays, revoked tokens, rate
        counts, trigger_ids and response_urls."""
        self.workspace = self._make_workspace()
        self.calls.clear()
        self.faults.clear()
        self.losses.clear()
        self.latency.clear()
        self.revoked.clear()
        self.limiter.clear()
        self.triggers.clear()
        self.responses.clear()
        self.touch()

    def record(self, method: str, params: JSON, status: int, response: JSON) -> None:
        """Add a call to the log (the Web API and response_url handlers do this); `touch()`."""
        self.calls.append(Call(method, params, self.clock(), status, response))
        self.touch()

    def touch(self) -> None:
        """Note that the workspace may have changed; wakes `wait_for_change()`."""
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_change(self, after: int, timeout: float) -> int:
        """Wait until `version` passes `after` (or `timeout` seconds); returns `version`."""
        if self.version <= after:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()
        return self.version

    async def wait_for(
        self, predicate: Callable[[SlackState], T | None], timeout: float = 5.0
    ) -> T:
        """The first true value of `predicate(self)`, checked after every change.

        For tests in the same process: the app acknowledges first and calls Slack after, so
        what it does is awaited, not assumed (`await slack.wait_for(lambda s: s.calls_to(...))`).

        Raises:
            TimeoutError: still false after `timeout` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (result := predicate(self)):
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(f"fake Slack: condition still false after {timeout}s")
            await self.wait_for_change(self.version, left)
        return result

    # the Web API ------------------------------------------------------------------------------

    def answer(
        self, method: str, params: JSON, token: str | None
    ) -> tuple[int, dict[str, str], JSON]:
        """Handle one Web API call: programmed faults first, then rate limits (when on), then
        auth, then the method.

        Returns:
            HTTP status, extra headers, JSON body.
        """
        queued = self.faults.get(method)
        if queued:
            fault = queued.pop(0)
            after = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return fault.status, after, {"ok": False, "error": fault.error}
        handler = METHODS.get(method)
        if handler is None:
            return 200, {}, {"ok": False, "error": "unknown_method"}
        if self.rate_limits:
            wait = self.limiter.check(method, str(params.get("channel") or ""))
            if wait is not None:
                return 429, {"Retry-After": str(wait)}, {"ok": False, "error": "ratelimited"}
        headers: dict[str, str] = {}
        try:
            app_level = method == "apps.connections.open"
            self._check_token(token, app_level=app_level)
            if not app_level:  # Slack names a bot token's scopes on every answer to it
                headers["x-oauth-scopes"] = ",".join(self.workspace.team.scopes)
                check_scopes(method, params, self.workspace)
            ctx = ApiContext(
                self.workspace,
                self.triggers,
                self.base_url,
                open_socket=lambda: self.sockets.issue_url(self.base_url),
            )
            return 200, headers, {"ok": True, **handler(ctx, decode_json_fields(params))}
        except SlackApiFailure as failure:
            return 200, headers, failure.to_response()

    def _check_token(self, token: str | None, *, app_level: bool = False) -> None:
        """Slack's refusals: `not_authed` (none), `invalid_auth` (a token this workspace did
        not issue), the revoked token's error, `not_allowed_token_type` (an app token where a
        bot token goes, or the other way round)."""
        if not token:
            raise SlackApiFailure("not_authed")
        if token in self.revoked:
            raise SlackApiFailure(self.revoked[token])
        is_app_token = token.startswith("xapp-")
        if token not in (self.app_tokens if is_app_token else self.tokens):
            raise SlackApiFailure("invalid_auth")
        if is_app_token != app_level:
            raise SlackApiFailure("not_allowed_token_type")

    # playing the user -------------------------------------------------------------------------

    def connect_app(self, url: str, signing_secret: str) -> None:
        """Say where the app listens (`.../slack/events`) and how to sign what it is sent."""
        transport = HttpTransport(url, SlackSigner(signing_secret))
        self._driver = AppDriver(self, transport, event_retry_delays=self.event_retry_delays)

    def use_socket_mode(self) -> None:
        """Send the user's actions over the app's Socket Mode connection (the app opens it
        with its `xapp-` token; `await slack.sockets.wait_connected()` to wait for it)."""
        transport = SocketTransport(self.sockets)
        self._driver = AppDriver(self, transport, event_retry_delays=self.event_retry_delays)

    @property
    def driver(self) -> AppDriver:
        """The connection to the app; `connect_app()` first."""
        if self._driver is None:
            raise RuntimeError(
                "FakeSlack has no app to talk to: pass app_url= and signing_secret=, "
                "or call connect_app(url, signing_secret)"
            )
        return self._driver

    async def click(
        self, user: str, channel: str, ts: str, action_id: str, *, value: str | None = None
    ) -> AppResponse:
        """`user` clicks the button `action_id` on message `ts`; see `AppDriver.click`."""
        return await self.driver.click(user, channel, ts, action_id, value=value)

    async def submit(self, user: str, inputs: JSON, *, view_id: str | None = None) -> SubmitResult:
        """`user` fills in and submits their open modal; see `AppDriver.submit`."""
        return await self.driver.submit(user, inputs, view_id=view_id)

    async def command(
        self,
        user: str,
        channel: str,
        text: str,
        command: str = "/agent",
        *,
        trigger_id: str | None = None,
    ) -> AppResponse:
        """`user` types `/agent text` in `channel`; see `AppDriver.command`."""
        return await self.driver.command(user, channel, text, command, trigger_id=trigger_id)

    async def open_home(self, user: str) -> AppResponse:
        """`user` opens the app's Home tab; see `AppDriver.open_home`."""
        return await self.driver.open_home(user)

    async def click_home(
        self, user: str, action_id: str, *, value: str | None = None
    ) -> AppResponse:
        """`user` clicks a button on their Home tab; see `AppDriver.click_home`."""
        return await self.driver.click_home(user, action_id, value=value)

    async def set_status(
        self, user: str, emoji: str = "", text: str = "", expiration: int = 0
    ) -> list[AppResponse]:
        """`user` sets (or clears) their status; see `AppDriver.set_status`."""
        return await self.driver.set_status(user, emoji, text, expiration)

    async def set_dnd(self, user: str, until: int | None) -> AppResponse | None:
        """`user` turns do-not-disturb on until `until`, or off; see `AppDriver.set_dnd`."""
        return await self.driver.set_dnd(user, until)

    async def ssl_check(self) -> AppResponse:
        """Slack's unsigned `ssl_check` POST to the app's request URL; see `AppDriver`."""
        return await self.driver.ssl_check()
