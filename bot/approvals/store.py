"""Queries on the governance tables. Every function takes the caller's connection, so that a
decision, its vote, its audit event and its jobs commit together or not at all.

The statements a click's vote runs are built once, with bound parameters, and
executed with their values: SQLAlchemy then reuses the statement's cache key and compiled form
where building the same statement again would coerce every value and walk it for its key each
time (about 0.15 ms a statement, six a vote, where the statement itself takes microseconds).
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, bindparam, func, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from . import tables as t
from ._canonical import stored_json
from ._locks import hold
from ._service_threads import EXTERNAL_WORKFLOW
from .models import RUN_MOVES, Approval, RunRecord, RunStatus, Vote

__all__ = [
    "add_waiter",
    "enqueue",
    "get_approval",
    "insert_approval",
    "list_approvals",
    "new_approval_id",
]


def new_approval_id() -> str:
    """Unguessable: 128 random bits. Button values carry it, so it must not be enumerable."""
    return "apr_" + secrets.token_urlsafe(16)


dumps = stored_json
"""A JSON column's text (`stored_json`)."""


_APPROVAL = select(t.approvals).where(t.approvals.c.id == bindparam("approval_id"))
_APPROVAL_FOR_UPDATE = _APPROVAL.with_for_update()
_VOTES = (
    select(t.votes).where(t.votes.c.approval_id == bindparam("approval_id")).order_by(t.votes.c.id)
)
_WAITERS = (
    select(t.approval_waiters.c.thread_id, t.approval_waiters.c.interrupt_id)
    .where(t.approval_waiters.c.approval_id == bindparam("approval_id"))
    .order_by(t.approval_waiters.c.created_at)
)
_PENDING_AT_VERSION = update(t.approvals).where(
    t.approvals.c.id == bindparam("cas_id"),
    t.approvals.c.version == bindparam("cas_version"),
    t.approvals.c.status == "pending",
)
"""Compare-and-set on a pending approval's version: its SET clause is the columns the
execution's parameters name besides `cas_id` and `cas_version`."""


async def get_approval(
    conn: AsyncConnection, approval_id: str, *, for_update: bool = False
) -> Approval | None:
    locked = for_update and conn.dialect.name == "postgresql"
    query = _APPROVAL_FOR_UPDATE if locked else _APPROVAL
    row = (await conn.execute(query, {"approval_id": approval_id})).mappings().first()
    if row is None:
        return None
    return Approval.from_row(row, await _votes(conn, approval_id))


async def _votes(conn: AsyncConnection, approval_id: str) -> tuple[Vote, ...]:
    rows = (await conn.execute(_VOTES, {"approval_id": approval_id})).mappings()
    return tuple(_vote(r) for r in rows)


async def approval_for_interrupt(conn: AsyncConnection, interrupt_id: str) -> Approval | None:
    row = (
        await conn.execute(
            select(t.approval_waiters.c.approval_id).where(
                t.approval_waiters.c.interrupt_id == interrupt_id
            )
        )
    ).first()
    return await get_approval(conn, row[0]) if row else None


async def pending_duplicate(
    conn: AsyncConnection, action: str, dedupe_key: str, *, service: str | None
) -> Approval | None:
    """The pending approval of `action` for `dedupe_key` that its owner may join, if any.

    A dedupe key belongs to whoever made it: `service`'s own requests (the approvals API, MCP)
    for a service, and the workflows' for a workflow (`service` None). A service never joins a
    workflow's pending request (one click would then act twice), nor takes a key a workflow
    will need (a person's request would be refused as a conflict), nor sees another's.

    On PostgreSQL the key stays locked until the caller's transaction ends, so two requests for
    one entity at the same moment cannot both find none and open two approvals (on SQLite the
    write transaction serializes them already).
    """
    owner = f"service:{service}" if service else "workflows"
    await hold(conn, "signoff.dedupe", owner, action, dedupe_key)
    row = (
        (
            await conn.execute(
                select(t.approvals).where(
                    t.approvals.c.action == action,
                    t.approvals.c.dedupe_key == dedupe_key,
                    t.approvals.c.status == "pending",
                    *_owned_by(service),
                )
            )
        )
        .mappings()
        .first()
    )
    return Approval.from_row(row) if row else None


def _owned_by(service: str | None) -> tuple[Any, ...]:
    """Where an approval belongs to `service` (its thread is `api.<service>.<hex>`), or to the
    workflows (`service` None: any run but an external approval's)."""
    a = t.approvals.c
    if service is None:
        return (a.workflow != EXTERNAL_WORKFLOW,)
    return (
        a.workflow == EXTERNAL_WORKFLOW,
        a.thread_id.startswith(f"api.{service}.", autoescape=True),
    )


async def insert_approval(conn: AsyncConnection, values: Mapping[str, Any]) -> None:
    await conn.execute(insert(t.approvals).values(**values))
    await add_waiter(
        conn,
        values["id"],
        values["thread_id"],
        values["interrupt_id"],
        values["fingerprint"],
        values["created_at"],
    )


