"""The checkpoint tables, as SQLAlchemy Core metadata (internal: `SQLSaver` owns them).

Four tables, every one keyed by `(thread_id, checkpoint_ns)` first:

- `checkpoint_threads`: one row per thread, its head (for compare-and-set) and its status
  (for "what is paused" in one indexed query).
- `checkpoints`: one row per saved superstep; channel values live in `checkpoint_blobs`.
- `checkpoint_blobs`: one row per channel *version*. A list channel that grew by concatenation
  stores only the appended items, chained to the version before it; one changed in the middle
  (an update by id) stores an edit of it, chained the same way.
- `checkpoint_writes`: pending writes, ordered by an increasing `seq`.

This module is the description of the newest schema; the migrations under `migrations/` are
what creates it, and `SCHEMA_REVISION` must name the newest migration (a test checks both).
Timestamps are seconds since the epoch (double precision): the same type, comparison and index
on SQLite and PostgreSQL.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

__all__ = [
    "SCHEMA_REVISION",
    "VERSION_TABLE",
    "Id",
    "blobs",
    "checkpoints",
    "metadata",
    "threads",
    "writes",
]

SCHEMA_REVISION = "0001"
"""The Alembic revision this code writes and reads (the head of `migrations/versions`)."""

VERSION_TABLE = "checkpoint_schema_version"
"""Alembic's version table for these tables (not `alembic_version`, which the app may use)."""

metadata = MetaData()

# Identifiers compare byte by byte on PostgreSQL too (collation "C"), as on SQLite and in
# Python: checkpoint ids sort by their sequence prefix whatever the database's locale.
Id = Text().with_variant(Text(collation="C"), "postgresql")

# Statuses a thread row can have; see `SQLSaver` for how each is derived.
STATUSES = ("running", "paused", "done", "failed")

threads = Table(
    "checkpoint_threads",
    metadata,
    Column("thread_id", Id, primary_key=True),
    Column("checkpoint_ns", Id, primary_key=True),
    Column("head_id", Id, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("paused_since", Double, nullable=True),
    # The nodes of a static pause (tagged JSON list); the interrupt() payloads of a pause are
    # the head's `__interrupt__` writes without a `__resume__` of the same interrupt id.
    Column("paused_nodes", LargeBinary, nullable=True),
    Column("error", Text, nullable=True),
    # When it finished (status `done`), else NULL. Not `updated_at`, which every step changes:
    # an index on it would make each step's update of this row rewrite its index entries.
    Column("finished_at", Double, nullable=True),
    # Partial indexes on columns a running thread's steps (the hot path) do not change, so
    # PostgreSQL can update its row in place (HOT) and SQLite touches no index.
    Index(
        "ix_checkpoint_threads_paused",
        "paused_since",
        sqlite_where=text("status = 'paused'"),
        postgresql_where=text("status = 'paused'"),
    ),
    Index(
        "ix_checkpoint_threads_done",
        "finished_at",
        sqlite_where=text("status = 'done'"),
        postgresql_where=text("status = 'done'"),
    ),
    sqlite_with_rowid=False,
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("thread_id", Id, primary_key=True),
    Column("checkpoint_ns", Id, primary_key=True),
    Column("checkpoint_id", Id, primary_key=True),
    Column("parent_id", Id, nullable=True),
    Column("record", LargeBinary, nullable=False),
    Column("metadata", LargeBinary, nullable=False),
    sqlite_with_rowid=False,
)

blobs = Table(
    "checkpoint_blobs",
    metadata,
    Column("thread_id", Id, primary_key=True),
    Column("checkpoint_ns", Id, primary_key=True),
    Column("channel", Id, primary_key=True),
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    # For an append row: the version it extends; NULL for a full value.
    Column("prev_version", BigInteger, nullable=True),
    # The full row this chain starts at (the version itself for a full row).
    Column("full_version", BigInteger, nullable=False),
    # Length of the whole list at this version, when the value is a list.
    Column("total", Integer, nullable=True),
    # Tagged JSON (UTF-8): the whole value, or for an append row the appended items (a list),
    # or for an edit row the edit (an object, see `_delta.edit_json`).
    # NULL: the channel has no value at this version.
    Column("value", LargeBinary, nullable=True),
    sqlite_with_rowid=False,
)

writes = Table(
    "checkpoint_writes",
    metadata,
    Column(
        "seq",
        BigInteger().with_variant(Integer, "sqlite"),
        Identity(),
        primary_key=True,
    ),
    Column("thread_id", Id, nullable=False),
    Column("checkpoint_ns", Id, nullable=False),
    Column("checkpoint_id", Id, nullable=False),
    Column("task_id", Id, nullable=False),
    Column("channel", Id, nullable=False),
    Column("value", LargeBinary, nullable=False),
    # For `__interrupt__` writes the Interrupt's id, for `__resume__` writes the id answered.
    Column("interrupt_id", Text, nullable=True),
    Index("ix_checkpoint_writes_checkpoint", "thread_id", "checkpoint_ns", "checkpoint_id", "seq"),
)
