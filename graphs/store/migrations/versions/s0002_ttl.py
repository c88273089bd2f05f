"""SQLStore's TTLs: when an item expires, and the minutes a refreshing read gives it again.

Revision ID: s0002
Revises: s0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "s0002"
down_revision = "s0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("store_items", sa.Column("expires_at", sa.Double(), nullable=True))
    op.add_column("store_items", sa.Column("ttl_minutes", sa.Double(), nullable=True))
    op.create_index("ix_store_items_expires_at", "store_items", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_store_items_expires_at", table_name="store_items")
    op.drop_column("store_items", "ttl_minutes")
    op.drop_column("store_items", "expires_at")
