"""Who is away, and what that changes: an approval nobody present could decide is escalated at
once, and a delegate may decide for an away approver where the policy allows it.

A person is away when they said so (`/agent away [until DATE] [delegate @person]`, a row of
`away` until `/agent back`), or when Slack says so: do-not-disturb in effect now (`dnd.info`,
snoozed or scheduled), or a status the policy names as away (`[away] statuses`, matched on
the status emoji or found in its text, until the status expires). Slack's facts come through a
`Whereabouts` (the Slack edge's is cached and refreshed on Slack's events); none is guessed: a
person Slack cannot say anything about in time is taken as present.

Slack's presence ("away" after some idle minutes) is not read: it is too common to mean "on
vacation", and escalating on it would take most approvals past their approvers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sqlalchemy import delete, insert, select

from . import store
from . import tables as t
from .audit import AuditLog
from .errors import (
    AlreadyVotedError,
    AwayRefused,
    DecisionRefused,
    DelegationRefused,
    GroupsUnavailable,
    SelfApprovalError,
)
from .jobs import JobQueue
from .models import Approval, iso
from .policy import ActionPolicy, GroupResolver, Policy, resolve_members

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "Absence",
    "Away",
    "NoWhereabouts",
    "SlackFacts",
    "Whereabouts",
    "absence_from",
    "delegation_refusal",
    "stand_in",
]

AwayWhy = Literal["away", "dnd", "status"]
"""How signoff knows: `away` (they said so), `dnd` (Slack's do-not-disturb), `status` (a
Slack status the policy names as away)."""


@dataclass(frozen=True, slots=True)
class Absence:
    """One person away."""

    user: str
    why: AwayWhy
    until: float | None = None
    """When they are back (Unix time); None: not said."""
    delegate: str | None = None
    """Who may decide for them where the policy allows delegation (`/agent away` only)."""
    detail: str = ""
    """The status that said so (`:palm_tree: Vacation`), for `status`."""

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "why": self.why, "until": self.until, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class SlackFacts:
    """What Slack says of one person now (read by the Slack edge)."""

    dnd_from: float | None = None
    """When their next (or current) do-not-disturb starts; None: it is in effect already."""
    dnd_until: float | None = None
    """When that do-not-disturb ends; None when there is none."""
    status_emoji: str = ""
    status_text: str = ""
    status_expiration: float | None = None
    """When the status clears by itself; None: it does not."""


class Whereabouts(Protocol):
    """Slack's facts about people, as the Slack edge knows them."""

    async def facts(self, user: str) -> SlackFacts | None:
        """What Slack says of `user`, or None when it cannot say now (taken as present)."""
        ...


class NoWhereabouts:
    """No Slack (the CLI, tests of governance alone): only `/agent away` says who is away."""

    async def facts(self, user: str) -> SlackFacts | None:
        return None


def absence_from(
    user: str, facts: SlackFacts | None, statuses: Iterable[str], now: float
) -> Absence | None:
    """Whether Slack's `facts` say `user` is away at `now`: a status the policy names (an
    emoji entry, `:name:`, is the status emoji; any other entry is found in the status text,
    ignoring case), or do-not-disturb in effect."""
    if facts is None:
        return None
    expires = facts.status_expiration
    if expires is None or expires > now:
        emoji, text = facts.status_emoji.lower(), facts.status_text.lower()
        for entry in statuses:
            e = entry.lower()
            is_emoji = len(e) > 2 and e.startswith(":") and e.endswith(":")
            if (is_emoji and emoji == e) or (not is_emoji and e in text):
                detail = " ".join(x for x in (facts.status_emoji, facts.status_text) if x)
                return Absence(user, "status", expires, detail=detail)
    started = facts.dnd_from is None or facts.dnd_from <= now
    if started and facts.dnd_until is not None and facts.dnd_until > now:
        return Absence(user, "dnd", facts.dnd_until)
    return None


