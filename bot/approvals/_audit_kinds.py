"""The kinds of entry the audit log records (`AuditKind`), apart from the log itself, so that
the log (`audit.py`) and its repeated refusals (`_audit_repeats.py`) both stand on them."""

from __future__ import annotations

from typing import Literal

__all__ = ["AuditKind"]

AuditKind = Literal[
    "requested",  # an approval was requested (payload, approvers, deadlines)
    "denied",  # policy denied the action outright (unlisted action, policy error)
    "auto_approved",  # an auto-approval rule decided it (the rule is the actor)
    "vote",  # a person voted (approve or reject, note, edits)
    "vote_refused",  # a vote was refused, nothing recorded (who, what, the refusal and why)
    "approved",  # the approval reached its quorum
    "rejected",  # the approval was rejected
    "expired",  # the approval passed its deadline unanswered (and its outcome)
    "escalated",  # the escalation approvers were added
    "reminded",  # the approvers were reminded
    "edited",  # an approver changed editable fields (before and after)
    "resumed",  # the paused graph was resumed with the decision
    "resume_refused",  # a resume job's decision differs from the settlement on record
    "cancelled",  # the approval was cancelled (its run ended or was withdrawn)
    "conflict",  # the same dedupe key was proposed with different arguments
    "run_started",  # a workflow run was started (by whom, with what input)
    "start_refused",  # a start was refused, nothing started (who, which workflow, why)
    "run_completed",  # a run finished
    "run_failed",  # a run failed (the error)
    "outcome_unknown",  # a side effect was interrupted: a person must check what happened
    "purged",  # finished runs with their approvals, or ended grants, were deleted by retention
    "api_refused",  # the approvals API refused a request (no token, not allowed, bad arguments)
    "webhook_delivered",  # a settled external approval's webhook was accepted by its receiver
    "webhook_failed",  # a webhook was given up on after its last try
    "run_retried",  # an operator or approver went on with a failed run
    "run_cancelled",  # ... or cancelled a run (its pending approvals too)
    "run_control_refused",  # someone not allowed tried to retry or cancel a run
    "redelivered",  # an operator queued again messages Slack had refused for good
    "payload_viewed",  # someone opened an approval's Full payload (signoff report's quick ones)
    "check_failed",  # an action's check failed or timed out: refused, the action does not run
    "recheck_refused",  # an approval was not used: its facts changed, or its check failed, after it
    "granted",  # an approver allowed more requests like the one they approved (a grant)
    "grant_used",  # a request was approved by a grant (which, uses left)
    "grant_revoked",  # a grant was revoked (by whom), or ended by a policy change
    "grant_refused",  # a grant or its revocation was refused (who, why); nothing changed
    "away_set",  # a person said they are away (/agent away: until when, their delegate)
    "away_ended",  # ... and that they are back (/agent back, or Home's button)
    "all_away",  # every person who could decide an approval was away (who, until when)
]
"""What an audit event records; one line each above."""
