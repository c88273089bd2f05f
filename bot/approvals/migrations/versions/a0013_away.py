"""People who are away: `/agent away [until DATE] [delegate @person]`, and what an approval
records of them.

`away` holds one row per person who said they are away (until when, NULL for "until I say
`/agent back`", and the delegate who may decide for them where the policy allows it); `/agent
back` deletes the row. `votes.for_user` names the away approver a delegate's vote was cast for
(NULL for a person's own vote). `approvals.away` (JSON) lists who was away, and until when, when
every person who could decide the approval was (the card shows it); NULL otherwise.

Revision ID: a0013
Revises: a0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0013"
down_revision = "a0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "away",
        sa.Column("user_id", sa.Text(), primary_key=True),
        sa.Column("until", sa.Double(), nullable=True),
        sa.Column("delegate", sa.Text(), nullable=True),
        sa.Column("since", sa.Double(), nullable=False),
    )
    op.create_index("ix_away_delegate", "away", ["delegate"])
    with op.batch_alter_table("votes") as batch:
        batch.add_column(sa.Column("for_user", sa.Text(), nullable=True))
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("away", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("away")
    with op.batch_alter_table("votes") as batch:
        batch.drop_column("for_user")
    op.drop_index("ix_away_delegate", table_name="away")
    op.drop_table("away")
