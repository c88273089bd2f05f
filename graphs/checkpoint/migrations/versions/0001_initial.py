"""The checkpoint tables: threads, checkpoints, per-version blobs, pending writes.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Identifiers compare byte by byte on PostgreSQL (collation "C"), as on SQLite and in Python.
Id = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "checkpoint_threads",
        sa.Column("thread_id", Id, primary_key=True),
        sa.Column("checkpoint_ns", Id, primary_key=True),
        sa.Column("head_id", Id, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("paused_since", sa.Double(), nullable=True),
        sa.Column("paused_nodes", sa.LargeBinary(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.Double(), nullable=True),
        sqlite_with_rowid=False,
    )
    # Partial indexes on columns a running thread's steps (the hot path) do not change.
    for name, column, status in (
        ("ix_checkpoint_threads_paused", "paused_since", "paused"),
        ("ix_checkpoint_threads_done", "finished_at", "done"),
    ):
        where = sa.text(f"status = '{status}'")
        op.create_index(
            name, "checkpoint_threads", [column], sqlite_where=where, postgresql_where=where
        )
    op.create_table(
        "checkpoints",
        sa.Column("thread_id", Id, primary_key=True),
        sa.Column("checkpoint_ns", Id, primary_key=True),
        sa.Column("checkpoint_id", Id, primary_key=True),
        sa.Column("parent_id", Id, nullable=True),
        sa.Column("record", sa.LargeBinary(), nullable=False),
        sa.Column("metadata", sa.LargeBinary(), nullable=False),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "checkpoint_blobs",
        sa.Column("thread_id", Id, primary_key=True),
        sa.Column("checkpoint_ns", Id, primary_key=True),
        sa.Column("channel", Id, primary_key=True),
        sa.Column("version", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("prev_version", sa.BigInteger(), nullable=True),
        sa.Column("full_version", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=True),
        sa.Column("value", sa.LargeBinary(), nullable=True),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "checkpoint_writes",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.Identity(),
            primary_key=True,
        ),
        sa.Column("thread_id", Id, nullable=False),
        sa.Column("checkpoint_ns", Id, nullable=False),
        sa.Column("checkpoint_id", Id, nullable=False),
        sa.Column("task_id", Id, nullable=False),
        sa.Column("channel", Id, nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column("interrupt_id", sa.Text(), nullable=True),
    )
    op.create_index(
        "ix_checkpoint_writes_checkpoint",
        "checkpoint_writes",
        ["thread_id", "checkpoint_ns", "checkpoint_id", "seq"],
    )


def downgrade() -> None:
    op.drop_table("checkpoint_writes")
    op.drop_table("checkpoint_blobs")
    op.drop_table("checkpoints")
    op.drop_table("checkpoint_threads")
