"""The App Home tab: published when a person opens it, and again a moment after they decide
something (one publish for a burst of clicks); the live grants they may revoke, each with its
Revoke button."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import ApprovalError, AwayRefused, DatabaseUnavailable
from ..approvals.service import Signoff
from . import messages, payloads, status
from ._listener import STATUS_LIMIT, Listener

__all__ = ["Home"]

log = logging.getLogger("signoff.slack")

HOME_REFRESH_DELAY = 1.0
"""Seconds from a person's last decision to the refresh of their Home: each decision of theirs
within it moves the refresh on, so a burst of clicks is shown by one publish after it."""
HOME_REFRESH_LONGEST = 10.0
"""Seconds a refresh is put off at most by decisions that keep coming (counted from the first
of them)."""


class Home(Listener):
    """`app_home_opened`, and the refresh after a decision (`refresh_home_soon`)."""

    def __init__(self, signoff: Signoff, client: AsyncWebClient, kick: Callable[[], None]) -> None:
        super().__init__(signoff, client, kick)
        self._home_locks: dict[str, asyncio.Lock] = {}
        self._home_waiting: set[str] = set()
        self._home_soon: dict[str, float] = {}
        """Who has a refresh coming, and when they last decided (`time.monotonic()`)."""

    async def on_home_opened(self, event: dict[str, Any]) -> None:
        if event.get("tab") not in (None, "home"):
            return
        await self.publish_home(event["user"])

    def refresh_home_soon(self, user: str) -> None:
        """Publish `user`'s Home once they stop deciding for HOME_REFRESH_DELAY (at most
        HOME_REFRESH_LONGEST after the first decision of the burst).

        Clicks come in bursts (an approver working through a queue): one publish a moment after
        the last of them shows them all, where a publish per click, or one a second, would take
        turns of the event loop from the clicks still waiting for their ack, to render views
        nobody is looking at (the person is clicking in the channel).
        """
        now, coming = time.monotonic(), user in self._home_soon
        self._home_soon[user] = now
        if coming:
            return

        async def later() -> None:
            give_up = now + HOME_REFRESH_LONGEST
            try:
                while (due := self._home_soon[user] + HOME_REFRESH_DELAY) > time.monotonic():
                    await asyncio.sleep(max(0.0, min(due, give_up) - time.monotonic()))
                    if time.monotonic() >= give_up:
                        break
            finally:
                self._home_soon.pop(user, None)
            await self.publish_home(user)

        self._spawn(later())

    async def on_revoke_grant(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Revoke, beside a grant on Home: the governance core decides who may (its grantor,
        an approver of its action; anyone else is refused and audited). Home is published
        again, saying what was done or why not."""
        user = (body.get("user") or {}).get("id", "")
        actions = body.get("actions") or [{}]
        grant_id = actions[0].get("value") if isinstance(actions[0], dict) else None
        await ack()
        try:
            if not isinstance(grant_id, str) or not grant_id:
                raise payloads.BadPayload("the button names no grant")
            await self.signoff.revoke_grant(grant_id, user)
            notice = messages.grant_revoked(grant_id)
        except (payloads.BadPayload, ApprovalError) as e:
            log.info("refused a revocation from %s: %s", user, e)
            notice = messages.refusal_text(e)
        await self.publish_home(user, notice)

    async def publish_home(self, user: str, notice: str | None = None) -> None:
        # One publish per user at a time, so a view computed earlier never lands after a later
        # one; and at most one more waiting behind it, which will show everything that happened
        # meanwhile: a burst of clicks by one person costs two publishes, not one per click.
        # One with a `notice` (what a Revoke did) always waits its turn: it has news.
        if user in self._home_waiting and notice is None:
            return
        self._home_waiting.add(user)
        lock = self._home_locks.setdefault(user, asyncio.Lock())
        try:
            await lock.acquire()
        finally:
            self._home_waiting.discard(user)
        try:
            await self._publish_home(user, notice)
        finally:
            lock.release()
            if (
                not lock.locked()
                and user not in self._home_waiting
                and self._home_locks.get(user) is lock
            ):
                del self._home_locks[user]

    async def on_back(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Home's "I'm back": the person's `/agent away` ends, and Home shows it."""
        await ack()
        user = str((body.get("user") or {}).get("id") or "")
        try:
            await self.signoff.away.end(user)
        except AwayRefused:
            pass  # ended already (by `/agent back`, or a second click): Home shows that
        await self.publish_home(user)

    async def _publish_home(self, user: str, notice: str | None = None) -> None:
        try:
            pending = await self.signoff.pending_view(user, limit=STATUS_LIMIT)
            recent = await self.signoff.recent(10)
            grants = await self.signoff.live_grants(user=user)
            said = await self.signoff.away.said(user)
        except DatabaseUnavailable:
            view = status.home_view(
                [], [], user=user, now=time.time(), notice=messages.database_unavailable()
            )
        else:
            view = status.home_view(
                pending.mine,
                recent,
                user=user,
                now=time.time(),
                permalinks=await self._card_links(pending.mine),
                pending_total=pending.mine_total,
                mentions=await self._approver_names(pending.mine),
                grants=grants,
                notice=notice,
                away=(said.until, said.delegate) if said is not None else None,
            )
        await self.client.views_publish(user_id=user, view=view)
