"""Audit: entries are written to an inbox and linked into the hash chain after they commit.

Appending used to lock the chain's head (an advisory lock on PostgreSQL) from the first append to
the commit of the writer's transaction, so every click, resume and sweep that recorded something
queued behind the others. Writers now insert into `audit_inbox` without waiting on anyone, and one
linker at a time moves committed entries into `audit_events`, in order (`AuditLog.link`).

Revision ID: a0003
Revises: a0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0003"
down_revision = "a0002"
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "audit_inbox",
        sa.Column("id", _BigId, sa.Identity(), primary_key=True),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("approval_id", sa.Text(), nullable=True),
        sa.Column("thread_id", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("audit_inbox")
