"""Slack's rate limits shared by replicas: `slack_pace`, a row per limit key Slack paced.

Slack counts its rate limits per workspace (per app token), and every replica of the bot on one
PostgreSQL database calls Slack with the same token. Each replica pacing on its own would think
it has the whole budget: together they draw 429s. A replica that is paced for a key reserves
its calls' slots here (`bot.slack.shared_pace`), one statement each; on SQLite (one process)
the table stays empty.

Revision ID: a0006
Revises: a0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0006"
down_revision = "a0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_pace",
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("next_free", sa.Double(), nullable=False),
        sa.Column("paced_until", sa.Double(), nullable=False),
        sa.Column("taken", sa.Boolean(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_pace")