def delegation_refusal(
    rule: ActionPolicy, a: Approval, delegate: str, principal: str
) -> DecisionRefused | None:
    """Why `delegate` may not decide `a` for the away approver `principal` (None: they may):
    the policy must allow delegation for the action (by name for a critical one), and neither
    the delegate nor the person they stand for may be the requester."""
    key = f"[actions.{rule.action}] delegation"
    if rule.delegation == "never":
        return DelegationRefused(
            f"<@{principal}> is away and named you to decide for them, but {rule.title} does not "
            f"allow delegation ({key} = true would); ask one of its approvers",
            a.id,
            principal=principal,
        )
    if rule.tier == "critical" and rule.delegation != "critical":
        return DelegationRefused(
            f"{rule.title} is critical: a delegate may decide it only where the policy says so "
            f'by name ({key} = "critical"); ask one of its approvers',
            a.id,
            principal=principal,
            critical=True,
        )
    if delegate == a.requester and not rule.allow_self_approval:
        return SelfApprovalError(
            f"you asked for this ({rule.title}), and nobody may approve their own request, "
            f"not even as <@{principal}>'s delegate; ask another of its approvers",
            a.id,
        )
    if principal == a.requester and not rule.allow_self_approval:
        return SelfApprovalError(
            f"<@{principal}> asked for this ({rule.title}), so their delegate may not decide it",
            a.id,
        )
    if any(v.user_id == principal or v.for_user == principal for v in a.votes):
        return AlreadyVotedError(f"<@{principal}> has voted on approval {a.id} already", a.id)
    return None


def stand_in(
    rule: ActionPolicy,
    a: Approval,
    delegate: str,
    members: Iterable[str],
    delegating: Mapping[str, Absence],
    refused: DecisionRefused,
) -> tuple[str | None, DecisionRefused | None]:
    """For a voter refused as no approver of `a` (`refused`): the away approver among
    `members` they may decide for (the first by id of those who named them, `delegating`), and
    None; or None and why not (`delegation_refusal`, or `refused` when they stand in for none)."""
    principal = min((p for p in delegating if p in set(members)), default=None)
    if principal is None:
        return None, refused
    return principal, delegation_refusal(rule, a, delegate, principal)


