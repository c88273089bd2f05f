"""SQLStore's semantic search: the vectors of each item embedded when put, by field.

Revision ID: s0003
Revises: s0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# as in s0001: namespaces compare byte by byte on PostgreSQL, a prefix is a range of the key
Id = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "s0003"
down_revision = "s0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_vectors",
        sa.Column("namespace", Id, nullable=False),
        sa.Column("key", Id, nullable=False),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("text_sha256", sa.Text(), nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "key", "field", name="pk_store_vectors"),
    )


def downgrade() -> None:
    op.drop_table("store_vectors")
