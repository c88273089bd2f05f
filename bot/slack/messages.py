"""Every user-facing string of the Slack app, worded in one place (as Bolt keeps its messages).

Pure: no I/O, no clock. Functions return Slack mrkdwn unless their name says otherwise
(`*_plain`). User data goes into them through `mrkdwn` (`escape`, `code`, `mention`, `date`),
never as is. Lengths are not limited here: the renderers fit every text to Slack's limits.

The sections follow the surfaces: labels, the card, decided cards, thread replies, refusals,
modals, and `/agent status`, help and App Home.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .mrkdwn import clean, code, date, escape, mention

if TYPE_CHECKING:
    from bot.approvals.errors import DecisionRefused
    from bot.approvals.models import Approval


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


# ---------------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------------


def card_fallback(title: str, action: str, tier_name: str, requester: str) -> str:
    """The notification text of a new card (mrkdwn, user data escaped by the caller's parts)."""
    return (
        f"{tier_emoji(tier_name)} Approval needed: {escape(title)} ({escape(action)}), "
        f"requested by {mention(requester)}"
    )


def fallback_deciders(approvers: str, expire_at: float | None) -> str:
    """What the notification text adds: who must decide and by when (screen readers read only
    the fallback text)."""
    by = f" by {date(expire_at)}" if expire_at is not None else ""
    return f". To decide{by}: {approvers}"


def card_summary(requester: str, action: str) -> str:
    return f"{mention(requester)} asks to run {code(action)}. Decide below."


def expiry(seconds: float | None, at: float | None) -> str:
    """The card's Expires field: a Slack date token (each reader sees it in their own time
    zone, and it never goes stale as "in 2d 3h" on a card posted days ago would), `never`,
    `now`."""
    if seconds is None:
        return "never"
    if seconds <= 0:
        return "now"
    return date(at)


def quorum(approved: int, required: int, users: Sequence[str]) -> str:
    """`1 of 2 approvals: <@U_ALICE>`, or `needs 1 approval` when nobody has approved yet."""
    if approved == 0:
        return f"needs {plural(required, 'approval')}"
    text = f"{approved} of {required} approvals"
    if users:
        text += ": " + join([mention(u) for u in users])
    return text


def fields_omitted(shown: int, total: int) -> str:
    return f"Showing {shown} of {total} fields. *{FULL_PAYLOAD}* shows them all."


def values_shortened() -> str:
    return f"Long values are shortened here. *{FULL_PAYLOAD}* shows them in full."


def card_footer(approval_id: str, created_at: float) -> str:
    return f"Approval {code(approval_id)} · requested {date(created_at)}"


def confirm_critical(title: str) -> str:
    """Confirm dialog text (plain text: the dialog's text object is plain_text)."""
    return (
        f"“{clean(title)}” is a critical action and cannot be undone. "
        "Approve it only if you have checked every field."
    )


# ---------------------------------------------------------------------------------------------
# Decided and expired cards
# ---------------------------------------------------------------------------------------------


def decided_line(status: str, by: Sequence[str], at: float | None) -> str:
    """`✅ *Approved* by <@U_ALICE> and <@U_BOB> <!date...>`."""
    emoji = STATUS_EMOJI.get(status, "•")
    who_ = join([decider(b) for b in by]) or "someone"
    return f"{emoji} *{status_word(status).capitalize()}* by {who_} {date(at)}"


def expired_line(at: float | None, approved: bool) -> str:
    outcome = "approved (the policy's expiry outcome)" if approved else "rejected"
    return (
        f"{STATUS_EMOJI['expired']} *Expired*: nobody decided by {date(at)}, so it was {outcome}."
    )


def cancelled_line(at: float | None) -> str:
    return f"{STATUS_EMOJI['cancelled']} *Cancelled* {date(at)}: the run was withdrawn before anyone decided."


def note_line(note: str) -> str:
    return f"*Note:* {escape(note)}"


def reason_line(reason: str) -> str:
    return f"*Reason:* {escape(reason)}"


def edits_heading() -> str:
    return "*Edited before approval:*"


def edited_heading(revision: int) -> str:
    return (
        f"*Edited (revision {revision}):* the values above are the ones that run; "
        "an approval counts only for them."
    )


def edited_by(user: str) -> str:
    return f" (by {mention(user)})"


def stale_revision(detail: str) -> str:
    return f"🔄 {escape(_sentence(detail))}"


def edit_change(field: str, before: str, after: str) -> str:
    """One edit: `• *amount*: 120.0 → 100` (parts escaped by the caller)."""
    return f"• *{field}*: {before} → {after}"


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


# ---------------------------------------------------------------------------------------------
# Refusals and errors (ephemeral replies to the person who clicked)
# ---------------------------------------------------------------------------------------------

NOTHING_CHANGED = "Nothing was changed."


def not_approver(title: str | None = None, approvers: Sequence[str] = ()) -> str:
    what = f"*{escape(title)}*" if title else "this request"
    ask = f" Ask {who(approvers)}." if approvers else ""
    return f"🚫 You're not an approver of {what}, so you can't decide it.{ask} {NOTHING_CHANGED}"


def own_request(approvers: Sequence[str] = ()) -> str:
    ask = f"ask {who(approvers)}" if approvers else "ask another approver"
    return f"🚫 You asked for this, and the policy doesn't let you approve your own request: {ask}. {NOTHING_CHANGED}"


def already_decided(status: str, by: Sequence[str], at: float | None) -> str:
    who_ = join([decider(b) for b in by]) or "someone"
    return f"ℹ️ This was already {status_word(status)} by {who_} {date(at)}. {NOTHING_CHANGED}"


def already_voted(remaining: int | None = None) -> str:
    more = f" It still needs {plural(remaining, 'more approval')}." if remaining else ""
    return f"ℹ️ You've already voted on this.{more} {NOTHING_CHANGED}"


def expired(at: float | None = None) -> str:
    when = f" {date(at)}" if at is not None else ""
    return f"⌛ This request expired{when}; the workflow got the expiry outcome. {NOTHING_CHANGED}"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else text + "."


def invalid_edit(detail: str) -> str:
    return f"⚠️ That can't be used: {escape(_sentence(detail))} {NOTHING_CHANGED}"


def refused(detail: str) -> str:
    return f"🚫 signoff refused that: {escape(_sentence(detail))} {NOTHING_CHANGED}"


def refusal(error: DecisionRefused, approval: Approval | None = None) -> str:
    """The ephemeral reply for a refused vote, chosen by the error's stable `code`."""
    title = approval.title if approval is not None else None
    approvers: Sequence[str] = approval.approvers if approval is not None else ()
    code_ = getattr(error, "code", "refused")
    if code_ == "not_approver":
        return not_approver(title, approvers)
    if code_ == "self_approval":
        others = [a for a in approvers if approval is None or a != approval.requester]
        return own_request(others)
    if code_ == "already_decided":
        return already_decided(
            getattr(error, "status", "decided"),
            list(getattr(error, "decided_by", []) or []),
            getattr(error, "decided_at", None),
        )
    if code_ == "already_voted":
        remaining = None
        if approval is not None:
            remaining = max(approval.required - approval.approvals_count, 0) or None
        return already_voted(remaining)
    if code_ == "expired":
        return expired(approval.expire_at if approval is not None else None)
    if code_ == "invalid_edit":
        return invalid_edit(error.message)
    if code_ == "stale_revision":
        return stale_revision(error.message)
    return refused(error.message)


def refusal_text(error: Exception, approval: Approval | None = None, *, form: bool = False) -> str:
    """What a person is told when signoff refuses a click, a form or a command: the one place
    the Slack edge turns an error into words. `error` is a governance error (storage errors
    included) or a payload signoff did not make (a stale or forged button: `BadPayload`).
    `approval` gives a refused vote its context; `form` asks for a modal's plain error line."""
    from bot.approvals.errors import (
        ApprovalError,
        DatabaseBusy,
        DatabaseUnavailable,
        DecisionRefused,
        UnknownApprovalError,
        UnknownRunError,
    )

    if isinstance(error, DatabaseBusy):
        return busy()
    if isinstance(error, DatabaseUnavailable):
        return database_unavailable()
    if isinstance(error, UnknownApprovalError) and not form:
        return unknown_approval(error.approval_id)
    if isinstance(error, UnknownRunError):
        return unknown_thread(error.thread_id)
    if isinstance(error, DecisionRefused):
        return refusal(error, approval)
    if not isinstance(error, ApprovalError):
        return stale_button()
    return str(error) if form else refused(str(error))


def unknown_approval(approval_id: str) -> str:
    return (
        f"🤷 signoff has no request {code(approval_id)}; it may have been purged. {NOTHING_CHANGED}"
    )


def stale_button() -> str:
    return (
        "⚠️ This button is broken or out of date, so nothing was changed. "
        "`/agent status` lists what is waiting now."
    )


def busy() -> str:
    return "⏳ signoff is very busy right now; nothing was recorded — click again in a moment"


def database_unavailable() -> str:
    return "signoff can't reach its database right now; nothing was changed — try again in a minute"


def unknown_thread(thread_id: str) -> str:
    return f"🤷 No run has the thread id {code(thread_id)}. `/agent status` lists what is waiting."


def unknown_workflow(name: str, known: Sequence[str] = ()) -> str:
    listed = f" Known: {join([code(k) for k in known])}." if known else ""
    return f"🤷 There is no workflow {code(name)}.{listed}"


def start_refused(workflow: str) -> str:
    return (
        f"🚫 You may not start {code(workflow)} from Slack. Ask an admin to add you to "
        f"{code(f'[workflows.{workflow}] starters')} in the policy."
    )


def missing_inputs(workflow: str, missing: Sequence[str], inputs: Sequence[str]) -> str:
    example = " ".join(f"{k}=…" for k in inputs)
    return (
        f"✋ {code(workflow)} needs {join([code(k) for k in missing])}; nothing was started. "
        f"Try {code(f'/agent run {workflow} {example}')}"
    )


def invalid_inputs(workflow: str, problems: Mapping[str, str]) -> str:
    shown = list(problems.items())[:10]
    lines = "\n".join(f"• {code(k[:100])} {escape(v[:300])}" for k, v in shown)
    more = f"\n…and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    return (
        f"✋ {code(workflow)} cannot start with these inputs; nothing was started.\n{lines}{more}"
    )


