"""Thread replies, reminders and escalation notices: mrkdwn strings for a message's `text`,
fitted to `limits.TEXT_MAX`; and `text_blocks`, a one-section message of such a text.

One function per reply: `thread_reply_decided` for a settled approval (approved, rejected,
denied or expired), `thread_reply_completed`, `thread_reply_failed` and
`thread_reply_outcome_unknown` for a run. Wording comes from `messages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.approvals.models import Approval

from . import messages as m
from ._blocks import (
    context,
    deciders,
    decision_of,
    message,
    note_of,
    plain,
    reply_text,
    section,
    title_of,
)
from .limits import BUTTON_VALUE_MAX, ERROR_MAX, TEXT_MAX
from .mrkdwn import cut_mrkdwn, shorten, slack_len
from .payloads import RUN_CANCEL, RUN_RETRY

__all__ = [
    "escalation_text",
    "failed_message",
    "has_buttons",
    "reminder_text",
    "run_control_done",
    "text_blocks",
    "thread_reply_cancelled",
    "thread_reply_completed",
    "thread_reply_decided",
    "thread_reply_failed",
    "thread_reply_outcome_unknown",
    "thread_reply_retried",
    "with_card_link",
    "with_controls_link",
]


def thread_reply_completed(
    workflow: str,
    thread_id: str,
    outcome: str | None = None,
    declined: str | None = None,
    decisions: Sequence[tuple[str, str]] | None = None,
) -> str:
    """Posted in the card's thread when the run reaches its end (`declined`, `decisions`: see
    `messages.run_completed`)."""
    return reply_text(
        m.run_completed(
            shorten(workflow, 200),
            shorten(thread_id, 300),
            shorten(outcome, ERROR_MAX) if outcome else None,
            declined,
            [(shorten(action, 200), status) for action, status in decisions or ()],
        )
    )


def thread_reply_failed(workflow: str, thread_id: str, error: str) -> str:
    """Posted when a node raised: the error, and where to look."""
    return reply_text(
        m.run_failed(shorten(workflow, 200), shorten(thread_id, 300), shorten(error, ERROR_MAX))
    )


def failed_message(workflow: str, thread_id: str, error: str) -> dict[str, Any]:
    """The failure as a message with Retry and Cancel buttons (the slash commands' equivalents,
    for the same people); a thread id too long for a button value gets the text alone."""
    text = thread_reply_failed(workflow, thread_id, error)
    if len(thread_id) > BUTTON_VALUE_MAX:
        return {"text": text}
    confirm = {
        "title": plain(m.CANCEL_RUN_CONFIRM_TITLE, 100),
        "text": {"type": "mrkdwn", "text": m.cancel_run_confirm(shorten(thread_id, 300))},
        "confirm": plain(m.CANCEL_RUN_CONFIRM_YES, 30),
        "deny": plain(m.CANCEL_RUN_CONFIRM_NO, 30),
        "style": "danger",
    }
    buttons = [
        {
            "type": "button",
            "text": plain(m.RETRY_BUTTON, 75),
            "action_id": RUN_RETRY,
            "value": thread_id,
            "style": "primary",
        },
        {
            "type": "button",
            "text": plain(m.CANCEL_RUN_BUTTON, 75),
            "action_id": RUN_CANCEL,
            "value": thread_id,
            "style": "danger",
            "confirm": confirm,
        },
    ]
    return message(text, [section(text), {"type": "actions", "elements": buttons}])


def run_control_done(text: str, line: str) -> dict[str, Any]:
    """A failure message once retried or cancelled from it: its text, the buttons replaced by
    who did what."""
    return message(text, [section(text), context(line)])


def thread_reply_outcome_unknown(workflow: str, thread_id: str, error: str) -> str:
    """Posted when a side effect's outcome is unknown: a person must check."""
    return reply_text(
        m.run_outcome_unknown(
            shorten(workflow, 200), shorten(thread_id, 300), shorten(error, ERROR_MAX)
        )
    )


def thread_reply_retried(workflow: str, thread_id: str, by: str) -> str:
    """Posted when someone retried a failed run."""
    return reply_text(m.run_retried(shorten(workflow, 200), shorten(thread_id, 300), by))


