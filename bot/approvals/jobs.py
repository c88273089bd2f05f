"""The job queue: what must happen after a commit (resume a thread, tell Slack), written in the
same transaction as what caused it and performed afterwards by a worker that leases it.

A job is taken with a compare-and-set (and `FOR UPDATE SKIP LOCKED` on PostgreSQL), held for a
lease, and marked done, or due again later, when the worker is through with it. A worker that
dies leaves its jobs to the next one once the lease runs out (at once for processes of this
host that are gone: `release_dead_leases`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from sqlalchemy import Select, bindparam, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Update

from . import store
from . import tables as t
from ._service_threads import service_of
from .events import CARD_UPDATES, Event, EventKind, EventSink, RetryLater, Undeliverable

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "CLAIM_CANDIDATES",
    "LEASE_SECONDS",
    "UNDELIVERABLE",
    "Job",
    "JobKind",
    "JobQueue",
    "Undelivered",
    "WebhookDelivery",
    "backoff",
]

log = logging.getLogger("signoff")

LEASE_SECONDS = 60.0
"""How long a claimed job is held before another worker may take it over."""
CLAIM_CANDIDATES = 16
"""How many due jobs a SQLite worker reads at once to pick one from (see `JobQueue.claim`)."""

UNDELIVERABLE = "undeliverable: "
"""How the last error of an event job the sink gave up on starts (then its details as JSON):
done, and listed by `JobQueue.undelivered` until `redeliver` queues it again."""

JobKind = Literal["resume", "event", "webhook"]
"""`resume`: answer a paused thread's interrupt with a decision. `event`: deliver an `Event`.
`webhook`: tell a service that the approval it asked for is settled (its `callback_url`)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One row of the `jobs` table, as a worker claimed it."""

    id: int
    """Increasing: events of a thread go out in this order."""
    kind: JobKind
    thread_id: str | None
    approval_id: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    """`resume`: `{"interrupt_id", "decision"}`; `event`: `{"kind", "data"}`; `webhook`:
    `{"url", "delivery_id"}`."""
    attempts: int = 0
    """How many times it was taken before this claim (0 the first time)."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Job:
        return cls(
            id=int(row["id"]),
            kind=row["kind"],
            thread_id=row["thread_id"],
            approval_id=row["approval_id"],
            payload=json.loads(row["payload"]),
            attempts=int(row["attempts"]),
        )


@dataclass(frozen=True, slots=True)
class Undelivered:
    """An event the sink gave up on (`Undeliverable`): what, where, which error, when."""

    job_id: int
    event: str
    """The event's kind (`approval_requested`: the card; `decided`: its update and replies)."""
    thread_id: str | None
    approval_id: str | None
    error: str
    """Slack's error code (`is_archived`)."""
    method: str
    """The Web API method Slack refused (`chat.postMessage`), or ""."""
    channel: str
    """Where it was to go, or ""."""
    at: float
    """When it was given up on (epoch seconds)."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Undelivered:
        try:
            details = json.loads(str(row["last_error"])[len(UNDELIVERABLE) :])
        except ValueError:
            details = {}
        details = details if isinstance(details, dict) else {}
        return cls(
            job_id=int(row["id"]),
            event=str(json.loads(row["payload"]).get("kind", "")),
            thread_id=row["thread_id"],
            approval_id=row["approval_id"],
            error=str(details.get("error", "")),
            method=str(details.get("method", "")),
            channel=str(details.get("channel", "")),
            at=float(row["done_at"]),
        )


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """A webhook job as `signoff show` tells it: where it goes, how many tries, what now."""

    delivery_id: str
    url: str
    tries: int
    """Tries made so far (one being made counts)."""
    state: Literal["delivered", "retrying", "given up"]
    """`delivered`: the receiver answered 2xx. `retrying`: due again at `next_try`. `given up`:
    its last try failed (`error`); nothing more is sent."""
    error: str | None
    """Why the last try failed (None once delivered, or before the first try)."""
    next_try: float | None
    """When it is tried next (epoch seconds), while `retrying`."""
    at: float | None
    """When it was delivered or given up on (epoch seconds)."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> WebhookDelivery:
        payload = json.loads(row["payload"])
        done = row["done_at"] is not None
        error = row["last_error"]
        return cls(
            delivery_id=str(payload.get("delivery_id", "")),
            url=str(payload.get("url", "")),
            tries=int(row["attempts"]),
            state=("given up" if error else "delivered") if done else "retrying",
            error=error,
            next_try=None if done else float(row["available_at"]),
            at=float(row["done_at"]) if done else None,
        )