async def add_waiter(
    conn: AsyncConnection,
    approval_id: str,
    thread_id: str,
    interrupt_id: str,
    fingerprint: str,
    now: float,
) -> None:
    await conn.execute(
        insert(t.approval_waiters).values(
            interrupt_id=interrupt_id,
            approval_id=approval_id,
            thread_id=thread_id,
            fingerprint=fingerprint,
            created_at=now,
        )
    )


async def waiters(conn: AsyncConnection, approval_id: str) -> list[tuple[str, str]]:
    rows = await conn.execute(_WAITERS, {"approval_id": approval_id})
    return [(r[0], r[1]) for r in rows]


async def settle(
    conn: AsyncConnection,
    approval: Approval,
    status: str,
    decision: Mapping[str, Any],
    now: float,
    reason: str | None = None,
    escalated: bool | None = None,
) -> bool:
    """Move a pending approval to `status` with compare-and-set on its version."""
    values: dict[str, Any] = {
        "status": status,
        "decision": dumps(decision),
        "decided_at": now,
        "updated_at": now,
        "reason": reason,
        "version": approval.version + 1,
    }
    return await _compare_and_set(conn, approval, values)


async def bump(conn: AsyncConnection, approval: Approval, now: float, **values: Any) -> bool:
    """Change fields of a pending approval with compare-and-set (reminders, escalation, votes)."""
    return await _compare_and_set(
        conn, approval, {"updated_at": now, "version": approval.version + 1, **values}
    )


async def _compare_and_set(
    conn: AsyncConnection, approval: Approval, values: Mapping[str, Any]
) -> bool:
    """Set `values` on `approval` if it is still pending at the version it was read at."""
    _check_columns(t.approvals, values)
    result = await conn.execute(
        _PENDING_AT_VERSION, {"cas_id": approval.id, "cas_version": approval.version, **values}
    )
    return result.rowcount == 1


async def insert_vote(
    conn: AsyncConnection,
    approval_id: str,
    user_id: str,
    decision: str,
    note: str,
    edits: Mapping[str, Any] | None,
    now: float,
    for_user: str | None = None,
) -> bool:
    """False when this user has voted on it already. `for_user`: the away approver a
    delegate votes for."""
    return await _insert_once(
        conn,
        t.votes,
        approval_id=approval_id,
        user_id=user_id,
        decision=decision,
        note=note,
        edits=dumps(dict(edits)) if edits else None,
        at=now,
        for_user=for_user,
    )


async def _insert_once(conn: AsyncConnection, table: Table, **values: Any) -> bool:
    """Insert a row unless a unique key already has one (False then), in one statement
    (`INSERT ... ON CONFLICT DO NOTHING`, on SQLite and PostgreSQL alike): the caller's
    transaction goes on either way. Other constraint violations still raise."""
    _check_columns(table, values)
    inserted = await conn.execute(_insert_once_statement(conn.dialect.name, table), values)
    return inserted.first() is not None


def _check_columns(table: Table, values: Mapping[str, Any]) -> None:
    """Refuse values for columns `table` does not have: executed as parameters, SQLAlchemy
    would leave them out of the statement without a word."""
    if not values.keys() <= _column_names(table):
        unknown = sorted(set(values) - _column_names(table))
        raise TypeError(f"table {table.name} has no column(s) {unknown}")


@functools.cache
def _column_names(table: Table) -> frozenset[str]:
    return frozenset(table.c.keys())


@functools.cache
def _insert_once_statement(dialect: str, table: Table) -> Any:
    """`INSERT ... ON CONFLICT DO NOTHING RETURNING <primary key>` into `table`, its columns
    those its execution's parameters name."""
    dialect_insert = pg_insert if dialect == "postgresql" else sqlite_insert
    # RETURNING, not rowcount: psycopg's async cursor through SQLAlchemy reports -1 here.
    return dialect_insert(table).on_conflict_do_nothing().returning(*table.primary_key.columns)


async def list_approvals(
    conn: AsyncConnection,
    *,
    statuses: Iterable[str] = ("pending",),
    thread_id: str | None = None,
    where: ColumnElement[bool] | None = None,
    limit: int = 200,
) -> list[Approval]:
    """Approvals in `statuses`, oldest first, at most `limit`, with their votes (two queries)."""
    query = select(t.approvals).where(t.approvals.c.status.in_(list(statuses)))
    if thread_id is not None:
        query = query.where(t.approvals.c.thread_id == thread_id)
    if where is not None:
        query = query.where(where)
    query = query.order_by(t.approvals.c.created_at).limit(limit)
    rows = (await conn.execute(query)).mappings().all()
    votes = await _votes_of(conn, [row["id"] for row in rows])
    return [Approval.from_row(row, votes.get(row["id"], ())) for row in rows]


async def _votes_of(conn: AsyncConnection, approval_ids: list[str]) -> dict[str, tuple[Vote, ...]]:
    """The votes of several approvals in one query (not one query per approval)."""
    found: dict[str, list[Vote]] = {}
    if approval_ids:
        rows = await conn.execute(
            select(t.votes).where(t.votes.c.approval_id.in_(approval_ids)).order_by(t.votes.c.id)
        )
        for r in rows.mappings():
            found.setdefault(r["approval_id"], []).append(_vote(r))
    return {k: tuple(v) for k, v in found.items()}


