"""Approvals: the facts a request's check read (`checked`, JSON).

An action can declare a check (a function beside the workflow, or a service's `check_url`) that
reads the facts the decision rests on. What it read, and when, is stored with the approval for
its card: `{"at": <seconds>, "facts": {...}}`, or `{"at", "error"}` for a check that failed;
for a request asked again because facts changed after an approval, `changed` (`{name: [old,
new]}`) and `after` (the approval it follows). NULL for every approval without a check (and for
those asked before this revision).

Revision ID: a0011
Revises: a0010
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0011"
down_revision = "a0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("checked", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("checked")
