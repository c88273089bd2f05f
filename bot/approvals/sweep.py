"""The sweep: remind, escalate and expire pending approvals whose time has come. The one job
the scheduler calls; safe with several sweepers at once (each approval is changed with a
compare-and-set on its version, so one sweeper wins and the others skip it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import store
from .audit import AuditLog
from .away import Away
from .decisions import new_decision, settled
from .jobs import JobQueue
from .models import iso
from .policy import Policy

if TYPE_CHECKING:
    from .db import Database

__all__ = ["Sweeper"]


class Sweeper:
    """Moves pending approvals along by the clock: reminded, escalated, expired."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        audit: AuditLog,
        jobs: JobQueue,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.policy = policy
        self.audit = audit
        self.jobs = jobs
        self.clock = clock
        self.away: Away | None = None
        """Who is away: approvals whose people all went away since are escalated early."""

    async def sweep(self) -> dict[str, int]:
        """Remind, escalate and expire what is due. Safe with several sweepers at once."""
        now = self.clock()
        counts = {"reminded": 0, "escalated": 0, "expired": 0}
        async with self.db.read() as conn:
            due = await store.due_approvals(conn, now)
        for a in due:
            async with self.db.transaction() as conn:
                cur = await store.get_approval(conn, a.id, for_update=True)
                if cur is None or cur.status != "pending":
                    continue
                rule = self.policy.actions.get(cur.action)
                if cur.expire_at is not None and now >= cur.expire_at:
                    outcome = rule.on_expiry if rule else "reject"
                    reason = f"expired: nobody decided by {iso(cur.expire_at)}"
                    decision = new_decision(
                        cur, "expired", ["sweep"], reason, {}, now, approved=outcome == "approve"
                    )
                    record = decision.to_record()
                    if await store.settle(conn, cur, "expired", record, now, reason=reason):
                        await self.audit.append(
                            conn,
                            "expired",
                            approval_id=cur.id,
                            thread_id=cur.thread_id,
                            actor="sweep",
                            data={"outcome": outcome},
                        )
                        await settled(
                            conn, self.jobs, cur.id, decision, now, opener=cur.thread_id,
                            turn_id=cur.turn_id, audit=self.audit,
                        )  # fmt: skip
                        counts["expired"] += 1
                elif cur.escalate_at is not None and now >= cur.escalate_at and not cur.escalated:
                    extra = list(rule.escalate_to) if rule else []
                    approvers = list(dict.fromkeys([*cur.approvers, *extra]))
                    if await store.bump(
                        conn,
                        cur,
                        now,
                        escalated=True,
                        escalated_at=now,
                        approvers=store.dumps(approvers),
                    ):
                        await self.audit.append(
                            conn,
                            "escalated",
                            approval_id=cur.id,
                            thread_id=cur.thread_id,
                            actor="sweep",
                            data={"to": extra},
                        )
                        await self.jobs.event(
                            conn,
                            "escalated",
                            now,
                            thread_id=cur.thread_id,
                            approval_id=cur.id,
                            data={"to": extra},
                        )
                        counts["escalated"] += 1
                elif (
                    cur.remind_at is not None
                    and now >= cur.remind_at
                    and cur.reminded_at is None
                    and await store.bump(conn, cur, now, reminded_at=now)
                ):
                    await self.audit.append(
                        conn,
                        "reminded",
                        approval_id=cur.id,
                        thread_id=cur.thread_id,
                        actor="sweep",
                        data={},
                    )
                    await self.jobs.event(
                        conn, "reminded", now, thread_id=cur.thread_id, approval_id=cur.id
                    )
                    counts["reminded"] += 1
        if self.away is not None:
            counts["escalated"] += await self.away.sweep()
        return counts
