"""Runs: which process runs a run it started (`owner`, `host:pid:tag`, as a job's `locked_by`).

A run stays `running` when the process running it dies (killed, out of memory) before it paused
or finished. Who runs it now is the leaseholder of its resume job, or, for a run its starter is
running (`signoff start`, `/agent run`, the API), this column: a process of this host that is
gone is known dead, so `signoff cancel` and `signoff retry` may act on the run; a live one is
refused. NULL for runs started before this revision: their owner is not known.

Revision ID: a0005
Revises: a0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0005"
down_revision = "a0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("owner", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("owner")
