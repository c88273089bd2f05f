"""`SlackWhereabouts`: what Slack says of each person's do-not-disturb and status, for the
governance core's `Away` (which decides, with the policy, who is away).

Read within Slack's rate tiers: each person's facts are cached, asked of Slack (`dnd.info`,
tier 3; `users.info`, tier 4) at most once per `ttl` and only when a decision needs them, and
kept fresh between by the events Slack sends (`dnd_updated_user`, `user_change`,
`user_status_changed`), which replace the cached facts at no cost. A person Slack cannot say
anything about within `budget` seconds is taken as present (never away on a guess); the lookup
goes on in the background and fills the cache.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.away import SlackFacts
from ..approvals.events import RetryLater

__all__ = ["SlackWhereabouts", "dnd_window", "user_named"]

log = logging.getLogger("signoff.slack")

_FAILED = (SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError)


def dnd_window(dnd: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(from, until) of the do-not-disturb `dnd` describes (`dnd.info`'s answer or an event's
    `dnd_status`): a snooze in effect counts from now; a scheduled window from its start.
    (None, None) when there is none."""
    if dnd.get("snooze_enabled") and _number(dnd.get("snooze_endtime")):
        return None, _number(dnd.get("snooze_endtime"))
    if dnd.get("dnd_enabled") and _number(dnd.get("next_dnd_end_ts")):
        return _number(dnd.get("next_dnd_start_ts")), _number(dnd.get("next_dnd_end_ts"))
    return None, None


async def user_named(client: AsyncWebClient, handle: str) -> str | None:
    """The user id of the active member whose handle or display name is `handle` (ignoring
    case), read from `users.list` a page of 200 at a time (tier 2: asked only for `/agent away
    ... delegate @handle`, when Slack sent the name rather than the mention); None: nobody.

    Raises:
        SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError: Slack could not say.
    """
    wanted = handle.lower()
    cursor: str | None = None
    while True:
        page = await client.users_list(limit=200, cursor=cursor)
        for member in page.get("members") or []:
            profile = member.get("profile") or {}
            names = (member.get("name"), profile.get("display_name"))
            if not member.get("deleted") and wanted in {str(n).lower() for n in names if n}:
                return str(member["id"])
        cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
        if cursor is None:
            return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _status(profile: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "status_emoji": str(profile.get("status_emoji") or ""),
        "status_text": str(profile.get("status_text") or ""),
        "status_expiration": _number(profile.get("status_expiration")),
    }


class SlackWhereabouts:
    """Each person's do-not-disturb and status as Slack says them, cached (`Whereabouts`)."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = 900.0, budget: float = 0.75):
        self.client = client
        self.ttl = ttl
        """Seconds a person's facts are used without asking Slack again (events refresh them
        meanwhile). Default a quarter of an hour."""
        self.budget = budget
        """Seconds a decision waits for Slack to answer about someone it has not cached."""
        self._facts: dict[str, tuple[float, SlackFacts]] = {}
        self._lookups: dict[str, asyncio.Task[SlackFacts]] = {}

    async def facts(self, user: str) -> SlackFacts | None:
        cached = self._facts.get(user)
        if cached is not None and time.monotonic() - cached[0] <= self.ttl:
            return cached[1]
        task = self._lookups.get(user)
        if task is None:
            task = asyncio.ensure_future(self._look_up(user))
            task.add_done_callback(_quiet)
            self._lookups[user] = task
        try:
            async with asyncio.timeout(self.budget):
                return await asyncio.shield(task)
        except (TimeoutError, *_FAILED) as e:
            log.info("could not ask Slack whether %s is away (%s): taken as present", user, e)
            return None

    async def _look_up(self, user: str) -> SlackFacts:
        asked = time.monotonic()
        try:
            dnd = await self.client.dnd_info(user=user)
            info = await self.client.users_info(user=user)
        finally:
            self._lookups.pop(user, None)
        start, until = dnd_window(dnd.data if isinstance(dnd.data, dict) else {})
        profile = ((info.get("user") or {}).get("profile")) or {}
        facts = SlackFacts(dnd_from=start, dnd_until=until, **_status(profile))
        self._facts[user] = (asked, facts)
        return facts

    def heard(self, event: Mapping[str, Any]) -> bool:
        """An event Slack sent (`dnd_updated_user`, `user_change`, `user_status_changed`):
        the person's cached facts are replaced by what it says. Only a person already cached
        is changed (the other half of their facts is then still Slack's own). True when their
        facts changed."""
        kind = event.get("type")
        before = dict(self._facts)
        if kind == "dnd_updated_user":
            user = str(event.get("user") or "")
            dnd = event.get("dnd_status")
            if user in self._facts and isinstance(dnd, Mapping):
                start, until = dnd_window(dnd)
                self._update(user, dnd_from=start, dnd_until=until)
        elif kind in ("user_change", "user_status_changed"):
            person = event.get("user")
            if isinstance(person, Mapping):
                user = str(person.get("id") or "")
                profile = person.get("profile")
                if user in self._facts and isinstance(profile, Mapping):
                    self._update(user, **_status(profile))
        return any(before.get(u) != f for u, f in self._facts.items())

    def _update(self, user: str, **changes: Any) -> None:
        asked, facts = self._facts[user]
        self._facts[user] = (asked, replace(facts, **changes))


def _quiet(task: asyncio.Task[SlackFacts]) -> None:
    """Retrieve a background lookup's error (the waiter, if any, has it already)."""
    if not task.cancelled():
        task.exception()
