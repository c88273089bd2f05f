"""What the record says about the decisions people make (`signoff report`): per action, how its
requests were decided, how long people took, the approvals given too fast to have read what they
approved, and the auto-approval rules the record would support.

Approval fatigue is the failure this looks for: people who approve most prompts without reading
them. Two figures show it. *Quick approvals* are approve votes cast within seconds of the request
by someone who never opened its Full payload. *Suggested rules* are the thresholds under which
people approved every request they were asked about: there a rule could decide, and people's
attention could go where it is needed. A suggestion is only printed, with how many of the last
decisions it would have taken; nothing changes until someone edits the policy.

`gather` reads the rows (the approvals, their votes, the audit log's `payload_viewed` entries) in
one read transaction; `summarize` is a pure function of them, so the figures are tested without a
database (and this module loads SQLAlchemy only for `gather`: `signoff --help` shows its defaults).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .policy import Policy

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "QUICK_SECONDS",
    "SUGGEST_LAST",
    "ActionFigures",
    "Asked",
    "Suggestion",
    "gather",
    "summarize",
]

QUICK_SECONDS = 15.0
"""An approve vote cast this soon after the request, by someone who never opened its payload,
is a quick approval: too fast to have read more than the card's first lines."""

SUGGEST_LAST = 100
"""How many of an action's latest decisions by people a suggested rule is weighed against."""

_MIN_TAKEN = 3
"""A rule is suggested only when it would have taken at least this many of those decisions."""


@dataclass(frozen=True)
class Asked:
    """One approval, as the report sees it."""

    id: str
    action: str
    tier: str
    requester: str
    args: Mapping[str, Any]
    """As stored: secret fields already hidden."""
    status: str
    """`pending`, `approved`, `rejected`, `expired` or `cancelled`."""
    by: tuple[str, ...]
    """Who decided: user ids, or `rule:<name>`, `policy`, `sweep`."""
    created_at: float
    decided_at: float | None
    approvals: tuple[tuple[str, float], ...] = ()
    """Each approve vote: (user id, when)."""
    viewed: tuple[tuple[str, float], ...] = ()
    """Each opening of the Full payload: (user id, when)."""

    @property
    def by_rule(self) -> bool:
        return self.status == "approved" and any(b.startswith("rule:") for b in self.by)

    @property
    def by_policy(self) -> bool:
        """Denied by policy before anyone was asked (an unlisted action, arguments that do not
        fit, a conflicting duplicate)."""
        return self.status == "rejected" and tuple(self.by) == ("policy",)

    @property
    def by_people(self) -> bool:
        """Approved or rejected by the people asked."""
        return self.status in ("approved", "rejected") and not (self.by_rule or self.by_policy)

    def quick_approvers(self, within: float) -> list[str]:
        """Who approved within `within` seconds of the request without opening its payload."""
        return [
            user
            for user, at in self.approvals
            if at - self.created_at <= within
            and not any(viewer == user and seen <= at for viewer, seen in self.viewed)
        ]


@dataclass(frozen=True)
class Suggestion:
    """An auto-approval rule the record supports: people approved every request they were asked
    about with `field` at most `at_most`, and it would have taken `taken` of the last `of`."""

    action: str
    field: str
    at_most: float
    taken: int
    of: int

    def toml(self) -> str:
        """The rule as policy file text, to paste under the action once someone agrees."""
        value = int(self.at_most) if float(self.at_most).is_integer() else self.at_most
        return (
            f"[[actions.{self.action}.auto_approve]]\n"
            f'name = "{self.field} up to {value} (suggested by signoff report)"\n'
            f"when = {{ {self.field} = {{ le = {value} }} }}\n"
        )


@dataclass(frozen=True)
class ActionFigures:
    """One action's figures over the report's period."""

    action: str
    tier: str
    requests: int
    by_rule: int
    by_policy: int
    approved: int
    """Approved by people (not by a rule)."""
    rejected: int
    """Rejected by people (not denied by policy)."""
    expired: int
    cancelled: int
    pending: int
    decide_seconds: tuple[float, ...]
    """How long each decision by people took, from the request, shortest first."""
    quick: tuple[str, ...]
    """Ids of the approvals someone approved quickly without opening the payload."""
    suggestions: tuple[Suggestion, ...] = field(default=())

    @property
    def approval_rate(self) -> float | None:
        """Of the requests people decided, the share they approved (None: they decided none)."""
        decided = self.approved + self.rejected
        return self.approved / decided if decided else None

    @property
    def median_seconds(self) -> float | None:
        return _rank(self.decide_seconds, 0.5)

    @property
    def p90_seconds(self) -> float | None:
        return _rank(self.decide_seconds, 0.9)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "tier": self.tier,
            "requests": self.requests,
            "auto_approved": self.by_rule,
            "denied_by_policy": self.by_policy,
            "approved": self.approved,
            "rejected": self.rejected,
            "expired": self.expired,
            "cancelled": self.cancelled,
            "pending": self.pending,
            "approval_rate": self.approval_rate,
            "decide_seconds": {"median": self.median_seconds, "p90": self.p90_seconds},
            "quick_approvals": list(self.quick),
            "suggestions": [
                {"field": s.field, "le": s.at_most, "taken": s.taken, "of": s.of, "toml": s.toml()}
                for s in self.suggestions
            ],
        }