def run_already_started(workflow: str, thread_id: str) -> str:
    return (
        f"↩️ This command already started {code(workflow)} as {code(thread_id)}; "
        "nothing new was started."
    )


def run_started(
    workflow: str, thread_id: str, status: str, approvals: Sequence[Approval] = ()
) -> str:
    """How a run stands after `/agent run`. Paused on approvals already settled (a rule
    approved it, policy denied it) is said as that, not as "paused": it goes on at once."""
    started = f"Started {code(workflow)} as {code(thread_id)}"
    if status == "paused" and approvals and all(a.status != "pending" for a in approvals):
        if all(a.status == "approved" for a in approvals):
            by = join([decider(b) for a in approvals for b in a.decided_by]) or "policy"
            return f"{STATUS_EMOJI['approved']} {started}: approved by {by}; it goes on now."
        refused = next(a for a in approvals if a.status != "approved")
        why = f": {escape(refused.reason)}" if refused.reason else ""
        word = status_word(refused.status)
        return f"{STATUS_EMOJI.get(refused.status, '⛔')} {started}: {word}{why}."
    if status == "paused":
        waiting = f" for {len(approvals)} approvals" if len(approvals) > 1 else " for approval"
        return f"{RUN_STATUS_EMOJI['paused']} {started}: waiting{waiting} in the channel."
    emoji = RUN_STATUS_EMOJI.get(status, "▶️")
    return f"{emoji} {started}: {escape(status_word(status))}."


