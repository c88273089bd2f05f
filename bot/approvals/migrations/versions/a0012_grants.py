"""Grants: an approver's "Approve, and allow up to N more like this for T", from the card.

`grants` holds each grant: the approved call it is bounded by, for whom, its uses left, until
when, the fingerprint of the policy it rests on, and its revocation. `approvals.granted` says,
for an approval decided by a grant, which one (and what was left of it then). NULL for every
other approval.

Revision ID: a0012
Revises: a0011
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0012"
down_revision = "a0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grants",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("approval_id", sa.Text(), nullable=False),
        sa.Column("grantor", sa.Text(), nullable=False),
        sa.Column("requester", sa.Text(), nullable=False),
        sa.Column("service", sa.Text(), nullable=True),
        sa.Column("bound", sa.Text(), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("left", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.Column("policy", sa.Text(), nullable=False),
        sa.Column("revoked_at", sa.Double(), nullable=True),
        sa.Column("revoked_by", sa.Text(), nullable=True),
    )
    op.create_index("ix_grants_live", "grants", ["action", "requester", "expires_at"])
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("granted", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("granted")
    op.drop_index("ix_grants_live", table_name="grants")
    op.drop_table("grants")
