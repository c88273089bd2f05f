"""Thread replies about a run (completed, failed, retried, cancelled, approved, rejected,
expired), reminders and escalations."""

from __future__ import annotations

from collections.abc import Sequence

from ..mrkdwn import code, date, escape, mention
from ._card import reason_line
from ._words import (
    RUN_STATUS_EMOJI,
    STATUS_EMOJI,
    approver,
    decider,
    duration,
    join,
    status_word,
    who,
)

# ---------------------------------------------------------------------------------------------
# Thread replies, reminders, escalation
# ---------------------------------------------------------------------------------------------


def run_completed(
    workflow: str,
    thread_id: str,
    outcome: str | None = None,
    declined: str | None = None,
    decisions: Sequence[tuple[str, str]] = (),
) -> str:
    """A run that reached its end; `declined` (an approval status: rejected, expired, ...) when
    none of its approvals was approved: the run ended without doing its action, no green mark.
    `decisions` (action, status), in the order decided, when it asked more than once: each is
    named, so a run that did one thing and was refused another says both."""
    if declined:
        mark = STATUS_EMOJI.get(declined, STATUS_EMOJI["rejected"])
        text = (
            f"{mark} Run {code(thread_id)} of *{escape(workflow)}* ended without its action "
            f"({escape(status_word(declined))})."
        )
    else:
        text = (
            f"{RUN_STATUS_EMOJI['completed']} Run {code(thread_id)} of *{escape(workflow)}* "
            "completed."
        )
    if decisions:
        text += "\n" + " · ".join(
            f"*{escape(action)}* {STATUS_EMOJI.get(status, '')} {escape(status_word(status))}"
            for action, status in decisions
        )
    if outcome:
        text += f"\n{escape(outcome)}"
    return text


CARD_LINK = "See the card"


def card_link(permalink: str) -> str:
    """A link to an approval's card (a Slack permalink, which needs no escaping)."""
    return f"<{permalink}|{CARD_LINK}>"


RUN_CONTROLS_LINK = "Retry or cancel it in the card's thread"


def run_controls_link(permalink: str) -> str:
    """A link to a failed run's message with its Retry and Cancel buttons, from the channel
    notice that has none (a Slack permalink, which needs no escaping)."""
    return f"<{permalink}|{RUN_CONTROLS_LINK}>"


def run_failed(workflow: str, thread_id: str, error: str) -> str:
    return (
        f"{RUN_STATUS_EMOJI['failed']} Run {code(thread_id)} of *{escape(workflow)}* failed: "
        f"{escape(error)}\n{code('signoff show ' + thread_id)} has the details. "
        f"{code('/agent retry ' + thread_id)} goes on from its last checkpoint (only what had "
        f"not finished runs again); {code('/agent cancel ' + thread_id)} stops it."
    )


RETRY_BUTTON = "Retry"
CANCEL_RUN_BUTTON = "Cancel run"
CANCEL_RUN_CONFIRM_TITLE = "Cancel this run?"
CANCEL_RUN_CONFIRM_YES = "Cancel it"
CANCEL_RUN_CONFIRM_NO = "Keep it"


def cancel_run_confirm(thread_id: str) -> str:
    return (
        f"Run {code(thread_id)} stops for good: its pending approvals are cancelled and it never "
        "runs again."
    )


def run_retried_line(by: str) -> str:
    """Put in place of a failure message's buttons once someone retried the run from them."""
    return f"{RUN_STATUS_EMOJI['running']} Retried by {mention(by)}."


def run_cancelled_line(by: str) -> str:
    """Put in place of a failure message's buttons once someone cancelled the run from them."""
    return f"{STATUS_EMOJI['cancelled']} Cancelled by {mention(by)}."


def run_retried(workflow: str, thread_id: str, by: str) -> str:
    return (
        f"{RUN_STATUS_EMOJI['running']} Run {code(thread_id)} of *{escape(workflow)}* was retried "
        f"by {mention(by)}: it goes on from its last checkpoint."
    )


def run_cancelled(workflow: str, thread_id: str, by: str, note: str = "") -> str:
    why = f": {escape(note)}" if note else ""
    return (
        f"{RUN_STATUS_EMOJI['cancelled']} Run {code(thread_id)} of *{escape(workflow)}* was "
        f"cancelled by {mention(by)}{why}. It will not run again."
    )


def retrying(thread_id: str) -> str:
    """The answer to `/agent retry`."""
    return (
        f"{RUN_STATUS_EMOJI['running']} Retrying {code(thread_id)} from its last checkpoint; "
        "its thread will say how it goes."
    )


def cancelled_run(thread_id: str, approvals: int) -> str:
    """The answer to `/agent cancel`."""
    also = (
        f" with its {approvals} pending approval{'s' if approvals != 1 else ''}"
        if approvals
        else ""
    )
    return f"{RUN_STATUS_EMOJI['cancelled']} Cancelled {code(thread_id)}{also}."


def run_outcome_unknown(workflow: str, thread_id: str, error: str) -> str:
    return (
        f"{RUN_STATUS_EMOJI['outcome_unknown']} Run {code(thread_id)} of *{escape(workflow)}* "
        f"stopped while a side effect was running: {escape(error)}\nA person must check the outside "
        "system before anything is retried."
    )


def run_approved(title: str, by: Sequence[str]) -> str:
    return (
        f"{STATUS_EMOJI['approved']} {escape(title)}: approved by "
        f"{join([decider(b) for b in by]) or 'someone'}. The run is resuming."
    )


def run_rejected(title: str, by: Sequence[str], note: str, *, denied: bool = False) -> str:
    if denied:
        text = f"{STATUS_EMOJI['denied']} {escape(title)}: denied by policy."
    else:
        text = f"{STATUS_EMOJI['rejected']} {escape(title)}: rejected by {join([decider(b) for b in by]) or 'someone'}."
    if note:
        text += f"\n{reason_line(note)}"
    return text + "\nThe run goes on without doing it."


def run_expired(title: str, approved: bool) -> str:
    if approved:
        return (
            f"{STATUS_EMOJI['expired']} {escape(title)}: nobody decided in time, and the policy "
            "approves it on expiry. The run is resuming."
        )
    return (
        f"{STATUS_EMOJI['expired']} {escape(title)}: nobody decided in time, so it was rejected. "
        "The run goes on without doing it."
    )


def _expires_at(expire_at: float | None) -> str:
    return f" It expires {date(expire_at)}." if expire_at is not None else ""


def reminder(title: str, waiting: float, approvers: Sequence[str], expire_at: float | None) -> str:
    """A reminder in the card's thread, mentioning `approvers` (user ids; `@groups` are named)."""
    return (
        f"⏰ Reminder: {escape(title)} has waited {duration(waiting)} for {who(approvers)}."
        + _expires_at(expire_at)
    )


def escalation(
    title: str, waiting: float, approvers: Sequence[str], expire_at: float | None
) -> str:
    """The escalation notice: `approvers` (user ids, `@groups`) can now decide it too."""
    return (
        f"🔺 Escalated: {escape(title)} has waited {duration(waiting)}. "
        f"{join([approver(a) for a in approvers]) or 'The escalation approvers'} can now decide it too."
        + _expires_at(expire_at)
    )


def waits_for_you(title: str) -> str:
    """Said in a card's thread to an approver the bot cannot DM (its Messages tab is hidden),
    instead of the copy of the card `notify = "dm"` sends."""
    return (
        f"*{escape(title)}* waits for your decision, above (the bot cannot send you its copy of "
        "the card: its Messages tab is hidden)"
    )
