"""Refusals and errors: the ephemeral replies to the person who clicked, typed or submitted,
and the texts of the modals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bot.approvals.errors import (
    ApprovalError,
    DatabaseBusy,
    DatabaseUnavailable,
    DecisionRefused,
    UnknownApprovalError,
    UnknownRunError,
)

from ..mrkdwn import code, date, escape, mention
from ._card import stale_revision
from ._words import (
    RUN_STATUS_EMOJI,
    STATUS_EMOJI,
    decider,
    join,
    plural,
    sentence,
    status_word,
    who,
)

if TYPE_CHECKING:
    from bot.approvals.models import Approval


# ---------------------------------------------------------------------------------------------
# Refusals and errors (ephemeral replies to the person who clicked)
# ---------------------------------------------------------------------------------------------

NOTHING_CHANGED = "Nothing was changed."


def not_approver(title: str | None = None, approvers: Sequence[str] = ()) -> str:
    what = f"*{escape(title)}*" if title else "this request"
    ask = f" Ask {who(approvers)}." if approvers else ""
    return f"🚫 You're not an approver of {what}, so you can't decide it.{ask} {NOTHING_CHANGED}"


def delegation_refused(principal: str, critical: bool, title: str | None = None) -> str:
    """A delegate refused: the policy lets no delegate decide this (or, critical, not by name)."""
    what = f"*{escape(title)}*" if title else "this request"
    why = (
        f'{what} is critical, and the policy lets a delegate decide it only where it says so by name (`delegation = "critical"`)'
        if critical
        else f"the policy does not let a delegate decide {what} (`delegation = true` would)"
    )
    return (
        f"🚫 You stand in for {mention(principal)} while they are away, but {why}. "
        f"Ask another approver. {NOTHING_CHANGED}"
    )


def own_request(approvers: Sequence[str] = (), service: str | None = None) -> str:
    ask = f"ask {who(approvers)}" if approvers else "ask another approver"
    if service is not None:
        return (
            f"🚫 You own the service *{escape(service)}* that asked for this, and nobody may "
            f"approve their own request: {ask}. {NOTHING_CHANGED}"
        )
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


def invalid_edit(detail: str) -> str:
    return f"⚠️ That can't be used: {escape(sentence(detail))} {NOTHING_CHANGED}"


def refused(detail: str) -> str:
    return f"🚫 signoff refused that: {escape(sentence(detail))} {NOTHING_CHANGED}"


def refusal(error: DecisionRefused, approval: Approval | None = None) -> str:
    """The ephemeral reply for a refused vote, chosen by the error's stable `code`."""
    title = approval.title if approval is not None else None
    approvers: Sequence[str] = approval.approvers if approval is not None else ()
    code_ = getattr(error, "code", "refused")
    if code_ == "delegation_refused":
        return delegation_refused(
            str(getattr(error, "principal", "")), bool(getattr(error, "critical", False)), title
        )
    if code_ == "not_approver":
        return not_approver(title, approvers)
    if code_ == "self_approval":
        others = [a for a in approvers if approval is None or a != approval.requester]
        owner = getattr(error, "service", None)
        return own_request(others, owner if isinstance(owner, str) else None)
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


def usage_line() -> str:
    return "Try `/agent help`."


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


def edit_hidden(field: str, shown: str) -> str:
    """A field whose value holds hidden or look-alike characters: a text input would hide
    them again (and an unchanged submission would keep them unseen)."""
    return (
        f"⚠️ *{escape(field)}* holds hidden or look-alike characters, marked ⟦…⟧: "
        f"{escape(shown)}. It cannot be edited here; reject with a note if it must change."
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
