"""The audit log: an append-only, hash-chained record of everything decided.

Each row of `audit_events` holds the hash of the row before it (`prev_hash`; 64 zeros for the
first row) and its own `hash`:

    hash = H(prev_hash + canonical JSON of {seq, at, kind, approval_id, thread_id, actor, data})

where H is HMAC-SHA256 keyed with `SIGNOFF_AUDIT_KEY` when one is configured, and plain SHA-256
otherwise. Canonical JSON: keys sorted, no spaces, UTF-8, no NaN or infinity.

What `verify` detects: a row whose content was changed (its hash no longer matches), a row
removed from the middle or the start (the next row's `prev_hash` no longer matches), and rows
reordered (their `seq` is part of what is hashed). It reports the first such row.

What a hash chain cannot detect on its own:

- Truncation: deleting the newest rows leaves a shorter chain that is still valid. Anchor it:
  `verify` returns the head (`head_seq`, `head_hash`); `signoff audit verify` prints it. Record
  it outside the database (a ticket, a log shipped elsewhere, a signed message), and later pass
  it back as `verify(..., anchor=(seq, hash))`: a log that no longer contains that row with that
  hash fails.
- A rewrite of the whole chain from some row on, by someone who can compute the hashes. Without a
  key anyone with write access can; with `SIGNOFF_AUDIT_KEY` (kept out of the database) only
  someone who also has the key can. An anchor catches that too.

Writing and linking are two steps, so that writers never wait on each other (every click,
resume and sweep records something; one lock on the chain's head held to each writer's commit
made them queue):

1. `append` inserts the entry into `audit_inbox` inside the caller's transaction: it commits or
   rolls back with the caller's other writes, and takes no lock.
2. `link` moves committed entries from the inbox into `audit_events`, oldest first, giving each
   its `seq` and hashes. One linker runs at a time (a transaction advisory lock on PostgreSQL;
   SQLite's write lock), so the chain never forks; `seq` is the primary key, so two linkers
   that were somehow not serialized would fail on it rather than fork. The bot links every
   quarter of a second (`bot.scheduler.JobRunner`), the sweep and every `signoff` command too.

An entry is covered by the chain from when it is linked; until then (normally well under a
second) it sits in the inbox, where someone with write access to the database could change it
unseen. `verify` counts what is still waiting (`AuditReport.unlinked`); `signoff audit verify`
links first.

Refusals (`refusal`): the first of a kind from a source is an entry at once; repeats within
`repeat_window` seconds are one entry (`count`, `first_at`, `last_at`) once it is over
(`_audit_repeats`). A refused body is never stored, only its size and digest.

Secrets: `data` is stored as given. Callers redact secret fields before appending (policy marks
them; the log keeps their hash).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO, get_args

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ._audit_kinds import AuditKind
from ._audit_repeats import REPEAT_WINDOW, Repeats, bounded, closed_windows, closing, count_repeat
from ._canonical import canonical_json
from ._locks import hold
from ._service_threads import service_of
from .tables import audit_events, audit_inbox

__all__ = [
    "EVENT_KINDS",
    "GENESIS_HASH",
    "SETTLING_KINDS",
    "AuditKind",
    "AuditLog",
    "AuditReport",
    "Settlement",
]


EVENT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))

SETTLING_KINDS: frozenset[str] = frozenset(
    {"approved", "rejected", "expired", "auto_approved", "grant_used", "denied", "conflict"}
    | {"check_failed"}
)
"""The kinds of entry that settle an approval: written in the transaction that settles it."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """How the audit log says an approval was settled (`AuditLog.settlement`)."""

    kind: str
    """One of `SETTLING_KINDS`."""
    data: dict[str, Any]
    """The entry's details (`edits` for a vote's approval, `outcome` for an expiry)."""
    intact: bool
    """False when the entry is on the chain but no longer matches its hash (it was altered)."""

    @property
    def approved(self) -> bool:
        """Whether the workflow goes on with the action."""
        if self.kind == "expired":
            return self.data.get("outcome") == "approve"
        return self.kind in ("approved", "auto_approved", "grant_used")

    @property
    def edits(self) -> dict[str, Any]:
        """The approvers' edits the decision carries ({} when none)."""
        edits = self.data.get("edits")
        return dict(edits) if isinstance(edits, Mapping) and self.approved else {}


