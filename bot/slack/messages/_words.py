"""Wording helpers (who approves, who decided, durations, plurals, sentences), the plain-text
labels (buttons, modal titles, field names) and the emoji of tiers and statuses."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..mrkdwn import escape, mention

# ---------------------------------------------------------------------------------------------
# Wording helpers
# ---------------------------------------------------------------------------------------------


def approver(entry: str) -> str:
    """A policy entry: a user id as a mention, a group (`@finance`) as its name."""
    if entry.startswith("@"):
        return escape(entry)
    return mention(entry)


def decider(entry: str) -> str:
    """Who decided: a user mention, `the rule "small refunds"`, `policy`, or the expiry sweep."""
    if entry.startswith("rule:"):
        return f"the rule “{escape(entry[5:])}”"
    if entry.startswith("grant:"):
        return "a grant"
    if entry == "policy":
        return "policy"
    if entry == "sweep":
        return "signoff (nobody decided in time)"
    return mention(entry)


def join(items: Sequence[str], word: str = "and") -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def who(entries: Iterable[str]) -> str:
    """Approver entries as readable mrkdwn: `<@U1>, @finance or <@U2>`."""
    return join([approver(e) for e in entries], "or") or "an approver"


_UNITS = (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration(seconds: float) -> str:
    """`2d 3h`, `45m`, `less than a minute`: the two largest units."""
    if not math.isfinite(seconds) or seconds < 60:
        return "less than a minute"
    seconds = int(seconds)
    parts: list[str] = []
    for unit, size in _UNITS[:-1]:
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
        elif parts:
            break
        if len(parts) == 2:
            break
    return " ".join(parts)


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def sentence(text: str) -> str:
    """`text` ending as a sentence ends: a full stop added unless it has one (or `!`, `?`, `…`)."""
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else text + "."


# ---------------------------------------------------------------------------------------------
# Labels (plain text: buttons, modal titles, field names)
# ---------------------------------------------------------------------------------------------

APPROVE = "Approve"
REJECT = "Reject"
EDIT = "Edit"
FULL_PAYLOAD = "Full payload"
CANCEL = "Cancel"
CLOSE = "Close"

REJECT_MODAL_TITLE = "Reject request"
REJECT_MODAL_SUBMIT = "Reject"
REASON_LABEL = "Why are you rejecting it?"
REASON_HINT = "Required. Shown on the card and sent to the workflow."
REASON_PLACEHOLDER = "e.g. The order was already refunded"

EDIT_MODAL_TITLE = "Edit and approve"
EDIT_MODAL_SUBMIT = "Approve"
NOTE_LABEL = "Note"  # Slack adds "(optional)" to an optional input's label itself
NOTE_HINT = "Shown on the card and kept in the audit log."

PAYLOAD_MODAL_TITLE = "Full payload"

CONFIRM_TITLE = "Approve a critical action?"
CONFIRM_YES = "Approve"
CONFIRM_NO = "Cancel"

FIELD_RISK = "Risk"
FIELD_REQUESTER = "Requested by"
FIELD_WORKFLOW = "Workflow"
FIELD_THREAD = "Thread"
FIELD_EXPIRES = "Expires"
FIELD_APPROVALS = "Approvals"
FIELD_APPROVERS = "Approvers"
FIELD_STATUS = "Status"
FIELD_STARTED = "Started"
FIELD_UPDATED = "Updated"
FIELD_CHANNEL = "Channel"

REDACTED = "[redacted]"
EMPTY_VALUE = "(empty)"
NULL_VALUE = "(none)"
UNNAMED_FIELD = "(unnamed)"

TIER_EMOJI = {"low": "🟢", "medium": "🟡", "high": "🟠", "critical": "🔴"}
UNKNOWN_TIER_EMOJI = "⚪"

STATUS_EMOJI = {
    "pending": "⏳",
    "approved": "✅",
    "rejected": "❌",
    "denied": "⛔",
    "expired": "⌛",
    "cancelled": "➖",
}
RUN_STATUS_EMOJI = {
    "running": "🔄",
    "paused": "⏸️",
    "completed": "✅",
    "failed": "⚠️",
    "outcome_unknown": "❓",
    "cancelled": "⏹️",
}


def tier(tier_name: str) -> str:
    """`🔴 critical` (mrkdwn)."""
    return f"{TIER_EMOJI.get(tier_name, UNKNOWN_TIER_EMOJI)} {escape(tier_name)}"


def tier_emoji(tier_name: str) -> str:
    return TIER_EMOJI.get(tier_name, UNKNOWN_TIER_EMOJI)


def status_word(status: str) -> str:
    return {"outcome_unknown": "outcome unknown"}.get(status, status)
