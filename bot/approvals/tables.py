"""The governance tables, as SQLAlchemy Core metadata. Created by the migrations beside them.

They live in the same database as the checkpoints but are separate from them: the checkpoint is
the graph's memory, these are the application's record (what was asked, who decided, what ran).

- `runs`: one row per workflow run (thread): who started it, where its cards go, how it ended.
- `approvals`: one row per approval request, with its status and deadlines.
  A gated tool call of an agent's model turn says which turn (`turn_id`) and its place in it
  (`turn`: its call id, position, and the calls it runs after).
- `approval_waiters`: the paused interrupts an approval answers (more than one when a duplicate
  request joined a pending one).
- `votes`: one row per person's decision on an approval.
- `audit_events`: the append-only, hash-chained audit log.
- `audit_inbox`: audit entries committed but not yet linked into the chain (moments, normally).
- `audit_repeats`: refusals repeated within a window (`AuditLog.refusal`): per kind, source and
  refusal, how many followed the first, and when the first and last came; one entry on the
  chain for them all once the window is over.
- `jobs`: the durable queue of work to do after a commit (resume a thread, deliver an event).
- `effects`: what the bundled workflows' stand-in side effects did (refunds issued, rows
  deleted, emails sent), so that tests and the demo can count them.
- `slack_pace`: the Slack rate limits every replica shares (PostgreSQL): per limit key, the next
  free slot and until when it is paced (`bot.slack.shared_pace`). Slack counts its limits per
  workspace, not per process; this is the one budget replicas draw from.
- `grants`: what an approver allowed from a card ("Approve, and allow up to N more like this for
  T"): the approved call it is bounded by (`bound`, JSON, secrets redacted), for whom
  (`requester`, `service`), how many uses are `left` of `uses`, until when, the fingerprint of
  the policy it rests on (`policy`), and its revocation. An approval decided by one says which
  in its `granted` column (JSON: the grant, its grantor, uses left, until when).

Times are seconds since the epoch (double precision), the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

__all__ = [
    "SCHEMA_REVISION",
    "VERSION_TABLE",
    "approval_waiters",
    "approvals",
    "audit_events",
    "audit_inbox",
    "audit_repeats",
    "away",
    "effects",
    "grants",
    "jobs",
    "metadata",
    "runs",
    "slack_pace",
    "votes",
]

SCHEMA_REVISION = "a0013"
"""The newest migration under `migrations/versions` (a test checks they agree)."""

VERSION_TABLE = "signoff_schema_version"

metadata = MetaData()

_BigId = BigInteger().with_variant(Integer, "sqlite")

runs = Table(
    "runs",
    metadata,
    Column("thread_id", Text, primary_key=True),
    Column("workflow", Text, nullable=False),
    Column("requester", Text, nullable=False),
    Column("channel", Text, nullable=True),
    Column("status", String(20), nullable=False),
    Column("input", Text, nullable=False),
    Column("result", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("owner", Text, nullable=True),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Index("ix_runs_status_updated", "status", "updated_at"),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", Text, primary_key=True),
    Column("thread_id", Text, nullable=False),
    Column("interrupt_id", Text, nullable=False, unique=True),
    Column("workflow", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("dedupe_key", Text, nullable=True),
    Column("risk_tier", String(10), nullable=False),
    Column("requester", Text, nullable=False),
    Column("status", String(10), nullable=False),
    Column("required", Integer, nullable=False),
    Column("approvers", Text, nullable=False),
    Column("editable", Text, nullable=False),
    Column("formats", Text, nullable=True),
    Column("note", Text, nullable=True),
    Column("asked_because", Text, nullable=True),
    Column("agent_seen", Text, nullable=True),
    Column("checked", Text, nullable=True),
    Column("escalated", Boolean, nullable=False, default=False),
    Column("decision", Text, nullable=True),
    Column("reason", Text, nullable=True),
    Column("channel", Text, nullable=True),
    Column("message_ts", Text, nullable=True),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("decided_at", Double, nullable=True),
    Column("remind_at", Double, nullable=True),
    Column("escalate_at", Double, nullable=True),
    Column("expire_at", Double, nullable=True),
    Column("reminded_at", Double, nullable=True),
    Column("escalated_at", Double, nullable=True),
    Column("version", Integer, nullable=False, default=0),
    Column("turn_id", Text, nullable=True),
    Column("turn", Text, nullable=True),
    Column("granted", Text, nullable=True),
    Column("away", Text, nullable=True),
    Index("ix_approvals_status_created", "status", "created_at"),
    Index("ix_approvals_status_expire", "status", "expire_at"),
    Index("ix_approvals_dedupe", "action", "dedupe_key", "status"),
    Index("ix_approvals_thread", "thread_id"),
    Index("ix_approvals_turn", "thread_id", "turn_id"),
)

approval_waiters = Table(
    "approval_waiters",
    metadata,
    Column("interrupt_id", Text, primary_key=True),
    Column("approval_id", Text, ForeignKey("approvals.id", ondelete="CASCADE"), nullable=False),
    Column("thread_id", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Index("ix_approval_waiters_approval", "approval_id"),
)

votes = Table(
    "votes",
    metadata,
    Column("id", _BigId, Identity(), primary_key=True),
    Column("approval_id", Text, ForeignKey("approvals.id", ondelete="CASCADE"), nullable=False),
    Column("user_id", Text, nullable=False),
    Column("decision", String(10), nullable=False),
    Column("note", Text, nullable=False, default=""),
    Column("edits", Text, nullable=True),
    Column("at", Double, nullable=False),
    Column("for_user", Text, nullable=True),
    UniqueConstraint("approval_id", "user_id", name="uq_votes_approval_user"),
)

away = Table(
    "away",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("until", Double, nullable=True),
    Column("delegate", Text, nullable=True),
    Column("since", Double, nullable=False),
    Index("ix_away_delegate", "delegate"),
)
"""Who said `/agent away` (until when, with which delegate); `/agent back` deletes the row."""


def _audit_entry() -> list[Column[Any]]:
    """What an audit entry holds, in the chain and in the inbox alike."""
    return [
        Column("at", Double, nullable=False),
        Column("kind", String(40), nullable=False),
        Column("approval_id", Text, nullable=True),
        Column("thread_id", Text, nullable=True),
        Column("actor", Text, nullable=True),
        Column("data", Text, nullable=False),
    ]


audit_events = Table(
    "audit_events",
    metadata,
    Column("seq", _BigId, Identity(), primary_key=True),
    *_audit_entry(),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
)

audit_inbox = Table(
    "audit_inbox",
    metadata,
    # Entries written but not linked into the chain yet (`AuditLog.append` / `AuditLog.link`):
    # writers insert here without waiting on each other; one linker at a time moves them into
    # `audit_events`, in `id` order, right after they commit.
    Column("id", _BigId, Identity(), primary_key=True),
    *_audit_entry(),
)

audit_repeats = Table(
    "audit_repeats",
    metadata,
    # One open window of a refusal repeated (`AuditLog.refusal`): the first of the window is on
    # the log at once; those that follow are counted here, and written as one entry when the
    # window is over (`AuditLog.link`).
    Column("key", String(64), primary_key=True),  # sha256 of kind, source and refusal
    Column("kind", String(40), nullable=False),
    Column("actor", Text, nullable=True),
    Column("data", Text, nullable=False),  # the first refusal's entry (JSON), as it was logged
    Column("count", Integer, nullable=False),  # how many followed it in the window
    Column("first_at", Double, nullable=True),  # the first that followed (None: none yet)
    Column("last_at", Double, nullable=True),
    Column("until", Double, nullable=False),  # when the window closes
    Index("ix_audit_repeats_until", "until"),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", _BigId, Identity(), primary_key=True),
    Column("kind", String(10), nullable=False),
    Column("key", Text, nullable=False, unique=True),
    Column("approval_id", Text, nullable=True),
    Column("thread_id", Text, nullable=True),
    Column("payload", Text, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("available_at", Double, nullable=False),
    Column("locked_until", Double, nullable=True),
    Column("locked_by", Text, nullable=True),
    Column("done_at", Double, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", Double, nullable=False),
    # The jobs not done yet, by kind, oldest first: what a worker's claim walks (it stays small
    # however long the history of done jobs grows).
    Index(
        "ix_jobs_pending",
        "kind",
        "id",
        postgresql_where=text("done_at IS NULL"),
        sqlite_where=text("done_at IS NULL"),
    ),
    Index("ix_jobs_thread", "thread_id", "id"),
)

grants = Table(
    "grants",
    metadata,
    Column("id", Text, primary_key=True),
    Column("action", Text, nullable=False),
    Column("approval_id", Text, nullable=False),
    Column("grantor", Text, nullable=False),
    Column("requester", Text, nullable=False),
    Column("service", Text, nullable=True),
    Column("bound", Text, nullable=False),
    Column("uses", Integer, nullable=False),
    Column("left", Integer, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("expires_at", Double, nullable=False),
    Column("policy", Text, nullable=False),
    Column("revoked_at", Double, nullable=True),
    Column("revoked_by", Text, nullable=True),
    Index("ix_grants_live", "action", "requester", "expires_at"),
)

effects = Table(
    "effects",
    metadata,
    Column("id", _BigId, Identity(), primary_key=True),
    Column("kind", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("thread_id", Text, nullable=True),
    Column("data", Text, nullable=False),
    Column("at", Double, nullable=False),
    UniqueConstraint("kind", "key", name="uq_effects_kind_key"),
)

slack_pace = Table(
    "slack_pace",
    metadata,
    Column("key", Text, primary_key=True),
    # `post:C123` (a channel's posts) or a method's name (its tier), as `bot.slack.guard.pace_key`
    Column("next_free", Double, nullable=False),
    # the database's clock (epoch seconds): no call to the key before it
    Column("paced_until", Double, nullable=False),
    # while in the future, every replica's calls to the key take slots
    Column("taken", Boolean, nullable=False),
    # whether the latest reservation got a slot (read back by the statement that made it)
)