def _vote(r: Mapping[Any, Any]) -> Vote:
    return Vote(
        r["user_id"],
        r["decision"],
        r["note"],
        json.loads(r["edits"]) if r["edits"] else {},
        r["at"],
        r.get("for_user"),
    )


async def recent_decided(conn: AsyncConnection, limit: int = 20) -> list[Approval]:
    """The approvals decided last, newest first, with their votes: the values decided (an
    approver's edits applied), not those first proposed, in their titles and fields."""
    rows = (
        (
            await conn.execute(
                select(t.approvals)
                .where(t.approvals.c.status != "pending")
                .order_by(t.approvals.c.decided_at.desc())
                .limit(limit)
            )
        )
        .mappings()
        .all()
    )
    votes = await _votes_of(conn, [r["id"] for r in rows])
    return [Approval.from_row(r, votes.get(r["id"], ())) for r in rows]


async def due_approvals(conn: AsyncConnection, now: float, limit: int = 500) -> list[Approval]:
    """Pending approvals with a reminder, escalation or expiry due (indexed on status)."""
    c = t.approvals.c
    rows = (
        (
            await conn.execute(
                select(t.approvals)
                .where(
                    c.status == "pending",
                    or_(
                        c.expire_at <= now,
                        and_(c.escalate_at <= now, c.escalated.is_(False)),
                        and_(c.remind_at <= now, c.reminded_at.is_(None)),
                    ),
                )
                .order_by(c.created_at)
                .limit(limit)
            )
        )
        .mappings()
        .all()
    )
    votes = await _votes_of(conn, [r["id"] for r in rows])
    return [Approval.from_row(r, votes.get(r["id"], ())) for r in rows]


# ---- runs ------------------------------------------------------------------------------


async def insert_run(conn: AsyncConnection, **values: Any) -> bool:
    """False when a run with this thread id exists already."""
    return await _insert_once(conn, t.runs, **values)


async def get_run(conn: AsyncConnection, thread_id: str) -> RunRecord | None:
    """The run of `thread_id`, or None: the one place a run's row is read into a `RunRecord`."""
    row = (
        (await conn.execute(select(t.runs).where(t.runs.c.thread_id == thread_id)))
        .mappings()
        .first()
    )
    return RunRecord.from_row(row) if row is not None else None


async def move_run(
    conn: AsyncConnection, thread_id: str, to: RunStatus, now: float, **values: Any
) -> None:
    """Move run `thread_id` to status `to` (and set `values`), by compare-and-set on a status
    `RUN_MOVES` lets it move from. A run that is gone (purged) is left alone.

    Raises:
        RunStateError: the run is where it cannot move to `to` from (`check_run_move`).
    """
    sources = [status for status, moves in RUN_MOVES.items() if to in moves]
    c = t.runs.c
    while True:
        moved = await conn.execute(
            update(t.runs)
            .where(c.thread_id == thread_id, c.status.in_(sources))
            .values(status=to, updated_at=now, **values)
        )
        if moved.rowcount == 1:
            return
        run = await get_run(conn, thread_id)
        if run is None:
            return
        run.check_move(to)  # raises; had it moved in between, try again


async def count_approvals(conn: AsyncConnection, where: ColumnElement[bool]) -> int:
    return int(
        (
            await conn.execute(select(func.count()).select_from(t.approvals).where(where))
        ).scalar_one()
    )


async def count_by_status(conn: AsyncConnection) -> dict[str, int]:
    rows = await conn.execute(
        select(t.approvals.c.status, func.count()).group_by(t.approvals.c.status)
    )
    return {r[0]: r[1] for r in rows}


# ---- jobs ------------------------------------------------------------------------------


async def enqueue(
    conn: AsyncConnection,
    kind: str,
    key: str,
    payload: Mapping[str, Any],
    now: float,
    *,
    approval_id: str | None = None,
    thread_id: str | None = None,
) -> bool:
    """Add a job once: a second enqueue with the same key is ignored (returns False)."""
    return await _insert_once(
        conn,
        t.jobs,
        kind=kind,
        key=key,
        approval_id=approval_id,
        thread_id=thread_id,
        payload=dumps(dict(payload)),
        attempts=0,
        available_at=now,
        created_at=now,
    )


async def set_posted(
    conn: AsyncConnection, approval_id: str, channel: str, message_ts: str
) -> None:
    """Remember where the approval's card is (not a state change: no version bump)."""
    await conn.execute(
        update(t.approvals)
        .where(t.approvals.c.id == approval_id)
        .values(channel=channel, message_ts=message_ts)
    )


async def set_checked(conn: AsyncConnection, approval_id: str, checked: str) -> None:
    """Store what an approval's check read, and what came of it (`checked`, JSON)."""
    await conn.execute(
        update(t.approvals).where(t.approvals.c.id == approval_id).values(checked=checked)
    )
