"""Short-lived handles Slack gives an app with each interaction: trigger_ids and response_urls.

A `trigger_id` lets the app open a modal for the user who clicked, once, within about three
seconds. A `response_url` lets it answer in the conversation the interaction came from (an
ephemeral reply, or replacing the clicked message), five times within thirty minutes. The fake
issues both, so it knows which user and which message each one is about.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.sandbox import limits
from bot.sandbox.errors import SlackApiFailure

__all__ = ["ResponseTarget", "ResponseUrls", "Trigger", "TriggerIds"]


@dataclass
class Trigger:
    """What a trigger_id stands for."""

    user: str
    """The user a modal opened with it is shown to."""
    issued: float
    """Clock time it was issued."""
    used: bool = False


class TriggerIds:
    """Issues trigger_ids and checks them the way views.open and views.push do.

    Args:
        ttl: Seconds a trigger_id stays valid; Slack's is about three.
        clock: Time source, swappable in tests.
    """

    def __init__(self, ttl: float = limits.TRIGGER_ID_TTL, clock: Callable[[], float] = time.time):
        self.ttl = ttl
        self.clock = clock
        self._issued: dict[str, Trigger] = {}

    def issue(self, user: str) -> str:
        """A fresh trigger_id for `user`, shaped like Slack's (`"1700000000.12345.abcdef..."`)."""
        now = self.clock()
        trigger_id = f"{int(now)}.{len(self._issued) + 1}.{secrets.token_hex(16)}"
        self._issued[trigger_id] = Trigger(user=user, issued=now)
        return trigger_id

    def redeem(self, trigger_id: str) -> str:
        """Use a trigger_id; returns its user.

        Raises:
            SlackApiFailure: `invalid_trigger_id` (unknown), `expired_trigger_id` (older than
                `ttl`), `exchanged_trigger_id` (already used).
        """
        trigger = self._issued.get(trigger_id)
        if trigger is None:
            raise SlackApiFailure("invalid_trigger_id")
        if self.clock() - trigger.issued > self.ttl:
            raise SlackApiFailure("expired_trigger_id")
        if trigger.used:
            raise SlackApiFailure("exchanged_trigger_id")
        trigger.used = True
        return trigger.user

    def clear(self) -> None:
        """Forget every trigger_id."""
        self._issued.clear()


@dataclass
class ResponseTarget:
    """Where a response_url's answers go."""

    id: str
    """The last path segment of the URL."""
    channel: str
    """Channel the interaction happened in."""
    user: str
    """Who interacted; ephemeral answers are shown to them."""
    message_ts: str | None
    """The clicked message (replace_original/delete_original act on it); None for commands."""
    issued: float
    uses: int = 0
    bodies: list[dict[str, object]] = field(default_factory=list)
    """Every body the app posted to it, in order."""


class ResponseUrls:
    """Issues response_urls pointing at the fake and checks their use.

    Args:
        base_url: The fake's root URL (`http://127.0.0.1:PORT/`); the URLs are
            `{base_url}_sandbox/response/{id}`.
        clock: Time source, swappable in tests.
    """

    def __init__(self, base_url: str = "", clock: Callable[[], float] = time.time):
        self.base_url = base_url
        self.clock = clock
        self._targets: dict[str, ResponseTarget] = {}

    def issue(self, channel: str, user: str, message_ts: str | None = None) -> str:
        """A fresh response_url for an interaction by `user` in `channel` (on `message_ts`)."""
        rid = secrets.token_hex(12)
        self._targets[rid] = ResponseTarget(rid, channel, user, message_ts, self.clock())
        return f"{self.base_url}_sandbox/response/{rid}"

    def use(self, rid: str) -> ResponseTarget:
        """Count one use of a response_url.

        Raises:
            SlackApiFailure: `no_such_url` (unknown), `expired_url` (older than
                `RESPONSE_URL_TTL`), `used_url` (already used `RESPONSE_URL_MAX_USES` times).
        """
        target = self._targets.get(rid)
        if target is None:
            raise SlackApiFailure("no_such_url")
        if self.clock() - target.issued > limits.RESPONSE_URL_TTL:
            raise SlackApiFailure("expired_url")
        if target.uses >= limits.RESPONSE_URL_MAX_USES:
            raise SlackApiFailure("used_url")
        target.uses += 1
        return target

    def clear(self) -> None:
        """Forget every response_url."""
        self._targets.clear()