def run_handed_over(workflow: str, thread_id: str) -> str:
    """`/agent run` whose start met the database busy or unreachable after the run was recorded:
    the worker carries it on (the API's 202). Said so, lest the person start a second run."""
    return (
        f"{RUN_STATUS_EMOJI['running']} Started {code(workflow)} as {code(thread_id)}: it is "
        "recorded, and goes on by itself. The database was too busy to carry it on just now, "
        "so it continues from where it stopped as soon as there is room (its approval cards "
        "are posted then). Nothing needs doing: do not start it again, that would start a "
        "second run."
    )


def command_error(detail: str) -> str:
    return f"⚠️ {escape(detail)}\n{usage_line()}"


def unknown_command(verb: str) -> str:
    return f"🤷 I don't know {code('/agent ' + verb[:50])}. Here is what I can do:"


def reason_required() -> str:
    return "Write a reason: the requester and the workflow will see it."


def edit_too_long(field: str, size: int) -> str:
    return (
        f"*{escape(field)}* is too long to edit here ({size} characters). Reject with a note "
        "if it must change."
    )


def edit_not_editable(field: str) -> str:
    return f"*{escape(field)}* is redacted, so it cannot be edited here."


def edits_omitted(count: int) -> str:
    return f"{plural(count, 'more editable field')} cannot fit in this form; reject with a note if they must change."


