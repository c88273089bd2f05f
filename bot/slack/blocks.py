"""The Block Kit renderers under their old import path, `bot.slack.blocks`.

The renderers live in one module per surface: `cards` (the approval card, decided and expired),
`modals` (reject, edit, full payload), `replies` (thread replies, reminders, escalation) and
`status` (`/agent status`, help, App Home); Slack's limits are in `limits`, the fitting of text in
`mrkdwn`. Nothing in `bot.slack` imports this module: it keeps code written against the old
layout working. New code imports the modules themselves.
"""

from __future__ import annotations

from .cards import approval_card, card, decided_card, expired_card
from .modals import edit_modal, payload_modal, reject_modal
from .mrkdwn import cut_mrkdwn, escape_fit, fit
from .replies import (
    escalation_text,
    reminder_text,
    text_blocks,
    thread_reply_completed,
    thread_reply_decided,
    thread_reply_failed,
    thread_reply_outcome_unknown,
)
from .status import (
    help_blocks,
    home_unavailable_view,
    home_view,
    status_blocks,
    thread_status_blocks,
)

__all__ = [
    "approval_card",
    "card",
    "cut_mrkdwn",
    "decided_card",
    "edit_modal",
    "escalation_text",
    "escape_fit",
    "expired_card",
    "fit",
    "help_blocks",
    "home_unavailable_view",
    "home_view",
    "payload_modal",
    "reject_modal",
    "reminder_text",
    "status_blocks",
    "text_blocks",
    "thread_reply_completed",
    "thread_reply_decided",
    "thread_reply_failed",
    "thread_reply_outcome_unknown",
    "thread_status_blocks",
]
