"""`SQLStore`'s table, as SQLAlchemy Core metadata (internal; `migrations/` creates it).

`store_items`: one row per (namespace, key). `namespace` is the tuple joined with "." (a part
cannot hold one), so the items under a prefix are one range of the unique index; `seq` keeps
the order items were first put (an update keeps it, as `InMemoryStore` does); `value` is the
dict as a tagged JSON record (`graphs.checkpoint.serde.dumps_record`); timestamps are seconds
since the epoch, as in the checkpoint tables; so is `expires_at` (None: no TTL), and
`ttl_minutes` is what a refreshing read counts again from. `SCHEMA_REVISION` names the newest migration.

`store_vectors`: the vectors of the items embedded when put (`index=`), one row per (namespace,
key, field): the field is the path embedded (`"$"`, `"text"`, `"tags[*].0"` for the first of
several texts), `text_sha256` the hash of the text embedded (the value holds the text), and
`embedding` the vector as little-endian float64s, exactly the floats the embedding gave, in 8
bytes a dimension (JSON takes about 19), read back with one `struct.unpack`, the same bytes on
SQLite and PostgreSQL. A put replaces an item's rows; a delete and a sweep remove them.
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
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_REVISION = "s0003"
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

vectors = Table(
    "store_vectors",
    metadata,
    Column("namespace", Id, nullable=False),
    Column("key", Id, nullable=False),
    Column("field", Text, nullable=False),
    Column("text_sha256", Text, nullable=False),
    Column("embedding", LargeBinary, nullable=False),
    PrimaryKeyConstraint("namespace", "key", "field", name="pk_store_vectors"),
)
