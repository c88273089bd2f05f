"""`SQLCache`'s table, as SQLAlchemy Core metadata (internal; `migrations/` creates it).

`cache_entries`: one row per (namespace, key). `namespace` is the tuple as a JSON list (so
any node name can be told apart from any other), `value` the cached result as a tagged JSON
record (`graphs.checkpoint.serde.dumps_record`), `expires_at` seconds since the epoch (the
wall clock, which every process sharing the database reads alike; None: until cleared),
indexed so that expired rows are deleted by one range. `SCHEMA_REVISION` names the newest
migration.
"""

from __future__ import annotations

from sqlalchemy import Column, Double, Index, MetaData, PrimaryKeyConstraint, Table, Text

SCHEMA_REVISION = "c0001"
"""The Alembic revision this code reads and writes (the head of `migrations/versions`)."""

VERSION_TABLE = "cache_schema_version"
"""Alembic's version table for the cache (apart from the checkpoint tables', the store's and
the app's)."""

metadata = MetaData()

Id = Text().with_variant(Text(collation="C"), "postgresql")

entries = Table(
    "cache_entries",
    metadata,
    Column("namespace", Id, nullable=False),
    Column("key", Id, nullable=False),
    Column("value", Text, nullable=False),
    Column("expires_at", Double, nullable=True),
    PrimaryKeyConstraint("namespace", "key", name="pk_cache_entries"),
    Index("ix_cache_entries_expires_at", "expires_at"),
)
