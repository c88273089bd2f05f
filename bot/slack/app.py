"""The Slack app: the group resolver on Slack's user groups, and the Bolt app with every
listener registered here, in one place. The process (`bot.http`) wires it to the governance
core and its configuration."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import GroupsUnavailable
from ..approvals.events import RetryLater
from ..approvals.service import Signoff
from . import payloads
from ._listener import RECEIVED_AT
from .away import SlackWhereabouts
from .handlers import Handlers
from .health import SlackHealth

__all__ = ["LOOKUP_BUDGET", "RECEIVED_AT", "SlackGroups", "build_bolt_app"]

log = logging.getLogger("signoff.slack")


LOOKUP_BUDGET = 0.75
"""Seconds a click may wait for Slack to say who is in a group it has not heard of lately.
A click must be answered within 3 s and its decision committed before that: past this the
click is refused ("Slack is slow ... nothing was recorded") and the lookup goes on in the
background, so the next click finds the answer cached."""


class _ClientTokenIsTheToken(logging.Filter):
    """Drops Bolt's "`token` will be unused" warning: Bolt reads `SLACK_BOT_TOKEN` by itself
    and warns that the client's token wins, but the client was made from that same token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


_QUIET = _ClientTokenIsTheToken()


class SlackGroups:
    """Resolves `@handle` approver groups through Slack user groups, cached for `ttl` seconds.

    A click never waits on Slack for long: `refresh_forever` (run by the process) asks Slack
    again before each cached group goes stale, so a vote is judged on a cache at most `ttl`
    old; a group not cached (or whose refresh failed) is looked up for at most `budget`
    seconds, then refused as unavailable while the lookup finishes in the background. A handle
    that names no user group resolves to nobody (deny by default), and a membership older than
    `ttl` is never used: no one is let in on a guess.
    """

    def __init__(
        self, client: AsyncWebClient, *, ttl: float = 60.0, budget: float = LOOKUP_BUDGET
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.budget = budget
        self._ids: tuple[float, dict[str, str]] | None = None
        self._members: dict[str, tuple[float, frozenset[str]]] = {}
        self._lookups: dict[str, asyncio.Task[frozenset[str]]] = {}
        """The lookup in flight for each group: one at a time, shared by whoever waits."""

    async def _group_id(self, handle: str) -> str | None:
        now = time.monotonic()
        if self._ids is None or now - self._ids[0] > self.ttl:
            resp = await self.client.usergroups_list()
            groups: list[dict[str, Any]] = resp.get("usergroups") or []
            self._ids = (now, {g["handle"]: g["id"] for g in groups})
        return self._ids[1].get(handle)

    async def handles(self) -> frozenset[str]:
        """The handles of the workspace's user groups, as Slack lists them now.

        Raises:
            SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError: Slack could not say.
        """
        self._ids = None
        await self._group_id("")
        assert self._ids is not None
        return frozenset(self._ids[1])

    async def group_id(self, handle: str) -> str | None:
        """The id of the user group `@handle` (for a `<!subteam^ID>` mention), or None when
        there is none or Slack cannot say now (the caller writes the handle as text)."""
        try:
            return await self._group_id(handle)
        except (SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError):
            return None

    def _fresh(self, group: str, within: float) -> frozenset[str] | None:
        cached = self._members.get(group)
        if cached is not None and time.monotonic() - cached[0] <= within:
            return cached[1]
        return None

    async def _look_up(self, group: str) -> frozenset[str]:
        asked = time.monotonic()
        try:
            group_id = await self._group_id(group)
            users: frozenset[str] = frozenset()
            if group_id is not None:
                resp = await self.client.usergroups_users_list(usergroup=group_id)
                users = frozenset(resp.get("users", []))
        except (SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError) as e:
            raise GroupsUnavailable(
                f"could not look up the members of @{group} in Slack ({type(e).__name__}: {e}); "
                "nothing was changed: try again in a minute"
            ) from e
        finally:
            self._lookups.pop(group, None)
        self._members[group] = (asked, users)  # as old as the question, not the answer
        return users

    def _lookup(self, group: str) -> asyncio.Task[frozenset[str]]:
        """The lookup of `group` in flight, started if there is none."""
        task = self._lookups.get(group)
        if task is None:
            task = asyncio.ensure_future(self._look_up(group))
            task.add_done_callback(_quiet)
            self._lookups[group] = task
        return task

    async def members(self, group: str) -> frozenset[str]:
        """Raises `GroupsUnavailable` when Slack cannot say within `budget` seconds (never a
        guess either way); the lookup then goes on and fills the cache."""
        cached = self._fresh(group, self.ttl)
        if cached is not None:
            return cached
        task = self._lookup(group)
        try:
            async with asyncio.timeout(self.budget):
                return await asyncio.shield(task)
        except TimeoutError:
            raise GroupsUnavailable(
                f"Slack is slow to say who is in @{group}, so nothing was recorded: click "
                "again in a moment"
            ) from None

    async def refresh_forever(self, groups: Iterable[str] = (), *, every: float = 5.0) -> None:
        """Keep every group asked about (and `groups`) cached: each is asked again once it is
        half its `ttl` old. Runs until cancelled; a failed lookup is logged and tried again."""
        for group in groups:
            self._members.setdefault(group, (-math.inf, frozenset()))
        health = getattr(self.client, "health", None)  # `TokenGuard`'s
        while True:
            dead = isinstance(health, SlackHealth) and health.token_error is not None
            for group in [] if dead else list(self._members):  # dead: said once, by the sink
                if self._fresh(group, self.ttl / 2) is None:
                    try:
                        await self._lookup(group)
                    except GroupsUnavailable as e:
                        log.warning("%s", e)
            log.debug(
                "group refresh round done%s", " (none: the bot token is dead)" if dead else ""
            )
            await asyncio.sleep(every)


def _quiet(task: asyncio.Task[frozenset[str]]) -> None:
    """Retrieve a background lookup's error (the waiter, if any, has it already)."""
    if not task.cancelled():
        task.exception()


_Listener = Callable[..., Awaitable[None]]


def _answered_at_ack(listener: _Listener) -> Callable[..., Awaitable[BoltResponse | None]]:
    """`listener` run so that Bolt answers the request the moment it calls `ack`, and the rest
    of it (a modal opened, an ephemeral message, a card's link) goes on after the answer.

    Bolt's own way (its default, `process_before_response=False`) runs the listener in a task
    and looks every 10 ms whether it has acked: each click's answer waited up to 10 ms more,
    and under a burst the clicks in flight woke the event loop a hundred times a second each.
    The app is built with `process_before_response=True` (Bolt answers when the listener
    returns) and each listener wrapped in this, which returns as soon as the listener's `ack`
    is called: the same answer, at once. A listener without `ack` (an event, which Bolt acks
    itself) runs in the background and Bolt acks at once, as before. An error before the ack
    is Bolt's to answer (a 500, logged); one after it is logged here.
    """

    @functools.wraps(listener)  # Bolt reads the listener's argument names through this
    async def run(**kwargs: Any) -> BoltResponse | None:
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[None] = loop.create_future()
        ack = kwargs.get("ack")
        if ack is not None:

            async def ack_now(*args: Any, **options: Any) -> BoltResponse:
                response: BoltResponse = await ack(*args, **options)
                _settle(answered)
                return response

            kwargs["ack"] = ack_now
        task = asyncio.ensure_future(listener(**kwargs))
        _running.add(task)
        task.add_done_callback(_running.discard)
        task.add_done_callback(lambda _: _settle(answered))
        if ack is None:
            task.add_done_callback(_log_failure)
            return None
        await answered
        if task.done() and ack.response is None:
            task.result()  # failed before its ack: Bolt answers 500 and logs it
            return None
        task.add_done_callback(_log_failure)
        return ack.response  # type: ignore[no-any-return]

    return run


_running: set[asyncio.Task[None]] = set()
"""Listeners still running after their ack (kept referenced until done)."""


def _settle(answered: asyncio.Future[None]) -> None:
    if not answered.done():
        answered.set_result(None)


def _log_failure(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("a Slack listener failed after its ack: %r", error, exc_info=error)


def build_bolt_app(
    signoff: Signoff,
    client: AsyncWebClient,
    kick: Callable[[], None],
    *,
    signing_secret: str | None,
    default_channel: str | None,
    serving: Callable[[], AbstractContextManager[None]] | None = None,
) -> AsyncApp:
    """The Bolt app. With a signing secret (HTTP mode) every request is verified with it;
    without one the app serves Socket Mode, whose envelopes come over the authenticated
    WebSocket and carry no signature.

    Args:
        kick: wakes the job runner when a click or command queued work.
        serving: entered by each click and modal submission until its ack
            (`bot.scheduler.Foreground.serving`: the job workers give way meanwhile).
    """
    bolt_log = logging.getLogger("slack_bolt.AsyncApp")  # Bolt's framework logger
    if _QUIET not in bolt_log.filters:
        bolt_log.addFilter(_QUIET)
    app = AsyncApp(
        signing_secret=signing_secret or "socket-mode",
        client=client,
        request_verification_enabled=signing_secret is not None,
        process_before_response=True,  # with `_answered_at_ack`: answered at the ack
    )
    h = Handlers(signoff, client, kick, default_channel=default_channel, serving=serving)
    on = _answered_at_ack
    app.action(re.compile(r"^signoff\.(approve|reject|edit|payload|grant)$"))(
        on(h.actions.on_button)
    )
    app.action(payloads.REVOKE_GRANT)(on(h.home.on_revoke_grant))
    app.view(payloads.GRANT_CALLBACK)(on(h.views.on_grant_submit))
    app.action(re.compile(r"^signoff\.run_(retry|cancel)$"))(on(h.actions.on_run_button))
    app.action(payloads.APPROVE_TURN)(on(h.actions.on_approve_turn))
    app.view(payloads.REJECT_CALLBACK)(on(h.views.on_reject_submit))
    app.view(payloads.EDIT_CALLBACK)(on(h.views.on_edit_submit))
    app.command("/agent")(on(h.commands.on_agent))
    app.event("app_home_opened")(on(h.home.on_home_opened))
    app.action(payloads.AWAY_BACK)(on(h.home.on_back))
    health = getattr(signoff.sink, "health", None)

    async def on_revoked(event: dict[str, Any]) -> None:
        """`tokens_revoked` / `app_uninstalled`: Slack will refuse the bot token from now on.
        Said loudly, and `/healthz` answers 503 until a new token is set and signoff restarts
        (messages wait in the queue meanwhile; nothing is lost)."""
        code = str(event.get("type"))
        if not isinstance(health, SlackHealth) or health.token_refused(code):
            log.error(
                "Slack says %s: the bot token no longer works, and signoff calls Slack no more "
                "until it restarts. Reinstall the app, set the new SLACK_BOT_TOKEN and restart "
                "signoff; cards and updates wait until then",
                code,
            )

    looking = {"now": False, "again": False}

    async def on_whereabouts(event: dict[str, Any]) -> None:
        """`dnd_updated_user`, `user_change`, `user_status_changed`: who is away, refreshed
        from what Slack says (no Web API call). When it changed, the pending approvals are
        looked at again at once (one look at a time, and one more after it for what changed
        meanwhile): everyone who could decide one may be away now."""
        whereabouts = signoff.away.whereabouts
        if not isinstance(whereabouts, SlackWhereabouts) or not whereabouts.heard(event):
            return
        if looking["now"]:
            looking["again"] = True
            return
        looking["now"] = True
        try:
            while True:
                looking["again"] = False
                if await signoff.away.sweep():
                    kick()  # the escalation's card update and notice
                if not looking["again"]:
                    break
        finally:
            looking["now"] = False

    app.event("dnd_updated_user")(on(on_whereabouts))
    app.event("user_change")(on(on_whereabouts))
    app.event("user_status_changed")(on(on_whereabouts))
    app.event("tokens_revoked")(on(on_revoked))
    app.event("app_uninstalled")(on(on_revoked))
    return app
