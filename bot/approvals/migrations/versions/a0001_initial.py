"""The governance tables: runs, approvals, approval_waiters, votes, audit_events, jobs, effects.

Revision ID: a0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0001"
down_revision = None
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("thread_id", sa.Text(), primary_key=True),
        sa.Column("workflow", sa.Text(), nullable=False),
        sa.Column("requester", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_index("ix_runs_status_updated", "runs", ["status", "updated_at"])

    op.create_table(
        "approvals",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("interrupt_id", sa.Text(), nullable=False, unique=True),
        sa.Column("workflow", sa.Text(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("dedupe_key", sa.Text(), nullable=True),
        sa.Column("risk_tier", sa.String(10), nullable=False),
        sa.Column("requester", sa.Text(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("required", sa.Integer(), nullable=False),
        sa.Column("approvers", sa.Text(), nullable=False),
        sa.Column("editable", sa.Text(), nullable=False),
        sa.Column("escalated", sa.Boolean(), nullable=False),
        sa.Column("decision", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("channel", sa.Text(), nullable=True),
        sa.Column("message_ts", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("decided_at", sa.Double(), nullable=True),
        sa.Column("remind_at", sa.Double(), nullable=True),
        sa.Column("escalate_at", sa.Double(), nullable=True),
        sa.Column("expire_at", sa.Double(), nullable=True),
        sa.Column("reminded_at", sa.Double(), nullable=True),
        sa.Column("escalated_at", sa.Double(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
    )
    op.create_index("ix_approvals_status_created", "approvals", ["status", "created_at"])
    op.create_index("ix_approvals_status_expire", "approvals", ["status", "expire_at"])
    op.create_index("ix_approvals_dedupe", "approvals", ["action", "dedupe_key", "status"])
    op.create_index("ix_approvals_thread", "approvals", ["thread_id"])

    op.create_table(
        "approval_waiters",
        sa.Column("interrupt_id", sa.Text(), primary_key=True),
        sa.Column(
            "approval_id",
            sa.Text(),
            sa.ForeignKey("approvals.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_index("ix_approval_waiters_approval", "approval_waiters", ["approval_id"])

    op.create_table(
        "votes",
        sa.Column("id", _BigId, sa.Identity(), primary_key=True),
        sa.Column(
            "approval_id",
            sa.Text(),
            sa.ForeignKey("approvals.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("decision", sa.String(10), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("edits", sa.Text(), nullable=True),
        sa.Column("at", sa.Double(), nullable=False),
        sa.UniqueConstraint("approval_id", "user_id", name="uq_votes_approval_user"),
    )

    op.create_table(
        "audit_events",
        sa.Column("seq", _BigId, sa.Identity(), primary_key=True),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("approval_id", sa.Text(), nullable=True),
        sa.Column("thread_id", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )

    op.create_table(
        "jobs",
        sa.Column("id", _BigId, sa.Identity(), primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("key", sa.Text(), nullable=False, unique=True),
        sa.Column("approval_id", sa.Text(), nullable=True),
        sa.Column("thread_id", sa.Text(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("available_at", sa.Double(), nullable=False),
        sa.Column("locked_until", sa.Double(), nullable=True),
        sa.Column("locked_by", sa.Text(), nullable=True),
        sa.Column("done_at", sa.Double(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_index("ix_jobs_due", "jobs", ["done_at", "kind", "available_at"])
    op.create_index("ix_jobs_thread", "jobs", ["thread_id", "id"])

    op.create_table(
        "effects",
        sa.Column("id", _BigId, sa.Identity(), primary_key=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("thread_id", sa.Text(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("at", sa.Double(), nullable=False),
        sa.UniqueConstraint("kind", "key", name="uq_effects_kind_key"),
    )


def downgrade() -> None:
    op.drop_table("effects")
    op.drop_table("jobs")
    op.drop_table("audit_events")
    op.drop_table("votes")
    op.drop_table("approval_waiters")
    op.drop_table("approvals")
    op.drop_table("runs")
