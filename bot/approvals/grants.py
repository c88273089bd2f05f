"""Grants: an approver's "Approve, and allow up to N more like this for T", made from the card.

Approval fatigue comes from asking the same person the same thing again and again; a grant lets
them say once "more of exactly this, for a while". It is bounded twice: by the action's policy
(`grants = {...}`: most uses, longest window, the key arguments) and by the call approved (same
requester and service, the same key arguments, each number at most what was approved: the
rule is `policy.grants.outside_grant`). A later request inside a live grant is approved by it
without asking anyone; one outside any is asked as usual.

Exactly one request takes each use: a use is a conditional `UPDATE ... SET left = left - 1
WHERE left > 0 AND ...` whose row count says whether it was taken (SQLite's writers take turns;
on PostgreSQL the second updater waits for the first's row lock, then finds `left` spent).

A grant rests on the policy it was made under (`ActionPolicy.grant_fingerprint`: the limits,
approvers, tier, quorum): at use, a grant whose action's policy changed since is ended, not
used. Every grant, use, revocation and refusal is on the audit log.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from . import tables as t
from .audit import AuditLog
from .errors import GrantRefused
from .models import Approval, Decision, iso
from .policy import ActionPolicy, GroupResolver, Policy, resolve_members
from .policy.durations import format_duration
from .policy.grants import GrantAsk, GrantLimits, outside_grant
from .store import dumps

if TYPE_CHECKING:
    from .db import Database

__all__ = ["Grant", "GrantAsk", "Grants", "check_ask", "create", "use"]


@dataclass(frozen=True, slots=True)
class Grant:
    """One grant, as stored (`tables.grants`)."""

    id: str
    action: str
    approval_id: str
    """The approval whose approval made it."""
    grantor: str
    """Who granted it (the approver)."""
    requester: str
    """Whose later requests it approves."""
    service: str | None
    """The service those requests must come through (None: a workflow's own)."""
    bound: dict[str, Any]
    """The approved call's arguments (edits applied, secrets redacted)."""
    uses: int
    """How many later requests it may approve in all."""
    left: int
    """How many it may still approve."""
    created_at: float
    expires_at: float
    policy: str
    """The fingerprint of the policy it was made under (`ActionPolicy.grant_fingerprint`)."""
    revoked_at: float | None = None
    revoked_by: str | None = None

    def live(self, now: float) -> bool:
        """Whether it may still approve something (not revoked, a use left, not expired)."""
        return self.revoked_at is None and self.left > 0 and now < self.expires_at

    def said(self) -> dict[str, Any]:
        """What an approval decided by it records of it (`Approval.granted`), after its use."""
        return {
            "id": self.id,
            "grantor": self.grantor,
            "left": self.left,
            "uses": self.uses,
            "until": self.expires_at,
        }

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Grant:
        bound = json.loads(row["bound"])
        return cls(
            id=row["id"],
            action=row["action"],
            approval_id=row["approval_id"],
            grantor=row["grantor"],
            requester=row["requester"],
            service=row["service"],
            bound=bound if isinstance(bound, dict) else {},
            uses=row["uses"],
            left=row["left"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            policy=row["policy"],
            revoked_at=row["revoked_at"],
            revoked_by=row["revoked_by"],
        )


def new_grant_id() -> str:
    """Unguessable, as an approval's: a Revoke button carries it."""
    return "grt_" + secrets.token_urlsafe(12)


def check_ask(rule: ActionPolicy | None, ask: GrantAsk, approval_id: str, action: str) -> None:
    """Refuse (`GrantRefused`) a grant the action's policy does not allow."""
    limits = rule.grants if rule is not None else None
    if limits is None:
        raise GrantRefused(
            f"the policy allows no grants for {action} (add grants = {{ most = 5, longest = "
            f'"4h" }} to [actions.{action}]); nothing was recorded',
            approval_id,
        )
    if not 1 <= ask.uses <= limits.most:
        raise GrantRefused(
            f"{action} allows grants of 1 to {limits.most} more requests, not {ask.uses}; "
            "nothing was recorded",
            approval_id,
        )
    if not dt.timedelta(0) < ask.window <= limits.longest:
        raise GrantRefused(
            f"{action} allows grants for at most {format_duration(limits.longest)}, not "
            f"{format_duration(ask.window)}; nothing was recorded",
            approval_id,
        )


async def create(
    conn: AsyncConnection,
    audit: AuditLog,
    a: Approval,
    decision: Decision,
    ask: GrantAsk,
    rule: ActionPolicy,
    grantor: str,
    now: float,
) -> Grant:
    """Record the grant `grantor` made with their approval `decision` of `a` (checked by
    `check_ask`), in the vote's transaction, and its `granted` entry."""
    fp = rule.grant_fingerprint()
    assert fp is not None  # check_ask refused an action without grants
    grant = Grant(
        id=new_grant_id(),
        action=a.action,
        approval_id=a.id,
        grantor=grantor,
        requester=a.requester,
        service=a.service,
        bound={**a.current, **decision.edits},
        uses=ask.uses,
        left=ask.uses,
        created_at=now,
        expires_at=now + ask.window.total_seconds(),
        policy=fp,
    )
    await conn.execute(
        insert(t.grants).values(
            id=grant.id, action=grant.action, approval_id=grant.approval_id,
            grantor=grant.grantor, requester=grant.requester, service=grant.service,
            bound=dumps(grant.bound), uses=grant.uses, left=grant.left,
            created_at=now, expires_at=grant.expires_at, policy=fp,
        )
    )  # fmt: skip
    await audit.append(
        conn,
        "granted",
        approval_id=a.id,
        thread_id=a.thread_id,
        actor=grantor,
        data={
            "grant": grant.id,
            "uses": grant.uses,
            "until": iso(grant.expires_at),
            "requester": grant.requester,
            "service": grant.service,
            "bound": grant.bound,
            "key": list(rule.grants.key) if rule.grants else [],
        },
    )
    return grant


async def use(
    conn: AsyncConnection,
    audit: AuditLog,
    rule: ActionPolicy,
    args: Mapping[str, Any],
    requester: str,
    service: str | None,
    now: float,
) -> Grant | None:
    """Take one use of the oldest live grant the request (`args`, secrets redacted as stored)
    lies inside (the caller audits it: `grant_used`); None when none does (it is asked).
    Grants of the action made under another policy are ended here (`grant_revoked`, by
    `policy`), never used."""
    fp = rule.grant_fingerprint()
    if rule.grants is None or fp is None:
        return None
    g = t.grants.c
    rows = await conn.execute(
        select(t.grants)
        .where(
            g.action == rule.action,
            g.requester == requester,
            g.revoked_at.is_(None),
            g.left > 0,
            g.expires_at > now,
        )
        .order_by(g.created_at)
    )
    for grant in [Grant.from_row(r) for r in rows.mappings()]:
        if grant.policy != fp:
            await _end(conn, audit, grant, "policy", now, "the action's policy changed since")
            continue
        if grant.service != service or outside_grant(grant.bound, args, rule.grants) is not None:
            continue
        taken = await conn.execute(
            update(t.grants)
            .where(
                and_(
                    g.id == grant.id,
                    g.left > 0,
                    g.revoked_at.is_(None),
                    g.expires_at > now,
                )
            )
            .values(left=g.left - 1)
        )
        if taken.rowcount != 1:
            continue  # its last use went to another request a moment ago
        used = Grant(**{**_fields(grant), "left": grant.left - 1})
        return used
    return None


def _fields(grant: Grant) -> dict[str, Any]:
    return {name: getattr(grant, name) for name in Grant.__slots__}


async def _end(
    conn: AsyncConnection, audit: AuditLog, grant: Grant, by: str, now: float, why: str
) -> bool:
    """Revoke `grant` (compare-and-set: False when it was revoked already) and audit it."""
    g = t.grants.c
    done = await conn.execute(
        update(t.grants)
        .where(g.id == grant.id, g.revoked_at.is_(None))
        .values(revoked_at=now, revoked_by=by)
    )
    if done.rowcount != 1:
        return False
    await audit.append(
        conn,
        "grant_revoked",
        approval_id=grant.approval_id,
        actor=by,
        data={"grant": grant.id, "grantor": grant.grantor, "left": grant.left, "why": why},
    )
    return True


class Grants:
    """Reading and revoking grants (made by `Decisions`, used by `Pauses`)."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        groups: GroupResolver,
        audit: AuditLog,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.policy = policy
        self.groups = groups
        self.audit = audit
        self.clock = clock

    def limits(self, a: Approval) -> GrantLimits:
        """What may be granted with an approval of `a` under the policy in force (the choices
        offered); `GrantRefused` when nothing may (no grants, critical, a quorum)."""
        rule = self.policy.actions.get(a.action)
        limits = rule.grants if rule is not None else None
        if limits is None or a.risk_tier == "critical" or a.required != 1:
            raise GrantRefused(
                f"the policy allows no grants for {a.action} (any more); approve or reject it "
                "as usual",
                a.id,
            )
        return limits

    async def get(self, grant_id: str) -> Grant | None:
        async with self.db.read() as conn:
            row = (
                (await conn.execute(select(t.grants).where(t.grants.c.id == grant_id)))
                .mappings()
                .first()
            )
        return Grant.from_row(row) if row is not None else None

    async def live(self, *, user: str | None = None) -> list[Grant]:
        """The grants that may still approve something under the policy in force, oldest
        first; with `user`, only those they may revoke (`may_revoke`)."""
        now = self.clock()
        g = t.grants.c
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(t.grants)
                .where(g.revoked_at.is_(None), g.left > 0, g.expires_at > now)
                .order_by(g.created_at)
                .limit(200)
            )
            found = [Grant.from_row(r) for r in rows.mappings()]
        found = [x for x in found if self._rests_on_policy(x)]
        if user is None:
            return found
        return [x for x in found if await self.may_revoke(x, user)]

    def _rests_on_policy(self, grant: Grant) -> bool:
        rule = self.policy.actions.get(grant.action)
        return rule is not None and rule.grant_fingerprint() == grant.policy

    async def end_stale(self) -> int:
        """End every live grant whose action's policy changed since it was made (or is gone),
        each audited `grant_revoked` by `policy`; how many. The sweep calls it, so such a grant
        is on the audit log as ended even when no request comes to find it (`use` would not
        use it either)."""
        now = self.clock()
        g = t.grants.c
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(t.grants).where(g.revoked_at.is_(None), g.left > 0, g.expires_at > now)
            )
            stale = [
                x for x in map(Grant.from_row, rows.mappings()) if not self._rests_on_policy(x)
            ]
        ended = 0
        for grant in stale:
            async with self.db.transaction() as conn:
                why = "the action's policy changed since"
                ended += await _end(conn, self.audit, grant, "policy", now, why)
        return ended

    async def purge(self, older_than_seconds: float) -> int:
        """Delete the grants that ended (expired or revoked; a used-up one once its window is
        over) longer ago than the age given, with one `purged` audit entry naming them; how
        many. A live grant is never touched: its end is still to come."""
        cutoff = self.clock() - older_than_seconds
        g = t.grants.c
        ended = or_(g.expires_at < cutoff, g.revoked_at < cutoff)
        async with self.db.transaction() as conn:
            ids = [r[0] for r in await conn.execute(select(g.id).where(ended).order_by(g.id))]
            if not ids:
                return 0
            await conn.execute(delete(t.grants).where(g.id.in_(ids)))
            await self.audit.append(conn, "purged", actor="retention", data={"grants": ids})
        return len(ids)

    async def may_revoke(self, grant: Grant, user: str) -> bool:
        """The grantor may revoke their grant, and so may every approver of its action."""
        if user == grant.grantor:
            return True
        rule = self.policy.actions.get(grant.action)
        if rule is None:
            return False
        return user in await resolve_members(rule.approvers, self.groups)

    async def revoke(self, grant_id: str, user: str) -> Grant:
        """End a grant now: it approves nothing more. Only its grantor or an approver of its
        action may; any other attempt, or one on a grant that is over, is refused
        (`GrantRefused`) and audited (`grant_refused`)."""
        grant = await self.get(grant_id)
        now = self.clock()
        why: str | None = None
        if grant is None:
            why = f"there is no grant {grant_id[:60]}"
        elif not await self.may_revoke(grant, user):
            why = (
                f"only {grant.grantor}, who granted it, or an approver of {grant.action} may "
                "revoke this grant"
            )
        elif not grant.live(now):
            why = f"grant {grant.id} is over already (revoked, used up or expired)"
        if grant is not None and why is None:
            async with self.db.transaction() as conn:
                ended = await _end(conn, self.audit, grant, user, now, "revoked")
            if ended:
                return grant
            why = f"grant {grant.id} was revoked already"
        async with self.db.transaction() as conn:
            await self.audit.append(
                conn,
                "grant_refused",
                approval_id=grant.approval_id if grant else None,
                actor=user,
                data={"grant": grant_id[:60], "revoke": True, "reason": why},
            )
        raise GrantRefused(f"{why}; nothing was changed")
