"""Runs that joined a pending duplicate (`dedupe_key`) share the outcome of the run they joined.

One approval can answer several paused runs: the one that opened it and those whose request
joined it while it was pending. Only one of them, the *leader*, is resumed with the decision and
acts (refunds once); the others, its *followers*, stay paused until the leader's run ends, and
then end the same way (completed with its values, failed, outcome unknown or cancelled), saying
which run they shared (`shared_with`). A rejected or expired approval is no exception: the
leader runs its rejection path and the followers end with what it said.

The leader is the thread that opened the approval while it still waits on it (cancelling it
while the approval is pending hands the approval to the next one that joined), else the
earliest remaining. Threads of outside requests (`api.<service>.<hex>`) only return the
decision to their service and never act: each is resumed itself, never a leader or a follower.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from . import store
from . import tables as t
from ._service_threads import service_of

__all__ = ["followers_of", "leader_of", "resumed_by_decision", "shared_with"]


def leader_of(opener: str | None, waiting: Sequence[tuple[str, str]]) -> str | None:
    """The thread among `waiting` (thread, interrupt; earliest first) that acts on the decision
    of an approval `opener` opened; None when only outside requests wait on it."""
    acting = [thread for thread, _ in waiting if service_of(thread) is None]
    if opener in acting:
        return opener
    return acting[0] if acting else None


def resumed_by_decision(
    opener: str | None, waiting: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The waiters a decision resumes: the leader and every outside request's thread."""
    leader = leader_of(opener, waiting)
    return [(th, i) for th, i in waiting if th == leader or service_of(th) is not None]


async def followers_of(conn: AsyncConnection, leader: str) -> list[tuple[str, str]]:
    """The (thread, workflow) of each run still paused on a decided approval that `leader`
    was resumed for: the runs that end as `leader`'s run does."""
    w = t.approval_waiters.c
    rows = await conn.execute(
        select(t.approvals.c.id, t.approvals.c.thread_id)
        .join(t.approval_waiters, w.approval_id == t.approvals.c.id)
        .where(w.thread_id == leader, t.approvals.c.status != "pending")
    )
    found: list[tuple[str, str]] = []
    for approval_id, opener in rows.all():
        waiting = await store.waiters(conn, approval_id)
        if leader_of(opener, waiting) != leader:
            continue
        for thread, _ in waiting:
            if thread == leader or service_of(thread) is not None:
                continue
            run = await store.get_run(conn, thread)
            if run is not None and run.status == "paused":
                found.append((thread, str(run.workflow)))
    return found


async def shared_with(conn: AsyncConnection, thread_id: str) -> str | None:
    """The run whose outcome `thread_id`'s run shared (it joined an approval that run acted
    on), or None."""
    w = t.approval_waiters.c
    rows = await conn.execute(
        select(t.approvals.c.id, t.approvals.c.thread_id)
        .join(t.approval_waiters, w.approval_id == t.approvals.c.id)
        .where(w.thread_id == thread_id, t.approvals.c.status != "pending")
    )
    for approval_id, opener in rows.all():
        leader = leader_of(opener, await store.waiters(conn, approval_id))
        if leader is not None and leader != thread_id and service_of(thread_id) is None:
            return leader
    return None
