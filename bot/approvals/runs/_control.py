"""An operator's control of runs: who may retry or cancel one from Slack, retry (exactly once, by
compare-and-set), cancel (with its pending approvals), and the retention of finished runs
(`purge`); and who runs a `running` run, alive or gone."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from .. import store
from .. import tables as t
from .._joined import shared_with
from ..decisions import new_decision
from ..errors import RunControlRefused, RunStateError, UnknownRunError
from ..jobs import _gone_from_this_host
from ..models import RunRecord, RunStatus
from ..policy import resolve_members
from ._record import RunsBase

__all__ = ["CANCELLABLE", "PURGEABLE", "RETRYABLE", "Controlling"]


RETRYABLE: tuple[RunStatus, ...] = ("failed",)
"""What `retry` goes on from. Not `outcome_unknown`: a side effect may have happened, and a
person must check the outside system first (then cancel, or fix it and retry by hand)."""
CANCELLABLE: tuple[RunStatus, ...] = ("failed", "paused", "outcome_unknown")
"""What `cancel` stops. Not a finished run, nor a `running` one whose process is alive (it is
being worked on now); a `running` one whose process died is cancelled (and retried) too."""
PURGEABLE: tuple[RunStatus, ...] = ("completed", "cancelled", "failed")
"""What `purge` deletes once old enough. Never live runs (running, paused) nor
`outcome_unknown` ones, which a person must look at."""


class Controlling(RunsBase):
    """Retries, cancels and purges runs (`check_control` says who may from Slack)."""

    async def check_control(self, thread_id: str, user: str, what: str) -> None:
        """Refuse (`RunControlRefused`, on the audit log) unless `user` approves one of the
        run's actions or may start its workflow: who may retry or cancel it from Slack.

        Raises:
            UnknownRunError, RunControlRefused, GroupsUnavailable.
        """
        async with self.db.read() as conn:
            run = await _get_run(conn, thread_id)
            approvals = await store.list_approvals(
                conn,
                statuses=("pending", "approved", "rejected", "expired", "cancelled"),
                thread_id=thread_id,
            )
        entries: list[str] = []
        for a in approvals:
            rule = self.policy.actions.get(a.action)
            entries += [*a.approvers, *(rule.approvers if rule else ())]
        wf_policy = self.policy.workflows.get(run.workflow)
        entries += list(wf_policy.starters if wf_policy else ())
        if user in await resolve_members(dict.fromkeys(entries), self.groups):
            return
        async with self.db.transaction() as conn:
            await self.audit.append(
                conn,
                "run_control_refused",
                thread_id=thread_id,
                actor=user,
                data={"what": what, "workflow": run.workflow},
            )
        raise RunControlRefused(
            f"{user} may not {what} run {thread_id!r}: only approvers of its actions and "
            f"starters of {run.workflow!r} may"
        )

    async def retry(self, thread_id: str, *, actor: str) -> None:
        """Go on with a failed run from its last checkpoint: what had finished is not run again.

        Exactly once: the run moves from `failed` to `running` by compare-and-set, in the same
        transaction as the job that resumes it, so of two operators retrying at once one wins
        and the other is told it was retried already. The worker performs the job (the bot's,
        or the CLI's own `run_jobs`).

        Raises:
            UnknownRunError, RunStateError: nothing was changed.
        """
        now = self.clock()
        async with self.db.transaction() as conn:
            run = await _get_run(conn, thread_id)
            leader = await shared_with(conn, thread_id)
            if leader is not None:
                raise RunStateError(
                    f"run {thread_id!r} shared the outcome of run {leader!r} (it joined that "
                    f"run's approval) and has nothing of its own to retry: retry {leader!r}"
                )
            owner = await _owner(conn, run, now) if run.status == "running" else None
            if owner is not None and owner.queued:  # a worker is to take its job: retried already
                raise RunStateError(_cannot("retry", thread_id, "running"))
            if owner is not None and owner.gone:
                # Its process died: go on as after a failure. A job it held is given back (it
                # carries a decision); a run it was starting gets a retry job.
                await _release(conn, thread_id, owner.who)
                error: str | None = f"its process ({owner.who}) died while it was running"
                moved = await conn.execute(
                    update(t.runs)
                    .where(t.runs.c.thread_id == thread_id, t.runs.c.status == "running")
                    .values(updated_at=now, owner=None)
                )
            else:
                error = run.error
                moved = await conn.execute(
                    update(t.runs)
                    .where(t.runs.c.thread_id == thread_id, t.runs.c.status.in_(RETRYABLE))
                    .values(status="running", updated_at=now)
                )
            if moved.rowcount != 1:
                now_is = await _get_run(conn, thread_id)
                raise RunStateError(_cannot("retry", thread_id, now_is.status))
            if owner is None or not owner.held:
                await store.enqueue(
                    conn,
                    "resume",
                    f"retry:{thread_id}:{uuid.uuid4().hex}",
                    {"retry": True, "by": actor},
                    now,
                    thread_id=thread_id,
                )
            await self.audit.append(
                conn,
                "run_retried",
                thread_id=thread_id,
                actor=actor,
                data={"workflow": run.workflow, "error": error},
            )
            await self.jobs.event(
                conn,
                "run_retried",
                now,
                thread_id=thread_id,
                data={"workflow": run.workflow, "by": actor},
            )

    async def cancel(self, thread_id: str, *, actor: str, note: str = "") -> list[str]:
        """Stop a run for good: it is `cancelled`, its pending approvals are cancelled (their
        cards say so), resumes not yet done are dropped, and its Slack thread is told. Returns
        the ids of the approvals cancelled. An approval another run also waits on stays
        pending for that run.

        Raises:
            UnknownRunError, RunStateError: nothing was changed.
        """
        now = self.clock()
        reason = f"cancelled by {actor}" + (f": {note}" if note else "")
        cancelled: list[str] = []
        async with self.db.transaction() as conn:
            run = await _get_run(conn, thread_id)
            cancellable = CANCELLABLE
            if run.status == "running":
                owner = await _owner(conn, run, now)
                if not owner.gone and not owner.queued:
                    raise RunStateError(_live(thread_id, owner.who))
                cancellable = ("running",)  # its process died: nobody runs it
            moved = await conn.execute(
                update(t.runs)
                .where(t.runs.c.thread_id == thread_id, t.runs.c.status.in_(cancellable))
                .values(status="cancelled", error=reason, updated_at=now)
            )
            if moved.rowcount != 1:
                now_is = await _get_run(conn, thread_id)
                raise RunStateError(_cannot("cancel", thread_id, now_is.status))
            for a in await store.list_approvals(conn, statuses=("pending",), thread_id=thread_id):
                if any(other != thread_id for other, _ in await store.waiters(conn, a.id)):
                    w = t.approval_waiters.c
                    await conn.execute(
                        delete(t.approval_waiters).where(
                            w.approval_id == a.id, w.thread_id == thread_id
                        )
                    )
                    continue
                decision = new_decision(a, "cancelled", [actor], reason, {}, now, approved=False)
                if await store.settle(
                    conn, a, "cancelled", decision.to_record(), now, reason=reason
                ):
                    cancelled.append(a.id)
                    await self.audit.append(
                        conn,
                        "cancelled",
                        approval_id=a.id,
                        thread_id=thread_id,
                        actor=actor,
                        data={"reason": reason},
                    )
                    await self.jobs.event(
                        conn, "decided", now, thread_id=thread_id, approval_id=a.id
                    )
            j = t.jobs.c
            await conn.execute(
                update(t.jobs)
                .where(j.thread_id == thread_id, j.kind == "resume", j.done_at.is_(None))
                .values(done_at=now, last_error="the run was cancelled")
            )
            await self._end_followers(conn, thread_id, now, "cancelled", error=reason)
            await self.audit.append(
                conn,
                "run_cancelled",
                thread_id=thread_id,
                actor=actor,
                data={"workflow": run.workflow, "note": note, "approvals": cancelled},
            )
            await self.jobs.event(
                conn,
                "run_cancelled",
                now,
                thread_id=thread_id,
                data={"workflow": run.workflow, "by": actor, "note": note},
            )
        return cancelled

    async def purge(self, older_than_seconds: float) -> int:
        """Delete finished runs (completed, cancelled, failed: `PURGEABLE`), with their
        approvals and checkpoints, not updated for longer than the age given.

        Live runs (running, paused) and `outcome_unknown` ones a person must look at are never
        touched, nor a run with an approval still pending.
        """
        cutoff = self.clock() - older_than_seconds
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(t.runs.c.thread_id).where(
                    t.runs.c.status.in_(PURGEABLE), t.runs.c.updated_at < cutoff
                )
            )
            threads = [r[0] for r in rows]
        for thread_id in threads:
            async with self.db.transaction() as conn:
                live = await store.list_approvals(conn, statuses=("pending",), thread_id=thread_id)
                if live:
                    continue
                ids = [
                    a.id
                    for a in await store.list_approvals(
                        conn,
                        statuses=("approved", "rejected", "expired", "cancelled"),
                        thread_id=thread_id,
                    )
                ]
                for table in (t.votes, t.approval_waiters):
                    await conn.execute(delete(table).where(table.c.approval_id.in_(ids)))
                await conn.execute(delete(t.approvals).where(t.approvals.c.id.in_(ids)))
                await conn.execute(delete(t.runs).where(t.runs.c.thread_id == thread_id))
                await self.audit.append(
                    conn, "purged", thread_id=thread_id, actor="retention", data={"approvals": ids}
                )
            await self.saver.adelete_thread(thread_id)
        return len(threads)


async def _get_run(conn: AsyncConnection, thread_id: str) -> RunRecord:
    run = await store.get_run(conn, thread_id)
    if run is None:
        raise UnknownRunError(
            f"no run has thread id {thread_id!r}; `signoff pending` lists paused ones", thread_id
        )
    return run


@dataclass(frozen=True, slots=True)
class _Owner:
    """Who runs a `running` run: the process holding its resume job, else the one that started
    it (`runs.owner`)."""

    who: str | None
    """Its worker id (`host:pid:tag`); None when not known (a run older than the column)."""
    gone: bool
    """Known dead: a process of this host that no longer runs, or a job whose lease is over."""
    held: bool = False
    """It holds a resume job (which a retry gives back rather than adding another)."""
    queued: bool = False
    """Nobody holds it: its job waits for a worker (given back after its process died)."""


async def _owner(conn: AsyncConnection, run: RunRecord, now: float) -> _Owner:
    j = t.jobs.c
    jobs = (
        await conn.execute(
            select(j.locked_by, j.locked_until).where(
                j.thread_id == run.thread_id, j.kind == "resume", j.done_at.is_(None)
            )
        )
    ).all()
    leased = [(by, until) for by, until in jobs if by is not None]
    if leased:
        live = [by for by, until in leased if not _dead(by, until, now)]
        return _Owner(live[0] if live else leased[0][0], gone=not live, held=True)
    if jobs:
        return _Owner(None, gone=False, queued=True)
    owner = run.owner
    return _Owner(owner, gone=owner is not None and _dead(owner, None, now))


def _dead(worker_id: str, lease_until: float | None, now: float) -> bool:
    """A process of this host is dead when it no longer runs; one of another host only once the
    lease it holds is over (its start holds none: it cannot be told from here)."""
    if worker_id.split(":", 1)[0] == socket.gethostname():
        return _gone_from_this_host(worker_id)
    return lease_until is not None and lease_until < now


async def _release(conn: AsyncConnection, thread_id: str, worker_id: str | None) -> None:
    """Give back the resume jobs of `thread_id` that a dead process held."""
    j = t.jobs.c
    await conn.execute(
        update(t.jobs)
        .where(j.thread_id == thread_id, j.done_at.is_(None), j.locked_by == worker_id)
        .values(locked_by=None, locked_until=None)
    )


def _live(thread_id: str, who: str | None) -> str:
    """Why a `running` run whose process may be alive cannot be cancelled."""
    if who is None:
        return (
            f"run {thread_id!r} is running, and which process runs it is not recorded (it "
            "was started by an older signoff): wait for it to pause or stop"
        )
    host, _, rest = who.partition(":")
    pid = rest.split(":", 1)[0]
    if host == socket.gethostname():
        return (
            f"run {thread_id!r} is running in process {pid} of this host, which is alive: "
            "wait for it to pause or stop (if it hangs, stop that process, then cancel or retry)"
        )
    return (
        f"run {thread_id!r} is running in process {pid} on host {host!r}, which cannot be "
        "checked from here: run this command on that host, or wait for it to pause or stop"
    )


def _cannot(what: str, thread_id: str, status: str) -> str:
    """Why `what` (retry, cancel) cannot act on a run that is `status`."""
    if what == "retry" and status == "running":
        return (
            f"run {thread_id!r} is running: it was retried already, or is being worked on; "
            "`signoff show` says where it is"
        )
    if what == "retry" and status == "outcome_unknown":
        return (
            f"run {thread_id!r} stopped while a side effect was running: check the outside "
            "system first, and `signoff cancel` it if the effect happened"
        )
    can, done = (RETRYABLE, "retried") if what == "retry" else (CANCELLABLE, "cancelled")
    states = f"{', '.join(can[:-1])} or {can[-1]}" if len(can) > 1 else can[0]
    return f"run {thread_id!r} is {status}; only a run that is {states} can be {done}"
