"""Events the governance layer emits, and the interface that delivers them.

Events are written to the `jobs` table in the transaction that caused them and delivered
afterwards by the worker, in order per thread, retried until the sink accepts them: an event
enqueued is delivered after a crash. The Slack app implements `EventSink`; tests record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .models import Approval
    from .policy import GroupResolver

__all__ = [
    "CARD_UPDATES",
    "Event",
    "EventKind",
    "EventSink",
    "NullSink",
    "RecordingSink",
    "RetryLater",
    "SinkView",
    "Undeliverable",
]

EventKind = Literal[
    "approval_requested",  # a card should be posted
    "vote_recorded",  # quorum progress: 1 of 2
    "decided",  # approved, rejected or denied: update the card
    "reminded",  # nudge the approvers
    "escalated",  # escalation approvers added
    "expired",  # nobody decided in time
    "run_completed",
    "run_failed",
    "run_outcome_unknown",
    "run_retried",  # an operator or approver retried a failed run
    "run_cancelled",  # ... or cancelled a run
]


CARD_UPDATES: tuple[EventKind, ...] = ("vote_recorded", "decided", "expired")
"""The events whose delivery always updates their approval's card (`escalated` does only while
the approval is pending), so one of them queued makes an earlier card update redundant."""


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    """The job id: increasing, so sinks can tell order and de-duplicate a redelivery."""
    kind: EventKind
    thread_id: str | None
    approval_id: str | None
    data: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    """1 on the first delivery; more when an earlier one failed or its process died mid-way (so
    some of its messages may be in Slack already)."""
    card_superseded: bool = False
    """A later event of the same approval that updates its card (`CARD_UPDATES`) is queued
    already: this one's card update can be left to it, which renders the approval as it
    stands then (updates still queued for one card coalesce into one)."""


class RetryLater(Exception):
    """Raised by a sink to have the event retried after `seconds` (e.g. Slack's Retry-After)."""

    def __init__(self, seconds: float, reason: str = "") -> None:
        super().__init__(reason or f"retry in {seconds}s")
        self.seconds = seconds


class Undeliverable(Exception):
    """Raised by a sink for an event it gave up on (its channel answered an error that asking
    again will not clear: archived, the bot not in it): the job is done, marked with `details`
    (`{"error", "method", "channel"}`), so that `signoff pending` and `signoff show` list it
    and `signoff redeliver` queues it again once the cause is fixed."""

    def __init__(self, details: Mapping[str, str]) -> None:
        super().__init__(", ".join(f"{k}={v}" for k, v in details.items()))
        self.details = dict(details)


class EventSink(Protocol):
    async def deliver(self, event: Event) -> None:
        """Deliver one event. Raise to have it retried (RetryLater to say when)."""
        ...


class SinkView(Protocol):
    """What a sink may ask of the governance layer while it delivers an event: reads, and one
    piece of bookkeeping (where a card was posted). `Signoff` is one; a sink needs no more.

    A sink must not decide anything: it tells people what was decided.
    """

    @property
    def groups(self) -> GroupResolver:
        """Who is in each `@group`, to mention the approvers by name."""
        ...

    async def get(self, approval_id: str) -> Approval:
        """The approval as it stands now. Raises `UnknownApprovalError`."""
        ...

    async def thread_approvals(self, thread_id: str) -> list[Approval]:
        """The approvals of one run, oldest first."""
        ...

    async def run_info(self, thread_id: str) -> Mapping[str, Any] | None:
        """The run's row (workflow, requester, channel, status, ...), or None."""
        ...

    async def mark_posted(self, approval_id: str, channel: str, message_ts: str) -> None:
        """Remember where the approval's card is, so later events update it."""
        ...


class NullSink:
    """Accepts every event and does nothing (the CLI: the bot, if any, delivers to Slack)."""

    async def deliver(self, event: Event) -> None:
        return None


class RecordingSink:
    """Keeps delivered events in a list (tests and the CLI's `--events`)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def deliver(self, event: Event) -> None:
        self.events.append(event)
