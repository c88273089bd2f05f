"""SQLStore's items: one row per (namespace, key), in the order first put.

Revision ID: s0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Namespaces compare byte by byte on PostgreSQL (collation "C"), as on SQLite and in Python:
# a prefix search is a range of the joined namespace.
Id = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "s0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_items",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.Identity(),
            primary_key=True,
        ),
        sa.Column("namespace", Id, nullable=False),
        sa.Column("key", Id, nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("namespace", "key", name="uq_store_items_namespace_key"),
    )


def downgrade() -> None:
    op.drop_table("store_items")
