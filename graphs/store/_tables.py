"""`SQLStore`'s table, as SQLAlchemy Core metadata (internal; `migrations/` creates it).

`store_items`: one row per (namespace, key). `namespace` is the tuple joined with "." (a part
cannot hold one), so the items under a prefix are one range of the unique index; `seq` keeps
the order items were first put (an update keeps it, as `InMemoryStore` does); `value` is the
dict as a tagged JSON record (`graphs.checkpoint.serde.dumps_record`); timestamps are seconds
since the epoch, as in the checkpoint tables; so is `expires_at` (None: no TTL), and
`ttl_minutes` is what a refreshing read counts again from. `SCHEMA_REVISION` names the newest migration.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Identity,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_REVISION = "s0002"
"""The Alembic revision this code reads and writes (the head of `migrations/versions`)."""

VERSION_TABLE = "store_schema_version"
"""Alembic's version table for the store (apart from the checkpoint tables' and the app's)."""

metadata = MetaData()

Id = Text().with_variant(Text(collation="C"), "postgresql")

items = Table(
    "store_items",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), Identity(), primary_key=True),
    Column("namespace", Id, nullable=False),
    Column("key", Id, nullable=False),
    Column("value", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("expires_at", Double, nullable=True),
    Column("ttl_minutes", Double, nullable=True),
    UniqueConstraint("namespace", "key", name="uq_store_items_namespace_key"),
    Index("ix_store_items_expires_at", "expires_at"),
)
