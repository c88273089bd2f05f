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

Appends are serialized, so the chain never forks: on PostgreSQL `append` takes a transaction
advisory lock before reading the last hash; on SQLite the caller's transaction
(`Database.transaction()`, `BEGIN IMMEDIATE`) already holds the file's write lock. `seq` is the
primary key and is chosen by `append`, so two appends that were somehow not serialized would
fail on it rather than fork.

Secrets: `data` is stored as given. Callers redact secret fields before appending (policy marks
them; the log keeps their hash).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TextIO, get_args

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .tables import audit_events

__all__ = ["EVENT_KINDS", "GENESIS_HASH", "AuditKind", "AuditLog", "AuditReport"]

AuditKind = Literal[
    "requested",  # an approval was requested (payload, approvers, deadlines)
    "denied",  # policy denied the action outright (unlisted action, policy error)
    "auto_approved",  # an auto-approval rule decided it (the rule is the actor)
    "vote",  # a person voted (approve or reject, note, edits)
    "approved",  # the approval reached its quorum
    "rejected",  # the approval was rejected
    "expired",  # the approval passed its deadline unanswered (and its outcome)
    "escalated",  # the escalation approvers were added
    "reminded",  # the approvers were reminded
    "edited",  # an approver changed editable fields (before and after)
    "resumed",  # the paused graph was resumed with the decision
    "cancelled",  # the approval was cancelled (its run ended or was withdrawn)
    "conflict",  # the same dedupe key was proposed with different arguments
    "run_started",  # a workflow run was started (by whom, with what input)
    "run_completed",  # a run finished
    "run_failed",  # a run failed (the error)
    "outcome_unknown",  # a side effect was interrupted: a person must check what happened
    "purged",  # settled approvals or runs were deleted by retention
]
"""What an audit event records; one line each above."""

EVENT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))

GENESIS_HASH = "0" * 64
"""The `prev_hash` of the first row."""

KEY_ENV = "SIGNOFF_AUDIT_KEY"

_APPEND_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"signoff.audit.append").digest()[:8], "big", signed=True
)
"""PostgreSQL advisory lock that serializes appends (held until the transaction ends)."""

_HEADS: weakref.WeakKeyDictionary[Any, tuple[int, str]] = weakref.WeakKeyDictionary()
"""The chain's head (seq, hash) as left by the last append in each open transaction (keyed by
SQLAlchemy's root transaction, so it goes with it), shared by every `AuditLog` of the process."""

_BATCH = 1000  # rows per query when verifying or exporting
_REORDER_WINDOW = 1000  # how far `verify` looks for the place a misplaced row came from


@dataclass(frozen=True)
class _Event:
    at: float
    kind: str
    approval_id: str | None
    thread_id: str | None
    actor: str | None


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


class AuditLog:
    """Appends to, verifies and exports the hash-chained `audit_events` table.

    Args:
        key: the HMAC key; None for plain SHA-256. Verify with the key the log was written
            with: another key (or none) makes every row fail.
    """

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or None

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
    ) -> int:
        """Append one event inside the caller's (write) transaction; return its `seq`.

        It commits with the caller's other writes, or not at all. On PostgreSQL the append
        lock is held until that transaction ends, so keep the transaction short.

        Args:
            conn: a connection in a write transaction (`Database.transaction()`).
            kind: what happened; one of `AuditKind`.
            approval_id, thread_id, actor: who and what it concerns (user id, or a rule name).
            data: JSON-serializable details, secrets already redacted.
            at: seconds since the epoch (default: now).

        Raises:
            ValueError: `kind` is not an `AuditKind`, or `data` holds NaN or infinity.
            TypeError: `data` holds something JSON cannot represent.
        """
        if kind not in EVENT_KINDS:
            raise ValueError(
                f"unknown audit event kind {kind!r}; expected one of {sorted(EVENT_KINDS)}"
            )
        when = time.time() if at is None else float(at)
        if not math.isfinite(when):
            raise ValueError(f"audit event time must be a finite number, not {at!r}")
        what = f"data of audit event {kind!r}"
        # Through JSON and back, so what is hashed is exactly what `verify` will read back
        # (e.g. integer keys become strings before they are sorted).
        data_obj = json.loads(_canonical(dict(data), what=what))
        data_json = _canonical(data_obj, what=what)
        # A second append in the same transaction holds the append lock already (PostgreSQL's
        # advisory lock, SQLite's write lock) and knows the head: its own last row. Inside a
        # savepoint, which may roll back, the head is read again and forgotten afterwards.
        root = conn.sync_connection.get_transaction() if conn.sync_connection is not None else None
        nested = conn.in_nested_transaction()
        head = None if nested or root is None else _HEADS.get(root)
        if head is None:
            if conn.dialect.name == "postgresql":
                await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_APPEND_LOCK_KEY)))
            last = (
                await conn.execute(
                    sa.select(audit_events.c.seq, audit_events.c.hash)
                    .order_by(audit_events.c.seq.desc())
                    .limit(1)
                )
            ).first()
            head = (0, GENESIS_HASH) if last is None else (last.seq, last.hash)
        seq, prev_hash = head[0] + 1, head[1]
        event = _Event(when, kind, approval_id, thread_id, actor)
        content = _content(event, seq, data_obj)
        await conn.execute(
            audit_events.insert().values(
                seq=seq,
                at=when,
                kind=kind,
                approval_id=approval_id,
                thread_id=thread_id,
                actor=actor,
                data=data_json,
                prev_hash=prev_hash,
                hash=(new_hash := self._hash(prev_hash, content)),
            )
        )
        if root is not None:
            if nested:
                _HEADS.pop(root, None)
            else:
                _HEADS[root] = (seq, new_hash)
        return seq

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
            return await self._verify(conn, anchor)

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
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
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
    out = []
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
    # (which `bot.db.Database` uses) begin with a deferred BEGIN under this option.
    async with conn_or_engine.execution_options(signoff_read=True).connect() as conn:
        yield conn


async def _rows(conn: AsyncConnection) -> AsyncIterator[Any]:
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
