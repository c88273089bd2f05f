"""`SQLSaver`: durable checkpoints in SQLite (a file, the default) or PostgreSQL (production).

```python
with SQLSaver.from_conn_string("sqlite:///signoff.db") as saver:
    saver.setup()                       # create or upgrade the tables (idempotent)
    graph = builder.compile(checkpointer=saver)
```

What it stores (tables in `_tables.py`, migrations in `migrations/`):

- one row per checkpoint (versions, frontier, metadata), and one row per *channel version*: a
  channel that did not change in a step is not written again;
- a list channel that grew by concatenation (`checkpoint["appended"]`) stores only the new items,
  chained to the version before it, so a 200-turn chat costs what was appended, not O(n^2); a
  value is rebuilt with one query (the full row and the append rows after it);
- one row per thread: its head (every `put` is a compare-and-set on it, so history never forks)
  and its status, so "what is paused, since when, waiting on what" is one indexed query
  (`list_paused`).

Thread status, derived from what the runtime writes, in the same transaction:

- `running`: the thread has a pending frontier and is not waiting on anyone (a run is under
  way, or stopped without pausing, e.g. by a crash or the recursion limit);
- `paused`: a static pause (`put` of a checkpoint with `paused` nodes), or an `interrupt()`
  (`put_writes` with an `__interrupt__` write) that has no `__resume__` answer yet;
- `done`: the last checkpoint has no pending tasks;
- `failed`: a task wrote `__error__` since the last checkpoint.

Drivers: `sqlite:///path` uses the standard library's `sqlite3` (sync) and `aiosqlite` (async) on
the same file. `postgresql://` uses psycopg 3 for both: it is the one PostgreSQL driver with a
sync and an asyncio interface over the same code, so sync `invoke` and the async bot see the
same type adaptation, server-side prepared statements (after 5 uses) and error classes.

Durability: each `put`/`put_writes` is one transaction, committed before the call returns.
SQLite runs in WAL mode with `synchronous=FULL` (the WAL is fsynced at every commit, so a
committed step survives power loss, not only a process crash; pass `sqlite_synchronous="NORMAL"`
to trade that for speed), a busy timeout, and `BEGIN IMMEDIATE` for writes, so that several
processes on one file wait for each other instead of failing with "database is locked".
PostgreSQL connections are pooled and pinged before use when they sat idle (`ping_after`), so a
server restart between two invocations costs nothing; a read, `put` or delete whose connection
drops mid-use is retried once (a `put` is a compare-and-set, so its retry cannot apply twice).

One run per thread (`lock_thread`): PostgreSQL takes a session-level advisory lock on a pooled
connection held for the run; SQLite takes a byte-range `fcntl` lock in `<file>.locks`. Either
is released by the operating system or the server when the holding process dies, even by
SIGKILL, so a crashed run can be resumed at once by another process.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import errno
import fcntl
import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from ..errors import (
    CheckpointConflictError,
    CheckpointFormatError,
    SchemaVersionError,
    ThreadBusyError,
)
from ..types import Interrupt, RunConfig
from . import serde
from ._tables import SCHEMA_REVISION, VERSION_TABLE
from .base import (
    ERROR,
    INTERRUPT,
    RESUME,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    checkpoint_config,
    config_checkpoint_id,
    config_ns,
    config_thread_id,
)

__all__ = ["PausedThread", "SQLSaver", "async_url", "sync_url"]

_T = TypeVar("_T")

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_MIGRATION_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"signoff.checkpoint.migrations").digest()[:8], "big", signed=True
)
_BATCH = 100  # checkpoints per round of blob/write loading in `list`
_SPECIAL = frozenset((INTERRUPT, RESUME, ERROR))


# ---- URLs -------------------------------------------------------------------------------


def _parse(url: str | URL) -> URL:
    u = make_url(url)
    backend, _, driver = u.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if backend == "sqlite" and driver in ("", "pysqlite", "aiosqlite"):
        return u.set(drivername="sqlite")
    if backend == "postgresql" and driver in ("", "psycopg", "psycopg_async"):
        return u.set(drivername="postgresql")
    raise ValueError(
        f"unsupported database URL {u.render_as_string(hide_password=True)!r}: SQLSaver takes "
        "sqlite:///path/to/file.db or postgresql://user@host/db (it picks the driver itself)"
    )


def sync_url(url: str | URL) -> URL:
    """The URL with the driver `SQLSaver` uses for sync calls (pysqlite or psycopg)."""
    u = _parse(url)
    return u.set(drivername="sqlite+pysqlite" if u.drivername == "sqlite" else "postgresql+psycopg")


def async_url(url: str | URL) -> URL:
    """The URL with the driver `SQLSaver` uses for async calls (aiosqlite or psycopg)."""
    u = _parse(url)
    return u.set(
        drivername="sqlite+aiosqlite" if u.drivername == "sqlite" else "postgresql+psycopg"
    )


def _is_memory(u: URL) -> bool:
    return u.database in (None, "", ":memory:") or u.query.get("mode") == "memory"


# ---- SQL --------------------------------------------------------------------------------
# Statements are written once with :name parameters (sqlite3's named style) and rewritten to
# psycopg's %(name)s for PostgreSQL. They run on raw DBAPI cursors: the statements are fixed,
# so SQLAlchemy's compilation would only add time to the hot path (a durable step is a few of
# them); psycopg prepares them server-side after five uses.

_FOR_UPDATE = "{for_update}"

_SQL = {
    "insert_thread": """
        INSERT INTO checkpoint_threads (thread_id, checkpoint_ns, head_id, status, created_at,
            updated_at, paused_since, paused_nodes, error, finished_at)
        VALUES (:t, :ns, :id, :status, :now, :now, :paused_since, :nodes, NULL, :finished)
        ON CONFLICT (thread_id, checkpoint_ns) DO NOTHING""",
    "advance_thread": """
        UPDATE checkpoint_threads SET head_id = :id, status = :status, updated_at = :now,
            paused_since = NULL, paused_nodes = NULL, error = NULL, finished_at = :finished
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :parent""",
    "advance_thread_paused": """
        UPDATE checkpoint_threads SET head_id = :id, status = 'paused', updated_at = :now,
            paused_since = CASE WHEN status = 'paused' THEN paused_since ELSE :now END,
            paused_nodes = :nodes, error = NULL, finished_at = NULL
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :parent""",
    "head": """
        SELECT head_id FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "insert_checkpoint": """
        INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, record,
            metadata)
        VALUES (:t, :ns, :id, :parent, :record, :meta)""",
    "insert_blob": """
        INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, prev_version,
            full_version, total, value)
        VALUES (:t, :ns, :c, :v, NULL, :v, :total, :value)
        ON CONFLICT DO NOTHING""",
    # An append row extends the channel's previous version, if that is a list of the right
    # length (so a broken chain can never be written: rowcount 0 -> store the full value).
    "append_blob": """
        INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, prev_version,
            full_version, total, value)
        SELECT :t, :ns, :c, :v, p.version, p.full_version, :total, :value
        FROM checkpoint_blobs p
        WHERE p.thread_id = :t AND p.checkpoint_ns = :ns AND p.channel = :c
          AND p.total = :prev_total AND p.value IS NOT NULL
          AND p.version = (SELECT MAX(q.version) FROM checkpoint_blobs q
                           WHERE q.thread_id = :t AND q.checkpoint_ns = :ns AND q.channel = :c
                             AND q.version < :v)
        ON CONFLICT DO NOTHING""",
    "insert_write": """
        INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, channel,
            value, interrupt_id)
        VALUES (:t, :ns, :id, :task, :c, :value, :iid)""",
    # Status after writes to the head: an error fails the thread; otherwise it is paused while
    # a static pause lasts or an interrupt has no answer, else running. (A pending interrupt:
    # an `__interrupt__` write with no `__resume__` of its id; {answered} lets PostgreSQL's
    # one-statement form exclude the ids answered by writes of the same statement.) Writes to
    # one thread come from the one run that holds it (`lock_thread`), one call at a time for
    # answers, so the count below never races another writer's.
    "thread_failed": """
        UPDATE checkpoint_threads SET status = 'failed', error = :error, paused_since = NULL,
            finished_at = NULL, updated_at = :now
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :id""",
    "thread_after_writes": """
        UPDATE checkpoint_threads SET
            status = CASE WHEN status = 'failed' THEN 'failed'
                          WHEN {paused} THEN 'paused' ELSE 'running' END,
            paused_since = CASE WHEN status = 'failed' THEN NULL
                                WHEN {paused} THEN COALESCE(
                                    CASE WHEN status = 'paused' THEN paused_since END, :now)
                                ELSE NULL END,
            finished_at = NULL, updated_at = :now
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :id""",
    "checkpoint": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id = :id""",
    "head_checkpoint": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
        ORDER BY checkpoint_id DESC LIMIT 1""",
    "list_thread": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns {before}
        ORDER BY checkpoint_id DESC LIMIT :limit""",
    "list_all": """
        SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.record, c.metadata
        FROM checkpoints c JOIN checkpoint_threads t
          ON t.thread_id = c.thread_id AND t.checkpoint_ns = c.checkpoint_ns
        WHERE 1 = 1 {before}
        ORDER BY t.created_at, t.thread_id, t.checkpoint_ns, c.checkpoint_id DESC
        LIMIT :limit""",
    # The paused threads (on the status index), with the interrupt and resume writes of their
    # heads (on the writes index), in one query.
    "list_paused": """
        SELECT t.thread_id, t.checkpoint_ns, t.head_id, t.paused_since, t.paused_nodes,
            w.channel, w.interrupt_id, w.value
        FROM (SELECT thread_id, checkpoint_ns, head_id, paused_since, paused_nodes
              FROM checkpoint_threads WHERE status = 'paused' AND paused_since < :before
              ORDER BY paused_since, thread_id, checkpoint_ns LIMIT :limit) t
        LEFT JOIN checkpoint_writes w
          ON w.thread_id = t.thread_id AND w.checkpoint_ns = t.checkpoint_ns
             AND w.checkpoint_id = t.head_id AND w.channel IN ('__interrupt__', '__resume__')
        ORDER BY t.paused_since, t.thread_id, t.checkpoint_ns, w.seq""",
    "thread_status": """
        SELECT status FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_threads": "DELETE FROM checkpoint_threads WHERE thread_id = :t",
    "delete_checkpoints": "DELETE FROM checkpoints WHERE thread_id = :t",
    "delete_blobs": "DELETE FROM checkpoint_blobs WHERE thread_id = :t",
    "delete_writes": "DELETE FROM checkpoint_writes WHERE thread_id = :t",
    "thread_keys": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads WHERE thread_id = :t
        ORDER BY checkpoint_ns""",
    "all_thread_keys": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads
        ORDER BY thread_id, checkpoint_ns""",
    "lock_thread_row": """
        SELECT status FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns
        {for_update}""",
    "prune_list": """
        SELECT checkpoint_id, record FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
        ORDER BY checkpoint_id DESC""",
    "prune_checkpoints": """
        DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
          AND checkpoint_id < :oldest""",
    "prune_writes": """
        DELETE FROM checkpoint_writes WHERE thread_id = :t AND checkpoint_ns = :ns
          AND checkpoint_id < :oldest""",
    "blob_keys": """
        SELECT channel, version, prev_version FROM checkpoint_blobs
        WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_blob": """
        DELETE FROM checkpoint_blobs
        WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c AND version = :v""",
    "finished": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads
        WHERE status = 'done' AND finished_at < :cutoff {for_update_skip}""",
    "delete_key_threads": """
        DELETE FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_checkpoints": """
        DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_blobs": """
        DELETE FROM checkpoint_blobs WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_writes": """
        DELETE FROM checkpoint_writes WHERE thread_id = :t AND checkpoint_ns = :ns""",
}

_NO_LIMIT = 2**62

_PAUSED = """(paused_nodes IS NOT NULL OR EXISTS (
    SELECT 1 FROM checkpoint_writes i
    WHERE i.thread_id = :t AND i.checkpoint_ns = :ns AND i.checkpoint_id = :id
      AND i.channel = '__interrupt__' {answered}
      AND NOT EXISTS (
        SELECT 1 FROM checkpoint_writes r
        WHERE r.thread_id = :t AND r.checkpoint_ns = :ns AND r.checkpoint_id = :id
          AND r.channel = '__resume__' AND r.interrupt_id = i.interrupt_id)))"""


class _Dialect:
    """The statements, rendered for one database."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pg = name == "postgresql"
        self.sql = {}
        for key, text in _SQL.items():
            if "{before}" in text:
                self.sql[key + "_before"] = self.render(
                    text.replace("{before}", "AND checkpoint_id < :before")
                )
                text = text.replace("{before}", "")
            self.sql[key] = self.render(text)

    def render(self, text: str) -> str:
        text = " ".join(text.split())
        text = text.replace(_FOR_UPDATE, "FOR UPDATE" if self.pg else "")
        text = text.replace("{paused}", _PAUSED.replace("{answered}", ""))
        text = text.replace("{for_update_skip}", "FOR UPDATE SKIP LOCKED" if self.pg else "")
        if self.pg:
            text = re.sub(r"(?<!:):(\w+)", r"%(\1)s", text)
        return text

    @functools.lru_cache(maxsize=256)  # noqa: B019 (two instances per process)
    def blobs(self, n: int) -> str:
        """Rows of `n` channels, each from the start of its append chain up to a version."""
        branch = """
            SELECT channel, version, prev_version, total, value FROM checkpoint_blobs
            WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c{i}
              AND version <= :hi{i}
              AND version >= (SELECT MIN(full_version) FROM checkpoint_blobs
                              WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c{i}
                                AND version >= :lo{i} AND version <= :hi{i})"""
        return self.render(" UNION ALL ".join(branch.format(i=i) for i in range(n)))

    @functools.lru_cache(maxsize=128)  # noqa: B019
    def put_statement(self, head: str, n_full: int, n_deltas: int) -> str:
        """PostgreSQL: the whole of a `put` in one statement; returns 1 if the head moved.

        Rows are bound as scalars (`:c0, :v0, ...`): psycopg adapts those much faster than
        arrays, and one prepared statement per shape is cached on the server.
        """
        move = {
            "insert": _SQL["insert_thread"],
            "advance": _SQL["advance_thread"],
            "paused": _SQL["advance_thread_paused"],
        }[head]
        text = f"""
            WITH moved AS ({move} RETURNING 1),
            cp AS (
                INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id,
                    record, metadata)
                SELECT :t, :ns, :id, :parent, :record, :meta FROM moved)"""
        if n_full:
            rows = ", ".join(
                f"(CAST(:c{i} AS text), CAST(:v{i} AS bigint), CAST(:total{i} AS integer), "
                f"CAST(:value{i} AS bytea))"
                for i in range(n_full)
            )
            text += f""",
            full_rows AS (
                INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version,
                    prev_version, full_version, total, value)
                SELECT :t, :ns, u.c, u.v, NULL, u.v, u.total, u.value
                FROM moved CROSS JOIN (VALUES {rows}) AS u(c, v, total, value)
                ON CONFLICT DO NOTHING)"""
        if n_deltas:
            rows = ", ".join(
                f"(CAST(:dc{i} AS text), CAST(:dv{i} AS bigint), CAST(:dtotal{i} AS integer), "
                f"CAST(:dprev{i} AS integer), CAST(:dvalue{i} AS bytea))"
                for i in range(n_deltas)
            )
            # full_version is NOT NULL: a delta whose previous version is not the list it
            # extends makes the whole statement fail, and nothing is written.
            text += f""",
            delta_rows AS (
                INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version,
                    prev_version, full_version, total, value)
                SELECT :t, :ns, u.c, u.v, p.version,
                    CASE WHEN p.total = u.prev_total AND p.has_value THEN p.full_version END,
                    u.total, u.value
                FROM moved CROSS JOIN (VALUES {rows}) AS u(c, v, total, prev_total, value)
                LEFT JOIN LATERAL (
                    SELECT q.version, q.full_version, q.total, q.value IS NOT NULL AS has_value
                    FROM checkpoint_blobs q
                    WHERE q.thread_id = :t AND q.checkpoint_ns = :ns AND q.channel = u.c
                      AND q.version < u.v
                    ORDER BY q.version DESC LIMIT 1) p ON true
                ON CONFLICT DO NOTHING)"""
        return self.render(text + " SELECT count(*) FROM moved")

    @functools.lru_cache(maxsize=4)  # noqa: B019
    def get_statement(self, by_id: bool) -> str:
        """PostgreSQL: a checkpoint, its writes and its values, as rows of one statement.

        Columns: kind (0 checkpoint, 1 write, 2 value), then per kind
        (checkpoint_id, parent_id, -, -, -, record, metadata),
        (task_id, channel, seq, -, -, value, -), (-, channel, version, prev, total, value, -).
        """
        where = "AND checkpoint_id = :id" if by_id else ""
        return self.render(f"""
            WITH cp AS (
                SELECT checkpoint_id, parent_id, record, metadata FROM checkpoints
                WHERE thread_id = :t AND checkpoint_ns = :ns {where}
                ORDER BY checkpoint_id DESC LIMIT 1),
            cv AS (
                SELECT e.key AS channel, CAST(e.value AS bigint) AS version
                FROM cp CROSS JOIN LATERAL jsonb_each_text(
                    CAST(convert_from(cp.record, 'UTF8') AS jsonb) -> 'd' -> 'channel_versions'
                ) AS e)
            SELECT 0, cp.checkpoint_id, cp.parent_id, CAST(NULL AS bigint), CAST(NULL AS bigint),
                CAST(NULL AS integer), cp.record, cp.metadata
            FROM cp
            UNION ALL
            SELECT 1, w.task_id, w.channel, w.seq, NULL, NULL, w.value, NULL
            FROM cp JOIN checkpoint_writes w
              ON w.thread_id = :t AND w.checkpoint_ns = :ns AND w.checkpoint_id = cp.checkpoint_id
            UNION ALL
            SELECT 2, NULL, b.channel, b.version, b.prev_version, b.total, b.value, NULL
            FROM cv
            JOIN checkpoint_blobs h
              ON h.thread_id = :t AND h.checkpoint_ns = :ns AND h.channel = cv.channel
                 AND h.version = cv.version
            JOIN checkpoint_blobs b
              ON b.thread_id = :t AND b.checkpoint_ns = :ns AND b.channel = cv.channel
                 AND b.version >= h.full_version AND b.version <= cv.version""")

    @functools.lru_cache(maxsize=128)  # noqa: B019
    def writes_statement(self, n: int, status: str | None, n_answered: int) -> str:
        """PostgreSQL: `put_writes` in one statement (the rows, then the thread's status)."""
        rows = ", ".join(
            f"(CAST(:c{i} AS text), CAST(:value{i} AS bytea), CAST(:iid{i} AS text), {i})"
            for i in range(n)
        )
        insert = f"""
            INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,
                channel, value, interrupt_id)
            SELECT :t, :ns, :id, :task, u.c, u.value, u.iid
            FROM (VALUES {rows}) AS u(c, value, iid, n) ORDER BY u.n"""
        if status is None:
            return self.render(insert)
        if status == "failed":
            update = _SQL["thread_failed"]
        else:
            # The statement's own rows are invisible to its subqueries: the new interrupts
            # come in as :new_pending, and ids answered here are left out of the old ones.
            answered = ""
            if n_answered:
                ids = ", ".join(f":a{i}" for i in range(n_answered))
                answered = f"AND (i.interrupt_id IS NULL OR i.interrupt_id NOT IN ({ids}))"
            paused = f"(CAST(:new_pending AS boolean) OR {_PAUSED.replace('{answered}', answered)})"
            update = _SQL["thread_after_writes"].replace("{paused}", paused)
        return self.render(f"WITH ins AS ({insert} RETURNING 1), upd AS ({update}) SELECT 1")

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def writes(self, n: int) -> str:
        ids = ", ".join(f":id{i}" for i in range(n))
        return self.render(
            "SELECT checkpoint_id, task_id, channel, value FROM checkpoint_writes "
            f"WHERE thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id IN ({ids}) "
            "ORDER BY seq"
        )


