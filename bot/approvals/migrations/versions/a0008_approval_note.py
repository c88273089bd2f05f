"""Approvals: the requester's own words (`note`), apart from the title.

Free text a service sends beside its arguments (the API's and MCP's `title`) is its note: the
card shows it labelled as the service's words, never as the header or in a confirmation, which
show only the action's title filled with argument values. NULL: no note (every approval asked
for before this revision).

Revision ID: a0008
Revises: a0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0008"
down_revision = "a0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("note", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("note")