GENESIS_HASH = "0" * 64
"""The `prev_hash` of the first row."""

KEY_ENV = "SIGNOFF_AUDIT_KEY"

_LINK_LOCK = "signoff.audit.append"
"""The advisory lock that serializes linkers on PostgreSQL (held until the transaction ends)."""

LINK_BATCH = 500
"""Inbox entries `link` moves in one transaction."""

_BATCH = 1000  # rows per query when verifying or exporting
_REORDER_WINDOW = 1000  # how far `verify` looks for the place a misplaced row came from


@dataclass(frozen=True)
class AuditReport:
    """What `AuditLog.verify` found."""

    ok: bool
    """True when every row checked is intact and linked to the one before it."""
    checked: int
    """Rows checked (all of them when `ok`; up to and including the first bad one otherwise)."""
    first_bad_seq: int | None = None
    """The `seq` of the first row found altered, or after which rows were removed/reordered."""
    problem: str | None = None
    """What is wrong, in a sentence, e.g. "row 17 was altered: its hash does not match ..."."""
    head_seq: int | None = None
    """The newest row's `seq` (when `ok`): record it with `head_hash` to detect truncation."""
    head_hash: str | None = None
    """The newest row's hash (when `ok`)."""
    unlinked: int = 0
    """Entries committed but still in the inbox, not covered by the chain yet (`link` them)."""


def _inbox_row(
    kind: AuditKind,
    *,
    approval_id: str | None,
    thread_id: str | None,
    actor: str | None,
    data: Mapping[str, Any],
    at: float | None = None,
) -> dict[str, Any]:
    """The `audit_inbox` row of one event (`AuditLog.append`), checked."""
    if kind not in EVENT_KINDS:
        raise ValueError(
            f"unknown audit event kind {kind!r}; expected one of {sorted(EVENT_KINDS)}"
        )
    when = time.time() if at is None else float(at)
    if not math.isfinite(when):
        raise ValueError(f"audit event time must be a finite number, not {at!r}")
    what = f"data of audit event {kind!r}"
    service = service_of(thread_id)
    if service is not None:  # a run an outside service asked for: the entry names it
        data = {**data, "service": service}
    # Through JSON and back, so what is hashed is exactly what `verify` will read back
    # (e.g. integer keys become strings before they are sorted).
    data_json = _canonical(json.loads(_canonical(dict(data), what=what)), what=what)
    return {
        "at": when, "kind": kind, "approval_id": approval_id, "thread_id": thread_id,
        "actor": actor, "data": data_json,
    }  # fmt: skip