_DIALECTS = {"sqlite": _Dialect("sqlite"), "postgresql": _Dialect("postgresql")}


class _Tx:
    """The cursor of one transaction, with the few shapes of call the saver makes."""

    __slots__ = ("cur",)

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def run(self, sql: str, params: Any = ()) -> Any:
        self.cur.execute(sql, params)
        return self.cur

    def many(self, sql: str, rows: list[dict[str, Any]]) -> None:
        if len(rows) == 1:
            self.cur.execute(sql, rows[0])
        else:
            self.cur.executemany(sql, rows)

    def one(self, sql: str, params: Any = ()) -> Any:
        self.cur.execute(sql, params)
        return self.cur.fetchone()

    def all(self, sql: str, params: Any = ()) -> list[Any]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall())

    def count(self, sql: str, params: Any = ()) -> int:
        self.cur.execute(sql, params)
        return int(self.cur.rowcount)


def _is_broken_chain(error: BaseException) -> bool:
    """PostgreSQL refused an append row: its previous version is not the list it extends."""
    diag = getattr(error, "diag", None)
    return (
        getattr(error, "sqlstate", None) == "23502"
        and getattr(diag, "column_name", None) == "full_version"
    )


class _Dropped(Exception):
    """The connection was lost mid-transaction (it has been invalidated)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


# ---- values -----------------------------------------------------------------------------


def _now() -> float:
    return time.time()


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else bytes(value)


def _format_error(thread_id: str, channel: str | None, what: str) -> CheckpointFormatError:
    where = f"thread {thread_id!r}" + (f", channel {channel!r}" if channel else "")
    return CheckpointFormatError(f"{where}: {what}", thread_id=thread_id, channel=channel)


def _decode(thread_id: str, channel: str | None, data: Any) -> Any:
    try:
        return serde.loads(_bytes(data))
    except CheckpointFormatError as e:
        raise _format_error(thread_id, channel, str(e)) from e


# (channel, version) -> (prev_version, total, value)
_BlobRows = dict[tuple[str, int], tuple[int | None, int | None, bytes | None]]


def _channel_value(thread_id: str, channel: str, version: int, rows: _BlobRows) -> Any:
    """The value of `channel` at `version`, or `_MISSING` when it has none."""
    row = rows.get((channel, version))
    if row is None or row[2] is None:
        return _MISSING
    prev, total, value = row
    if prev is None:
        return _decode(thread_id, channel, value)
    parts = [_bytes(value)]
    at: int | None = prev
    while at is not None:
        link = rows.get((channel, at))
        if link is None or link[2] is None:
            raise _format_error(
                thread_id,
                channel,
                f"the list stored at version {version} extends version {at}, which is missing",
            )
        parts.append(_bytes(link[2]))
        at = link[0]
    items = []
    for part in reversed(parts):
        if part[:1] != b"[" or part[-1:] != b"]":
            raise _format_error(
                thread_id, channel, f"version {version} extends a value that is not a list"
            )
        if len(part) > 2:
            items.append(part[1:-1])
    out = _decode(thread_id, channel, b"[" + b",".join(items) + b"]")
    if len(out) != total:
        raise _format_error(
            thread_id,
            channel,
            f"the list at version {version} has {len(out)} items where {total} were stored",
        )
    return out


_MISSING = object()


def _record(thread_id: str, row: tuple[Any, ...]) -> dict[str, Any]:
    """The stored checkpoint record of a checkpoint row, checked."""
    try:
        record = serde.loads_record(_bytes(row[4]))
        if not isinstance(record.get("channel_versions"), dict):
            raise KeyError("channel_versions")
        return record  # type: ignore[no-any-return]
    except (CheckpointFormatError, KeyError, TypeError, AttributeError) as e:
        raise _format_error(thread_id, None, f"checkpoint {row[2]!r}: {e}") from e


def _assemble(
    thread_id: str,
    ns: str,
    row: tuple[Any, ...],
    record: dict[str, Any],
    blob_rows: _BlobRows,
    writes: Sequence[tuple[str, str, Any]],
) -> CheckpointTuple:
    """A `CheckpointTuple` from a checkpoint row, its record, the blob rows and its writes."""
    checkpoint_id, parent_id = row[2], row[3]
    values = {}
    for channel, version in record["channel_versions"].items():
        value = _channel_value(thread_id, channel, version, blob_rows)
        if value is not _MISSING:
            values[channel] = value
    checkpoint = Checkpoint(
        v=record["v"],
        id=checkpoint_id,
        ts=record["ts"],
        channel_values=values,
        channel_versions=dict(record["channel_versions"]),
        next_tasks=[list(t) for t in record["next_tasks"]],
        paused=list(record["paused"]),
        appended={},
    )
    return CheckpointTuple(
        config=checkpoint_config(thread_id, ns, checkpoint_id),
        checkpoint=checkpoint,
        metadata=_decode(thread_id, None, row[5]),
        parent_config=checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
        pending_writes=[
            PendingWrite(task_id, channel, _decode(thread_id, channel, value))
            for task_id, channel, value in writes
        ],
    )


# ---- public types -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PausedThread:
    """A thread waiting on someone, as `SQLSaver.list_paused` reports it."""

    thread_id: str
    checkpoint_ns: str
    """The namespace within the thread (`""` by default)."""
    checkpoint_id: str
    """The head checkpoint: where the thread resumes from."""
    paused_since: datetime
    """When the pause began (UTC); unchanged by later writes while it stays paused."""
    interrupts: tuple[Interrupt, ...]
    """The `interrupt()` payloads that have no answer yet (empty for a static pause)."""
    paused_nodes: tuple[str, ...]
    """The nodes of a static pause (`interrupt_before`/`interrupt_after`); empty otherwise."""

    @property
    def config(self) -> RunConfig:
        """The config that names this thread, for `invoke`/`get_state`."""
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}}


def _with_interrupts(paused: PausedThread, pending: dict[str, Any]) -> PausedThread:
    return dataclasses.replace(paused, interrupts=tuple(pending.values()))


# ---- process-wide lock registry ---------------------------------------------------------
# POSIX record locks belong to the process, and closing *any* descriptor of a file drops all of
# the process's locks on it, so each lock file is opened once per process and never closed.

_proc_guard = threading.Lock()
_proc_held: set[tuple[str, str, str]] = set()
_lock_fds: dict[str, int] = {}


def _lock_fd(path: str) -> int:
    with _proc_guard:
        fd = _lock_fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            _lock_fds[path] = fd
        return fd


def _key_digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode()).digest()


def _busy(thread_id: str, where: str) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is being run by {where}; wait for that run to pause or finish",
        thread_id,
    )


# ---- the saver --------------------------------------------------------------------------


class SQLSaver(BaseCheckpointSaver):
    """Checkpoints in SQLite or PostgreSQL through SQLAlchemy Core; see the module docstring.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db` (a driver named in
            the URL must be the one the saver uses: pysqlite/aiosqlite, psycopg).
        sqlite_synchronous: SQLite's `PRAGMA synchronous`: `"FULL"` (default: a committed step
            survives power loss) or `"NORMAL"` (survives a process crash only; faster).
        busy_timeout: seconds a SQLite writer waits for another one (default 30).
        pool_size: PostgreSQL connections kept open per engine (default 5). A running thread
            holds one for its lock and uses another for each write.
        max_overflow: PostgreSQL connections opened beyond `pool_size` under load (default 10).
        ping_after: PostgreSQL: a pooled connection idle this many seconds is pinged before
            use, and replaced if the server dropped it (default 1.0; 0 pings at every use).
        **engine_options: passed to `sqlalchemy.create_engine` / `create_async_engine`.
    """

    def __init__(
        self,
        url: str | URL,
        *,
        sqlite_synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        pool_size: int = 5,
        max_overflow: int = 10,
        ping_after: float = 1.0,
        **engine_options: Any,
    ) -> None:
        super().__init__()
        if sqlite_synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(
                f"sqlite_synchronous must be FULL, NORMAL or EXTRA, not {sqlite_synchronous!r}"
            )
        self.url = _parse(url)
        self._d = _DIALECTS[self.url.drivername]
        self._memory = self._d.name == "sqlite" and _is_memory(self.url)
        self._synchronous = sqlite_synchronous.upper()
        self._busy_ms = int(busy_timeout * 1000)
        self._pool = {"pool_size": pool_size, "max_overflow": max_overflow}
        self._ping_after = ping_after
        self._engine_options = engine_options
        self._init_guard = threading.Lock()
        self._memory_guard = threading.RLock()
        self._engine: Engine | None = None
        self._read_engine: Engine | None = None
        self._aengine: AsyncEngine | None = None
        self._aread_engine: AsyncEngine | None = None
        self._schema_ok = False
        self._lock_scope: str | None = None
        if self._d.name == "sqlite" and not self._memory:
            self._lock_path: str | None = os.path.abspath(self.url.database or "") + ".locks"
        else:
            self._lock_path = None

    def __repr__(self) -> str:
        return f"SQLSaver({self.url.render_as_string(hide_password=True)!r})"

    # ---- construction -------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, url: str | URL, **options: Any) -> Iterator[SQLSaver]:
        """`with SQLSaver.from_conn_string(url) as saver:`; the engines are closed on exit."""
        saver = cls(url, **options)
        try:
            yield saver
        finally:
            saver.close()

    @classmethod
    @contextlib.asynccontextmanager
    async def afrom_conn_string(cls, url: str | URL, **options: Any) -> AsyncIterator[SQLSaver]:
        """`async with SQLSaver.afrom_conn_string(url) as saver:`; closed on exit."""
        saver = cls(url, **options)
        try:
            yield saver
        finally:
            await saver.aclose()

    def close(self) -> None:
        """Close every pooled connection (the saver can still be used: it reconnects).

        From async code prefer `await aclose()`: connections of the async engine can only be
        closed on an event loop, so inside a running loop `close` just lets go of them.
        """
        if self._engine is not None:
            self._engine.dispose()
        if self._aengine is not None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                try:
                    asyncio.run(self._aengine.dispose())
                except Exception:  # noqa: BLE001 (closing is best effort; drop them)
                    self._aengine.sync_engine.dispose(close=False)
            else:
                self._aengine.sync_engine.dispose(close=False)

    async def aclose(self) -> None:
        if self._aengine is not None:
            await self._aengine.dispose()
        if self._engine is not None:
            self._engine.dispose()

    def _engine_kwargs(self) -> dict[str, Any]:
        if self._d.name == "sqlite":
            if self._memory:
                return {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
            return {**self._engine_options}
        return {**self._pool, **self._engine_options}

    def _install_pg_ping(self, engine: Engine) -> None:
        """Ping a pooled connection before use if it sat idle for `ping_after` seconds.

        This is SQLAlchemy's `pool_pre_ping` (a connection the server dropped, say in a
        restart, is replaced before anyone sees it) without its round trip on every checkout:
        connections used moments ago, as between the steps of a run, are trusted, and a rare
        drop in that window is met by the retry in `_run`.
        """
        ping_after = self._ping_after

        @event.listens_for(engine, "checkout")
        def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
            now = time.monotonic()
            last = record.info.get("signoff_used")
            record.info["signoff_used"] = now
            if last is None or now - last < ping_after:
                return
            try:
                was = dbapi_conn.autocommit
                dbapi_conn.autocommit = True
                cursor = dbapi_conn.cursor()
                cursor.execute("SELECT 1")
                cursor.close()
                dbapi_conn.autocommit = was
            except Exception as e:
                # The pool replaces the connection and checks out a fresh one.
                raise sa.exc.DisconnectionError(f"stale pooled connection: {e}") from e

        @event.listens_for(engine, "checkin")
        def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
            if record is not None:
                record.info["signoff_used"] = time.monotonic()

    def _install_sqlite_hooks(self, engine: Engine) -> None:
        busy_ms, synchronous = self._busy_ms, self._synchronous

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # SQLAlchemy emits BEGIN itself (below); the driver must not (SQLAlchemy's SQLite
            # docs, "Enabling Non-Legacy SQLite Transactional Modes").
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # Writers take the write lock up front, so a transaction never has to upgrade
            # from reader to writer (which fails at once with "database is locked").
            if conn.get_execution_options().get("signoff_read"):
                conn.exec_driver_sql("BEGIN")
            else:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

    def _sync_engine(self, read: bool = False) -> Engine:
        engine = self._read_engine if read else self._engine
        if engine is not None:
            return engine
        with self._init_guard:
            if self._engine is None:
                engine = sa.create_engine(sync_url(self.url), **self._engine_kwargs())
                if self._d.name == "sqlite":
                    self._install_sqlite_hooks(engine)
                else:
                    self._install_pg_ping(engine)
                self._read_engine = engine.execution_options(signoff_read=True)
                self._engine = engine
        return self._read_engine if read else self._engine  # type: ignore[return-value]

    def _async_engine(self, read: bool = False) -> AsyncEngine:
        engine = self._aread_engine if read else self._aengine
        if engine is not None:
            return engine
        with self._init_guard:
            if self._aengine is None:
                engine = create_async_engine(async_url(self.url), **self._engine_kwargs())
                if self._d.name == "sqlite":
                    self._install_sqlite_hooks(engine.sync_engine)
                else:
                    self._install_pg_ping(engine.sync_engine)
                self._aread_engine = engine.execution_options(signoff_read=True)
                self._aengine = engine
        return self._aread_engine if read else self._aengine  # type: ignore[return-value]

    # ---- running operations -------------------------------------------------------------
    # Each operation is one transaction on a raw DBAPI cursor from SQLAlchemy's pool (which
    # brings the idle ping, the SQLite pragmas and invalidation); SQLAlchemy's execution layer
    # would cost more than the database does for these few fixed statements.

    def _run(self, fn: Callable[..., _T], *args: Any, read: bool = False, retry: bool = True) -> _T:
        if self._memory:
            with self._memory_guard:
                return self._run_once(fn, args, read)
        try:
            return self._run_once(fn, args, read)
        except _Dropped as dropped:
            if not retry:
                raise dropped.error from None
        try:
            return self._run_once(fn, args, read)  # the connection dropped: once more, anew
        except _Dropped as dropped:
            raise dropped.error from None

    def _run_once(self, fn: Callable[..., _T], args: tuple[Any, ...], read: bool) -> _T:
        if not self._schema_ok:
            self._check_schema()
        raw = self._sync_engine().raw_connection()
        try:
            return self._transact(raw, fn, args, read)
        finally:
            raw.close()

    async def _arun(
        self, fn: Callable[..., _T], *args: Any, read: bool = False, retry: bool = True
    ) -> _T:
        if self._memory:  # one in-memory database, reached through the sync engine only
            return await asyncio.to_thread(self._run, fn, *args, read=read, retry=retry)
        try:
            return await self._arun_once(fn, args, read)
        except _Dropped as dropped:
            if not retry:
                raise dropped.error from None
        try:
            return await self._arun_once(fn, args, read)
        except _Dropped as dropped:
            raise dropped.error from None

    async def _arun_once(self, fn: Callable[..., _T], args: tuple[Any, ...], read: bool) -> _T:
        if not self._schema_ok:
            async with self._async_engine(read=True).connect() as conn:
                revision = await conn.run_sync(_schema_revision)
            self._accept_revision(revision)
        async with self._async_engine().connect() as conn:
            return await conn.run_sync(
                lambda sync_conn: self._transact(sync_conn.connection, fn, args, read)
            )

    def _transact(self, raw: Any, fn: Callable[..., _T], args: tuple[Any, ...], read: bool) -> _T:
        """Run `fn(tx, *args)` in one transaction on the pooled connection `raw`.

        On PostgreSQL a function marked `_single_statement` runs in autocommit mode: it sends
        one statement, which is its own transaction, and saves the BEGIN and COMMIT round trips.
        """
        cursor = None
        single = self._d.pg and getattr(fn, "_single_statement", False)
        try:
            if single:
                raw.dbapi_connection.autocommit = True
            cursor = raw.cursor()
            if not self._d.pg:
                cursor.execute("BEGIN" if read else "BEGIN IMMEDIATE")
            result = fn(_Tx(cursor), *args)
            if not single:
                raw.commit()
            return result
        except BaseException as e:
            self._handle_drop(raw, e, cursor)
            with contextlib.suppress(Exception):
                raw.rollback()
            raise
        finally:
            if cursor is not None:
                with contextlib.suppress(Exception):
                    cursor.close()
            if single:
                with contextlib.suppress(Exception):
                    raw.dbapi_connection.autocommit = False

    # ---- schema -------------------------------------------------------------------------

    def _check_schema(self) -> None:
        with self._sync_engine(read=True).connect() as conn:
            revision = _schema_revision(conn)
        self._accept_revision(revision)

    def _accept_revision(self, revision: str | None) -> None:
        if revision == SCHEMA_REVISION:
            self._schema_ok = True
            return
        if revision is None:
            raise SchemaVersionError(
                f"{self!r} has no checkpoint tables (schema revision {SCHEMA_REVISION} "
                "expected); call setup() (or asetup()) once to create them",
                db_revision=None,
                code_revision=SCHEMA_REVISION,
            )
        if revision in _known_revisions():
            raise SchemaVersionError(
                f"{self!r} has checkpoint schema revision {revision!r}, older than this code's "
                f"{SCHEMA_REVISION!r}; call setup() to upgrade it",
                db_revision=revision,
                code_revision=SCHEMA_REVISION,
            )
        raise _newer_schema(self, revision)

    def setup(self) -> None:
        """Create or upgrade the checkpoint tables (Alembic migrations). Idempotent.

        Safe to run from several processes at once: PostgreSQL serializes migrations on an
        advisory lock, SQLite on its write lock (`BEGIN IMMEDIATE`).

        Raises:
            SchemaVersionError: the database was migrated by newer code than this.
        """
        for attempt in (0, 1):
            try:
                with self._sync_engine().begin() as conn:
                    _migrate(conn, self)
                break
            except sa.exc.DBAPIError as e:
                if attempt or not e.connection_invalidated:
                    raise
        self._schema_ok = True

    async def asetup(self) -> None:
        """Async form of `setup`."""
        if self._memory:
            await asyncio.to_thread(self.setup)
            return
        async with self._async_engine().begin() as conn:
            await conn.run_sync(_migrate, self)
        self._schema_ok = True

    # ---- reads --------------------------------------------------------------------------

    def _key(self, config: RunConfig) -> tuple[str, str]:
        thread_id = config_thread_id(config)
        if not thread_id:
            raise ValueError('config needs {"configurable": {"thread_id": ...}}')
        return thread_id, config_ns(config)

    def get_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        thread_id, ns = self._key(config)
        get = self._get_pg if self._d.pg else self._get_tx
        return self._run(get, thread_id, ns, config_checkpoint_id(config), read=True)

    async def aget_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        thread_id, ns = self._key(config)
        get = self._get_pg if self._d.pg else self._get_tx
        return await self._arun(get, thread_id, ns, config_checkpoint_id(config), read=True)

    def _get_tx(
        self, tx: _Tx, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> CheckpointTuple | None:
        sql = self._d.sql
        params = {"t": thread_id, "ns": ns}
        if checkpoint_id:
            row = tx.one(sql["checkpoint"], {**params, "id": checkpoint_id})
        else:
            row = tx.one(sql["head_checkpoint"], params)
        if row is None:
            return None
        return self._load(tx, [tuple(row)])[0]

    def list(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        key = None if config is None else self._key(config)
        yield from self._run(self._list_tx, key, before, limit, read=True)

    async def alist(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        key = None if config is None else self._key(config)
        for item in await self._arun(self._list_tx, key, before, limit, read=True):
            yield item

    def _list_tx(
        self,
        tx: _Tx,
        key: tuple[str, str] | None,
        before: RunConfig | None,
        limit: int | None,
    ) -> builtins.list[CheckpointTuple]:
        if self._d.pg:  # one snapshot for every statement below
            tx.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        params: dict[str, Any] = {"limit": _NO_LIMIT if limit is None else max(limit, 0)}
        suffix = ""
        before_id = config_checkpoint_id(before) if before else None
        if before_id is not None:
            params["before"], suffix = before_id, "_before"
        if key is None:
            rows = tx.all(self._d.sql["list_all" + suffix], params)
        else:
            params.update(t=key[0], ns=key[1])
            rows = tx.all(self._d.sql["list_thread" + suffix], params)
        out: builtins.list[CheckpointTuple] = []
        start = 0
        while start < len(rows):
            # a batch: consecutive rows of one thread, at most _BATCH of them
            end = start + 1
            while end < len(rows) and end - start < _BATCH and rows[end][:2] == rows[start][:2]:
                end += 1
            out.extend(self._load(tx, [tuple(r) for r in rows[start:end]]))
            start = end
        return out

    def _load(
        self, tx: _Tx, rows: builtins.list[tuple[Any, ...]]
    ) -> builtins.list[CheckpointTuple]:
        """Tuples for checkpoint rows of one thread: two more statements for all of them."""
        thread_id, ns = rows[0][0], rows[0][1]
        records = [_record(thread_id, row) for row in rows]
        ranges: dict[str, builtins.list[int]] = {}
        for record in records:
            for channel, version in record["channel_versions"].items():
                span = ranges.get(channel)
                if span is None:
                    ranges[channel] = [version, version]
                else:
                    span[0] = min(span[0], version)
                    span[1] = max(span[1], version)
        blob_rows: _BlobRows = {}
        channels = list(ranges)
        for chunk in range(0, len(channels), 200):
            part = channels[chunk : chunk + 200]
            params: dict[str, Any] = {"t": thread_id, "ns": ns}
            for i, channel in enumerate(part):
                params[f"c{i}"] = channel
                params[f"lo{i}"], params[f"hi{i}"] = ranges[channel]
            for c, v, prev, total, value in tx.all(self._d.blobs(len(part)), params):
                blob_rows[(c, v)] = (prev, total, value)
        ids = [row[2] for row in rows]
        params = {"t": thread_id, "ns": ns, **{f"id{i}": cid for i, cid in enumerate(ids)}}
        writes: dict[str, builtins.list[tuple[str, str, Any]]] = {cid: [] for cid in ids}
        for cid, task_id, channel, value in tx.all(self._d.writes(len(ids)), params):
            writes[cid].append((task_id, channel, value))
        return [
            _assemble(thread_id, ns, row, record, blob_rows, writes[row[2]])
            for row, record in zip(rows, records)
        ]

    def _get_pg(
        self, tx: _Tx, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> CheckpointTuple | None:
        """PostgreSQL: `get_tuple` in one statement (the checkpoint, its writes, its values)."""
        params = {"t": thread_id, "ns": ns, "id": checkpoint_id}
        try:
            result = tx.all(self._d.get_statement(bool(checkpoint_id)), params)
        except Exception as e:
            if str(getattr(e, "sqlstate", "") or "").startswith("22"):
                # the record is not JSON the server can read: let the general path say why
                return self._get_tx(tx, thread_id, ns, checkpoint_id)
            raise
        row = None
        writes: builtins.list[tuple[int, str, str, Any]] = []
        blob_rows: _BlobRows = {}
        for kind, a, b, n, prev, total, value, meta in result:
            if kind == 0:
                row = (thread_id, ns, a, b, value, meta)
            elif kind == 1:
                writes.append((n, a, b, value))
            else:
                blob_rows[(b, n)] = (prev, total, value)
        if row is None:
            return None
        record = _record(thread_id, row)
        if any((c, v) not in blob_rows for c, v in record["channel_versions"].items()):
            return self._get_tx(tx, thread_id, ns, checkpoint_id)  # a value missing: look closer
        writes.sort(key=lambda w: w[0])
        return _assemble(thread_id, ns, row, record, blob_rows, [w[1:] for w in writes])

    _get_pg._single_statement = True  # type: ignore[attr-defined]

    # ---- writes -------------------------------------------------------------------------

    def put(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        args = self._put_args(config, checkpoint, metadata, new_versions)
        self._run(self._put_pg if self._d.pg else self._put_tx, *args)
        return checkpoint_config(args[0], args[1], checkpoint["id"])

    async def aput(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        args = self._put_args(config, checkpoint, metadata, new_versions)
        await self._arun(self._put_pg if self._d.pg else self._put_tx, *args)
        return checkpoint_config(args[0], args[1], checkpoint["id"])

    def _put_args(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> tuple[Any, ...]:
        # Serialize before touching the database: a value that cannot be stored changes nothing.
        thread_id, ns = self._key(config)
        parent_id = config_checkpoint_id(config)
        values = checkpoint["channel_values"]
        appended = checkpoint.get("appended") or {}
        full: builtins.list[dict[str, Any]] = []
        deltas: builtins.list[tuple[dict[str, Any], builtins.list[Any]]] = []
        for channel, version in new_versions.items():
            row: dict[str, Any] = {"t": thread_id, "ns": ns, "c": channel, "v": version}
            if channel not in values:
                full.append({**row, "total": None, "value": None})
                continue
            value = values[channel]
            total = len(value) if type(value) is list else None
            n = appended.get(channel, 0)
            if parent_id and total is not None and 0 < n < total:
                delta = {**row, "total": total, "prev_total": total - n}
                delta["value"] = serde.dumps(value[-n:]).encode()
                deltas.append((delta, list(value)))
            else:
                full.append({**row, "total": total, "value": serde.dumps(value).encode()})
        record = serde.dumps_record(
            {
                "v": checkpoint["v"],
                "ts": checkpoint["ts"],
                "channel_versions": dict(checkpoint["channel_versions"]),
                "next_tasks": [list(t) for t in checkpoint["next_tasks"]],
                "paused": list(checkpoint["paused"]),
            }
        ).encode()
        paused = list(checkpoint["paused"])
        if paused:
            status = "paused"
        elif not checkpoint["next_tasks"]:
            status = "done"
        else:
            status = "running"
        return (
            thread_id,
            ns,
            checkpoint["id"],
            parent_id,
            status,
            serde.dumps(paused).encode() if paused else None,
            record,
            serde.dumps(dict(metadata)).encode(),
            full,
            deltas,
        )

    def _put_tx(
        self,
        tx: _Tx,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        parent_id: str | None,
        status: str,
        nodes: bytes | None,
        record: bytes,
        meta: bytes,
        full: builtins.list[dict[str, Any]],
        deltas: builtins.list[tuple[dict[str, Any], builtins.list[Any]]],
    ) -> None:
        sql = self._d.sql
        now = _now()
        head = {"t": thread_id, "ns": ns, "id": checkpoint_id, "status": status, "now": now}
        head["finished"] = now if status == "done" else None
        if parent_id is None:
            head.update(paused_since=now if status == "paused" else None, nodes=nodes)
            moved = tx.count(sql["insert_thread"], head)
        elif status == "paused":
            head.update(parent=parent_id, nodes=nodes)
            moved = tx.count(sql["advance_thread_paused"], head)
        else:
            head["parent"] = parent_id
            moved = tx.count(sql["advance_thread"], head)
        if moved != 1:
            row = tx.one(sql["head"], {"t": thread_id, "ns": ns})
            current = row[0] if row else None
            if current == checkpoint_id:
                return  # stored already: a retry after the connection dropped during COMMIT
            raise CheckpointConflictError(
                f"thread {thread_id!r} moved on: its head is {current!r}, not {parent_id!r}; "
                "another run wrote to it",
                thread_id,
            )
        tx.run(
            sql["insert_checkpoint"],
            {
                "t": thread_id,
                "ns": ns,
                "id": checkpoint_id,
                "parent": parent_id,
                "record": record,
                "meta": meta,
            },
        )
        for delta, whole in deltas:
            if tx.count(sql["append_blob"], delta) != 1:
                # The stored previous version is not the list this one extends (it was written
                # before a delete, or `appended` disagrees with it): store the value whole.
                full.append({**delta, "value": serde.dumps(whole).encode()})
        if full:
            tx.many(sql["insert_blob"], full)

    def _put_pg(
        self,
        tx: _Tx,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        parent_id: str | None,
        status: str,
        nodes: bytes | None,
        record: bytes,
        meta: bytes,
        full: builtins.list[dict[str, Any]],
        deltas: builtins.list[tuple[dict[str, Any], builtins.list[Any]]],
    ) -> None:
        """`_put_tx` as one statement (PostgreSQL's data-modifying WITH): one round trip."""
        now = _now()
        params: dict[str, Any] = {
            "t": thread_id,
            "ns": ns,
            "id": checkpoint_id,
            "parent": parent_id,
            "status": status,
            "now": now,
            "nodes": nodes,
            "record": record,
            "meta": meta,
            "paused_since": now if status == "paused" else None,
            "finished": now if status == "done" else None,
        }
        for i, row in enumerate(full):
            params[f"c{i}"], params[f"v{i}"] = row["c"], row["v"]
            params[f"total{i}"], params[f"value{i}"] = row["total"], row["value"]
        for i, (d, _) in enumerate(deltas):
            params[f"dc{i}"], params[f"dv{i}"], params[f"dtotal{i}"] = d["c"], d["v"], d["total"]
            params[f"dprev{i}"], params[f"dvalue{i}"] = d["prev_total"], d["value"]
        head = "insert" if parent_id is None else "paused" if status == "paused" else "advance"
        try:
            moved = tx.one(self._d.put_statement(head, len(full), len(deltas)), params)[0]
        except Exception as e:
            if not (deltas and _is_broken_chain(e)):
                raise
            # An appended list whose stored previous version is not what it extends: the
            # statement failed whole; store every value whole instead.
            wholes = [{**d, "value": serde.dumps(whole).encode()} for d, whole in deltas]
            return self._put_pg(
                tx,
                thread_id,
                ns,
                checkpoint_id,
                parent_id,
                status,
                nodes,
                record,
                meta,
                full + wholes,
                [],
            )
        if moved != 1:
            row = tx.one(self._d.sql["head"], {"t": thread_id, "ns": ns})
            current = row[0] if row else None
            if current == checkpoint_id:
                return None  # stored already: a retry after the connection dropped
            raise CheckpointConflictError(
                f"thread {thread_id!r} moved on: its head is {current!r}, not {parent_id!r}; "
                "another run wrote to it",
                thread_id,
            )
        return None

    _put_pg._single_statement = True  # type: ignore[attr-defined]

    def put_writes(
        self, config: RunConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> None:
        args = self._writes_args(config, writes, task_id)
        if args is not None:
            self._run(self._writes_tx, *args, retry=False)

    async def aput_writes(
        self, config: RunConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> None:
        args = self._writes_args(config, writes, task_id)
        if args is not None:
            await self._arun(self._writes_tx, *args, retry=False)

    def _writes_args(
        self, config: RunConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> tuple[Any, ...] | None:
        thread_id, ns = self._key(config)
        checkpoint_id = config_checkpoint_id(config) or ""
        rows = []
        error = None
        special = False
        for channel, value in writes:
            iid = None
            if channel in _SPECIAL:
                special = True
                if channel == INTERRUPT:
                    iid = getattr(value, "id", None)
                elif channel == RESUME:
                    if isinstance(value, (list, tuple)) and len(value) == 2:
                        iid = str(value[0])
                else:
                    error = str(value)
            rows.append(
                {
                    "t": thread_id,
                    "ns": ns,
                    "id": checkpoint_id,
                    "task": task_id,
                    "c": channel,
                    "value": serde.dumps(value).encode(),
                    "iid": iid,
                }
            )
        if not rows:
            return None
        status = "failed" if error is not None else "check" if special else None
        return thread_id, ns, checkpoint_id, rows, status, error

    def _writes_tx(
        self,
        tx: _Tx,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        rows: builtins.list[dict[str, Any]],
        status: str | None,
        error: str | None,
    ) -> None:
        if self._d.pg:
            self._writes_pg(tx, thread_id, ns, checkpoint_id, rows, status, error)
            return
        sql = self._d.sql
        tx.many(sql["insert_write"], rows)
        head = {"t": thread_id, "ns": ns, "id": checkpoint_id, "now": _now()}
        if status == "failed":
            tx.run(sql["thread_failed"], {**head, "error": error})
        elif status == "check":
            tx.run(sql["thread_after_writes"], head)

    def _writes_pg(
        self,
        tx: _Tx,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        rows: builtins.list[dict[str, Any]],
        status: str | None,
        error: str | None,
    ) -> None:
        """PostgreSQL: the writes and the thread's new status in one statement."""
        params: dict[str, Any] = {
            "t": thread_id,
            "ns": ns,
            "id": checkpoint_id,
            "now": _now(),
            "error": error,
            "task": rows[0]["task"],
        }
        for i, row in enumerate(rows):
            params[f"c{i}"], params[f"value{i}"], params[f"iid{i}"] = (
                row["c"],
                row["value"],
                row["iid"],
            )
        new_ids = {r["iid"] for r in rows if r["c"] == INTERRUPT}
        answered = {r["iid"] for r in rows if r["c"] == RESUME and r["iid"] is not None}
        params["new_pending"] = bool(new_ids - answered) or (None in new_ids)
        for i, iid in enumerate(sorted(answered)):
            params[f"a{i}"] = iid
        tx.run(self._d.writes_statement(len(rows), status, len(answered)), params)

    _writes_pg._single_statement = True  # type: ignore[attr-defined]
    _writes_tx._single_statement = True  # type: ignore[attr-defined]

    def delete_thread(self, thread_id: str) -> None:
        self._run(self._delete_tx, thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._arun(self._delete_tx, thread_id)

    def _delete_tx(self, tx: _Tx, thread_id: str) -> None:
        sql = self._d.sql
        for name in ("delete_threads", "delete_checkpoints", "delete_blobs", "delete_writes"):
            tx.run(sql[name], {"t": thread_id})

    # ---- status -------------------------------------------------------------------------

    def list_paused(
        self, *, paused_before: datetime | None = None, limit: int | None = None
    ) -> builtins.list[PausedThread]:
        """Every paused thread, longest-waiting first: one query on an index of the status.

        Args:
            paused_before: only pauses that began before this time (for an expiry sweep).
            limit: at most this many.
        """
        return self._run(self._paused_tx, paused_before, limit, read=True)

    async def alist_paused(
        self, *, paused_before: datetime | None = None, limit: int | None = None
    ) -> builtins.list[PausedThread]:
        """Async form of `list_paused`."""
        return await self._arun(self._paused_tx, paused_before, limit, read=True)

    def _paused_tx(
        self, tx: _Tx, paused_before: datetime | None, limit: int | None
    ) -> builtins.list[PausedThread]:
        params = {
            "before": paused_before.timestamp() if paused_before else 1e300,
            "limit": _NO_LIMIT if limit is None else max(limit, 0),
        }
        out: builtins.list[PausedThread] = []
        pending: dict[str, Any] = {}
        for thread_id, ns, head, since, nodes, channel, iid, value in tx.all(
            self._d.sql["list_paused"], params
        ):
            if not out or (out[-1].thread_id, out[-1].checkpoint_ns) != (thread_id, ns):
                if out:
                    out[-1] = _with_interrupts(out[-1], pending)
                pending = {}
                out.append(
                    PausedThread(
                        thread_id=thread_id,
                        checkpoint_ns=ns,
                        checkpoint_id=head,
                        paused_since=_ts(since),
                        interrupts=(),
                        paused_nodes=tuple(_decode(thread_id, None, nodes)) if nodes else (),
                    )
                )
            if channel == INTERRUPT:
                pending.pop(iid, None)  # asked again: it moves to the end
                pending[iid if iid is not None else f"#{len(pending)}"] = _decode(
                    thread_id, INTERRUPT, value
                )
            elif channel == RESUME:
                pending.pop(iid, None)
        if out:
            out[-1] = _with_interrupts(out[-1], pending)
        return out

    _paused_tx._single_statement = True  # type: ignore[attr-defined]

    def get_status(self, config: RunConfig) -> str | None:
        """The thread's status (`running`, `paused`, `done`, `failed`), or None if unknown."""
        thread_id, ns = self._key(config)
        row = self._run(
            lambda tx: tx.one(self._d.sql["thread_status"], {"t": thread_id, "ns": ns}), read=True
        )
        return row[0] if row else None

    # ---- pruning ------------------------------------------------------------------------

    def prune(self, thread_id: str | None = None, *, keep_last: int = 1) -> int:
        """Keep the last `keep_last` checkpoints of a thread (of every thread: `None`).

        Whatever a kept checkpoint needs stays: its pending writes and every stored channel
        version it refers to, however old, with the whole chain of an appended list. The head
        is always kept, so a paused, running or failed thread resumes as before.

        Returns:
            The number of checkpoints removed.
        """
        if keep_last < 1:
            raise ValueError("keep_last must be at least 1: the head is what a thread resumes from")
        keys = self._run(self._thread_keys_tx, thread_id, read=True)
        return sum(self._run(self._prune_tx, t, ns, keep_last) for t, ns in keys)

    async def aprune(self, thread_id: str | None = None, *, keep_last: int = 1) -> int:
        """Async form of `prune`."""
        if keep_last < 1:
            raise ValueError("keep_last must be at least 1: the head is what a thread resumes from")
        keys = await self._arun(self._thread_keys_tx, thread_id, read=True)
        removed = 0
        for t, ns in keys:
            removed += await self._arun(self._prune_tx, t, ns, keep_last)
        return removed

    def _thread_keys_tx(self, tx: _Tx, thread_id: str | None) -> builtins.list[tuple[str, str]]:
        if thread_id is None:
            rows = tx.all(self._d.sql["all_thread_keys"])
        else:
            rows = tx.all(self._d.sql["thread_keys"], {"t": thread_id})
        return [(t, ns) for t, ns in rows]

    def _prune_tx(self, tx: _Tx, thread_id: str, ns: str, keep_last: int) -> int:
        sql = self._d.sql
        key = {"t": thread_id, "ns": ns}
        tx.all(sql["lock_thread_row"], key)  # waits for a put under way (PG)
        rows = tx.all(sql["prune_list"], key)
        if len(rows) <= keep_last:
            return 0
        kept = rows[:keep_last]
        needed: set[tuple[str, int]] = set()
        for checkpoint_id, record in kept:
            try:
                versions = serde.loads_record(_bytes(record))["channel_versions"]
            except (CheckpointFormatError, KeyError, TypeError) as e:
                raise _format_error(thread_id, None, f"checkpoint {checkpoint_id!r}: {e}") from e
            needed.update(versions.items())
        prev_of = {(c, v): prev for c, v, prev in tx.all(sql["blob_keys"], key)}
        keep: set[tuple[str, int]] = set()
        for c, v in needed:
            at: int | None = v
            while at is not None and (c, at) in prev_of and (c, at) not in keep:
                keep.add((c, at))
                at = prev_of[(c, at)]
        oldest = {**key, "oldest": kept[-1][0]}
        tx.run(sql["prune_checkpoints"], oldest)
        tx.run(sql["prune_writes"], oldest)
        doomed = [{**key, "c": c, "v": v} for (c, v) in prev_of if (c, v) not in keep]
        if doomed:
            tx.many(sql["delete_blob"], doomed)
        return len(rows) - keep_last

    def prune_finished(self, older_than: timedelta) -> int:
        """Delete threads that finished (`done`) and have not changed for `older_than`.

        Paused, running and failed threads are never touched, whatever their age.

        Returns:
            The number of threads (thread and namespace pairs) deleted.
        """
        return self._run(self._prune_finished_tx, older_than)

    async def aprune_finished(self, older_than: timedelta) -> int:
        """Async form of `prune_finished`."""
        return await self._arun(self._prune_finished_tx, older_than)

    def _prune_finished_tx(self, tx: _Tx, older_than: timedelta) -> int:
        sql = self._d.sql
        cutoff = _now() - older_than.total_seconds()
        keys = tx.all(sql["finished"], {"cutoff": cutoff})
        if not keys:
            return 0
        # The rows are locked (PostgreSQL) or the file is (SQLite): they are still done and old.
        plain = [{"t": t, "ns": ns} for t, ns in keys]
        for name in (
            "delete_key_threads",
            "delete_key_checkpoints",
            "delete_key_blobs",
            "delete_key_writes",
        ):
            tx.many(sql[name], plain)
        return len(keys)

    # ---- one run per thread -------------------------------------------------------------

    def _proc_key(self, thread_id: str, ns: str) -> tuple[str, str, str]:
        scope = self._lock_path or self.url.render_as_string(hide_password=True)
        return (scope, thread_id, ns)

    @contextlib.contextmanager
    def _proc_hold(self, thread_id: str, ns: str) -> Iterator[None]:
        key = self._proc_key(thread_id, ns)
        with _proc_guard:
            if key in _proc_held:
                raise _busy(thread_id, "another run in this process")
            _proc_held.add(key)
        try:
            yield
        finally:
            with _proc_guard:
                _proc_held.discard(key)

    def _advisory_key(self, thread_id: str, ns: str) -> int:
        digest = _key_digest("thread", self._lock_scope or "", thread_id, ns)
        return int.from_bytes(digest[:8], "big", signed=True)

    @contextlib.contextmanager
    def lock_thread(self, config: RunConfig) -> Iterator[None]:
        """Hold the thread for one run, across processes; refuse at once if it is held.

        Raises:
            ThreadBusyError: another run, in this process or another, holds the thread.
        """
        thread_id, ns = self._key(config)
        if self._memory:
            with super().lock_thread(config):
                yield
            return
        if not self._d.pg:
            with self._proc_hold(thread_id, ns), self._file_lock(thread_id, ns):
                yield
            return
        with self._proc_hold(thread_id, ns):
            raw, key = self._retry_lock(thread_id, ns, self._sync_engine().raw_connection)
            try:
                yield
            finally:
                self._raw_unlock(raw, key)

    @contextlib.asynccontextmanager
    async def alock_thread(self, config: RunConfig) -> AsyncIterator[None]:
        """Async form of `lock_thread`."""
        thread_id, ns = self._key(config)
        if self._memory or not self._d.pg:
            with self.lock_thread(config):  # no I/O wait: fcntl is asked not to block
                yield
            return
        with self._proc_hold(thread_id, ns):
            for attempt in (0, 1):
                conn = await self._async_engine().connect()
                try:
                    key = await conn.run_sync(
                        lambda c: self._raw_try_lock(c.connection, thread_id, ns)
                    )
                    break
                except _Dropped as dropped:
                    await conn.close()
                    if attempt:
                        raise dropped.error from None
                except BaseException:
                    await conn.close()
                    raise
            try:
                yield
            finally:
                try:
                    await conn.run_sync(lambda c: self._raw_unlock(c.connection, key, close=False))
                finally:
                    await conn.close()

    def _retry_lock(self, thread_id: str, ns: str, checkout: Callable[[], Any]) -> tuple[Any, int]:
        for attempt in (0, 1):
            raw = checkout()
            try:
                return raw, self._raw_try_lock(raw, thread_id, ns)
            except _Dropped as dropped:
                raw.close()
                if attempt:
                    raise dropped.error from None
            except BaseException:
                raw.close()
                raise
        raise AssertionError("unreachable")

    def _raw_try_lock(self, raw: Any, thread_id: str, ns: str) -> int:
        """Take the thread's advisory lock on `raw` (in autocommit mode while held)."""
        cursor = None
        try:
            raw.dbapi_connection.autocommit = True
            cursor = raw.cursor()
            if self._lock_scope is None:
                cursor.execute("SELECT current_database() || '.' || current_schema()")
                self._lock_scope = str(cursor.fetchone()[0])
            key = self._advisory_key(thread_id, ns)
            cursor.execute("SELECT pg_try_advisory_lock(%(k)s)", {"k": key})
            got = cursor.fetchone()[0]
        except BaseException as e:
            self._handle_drop(raw, e, cursor)
            with contextlib.suppress(Exception):
                raw.dbapi_connection.autocommit = False
            raise
        finally:
            if cursor is not None:
                with contextlib.suppress(Exception):
                    cursor.close()
        if not got:
            raw.dbapi_connection.autocommit = False
            raise _busy(thread_id, "another process")
        return key

    def _raw_unlock(self, raw: Any, key: int, close: bool = True) -> None:
        try:
            cursor = raw.cursor()
            cursor.execute("SELECT pg_advisory_unlock(%(k)s)", {"k": key})
            cursor.close()
            raw.dbapi_connection.autocommit = False
        except Exception:  # noqa: BLE001 (the session, and with it the lock, is gone)
            raw.invalidate()
        finally:
            if close:
                raw.close()

    def _handle_drop(self, raw: Any, error: BaseException, cursor: Any) -> None:
        """If `error` means the connection is lost: invalidate the pool, raise `_Dropped`."""
        dialect = self._sync_engine().dialect
        if isinstance(error, dialect.loaded_dbapi.Error) and dialect.is_disconnect(
            error, raw.dbapi_connection, cursor
        ):
            # Like SQLAlchemy's own handling: every connection of the pool opened before now
            # is presumed dead too (a server restart drops them all).
            pool = getattr(raw, "_pool", None)
            if pool is not None and hasattr(pool, "_invalidate"):
                pool._invalidate(raw, error)
            else:
                raw.invalidate(error)
            raise _Dropped(error) from error

    @contextlib.contextmanager
    def _file_lock(self, thread_id: str, ns: str) -> Iterator[None]:
        assert self._lock_path is not None
        fd = _lock_fd(self._lock_path)
        offset = int.from_bytes(_key_digest("thread", thread_id, ns)[:8], "big") >> 2
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise _busy(thread_id, "another process") from None
            raise
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)


# ---- helpers on a connection ------------------------------------------------------------


def _schema_revision(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return None
    revision = conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalar()
    conn.rollback()
    return revision


@functools.cache
def _script() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS_DIR))


def _known_revisions() -> set[str]:
    return {script.revision for script in _script().walk_revisions()}


def _newer_schema(saver: SQLSaver, revision: str) -> SchemaVersionError:
    return SchemaVersionError(
        f"{saver!r} has checkpoint schema revision {revision!r}, which this code does not know "
        f"(it knows up to {SCHEMA_REVISION!r}): the database was migrated by a newer signoff. "
        "Upgrade signoff; do not downgrade the database.",
        db_revision=revision,
        code_revision=SCHEMA_REVISION,
    )


def _migrate(conn: Connection, saver: SQLSaver) -> None:
    """Bring the schema to head inside the caller's transaction (which holds the lock)."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%(k)s)", {"k": _MIGRATION_LOCK_KEY})
    else:
        conn.exec_driver_sql("SELECT 1")  # starts BEGIN IMMEDIATE: the file's write lock
    current = MigrationContext.configure(
        conn, opts={"version_table": VERSION_TABLE}
    ).get_current_revision()
    if current == SCHEMA_REVISION:
        return
    if current is not None and current not in _known_revisions():
        raise _newer_schema(saver, current)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
