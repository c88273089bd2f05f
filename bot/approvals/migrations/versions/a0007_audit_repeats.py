"""Refusals repeated within a window are one audit entry: `audit_repeats`, a row per window.

A client without a token, or a service sending one bad request over and over, was one audit
entry per request: 200 requests without a token added 1.6 MB. Now the first refusal of a kind
from a source is on the log at once, and those that follow it within the window are counted
here and written as one entry (their count, the first and last time) once it closes
(`bot.approvals.audit.AuditLog.refusal`).

Revision ID: a0007
Revises: a0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0007"
down_revision = "a0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_repeats",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_at", sa.Double(), nullable=True),
        sa.Column("last_at", sa.Double(), nullable=True),
        sa.Column("until", sa.Double(), nullable=False),
    )
    op.create_index("ix_audit_repeats_until", "audit_repeats", ["until"])


def downgrade() -> None:
    op.drop_index("ix_audit_repeats_until", table_name="audit_repeats")
    op.drop_table("audit_repeats")
