"""Approvals: how each argument is shown (`format = "money"` in the policy's `[actions.NAME.args]`).

Copied from the policy when the approval is asked for, beside its approvers and editable fields,
so that its card, edits, Home, `/agent status` and `signoff show` show one format for a value
(42.50) for the approval's whole life. A JSON object, field name -> format; NULL (approvals asked
for before this revision) shows values as written.

Revision ID: a0004
Revises: a0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0004"
down_revision = "a0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("formats", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("formats")
