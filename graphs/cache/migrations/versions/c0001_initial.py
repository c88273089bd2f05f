"""SQLCache's entries: one row per (namespace, key), with the time it expires.

Revision ID: c0001
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Keys compare byte by byte on PostgreSQL (collation "C"), as on SQLite.
Id = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "c0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cache_entries",
        sa.Column("namespace", Id, nullable=False),
        sa.Column("key", Id, nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("namespace", "key", name="pk_cache_entries"),
    )
    op.create_index("ix_cache_entries_expires_at", "cache_entries", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_cache_entries_expires_at", table_name="cache_entries")
    op.drop_table("cache_entries")