def thread_reply_cancelled(workflow: str, thread_id: str, by: str, note: str = "") -> str:
    """Posted when someone cancelled a run."""
    return reply_text(
        m.run_cancelled(
            shorten(workflow, 200), shorten(thread_id, 300), by, shorten(note, ERROR_MAX)
        )
    )


def _approved(approval: Approval) -> str:
    return reply_text(m.run_approved(title_of(approval), deciders(approval)))


def _rejected(approval: Approval) -> str:
    """Posted when a person rejected it (with the reason) or policy denied it."""
    denied = decision_of(approval).get("status") == "denied"
    return reply_text(
        m.run_rejected(
            title_of(approval),
            deciders(approval),
            shorten(note_of(approval), ERROR_MAX),
            denied=denied,
        )
    )


def _expired(approval: Approval) -> str:
    return reply_text(
        m.run_expired(title_of(approval), bool(decision_of(approval).get("approved")))
    )


def thread_reply_decided(approval: Approval) -> str:
    """The thread reply for a settled approval, whatever its outcome."""
    if approval.status == "expired":
        return _expired(approval)
    if approval.status == "approved":
        return _approved(approval)
    return _rejected(approval)


def _who(approval: Approval, users: Sequence[str] | None) -> list[str]:
    entries = approval.approvers if users is None else users
    return [shorten(e, 100) for e in entries[:30]]


def reminder_text(approval: Approval, *, now: float, mentions: Sequence[str] | None = None) -> str:
    """A reminder for the card's thread.

    Args:
        mentions: the user ids to mention (approvers resolved from groups, minus those who
            voted). Default: the policy entries, where a group is named but not pinged.
    """
    return reply_text(
        m.reminder(
            title_of(approval),
            now - approval.created_at,
            _who(approval, mentions),
            approval.expire_at,
        )
    )


def escalation_text(approval: Approval, *, now: float, added: Sequence[str] | None = None) -> str:
    """The escalation notice for the card's thread, mentioning who can now decide.

    Args:
        added: user ids the escalation added (resolved). Default: all approver entries.
    """
    return reply_text(
        m.escalation(
            title_of(approval), now - approval.created_at, _who(approval, added), approval.expire_at
        )
    )


def escalation_away_text(
    approval: Approval, away: Sequence[Mapping[str, Any]], added: Sequence[str]
) -> str:
    """The notice of an escalation made at once because everyone who could decide was away."""
    return reply_text(m.escalation_away(title_of(approval), away[:20], added))


def text_blocks(text: str) -> dict[str, Any]:
    """A one-section message of mrkdwn `text` (a `messages` string), fitted to the limits."""
    return message(text, [section(text)])


def has_buttons(reply: dict[str, Any]) -> bool:
    """Whether a message (`text`, maybe `blocks`) has buttons: then Slack will not take it as a
    thread reply broadcast to the channel ("cannot contain attachments or message buttons")."""
    return any(
        isinstance(b, dict)
        and (
            b.get("type") == "actions" or (b.get("accessory") or {}).get("type", "image") != "image"
        )
        for b in reply.get("blocks") or ()
    )


def with_card_link(reply: dict[str, Any], permalink: str) -> dict[str, Any]:
    """A run's channel message (`text`, maybe `blocks`) with a link to the card whose thread
    has the rest, for a channel the card is not in; the link is kept whole, the text cut."""
    return _with_link(reply, m.card_link(permalink))


def with_controls_link(reply: dict[str, Any], permalink: str) -> dict[str, Any]:
    """A failed run's channel message without its buttons, linking to the thread reply that has
    them: one set of buttons, which says who used it once used (`run_control_done`)."""
    blocks = [b for b in reply.get("blocks") or () if b.get("type") != "actions"]
    return _with_link({**reply, "blocks": blocks} if blocks else {"text": reply.get("text")},
                      m.run_controls_link(permalink))  # fmt: skip


def _with_link(reply: dict[str, Any], link: str) -> dict[str, Any]:
    text = cut_mrkdwn(str(reply.get("text") or ""), TEXT_MAX - slack_len(link) - 1)
    text = f"{text}\n{link}" if text else link
    blocks = reply.get("blocks")
    if not blocks:
        return {**reply, "text": text}
    return {**reply, **message(text, [blocks[0], context(link), *blocks[1:]])}