class Away:
    """Who is away: `/agent away` and `/agent back`, Slack's facts, early escalation."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        groups: GroupResolver,
        audit: AuditLog,
        jobs: JobQueue,
        clock: Callable[[], float],
        whereabouts: Whereabouts | None = None,
    ) -> None:
        self.db = db
        self.policy = policy
        self.groups = groups
        self.audit = audit
        self.jobs = jobs
        self.clock = clock
        self.whereabouts: Whereabouts = whereabouts or NoWhereabouts()

    # ---- /agent away, /agent back ----------------------------------------------------------

    async def set(self, user: str, *, until: float | None, delegate: str | None) -> Absence:
        """`user` is away until `until` (None: until `/agent back`), `delegate` deciding for
        them where the policy allows it. Replaces what they said before; audited.

        Raises:
            AwayRefused: `until` is not in the future, or `delegate` is `user`.
        """
        now = self.clock()
        if until is not None and until <= now:
            raise AwayRefused(
                f"{iso(until)} is not in the future: write a later date, like "
                "`/agent away until 2026-12-24`"
            )
        if delegate == user:
            raise AwayRefused("you cannot be your own delegate: name someone else, or nobody")
        async with self.db.transaction() as conn:
            await conn.execute(delete(t.away).where(t.away.c.user_id == user))
            await conn.execute(
                insert(t.away).values(user_id=user, until=until, delegate=delegate, since=now)
            )
            await self.audit.append(
                conn, "away_set", actor=user, data={"until": until, "delegate": delegate}
            )
        return Absence(user, "away", until, delegate)

    async def end(self, user: str) -> None:
        """`user` is back: their `/agent away` ends (audited).

        Raises:
            AwayRefused: they had not said they were away.
        """
        async with self.db.transaction() as conn:
            gone = await conn.execute(delete(t.away).where(t.away.c.user_id == user))
            if gone.rowcount != 1:
                raise AwayRefused(
                    "you had not said you were away (`/agent away [until DATE] "
                    "[delegate @person]`); nothing changed"
                )
            await self.audit.append(conn, "away_ended", actor=user, data={})

    async def said(self, user: str) -> Absence | None:
        """`user`'s own `/agent away`, while it lasts."""
        return (await self._said([user])).get(user)

    async def _said(self, users: Iterable[str]) -> dict[str, Absence]:
        now = self.clock()
        async with self.db.read() as conn:
            rows = (
                await conn.execute(select(t.away).where(t.away.c.user_id.in_(list(users))))
            ).mappings()
            return {
                r["user_id"]: Absence(r["user_id"], "away", r["until"], r["delegate"])
                for r in rows
                if r["until"] is None or r["until"] > now
            }

    async def of(self, users: Iterable[str]) -> dict[str, Absence]:
        """Those of `users` who are away now, and why (their own word first, then Slack's)."""
        users = list(users)
        out = await self._said(users)
        now = self.clock()
        for user in users:
            if user not in out:
                found = absence_from(
                    user, await self.whereabouts.facts(user), self.policy.away_statuses, now
                )
                if found is not None:
                    out[user] = found
        return out

    async def all_away(self, users: Iterable[str]) -> dict[str, Absence] | None:
        """Why each of `users` is away, or None as soon as one is found present (so a request
        with someone there asks Slack about one person, not all of them)."""
        users = list(users)
        out = await self._said(users)
        now = self.clock()
        for user in users:
            if user not in out:
                found = absence_from(
                    user, await self.whereabouts.facts(user), self.policy.away_statuses, now
                )
                if found is None:
                    return None
                out[user] = found
        return out

    async def named_by_them(self, user: str, refused: DecisionRefused) -> dict[str, Absence]:
        """Those away who named `user` their delegate, asked once `user` was refused as no
        approver (so an approver's vote reads nothing more); none after a refusal about
        delegation itself."""
        return {} if isinstance(refused, DelegationRefused) else await self.delegators(user)

    async def delegators(self, delegate: str) -> dict[str, Absence]:
        """The people away now who named `delegate` to decide for them."""
        now = self.clock()
        async with self.db.read() as conn:
            rows = (
                await conn.execute(select(t.away).where(t.away.c.delegate == delegate))
            ).mappings()
            return {
                r["user_id"]: Absence(r["user_id"], "away", r["until"], r["delegate"])
                for r in rows
                if r["until"] is None or r["until"] > now
            }

    # ---- escalation at once ---------------------------------------------------------------

    async def escalate_if_all_away(self, approval_id: str) -> bool:
        """When every person who could decide the pending approval is away, its escalation
        happens now, not after `escalate_after` (the approval records who is away and until
        when, for its card). Without `escalate_to` the approval still records who is away.

        Looked up outside any transaction (Slack may be asked), then written with a
        compare-and-set: an approval decided or escalated meanwhile is left alone. True when
        it was changed.
        """
        async with self.db.read() as conn:
            a = await store.get_approval(conn, approval_id)
        rule = self.policy.actions.get(a.action) if a is not None else None
        if a is None or rule is None or a.status != "pending" or a.escalated or a.away:
            return False
        try:
            members = set(await resolve_members(a.approvers, self.groups))
        except GroupsUnavailable:
            return False  # the sweep looks again
        if not rule.allow_self_approval:
            members.discard(a.requester)
        if not members:
            return False
        absent = await self.all_away(sorted(members))
        if absent is None:
            return False
        note = [absent[u].to_json() for u in sorted(members)]
        extra = [e for e in rule.escalate_to if e not in a.approvers]
        now = self.clock()
        fields: dict[str, Any] = {"away": store.dumps(note)}
        if extra:
            approvers = [*a.approvers, *extra]
            fields.update(escalated=True, escalated_at=now, approvers=store.dumps(approvers))
        async with self.db.transaction() as conn:
            cur = await store.get_approval(conn, approval_id, for_update=True)
            if cur is None or cur.status != "pending" or cur.escalated:
                return False
            if not await store.bump(conn, cur, now, **fields):
                return False
            data = {"to": extra, "away": note, "early": True}
            await self.audit.append(
                conn,
                "escalated" if extra else "all_away",
                approval_id=cur.id,
                thread_id=cur.thread_id,
                actor="away",
                data=data,
            )
            await self.jobs.event(
                conn, "escalated", now, thread_id=cur.thread_id, approval_id=cur.id, data=data
            )
        return True

    async def sweep(self, limit: int = 200) -> int:
        """Early escalation for pending approvals whose people went away after they were
        asked (the oldest `limit` not escalated yet); how many were changed."""
        async with self.db.read() as conn:
            ids = list(
                await conn.scalars(
                    select(t.approvals.c.id)
                    .where(
                        t.approvals.c.status == "pending",
                        t.approvals.c.escalated.is_(False),
                        t.approvals.c.away.is_(None),
                    )
                    .order_by(t.approvals.c.created_at)
                    .limit(limit)
                )
            )
        return sum([await self.escalate_if_all_away(i) for i in ids])
