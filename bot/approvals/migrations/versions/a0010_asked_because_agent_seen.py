"""Approvals: why a request a rule would have approved was asked of people instead, and what
an agent saw when it proposed a tool call.

An auto-approval rule may have a budget (`budget = {...}`: at most so many approvals, or so much
of an argument, per key, in a window). A request past it is asked like any other, and
`asked_because` says which cap, in words, for its card and the audit log. NULL for every other
approval (and for those asked before this revision).

`agent_seen` (JSON) holds, for an agent's gated tool call, the model's words beside the call and
the tool results it had just read (the facts the proposal rests on), for the card and the payload
view. NULL for every other approval.

Revision ID: a0010
Revises: a0009
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0010"
down_revision = "a0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("asked_because", sa.Text(), nullable=True))
        batch.add_column(sa.Column("agent_seen", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("agent_seen")
        batch.drop_column("asked_because")