def backoff(attempt: int, *, first: float, most: float) -> float:
    """How long to wait before try `attempt + 1`, in seconds: `first` doubled for each try made
    (`attempt`, from 0), never more than `most`. The one backoff of governance's retries."""
    return min(first * 2.0 ** min(attempt, 64), most)


def new_worker_id() -> str:
    """`host:pid:tag`: names this process to the others (see `_gone_from_this_host`)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class JobQueue:
    """The `jobs` table, as one worker process sees it."""

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        *,
        lease_seconds: float = LEASE_SECONDS,
        worker_id: str | None = None,
    ) -> None:
        self.db = db
        self.clock = clock
        self.lease_seconds = lease_seconds
        """How long a claimed job stays locked to this worker; past it, another may take it over."""
        self.worker_id = worker_id or new_worker_id()
        self.held: set[int] = set()
        """Ids of the jobs this process's workers hold right now."""

    # ---- enqueueing, inside the caller's transaction --------------------------------------

    async def resume(
        self,
        conn: AsyncConnection,
        now: float,
        *,
        thread_id: str,
        interrupt_id: str,
        approval_id: str,
        decision: Mapping[str, Any],
    ) -> None:
        """Enqueue the resume of `thread_id`'s interrupt with `decision` (once per interrupt)."""
        await store.enqueue(
            conn,
            "resume",
            f"resume:{interrupt_id}",
            {"interrupt_id": interrupt_id, "decision": dict(decision)},
            now,
            approval_id=approval_id,
            thread_id=thread_id,
        )

    async def event(
        self,
        conn: AsyncConnection,
        kind: EventKind,
        now: float,
        *,
        thread_id: str | None = None,
        approval_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Enqueue an event for the sink, delivered in order with the thread's others."""
        key = f"event:{kind}:{approval_id or thread_id}:{uuid.uuid4().hex}"
        await store.enqueue(
            conn,
            "event",
            key,
            {"kind": kind, "data": dict(data or {})},
            now,
            approval_id=approval_id,
            thread_id=thread_id,
        )

    async def webhooks(
        self, conn: AsyncConnection, now: float, *, approval_id: str, threads: list[str]
    ) -> None:
        """Enqueue, in the transaction that settles `approval_id`, a webhook for each of the
        waiting `threads` that a service started with a `callback_url` (one per thread and
        approval: its delivery id is derived from them, the same on every try)."""
        for thread_id in threads:
            if service_of(thread_id) is None:
                continue
            run = await store.get_run(conn, thread_id)
            url = run.inputs.get("callback_url") if run else None
            if not url:
                continue
            delivery_id = (
                "dlv_" + hashlib.sha256(f"{thread_id}\0{approval_id}".encode()).hexdigest()[:24]
            )
            await store.enqueue(
                conn,
                "webhook",
                f"webhook:{delivery_id}",
                {"url": url, "delivery_id": delivery_id},
                now,
                approval_id=approval_id,
                thread_id=thread_id,
            )

    # ---- claiming and finishing ----------------------------------------------------------

    async def claim(self, kinds: tuple[JobKind, ...], prefer: JobKind | None = None) -> Job | None:
        """Take the oldest due job of the first kind that has one (leased to this worker), or
        None; kind `prefer` is asked first, then `kinds` in order.

        Each kind is one walk of the pending-jobs index in `id` order that stops at the first
        due job, so a claim costs the same with a backlog of thousands as with none.
        PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas never wait on each other's picks.
        SQLite: the due jobs are found with a read (no write lock: most passes find nothing),
        then one is taken with a compare-and-set; jobs this process holds are skipped, so its
        workers do not race for the same one.
        """
        now = self.clock()
        order = sorted(kinds, key=lambda kind: kind != prefer)  # stable: `prefer`, then the rest
        if self.db.dialect == "postgresql":
            async with self.db.transaction() as conn:
                row = None
                for kind in order:
                    due = _DUE_LOCKED[kind]
                    row = (await conn.execute(due, {"now": now})).mappings().first()
                    if row is not None:
                        break
                if row is None:
                    return None
                job = Job.from_row(row)
                if (await conn.execute(_TAKE, self._take(job, now))).rowcount != 1:
                    return None
            self.held.add(job.id)
            return job
        async with self.db.read() as conn:
            candidates = [
                Job.from_row(row)
                for kind in order
                for row in (await conn.execute(_DUE[kind], {"now": now})).mappings().all()
            ]
        for job in candidates:
            if job.id in self.held:
                continue
            self.held.add(job.id)
            try:
                taken = await self.db.write(_TAKE, self._take(job, now)) == 1
            except BaseException:
                self.held.discard(job.id)
                raise
            if taken:
                return job
            self.held.discard(job.id)
        return None

    def _take(self, job: Job, now: float) -> dict[str, Any]:
        """`_TAKE`'s parameters: lease `job` to this worker if it is as it was read."""
        return {
            "job_id": job.id,
            "read_attempts": job.attempts,
            "now": now,
            "lease_until": now + self.lease_seconds,
            "worker": self.worker_id,
        }

    async def finish(
        self, job_id: int, *, error: str | None = None, retry_in: float | None = None
    ) -> None:
        """Mark a job done (or due again in `retry_in` seconds) in a transaction of its own."""
        await self.db.write(*finish_statement(job_id, self.clock(), error=error, retry_in=retry_in))

    async def deliver(self, job: Job, sink: EventSink) -> None:
        """Hand an event job to `sink`; done when it accepts, due again (backed off) if not."""
        event = Event(
            job.id,
            job.payload["kind"],
            job.thread_id,
            job.approval_id,
            job.payload["data"],
            attempt=job.attempts + 1,
            card_superseded=await self._card_update_queued(job),
        )
        try:
            await sink.deliver(event)
        except RetryLater as e:
            await self.finish(job.id, error=str(e), retry_in=max(e.seconds, 0.1))
        except Undeliverable as e:  # done, and marked for `undelivered` / `redeliver`
            await self.finish(job.id, error=UNDELIVERABLE + json.dumps(e.details, sort_keys=True))
        except Exception as e:  # noqa: BLE001 - retried with backoff, never lost
            delay = backoff(min(job.attempts, 8), first=1.0, most=300.0)
            log.warning("event %s (%s) failed, retrying in %.0fs: %s", job.id, event.kind, delay, e)
            await self.finish(job.id, error=f"{type(e).__name__}: {e}", retry_in=delay)
        else:
            await self.finish(job.id)

    async def _card_update_queued(self, job: Job) -> bool:
        """Whether a later event of `job`'s approval that updates its card is queued (not done):
        the thread's events go out in order, so it is delivered after `job`, from the
        approval's state then, and `job`'s own card update would be overwritten unseen. Read
        from the queue itself, so a restart in between loses nothing: the later job is there."""
        if job.approval_id is None or job.payload.get("kind") not in CARD_UPDATES + ("escalated",):
            return False
        later = _LATER_CARD_UPDATE[job.thread_id is None]
        params = {
            f"key_{kind}": _prefix(f"event:{kind}:{job.approval_id}:") for kind in CARD_UPDATES
        }
        async with self.db.read() as conn:
            return (
                await conn.scalar(later, {"id": job.id, "thread_id": job.thread_id, **params})
            ) is not None

    # ---- looking after the queue ---------------------------------------------------------

    async def resumes_due(self, approval_id: str) -> int:
        """How many resumes of `approval_id`'s waiting threads are not done yet."""
        j = t.jobs.c
        async with self.db.read() as conn:
            return (
                await conn.scalar(
                    select(func.count())
                    .select_from(t.jobs)
                    .where(j.kind == "resume", j.approval_id == approval_id, j.done_at.is_(None))
                )
                or 0
            )

    async def undelivered(self, thread_id: str | None = None) -> list[Undelivered]:
        """The events the sink gave up on (of one thread), oldest first."""
        async with self.db.read() as conn:
            rows = (await conn.execute(_undelivered(thread_id))).mappings().all()
        return [Undelivered.from_row(r) for r in rows]

    async def webhooks_of(self, thread_id: str) -> list[WebhookDelivery]:
        """The webhooks of `thread_id` (a service's `callback_url`), oldest first."""
        j = t.jobs.c
        query = select(t.jobs).where(j.kind == "webhook", j.thread_id == thread_id).order_by(j.id)
        async with self.db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [WebhookDelivery.from_row(r) for r in rows]

    async def redeliver_in(
        self, conn: AsyncConnection, target: str, now: float
    ) -> list[Undelivered]:
        """Queue again, inside the caller's transaction, the given-up events of `target` (a
        thread id, or a job id): due now, counted as a further attempt, so the sink first looks
        for what an earlier attempt did post (nothing is posted twice). Returns them."""
        j = t.jobs.c
        which = j.thread_id == target
        if target.isdigit():
            which = which | (j.id == int(target))
        rows = (await conn.execute(_undelivered(None).where(which))).mappings().all()
        picked = [Undelivered.from_row(r) for r in rows]
        if picked:
            await conn.execute(
                update(t.jobs)
                .where(j.id.in_([u.job_id for u in picked]), j.done_at.is_not(None))
                .values(done_at=None, available_at=now, last_error="queued again: redeliver")
            )
        return picked

    async def pending_of(self, ids: set[int]) -> set[int]:
        """Which of the jobs `ids` are not done yet."""
        j = t.jobs.c
        async with self.db.read() as conn:
            rows = await conn.execute(select(j.id).where(j.id.in_(ids), j.done_at.is_(None)))
            return {int(r) for r in rows.scalars()}

    async def due_now(self, reason: str) -> int:
        """Make the waiting jobs whose last error starts with `reason` due at once (what held
        them back is fixed: e.g. the bot token Slack refused was replaced, and the bot
        restarted); return how many."""
        j = t.jobs.c
        async with self.db.transaction() as conn:
            found = await conn.execute(
                update(t.jobs)
                .where(j.done_at.is_(None), j.last_error.startswith(reason, autoescape=True))
                .values(available_at=self.clock())
            )
        return int(found.rowcount)

    async def release_dead_leases(self) -> int:
        """Give back at once the jobs leased to processes of this host that are gone (killed,
        crashed), instead of after their lease: a bot restarted after a crash picks up where
        its predecessor stopped. Processes of other hosts are waited out (their lease). Returns
        how many jobs went back to the queue."""
        j = t.jobs.c
        async with self.db.read() as conn:
            holders = (
                (
                    await conn.execute(
                        select(j.locked_by)
                        .where(j.done_at.is_(None), j.locked_by.is_not(None))
                        .distinct()
                    )
                )
                .scalars()
                .all()
            )
        dead = [h for h in holders if _gone_from_this_host(h)]
        if not dead:
            return 0
        async with self.db.transaction() as conn:
            released = await conn.execute(
                update(t.jobs)
                .where(j.done_at.is_(None), j.locked_by.in_(dead))
                .values(locked_until=None, locked_by=None)
            )
        log.warning(
            "took back %d job(s) from process(es) that died: %s", released.rowcount, ", ".join(dead)
        )
        return int(released.rowcount)


def _undelivered(thread_id: str | None) -> Select[Any]:
    j = t.jobs.c
    query = select(t.jobs).where(
        j.kind == "event",
        j.done_at.is_not(None),
        j.last_error.startswith(UNDELIVERABLE, autoescape=True),
    )
    if thread_id is not None:
        query = query.where(j.thread_id == thread_id)
    return query.order_by(j.id)


def _due_jobs(kind: JobKind) -> Select[Any]:
    """Due (at parameter `now`), unleased jobs of `kind`, oldest first (through the index
    `ix_jobs_pending`); a thread's events only once the ones before them are done, so they go
    out in order."""
    j = t.jobs.c
    now = bindparam("now", type_=t.jobs.c.available_at.type)
    due = select(t.jobs).where(
        j.done_at.is_(None),
        j.kind == kind,
        j.available_at <= now,
        (j.locked_until.is_(None)) | (j.locked_until < now),
    )
    if kind == "event":
        earlier = t.jobs.alias("earlier")
        due = due.where(
            ~exists().where(
                earlier.c.kind == "event",
                earlier.c.thread_id == j.thread_id,
                earlier.c.id < j.id,
                earlier.c.done_at.is_(None),
            )
        )
    return due.order_by(j.id)


# A worker's statements, built once and executed with their values (see `store`); every job
# runs them: the read of the due jobs and the take (its claim), the look for a later update
# of its card (an event's delivery), its finish.
_KINDS: tuple[JobKind, ...] = get_args(JobKind)
_DUE = {kind: _due_jobs(kind).limit(CLAIM_CANDIDATES) for kind in _KINDS}
_DUE_LOCKED = {
    kind: _due_jobs(kind).limit(1).with_for_update(skip_locked=True, of=t.jobs) for kind in _KINDS
}
_TAKE = (
    update(t.jobs)
    .where(
        t.jobs.c.id == bindparam("job_id"),
        t.jobs.c.done_at.is_(None),
        t.jobs.c.attempts == bindparam("read_attempts"),
        t.jobs.c.available_at <= bindparam("now"),
    )
    .where((t.jobs.c.locked_until.is_(None)) | (t.jobs.c.locked_until < bindparam("now")))
    .values(
        locked_until=bindparam("lease_until"),
        locked_by=bindparam("worker"),
        attempts=t.jobs.c.attempts + 1,
    )
)
"""Lease a job to a worker if it is still as it was read (nobody took it since)."""


def _later_card_update(thread_is_null: bool) -> Select[Any]:
    j = t.jobs.c
    return (
        select(j.id)
        .where(
            j.kind == "event",
            j.thread_id.is_(None) if thread_is_null else j.thread_id == bindparam("thread_id"),
            j.id > bindparam("id"),
            j.done_at.is_(None),
            or_(*(j.key.like(bindparam(f"key_{kind}"), escape="/") for kind in CARD_UPDATES)),
        )
        .limit(1)
    )


_LATER_CARD_UPDATE = {null: _later_card_update(null) for null in (False, True)}
"""A queued event after parameter `id`, of its thread, whose key is one of the `key_<kind>`
patterns (`_prefix`): keyed by whether the thread is None."""


def _prefix(text: str) -> str:
    """A LIKE pattern (escape character `/`) matching what starts with `text`."""
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


async def finish_in(
    conn: AsyncConnection,
    job_id: int,
    now: float,
    *,
    error: str | None = None,
    retry_in: float | None = None,
) -> None:
    """Mark a job done (or due again in `retry_in` seconds) inside the caller's transaction."""
    await conn.execute(*finish_statement(job_id, now, error=error, retry_in=retry_in))


def _finish(*, done: bool) -> Update:
    at = "done_at" if done else "available_at"
    return (
        update(t.jobs)
        .where(t.jobs.c.id == bindparam("job_id"))
        .values(
            {
                "locked_until": None,
                "locked_by": None,
                "last_error": bindparam("error"),
                at: bindparam("at"),
            }
        )
    )


_DONE = _finish(done=True)
_AGAIN = _finish(done=False)


def finish_statement(
    job_id: int, now: float, *, error: str | None = None, retry_in: float | None = None
) -> tuple[Update, dict[str, Any]]:
    """Let go of a job's lease: done, or due again in `retry_in` seconds (a statement and its
    parameters)."""
    params = {"job_id": job_id, "error": error}
    if retry_in is None:
        return _DONE, {**params, "at": now}
    return _AGAIN, {**params, "at": now + retry_in}


def _gone_from_this_host(worker_id: str) -> bool:
    """True when `worker_id` (`host:pid:tag`) names a process of this host that no longer runs."""
    parts = worker_id.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it runs, as another user
        return False
    try:  # killed but not yet reaped by its parent: a zombie runs nothing
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
