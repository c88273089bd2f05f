"""Approvals: the agent turn a gated tool call belongs to (`approval_gate`).

When a model proposes several gated tool calls in one turn, each call keeps its own approval
(policy applies per call), and `turn_id` groups them: one card shows the turn, and a call that
runs after another of the turn (`after` in the policy) waits for it. `turn` holds the call's
place in its turn, as JSON: its tool call id, its position, and the ids of the calls of the
turn it runs after. NULL for every other approval (and for those asked before this revision).

Revision ID: a0009
Revises: a0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0009"
down_revision = "a0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("turn_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("turn", sa.Text(), nullable=True))
        batch.create_index("ix_approvals_turn", ["thread_id", "turn_id"])


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_index("ix_approvals_turn")
        batch.drop_column("turn")
        batch.drop_column("turn_id")
