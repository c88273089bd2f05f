"""Jobs: find the oldest pending job of a kind through a partial index of pending jobs.

The claim used to sort every due job on each pass (`ORDER BY CASE kind ..., id`): with a backlog
of thousands it cost milliseconds of database time per claim, growing with the backlog. Now it
asks kind by kind in `id` order through `(kind, id) WHERE done_at IS NULL`, which holds only
the jobs not yet done, so it stays small however long the history of done jobs grows.

Revision ID: a0002
Revises: a0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0002"
down_revision = "a0001"
branch_labels = None
depends_on = None

_PENDING = sa.text("done_at IS NULL")


def upgrade() -> None:
    op.drop_index("ix_jobs_due", table_name="jobs")
    op.create_index(
        "ix_jobs_pending", "jobs", ["kind", "id"], postgresql_where=_PENDING, sqlite_where=_PENDING
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_pending", table_name="jobs")
    op.create_index("ix_jobs_due", "jobs", ["done_at", "kind", "available_at"])