def _rank(ordered: Sequence[float], q: float) -> float | None:
    """The nearest-rank `q` quantile of sorted values (the median of two is the lower one: a
    figure someone actually waited)."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(
    asked: Iterable[Asked],
    policy: Policy,
    *,
    quick: float = QUICK_SECONDS,
    last: int = SUGGEST_LAST,
) -> list[ActionFigures]:
    """Each action's figures, most requested first (then by name)."""
    by_action: dict[str, list[Asked]] = defaultdict(list)
    for a in asked:
        by_action[a.action].append(a)
    figures = [_figures(name, rows, policy, quick, last) for name, rows in by_action.items()]
    return sorted(figures, key=lambda f: (-f.requests, f.action))


def _figures(
    action: str, rows: list[Asked], policy: Policy, quick: float, last: int
) -> ActionFigures:
    people = [a for a in rows if a.by_people]
    rule = policy.actions.get(action)
    tier = rule.tier if rule is not None else (rows[-1].tier if rows else "high")
    return ActionFigures(
        action=action,
        tier=tier,
        requests=len(rows),
        by_rule=sum(a.by_rule for a in rows),
        by_policy=sum(a.by_policy for a in rows),
        approved=sum(a.status == "approved" for a in people),
        rejected=sum(a.status == "rejected" for a in people),
        expired=sum(a.status == "expired" for a in rows),
        cancelled=sum(a.status == "cancelled" for a in rows),
        pending=sum(a.status == "pending" for a in rows),
        decide_seconds=tuple(
            sorted(a.decided_at - a.created_at for a in people if a.decided_at is not None)
        ),
        quick=tuple(a.id for a in people if a.status == "approved" and a.quick_approvers(quick)),
        # a critical action is always decided by a person: no rule is suggested for one
        suggestions=() if tier == "critical" or rule is None else _suggest(action, people, last),
    )


def _suggest(action: str, people: list[Asked], last: int) -> tuple[Suggestion, ...]:
    """For each number argument: the highest value under which people approved every request
    of the last `last` they decided, if a rule `le` it would have taken enough of them."""
    recent = sorted(people, key=lambda a: a.decided_at or a.created_at)[-last:]
    numbers: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for a in recent:
        for name, value in a.args.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers[name].append((float(value), a.status == "approved"))
    found = []
    for name, seen in sorted(numbers.items()):
        lowest_rejected = min((v for v, ok in seen if not ok), default=math.inf)
        under = [v for v, ok in seen if ok and v < lowest_rejected]
        if not under:
            continue
        at_most = max(under)
        taken = sum(v <= at_most for v, _ in seen)
        if taken >= _MIN_TAKEN:
            found.append(Suggestion(action, name, at_most, taken, len(recent)))
    return tuple(found)


# ---- reading the record ---------------------------------------------------------------------


async def gather(db: Database, since: float) -> list[Asked]:
    """The approvals requested at or after `since` (seconds since the epoch), with their approve
    votes and the openings of their payloads, read in one transaction."""
    # SQLAlchemy and the tables made with it (a third of a second to import), for this read
    # alone: the CLI's parser takes QUICK_SECONDS and SUGGEST_LAST from here for every command
    import sqlalchemy as sa

    from . import tables as t

    a, v = t.approvals.c, t.votes.c
    async with db.read() as conn:
        rows = (
            await conn.execute(
                sa.select(
                    a.id,
                    a.action,
                    a.risk_tier,
                    a.requester,
                    a.payload,
                    a.status,
                    a.decision,
                    a.created_at,
                    a.decided_at,
                )
                .where(a.created_at >= since)
                .order_by(a.created_at, a.id)
            )
        ).all()
        votes: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for vote in await conn.execute(
            sa.select(v.approval_id, v.user_id, v.at)
            .join(t.approvals, t.approvals.c.id == v.approval_id)
            .where(a.created_at >= since, v.decision == "approve")
        ):
            votes[vote.approval_id].append((vote.user_id, vote.at))
        viewed: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for table in (t.audit_events, t.audit_inbox):  # linked, and not linked yet
            for entry in await conn.execute(
                sa.select(table.c.approval_id, table.c.actor, table.c.at).where(
                    table.c.kind == "payload_viewed", table.c.at >= since
                )
            ):
                viewed[entry.approval_id].append((entry.actor or "", entry.at))
    return [
        Asked(
            id=r.id,
            action=r.action,
            tier=r.risk_tier,
            requester=r.requester,
            args=_object(r.payload),
            status=r.status,
            by=tuple(_object(r.decision).get("by") or ()),
            created_at=r.created_at,
            decided_at=r.decided_at,
            approvals=tuple(votes.get(r.id, ())),
            viewed=tuple(viewed.get(r.id, ())),
        )
        for r in rows
    ]


def _object(text: str | None) -> dict[str, Any]:
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