class AuditLog:
    """Appends to, verifies and exports the hash-chained `audit_events` table.

    Args:
        key: the HMAC key; None for plain SHA-256. Verify with the key the log was written
            with: another key (or none) makes every row fail.
        repeat_window: seconds in which a refusal repeated from one source is counted rather
            than logged again (`refusal`).
    """

    def __init__(self, key: bytes | None = None, *, repeat_window: float = REPEAT_WINDOW) -> None:
        self._key = key or None
        self.repeat_window = repeat_window

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AuditLog:
        """An `AuditLog` keyed by `SIGNOFF_AUDIT_KEY` (UTF-8) when it is set and not empty."""
        value = (os.environ if environ is None else environ).get(KEY_ENV, "")
        return cls(value.encode() if value else None)

    @property
    def redaction_key(self) -> bytes | None:
        """The key secret fields are hashed with when redacted (the audit key), or None."""
        return self._key

    @property
    def keyed(self) -> bool:
        """Whether hashes are HMAC-SHA256 (True) or plain SHA-256 (False)."""
        return self._key is not None

    def __repr__(self) -> str:  # never the key itself
        return f"AuditLog({'HMAC-SHA256, keyed' if self.keyed else 'SHA-256, no key'})"

    # ---- hashing ------------------------------------------------------------------------

    def _hash(self, prev_hash: str, content: str) -> str:
        message = prev_hash.encode("ascii") + content.encode("utf-8")
        if self._key is not None:
            return hmac.new(self._key, message, hashlib.sha256).hexdigest()
        return hashlib.sha256(message).hexdigest()

    # ---- writing ------------------------------------------------------------------------

    async def append(
        self,
        conn: AsyncConnection,
        kind: AuditKind,
        *,
        approval_id: str | None = None,
        thread_id: str | None = None,
        actor: str | None = None,
        data: Mapping[str, Any],
        at: float | None = None,
    ) -> None:
        """Write one event inside the caller's (write) transaction, for `link` to chain.

        It commits with the caller's other writes, or not at all, and waits on no other writer.

        Args:
            conn: a connection in a write transaction (`Database.transaction()`).
            kind: what happened; one of `AuditKind`.
            approval_id, thread_id, actor: who and what it concerns (user id, or a rule name).
            data: JSON-serializable details, secrets already redacted. For a thread an
                outside service started (`api.<service>.…`), `service` is added to it.
            at: seconds since the epoch (default: now).

        Raises:
            ValueError: `kind` is not an `AuditKind`, or `data` holds NaN or infinity.
            TypeError: `data` holds something JSON cannot represent.
        """
        await conn.execute(
            audit_inbox.insert().values(
                **_inbox_row(
                    kind,
                    approval_id=approval_id,
                    thread_id=thread_id,
                    actor=actor,
                    data=self.stamped(data),
                    at=at,
                )
            )
        )

    async def refusal(
        self,
        conn: AsyncConnection,
        kind: AuditKind,
        *,
        actor: str | None,
        source: str,
        refusal: str,
        data: Mapping[str, Any],
        now: float,
    ) -> bool:
        """Record a refusal (`refusal`: `unauthenticated`, `InvalidInputError`, ...) from
        `source` (a service, an address) in the caller's write transaction: logged when the
        first in `repeat_window` seconds, else counted (module docstring); what a caller sent
        cut to size (`bounded`). Returns True when it was logged, False when counted."""
        data = bounded(self.stamped(data))
        counted, closed = await count_repeat(
            conn, kind=kind, actor=actor, source=source, refusal=refusal, data=data,
            now=now, window=self.repeat_window,
        )  # fmt: skip
        await self._append_repeats(conn, closed)
        if not counted:
            await self.append(conn, kind, actor=actor, data=data, at=now)
        return not counted

    async def _append_repeats(self, conn: AsyncConnection, closed: list[Repeats]) -> None:
        rows = [
            _inbox_row(
                r.kind, approval_id=None, thread_id=None, actor=r.actor, data=r.data, at=r.at
            )
            for r in closed
        ]
        if rows:
            await conn.execute(audit_inbox.insert(), rows)

    def stamped(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """`data` as every entry of this log writes it (`append`, `append_many`): as given.
        A log that marks where its entries came from overrides it (`"via": "cli"`)."""
        return data

    async def append_many(
        self,
        conn: AsyncConnection,
        entries: list[tuple[AuditKind, Mapping[str, Any]]],
        *,
        approval_id: str | None = None,
        thread_id: str | None = None,
        actor: str | None = None,
    ) -> None:
        """`append` for several events about one approval, in order, in one statement (a vote's
        entry and the decision it made: one round trip to the database fewer while the vote
        holds SQLite's write lock).

        Raises:
            ValueError, TypeError: as `append`; then none of them is written.
        """
        rows = [
            _inbox_row(
                kind,
                approval_id=approval_id,
                thread_id=thread_id,
                actor=actor,
                data=self.stamped(data),
            )
            for kind, data in entries
        ]
        if rows:
            await conn.execute(audit_inbox.insert(), rows)

    async def link(
        self, conn: AsyncConnection, *, limit: int = LINK_BATCH, now: float | None = None
    ) -> int:
        """Move up to `limit` committed inbox entries, oldest first, into the chain; return how
        many. First, the refusals' windows that are over (at `now`, default the time now)
        become their entries in the inbox. Call it in a write transaction of its own
        (`Database.transaction()`): on PostgreSQL it holds the linkers' lock until that
        transaction ends."""
        await hold(conn, _LINK_LOCK)
        await self._append_repeats(
            conn, await closed_windows(conn, time.time() if now is None else now)
        )
        oldest = sa.select(audit_inbox.c.id).order_by(audit_inbox.c.id).limit(limit)
        taken = (
            await conn.execute(
                sa.delete(audit_inbox)
                .where(audit_inbox.c.id.in_(oldest.scalar_subquery()))
                .returning(*audit_inbox.c)
            )
        ).all()
        if not taken:
            return 0
        last = (
            await conn.execute(
                sa.select(audit_events.c.seq, audit_events.c.hash)
                .order_by(audit_events.c.seq.desc())
                .limit(1)
            )
        ).first()
        seq, prev_hash = (0, GENESIS_HASH) if last is None else (last.seq, last.hash)
        rows = []
        for entry in sorted(taken, key=lambda e: e.id):
            seq += 1
            new_hash = self._hash(prev_hash, _content(entry, seq, json.loads(entry.data)))
            rows.append(
                {
                    "seq": seq, "at": entry.at, "kind": entry.kind, "approval_id": entry.approval_id,
                    "thread_id": entry.thread_id, "actor": entry.actor, "data": entry.data,
                    "prev_hash": prev_hash, "hash": new_hash,
                }
            )  # fmt: skip
            prev_hash = new_hash
        await conn.execute(audit_events.insert(), rows)
        return len(rows)

    async def settlement(self, conn: AsyncConnection, approval_id: str) -> Settlement | None:
        """The entry that settled `approval_id`, or None when the log has none.

        Read from the chain, and checked against its hash there (`Settlement.intact`); from the
        inbox when it is not linked yet (written by the same commit as the settlement).
        """
        # The inbox first: a link that commits in between moves the entry into the chain,
        # where the second read (a later snapshot on PostgreSQL) finds it.
        waiting = (
            await conn.execute(
                sa.select(audit_inbox)
                .where(
                    audit_inbox.c.approval_id == approval_id,
                    audit_inbox.c.kind.in_(sorted(SETTLING_KINDS)),
                )
                .order_by(audit_inbox.c.id)
                .limit(1)
            )
        ).first()
        row = (
            await conn.execute(
                sa.select(audit_events)
                .where(
                    audit_events.c.approval_id == approval_id,
                    audit_events.c.kind.in_(sorted(SETTLING_KINDS)),
                )
                .order_by(audit_events.c.seq)
                .limit(1)
            )
        ).first()
        intact = row is None or self._row_hash(row, row.seq) == row.hash
        if row is None:
            row = waiting
        if row is None:
            return None
        try:
            data = json.loads(row.data)
        except ValueError:
            data, intact = {}, False
        return Settlement(row.kind, data if isinstance(data, dict) else {}, intact)

    async def recorded(
        self,
        conn: AsyncConnection,
        kind: AuditKind,
        *,
        thread_id: str,
        approval_id: str | None,
        **data: Any,
    ) -> bool:
        """Whether an entry of `kind` on this thread and approval, whose data holds `data`, is
        on the log (linked or still in the inbox): for entries that must be written once, by
        whichever attempt at the work gets to commit first."""
        found = []
        for table in (audit_inbox, audit_events):  # the inbox first, as in `settlement`
            rows = await conn.execute(
                sa.select(table.c.data).where(
                    table.c.kind == kind,
                    table.c.thread_id == thread_id,
                    table.c.approval_id.is_(None)
                    if approval_id is None
                    else table.c.approval_id == approval_id,
                )
            )
            found += [r.data for r in rows]
        for text in found:
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            if isinstance(entry, dict) and all(entry.get(k) == v for k, v in data.items()):
                return True
        return False

    async def unlinked(self, conn: AsyncConnection, *, now: float | None = None) -> int:
        """How many committed entries wait to be linked: in the inbox, and the refusals'
        windows that are over (at `now`, default the time now) with repeats to write."""
        waiting = await conn.scalar(sa.select(sa.func.count()).select_from(audit_inbox)) or 0
        return waiting + await closing(conn, time.time() if now is None else now)

    # ---- reading ------------------------------------------------------------------------

    async def verify(
        self,
        conn_or_engine: AsyncConnection | AsyncEngine,
        *,
        anchor: tuple[int, str] | None = None,
    ) -> AuditReport:
        """Walk the chain from the first row and report the first row that is wrong.

        Args:
            conn_or_engine: where to read (an engine is read through one connection).
            anchor: `(seq, hash)` of a head recorded earlier; the log must still hold it.

        Returns:
            An `AuditReport`; `ok` is False at the first row altered, removed or reordered
            (see the module docstring for what a chain cannot detect).
        """
        async with _reading(conn_or_engine) as conn:
            report = await self._verify(conn, anchor)
            unlinked = await self.unlinked(conn)
        return dataclasses.replace(report, unlinked=unlinked) if unlinked else report

    async def _verify(self, conn: AsyncConnection, anchor: tuple[int, str] | None) -> AuditReport:
        checked = 0
        prev: Any = None  # the previous row, intact and linked
        anchor_seen = False
        async with aclosing(_rows(conn)) as rows:
            async for row in rows:
                checked += 1
                if self._row_hash(row, row.seq) != row.hash:
                    problem = await self._bad_hash(row, first=prev is None, following=rows)
                    return _bad(checked, row.seq, problem)
                if row.prev_hash != (GENESIS_HASH if prev is None else prev.hash):
                    return _bad(checked, row.seq, _unlinked(row, prev))
                if anchor is not None and row.seq == anchor[0]:
                    if row.hash != anchor[1]:
                        return _bad(
                            checked,
                            row.seq,
                            f"row {row.seq} does not have the anchored hash {anchor[1]}: the "
                            f"log was rewritten from row {row.seq} or earlier",
                        )
                    anchor_seen = True
                prev = row
        if anchor is not None and not anchor_seen:
            last = prev.seq if prev is not None else 0
            return _bad(
                checked,
                anchor[0],
                f"the anchored row {anchor[0]} is missing (the log ends at row {last}): "
                "the newest rows were removed",
            )
        return AuditReport(
            ok=True,
            checked=checked,
            head_seq=prev.seq if prev is not None else None,
            head_hash=prev.hash if prev is not None else None,
        )

    def _row_hash(self, row: Any, seq: int) -> str | None:
        """The hash `row` would have at `seq` (None: its data is not JSON any more)."""
        try:
            data = json.loads(row.data)
        except ValueError:
            return None
        return self._hash(row.prev_hash, _content(row, seq, data))

    async def _bad_hash(self, row: Any, *, first: bool, following: AsyncIterator[Any]) -> str:
        """Why `row` does not match its hash: moved, another key, or altered."""
        seq = row.seq
        for other in _nearby(seq):
            if self._row_hash(row, other) == row.hash:
                return f"row {seq} holds the content of row {other}: rows were reordered"
        if first:
            # Rows before this one verified with this key, unless it is the first: a first row
            # and the rows after it that fail while still linked mean another key, not edits.
            linked_failures, prev = 0, row
            async for nxt in following:
                if nxt.prev_hash != prev.hash or self._row_hash(nxt, nxt.seq) == nxt.hash:
                    break
                linked_failures, prev = linked_failures + 1, nxt
                if linked_failures == 3:
                    break
            if linked_failures:
                return (
                    f"row {seq} was altered: its hash does not match its content, nor do the "
                    f"next rows', though the rows are linked; the log was probably written "
                    f"with a different {KEY_ENV} than the one verifying it "
                    f"({'a key' if self.keyed else 'no key'})"
                )
        return f"row {seq} was altered: its hash does not match its content"

    async def export(self, conn_or_engine: AsyncConnection | AsyncEngine, out: TextIO) -> int:
        """Write every event, oldest first, as one JSON object per line; return how many.

        Each line has `seq`, `at`, `kind`, `approval_id`, `thread_id`, `actor`, `data` (the
        object, not its text), `prev_hash` and `hash`, so the export can be verified offline.
        """
        count = 0
        async with _reading(conn_or_engine) as conn:
            async for row in _rows(conn):
                try:
                    data: Any = json.loads(row.data)
                except ValueError:
                    data = row.data  # exported as stored; `verify` reports the row
                record = {
                    "seq": row.seq,
                    "at": row.at,
                    "kind": row.kind,
                    "approval_id": row.approval_id,
                    "thread_id": row.thread_id,
                    "actor": row.actor,
                    "data": data,
                    "prev_hash": row.prev_hash,
                    "hash": row.hash,
                }
                out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                count += 1
        return count


# ---- helpers ----------------------------------------------------------------------------


def _canonical(value: Any, *, what: str) -> str:
    try:
        return canonical_json(value)
    except ValueError as e:
        raise ValueError(f"{what} holds NaN or infinity, which JSON cannot represent") from e
    except TypeError as e:
        raise TypeError(f"{what} is not JSON-serializable: {e}") from e


def _content(row: Any, seq: int, data: Any) -> str:
    """The canonical JSON that is hashed for an event."""
    return _canonical(
        {
            "seq": seq,
            "at": row.at,
            "kind": row.kind,
            "approval_id": row.approval_id,
            "thread_id": row.thread_id,
            "actor": row.actor,
            "data": data,
        },
        what="audit event",
    )


def _nearby(seq: int) -> list[int]:
    """Other seqs, nearest first, that a misplaced row may have come from."""
    out: list[int] = []
    for d in range(1, _REORDER_WINDOW + 1):
        out.extend(s for s in (seq + d, seq - d) if s >= 1)
    return out


def _bad(checked: int, seq: int, problem: str) -> AuditReport:
    return AuditReport(ok=False, checked=checked, first_bad_seq=seq, problem=problem)


def _unlinked(row: Any, prev: Any) -> str:
    if prev is None:
        return (
            f"a row before row {row.seq} was removed or reordered: row {row.seq} is the first "
            "row, but its prev_hash is not the genesis hash"
        )
    missing = range(prev.seq + 1, row.seq)
    if len(missing) == 1:
        gap = f" (row {missing[0]} is missing)"
    elif missing:
        gap = f" (rows {missing[0]} to {missing[-1]} are missing)"
    else:
        gap = ""
    return (
        f"a row before row {row.seq} was removed or reordered: its prev_hash does not match "
        f"the hash of row {prev.seq}{gap}"
    )


@asynccontextmanager
async def _reading(conn_or_engine: AsyncConnection | AsyncEngine) -> AsyncIterator[AsyncConnection]:
    if isinstance(conn_or_engine, AsyncConnection):
        yield conn_or_engine
        return
    # Read-only, so that a long verify does not hold SQLite's write lock: SQLSaver's engines
    # (which `bot.approvals.db.Database` uses) begin with a deferred BEGIN under this option.
    async with conn_or_engine.execution_options(signoff_read=True).connect() as conn:
        yield conn


async def _rows(conn: AsyncConnection) -> AsyncGenerator[Any, None]:
    """Every row in `seq` order, `_BATCH` at a time (constant memory on a long log)."""
    last = 0
    while True:
        result = await conn.execute(
            sa.select(audit_events)
            .where(audit_events.c.seq > last)
            .order_by(audit_events.c.seq)
            .limit(_BATCH)
        )
        rows = result.all()
        for row in rows:
            yield row
        if len(rows) < _BATCH:
            return
        last = rows[-1].seq