def field_required() -> str:
    return "Enter a value."


def edit_hint(value: Any) -> str:
    """The hint under an edit input, from the type of the value it replaces (plain text)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "A whole number, e.g. 42"
    if isinstance(value, float):
        return "A number, e.g. 12.50"
    if isinstance(value, list):
        return 'A JSON array, e.g. ["a", "b"]'
    if isinstance(value, Mapping):
        return 'A JSON object, e.g. {"key": "value"}'
    return "Text"


def edit_intro(title: str) -> str:
    return f"You are approving *{escape(title)}* with the values below."


def reject_intro(title: str, action: str) -> str:
    return f"Rejecting *{escape(title)}* ({code(action)})."


def payload_intro(title: str, action: str) -> str:
    return f"*{escape(title)}* ({code(action)}): every field, as proposed (secrets redacted)."


def payload_truncated(more: int) -> str:
    return (
        f"… {more} more characters do not fit in Slack. `signoff audit export` has the whole "
        "request."
    )


# ---------------------------------------------------------------------------------------------
# /agent status, /agent status THREAD, /agent help, App Home
# ---------------------------------------------------------------------------------------------


def status_mine_heading(n: int) -> str:
    return f"*Waiting on you* ({n})"


def status_others_heading(n: int) -> str:
    return f"*Waiting on others* ({n})"


def status_none() -> str:
    return "🎉 Nothing is waiting for approval."


def status_more(n: int) -> str:
    return f"…and {n} more. `signoff pending` lists every pending approval."


def status_fallback(mine: int, others: int) -> str:
    return f"{mine} waiting on you, {others} waiting on others"


def waits_on(approved: int, required: int, approvers: Sequence[str], *, voted: bool = False) -> str:
    """What a pending approval waits on: `needs 1 more approval from @finance or <@U_DAVE>`."""
    remaining = max(required - approved, 1)
    text = f"needs {plural(remaining, 'more approval')} from {who(approvers)}"
    if voted:
        text = "you approved; " + text
    return text


def status_item_meta(
    action: str, since: float, waits: str, expire_at: float | None, *, now: float
) -> str:
    """`/agent status`'s and Home's line under a pending approval: its action, since when it
    waits, on whom, until when. Times are Slack date tokens, as on the card (`expiry`): the
    message and the tab stay on screen, where "waiting 2h" or "expires in 3h" would go stale."""
    text = f"{code(action)} · waiting since {date(since)} · {waits}"
    if expire_at is not None:
        text += f" · expires {expiry(expire_at - now, expire_at)}"
    return text


def thread_heading_plain(thread_id: str) -> str:
    return f"Thread {clean(thread_id)}"


def thread_paused_at(nodes: Sequence[str], step: int | None = None) -> str:
    text = "*Paused at:* " + (", ".join(code(n) for n in nodes) if nodes else "nothing")
    return text + (f" (after step {step})" if step is not None else "")


def thread_history_heading(shown: int, total: int) -> str:
    if shown < total:
        return f"*History* (last {shown} of {total} steps):"
    return "*History:*"


def history_line(step: object, source: object, next_nodes: Sequence[str] = ()) -> str:
    """One checkpoint in a thread's history, as plain text (`thread_status_blocks` escapes it):
    `step 3 (loop) → request_approval`, `step 5 (loop): finished`."""
    where = f"step {step}" if isinstance(step, int) else "a step"
    how = f" ({source})" if isinstance(source, str) and source else ""
    then = f" → {', '.join(str(n) for n in next_nodes)}" if next_nodes else ": finished"
    return where + how + then


def thread_error(error: str) -> str:
    return f"*Error:* {escape(error)}"


def thread_approvals_heading(n: int) -> str:
    return f"*Approvals* ({n}):"


def thread_no_approvals() -> str:
    return "No approvals were asked for in this thread."


def approval_line(status: str, title: str, by: Sequence[str], at: float | None) -> str:
    """One approval in a list: `✅ Send a refund — approved by <@U1> <date>`."""
    emoji = STATUS_EMOJI.get(status, "•")
    if status == "pending":
        return f"{emoji} {escape(title)} — pending"
    who_ = join([decider(b) for b in by])
    by_ = f" by {who_}" if who_ else ""
    return f"{emoji} {escape(title)} — {status_word(status)}{by_} {date(at)}"


def home_heading_plain() -> str:
    return "signoff"


def home_pending_heading(n: int) -> str:
    return f"*Waiting on you* ({n})"


def home_recent_heading(n: int) -> str:
    return f"*Recent decisions* ({n})"


def home_none_pending() -> str:
    return "🎉 Nothing is waiting on you."


def home_none_recent() -> str:
    return "No decisions yet."


def home_more(n: int) -> str:
    return f"…and {n} more."


def usage_line() -> str:
    return "Try `/agent help`."


HELP_TITLE = "signoff: /agent"


def help_text(workflows: Sequence[str] = ()) -> str:
    lines = [
        "`/agent status`: what is waiting for approval, what waits on you first.",
        "`/agent status THREAD_ID`: one run: where it is paused, on what, its history.",
        '`/agent run WORKFLOW key=value key="quoted value"`: start a workflow, if the policy lets you.',
        "`/agent retry THREAD_ID`: go on with a failed run from its last checkpoint.",
        "`/agent cancel THREAD_ID [why]`: cancel a run and its pending approvals.",
        "`/agent help`: this message.",
        "Approve, reject or edit on the cards in the channel; refusals are only shown to you.",
    ]
    if workflows:
        lines.append("Workflows: " + ", ".join(code(w) for w in workflows))
    return "\n".join(lines)


def home_unavailable() -> str:
    return f"⚠️ {database_unavailable()}."


def help_fallback() -> str:
    return (
        "/agent status, /agent status THREAD_ID, /agent run WORKFLOW key=value, "
        "/agent retry THREAD_ID, /agent cancel THREAD_ID, /agent help"
    )


def modal_not_opened(form: str, error: str) -> str:
    """A click on a button that opens a modal (`form`: Reject, Edit, Full payload) whose modal
    Slack would not open (`error`: its code, `expired_trigger_id` when signoff was too slow)."""
    if error == "expired_trigger_id":
        why = "Slack only lets a form open within 3 seconds of the click, and that passed"
    elif error == "ratelimited":
        why = "Slack asked signoff to wait before it opens more forms"
    else:
        why = f"Slack answered {code(error)}"
    return f"⚠️ The {form} form could not open ({why}). {NOTHING_CHANGED} Click {form} again."


def run_card_elsewhere(channel_id: str) -> str:
    """Said after a run started from a conversation signoff cannot post in (a DM, a private
    channel it was not invited to): where its approval cards go instead."""
    from .mrkdwn import channel

    return (
        f"signoff is not in this conversation, so its cards go to {channel(channel_id)}; "
        "invite it here (`/invite @signoff`) to have them here."
    )


def run_nowhere_to_post() -> str:
    """A run asked for where signoff cannot post, with no default channel to post in instead."""
    return (
        "🚫 signoff is not in this conversation, so no one could approve what the run asks "
        "for; nothing was started. Invite it (`/invite @signoff`) or run the command in a "
        "channel it is in."
    )
