"""The approval card's texts, and those of a decided, expired or cancelled card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..mrkdwn import clean, code, date, escape, mention
from ._away import decided_for
from ._words import (
    FULL_PAYLOAD,
    STATUS_EMOJI,
    decider,
    join,
    plural,
    sentence,
    status_word,
    tier_emoji,
)

# ---------------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------------


def asker(requester: str, via: str | None = None) -> str:
    """Who asks: `<@U_ERIN>`; through a service, `<@U_ERIN> via *billing*`, or the service
    alone (`*billing* (a service)`) when it may not name a person (`may_act_for`)."""
    if via is None:
        return mention(requester)
    if requester == via:
        return f"the service *{escape(via)}* (via *{escape(via)}*, for itself)"
    return f"{mention(requester)} via *{escape(via)}*"


def card_fallback(
    title: str, action: str, tier_name: str, requester: str, via: str | None = None
) -> str:
    """The notification text of a new card (mrkdwn, user data escaped by the caller's parts)."""
    return (
        f"{tier_emoji(tier_name)} Approval needed: {escape(title)} ({escape(action)}), "
        f"requested by {asker(requester, via)}"
    )


def fallback_deciders(approvers: str, expire_at: float | None) -> str:
    """What the notification text adds: who must decide and by when (screen readers read only
    the fallback text)."""
    by = f" by {date(expire_at)}" if expire_at is not None else ""
    return f". To decide{by}: {approvers}"


def card_summary(requester: str, action: str, via: str | None = None) -> str:
    """`<@U_ERIN> asks via *billing* to run `send_refund`. Decide below.`"""
    if via is None:
        return f"{mention(requester)} asks to run {code(action)}. Decide below."
    if requester == via:
        return (
            f"The service *{escape(via)}* asks to run {code(action)} (via *{escape(via)}*, "
            "for itself). Decide below."
        )
    return f"{mention(requester)} asks via *{escape(via)}* to run {code(action)}. Decide below."


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


def confirm_critical(title: str, values: str) -> str:
    """Confirm dialog text (plain text: the dialog's text object is plain_text): the values
    that run first (`table: users, row_id: 7`), so that a long title cannot push them out."""
    return (
        f"You approve {clean(values)}. “{clean(title)}” is a critical action and cannot be "
        "undone. Approve it only if you have checked every field."
    )


def hidden_characters(fields: Sequence[tuple[str, str]]) -> str:
    """The card's warning: which fields hold hidden or look-alike characters (`(name, kinds)`,
    kinds worded), shown marked ⟦…⟧ above."""
    listed = ", ".join(f"*{escape(name)}* ({kinds})" for name, kinds in fields)
    return (
        f"⚠️ Hidden or look-alike characters in {listed}: shown as ⟦U+…⟧ marks. "
        "Check what they really say before you decide."
    )


def agent_saw(reason: str, results: Sequence[tuple[str, str]]) -> str:
    """What an agent had just read and what it said when it proposed the call, each shortened
    by the caller (the Full payload view holds them whole)."""
    lines = ["*What the agent saw* (whole in Full payload)"]
    lines += [f"{code(tool or 'a tool')} returned: {escape(content)}" for tool, content in results]
    if reason:
        lines.append(f"The model said: {escape(reason)}")
    return "\n".join(lines)


def asked_because(why: str) -> str:
    """Why a request an auto-approval rule matched is asked of people: the rule is past its
    budget (`why` says which cap and how much it spent)."""
    return f"🧮 *Asked because* {escape(why)}"


def facts_checked(when: str, facts: str) -> str:
    """The facts the action's check read when it was asked (`when`: a date token)."""
    return f"🔎 *Facts checked* {when}: {escape(facts)}"


def facts_changed(after: str, changes: str) -> str:
    """Why this is asked again: facts changed after approval `after`, old → new. (Another
    approval's id is never in code format on a card: that is how a card names its own.)"""
    return (
        f"⚠️ *Facts changed since approval {escape(after)}* was given, so it was not used: "
        f"{escape(changes)}. Decide on what is true now."
    )


def not_used(why: str, asked_again: str) -> str:
    """On the card of an approval its re-check refused: the action did not run, and why."""
    return f"🚫 *Not run:* {escape(why)} after it was decided. Asked again: {escape(asked_again)}."


def check_failed(when: str, error: str) -> str:
    """The check failed (raised, timed out, answered no facts): the action does not run."""
    return f"⛔ *The check of the facts failed* {when}: {escape(error)}. The action does not run."


def asker_note(who: str, note: str) -> str:
    """The requester's own words, labelled as theirs (`who` is mrkdwn made by the caller)."""
    return f"*Note from {who}* (their words, not checked against the values):\n{escape(note)}"


# ---------------------------------------------------------------------------------------------
# Decided and expired cards
# ---------------------------------------------------------------------------------------------


def decided_line(
    status: str, by: Sequence[str], at: float | None, on_behalf: Mapping[str, str] | None = None
) -> str:
    """`✅ *Approved* by <@U_ALICE> and <@U_BOB> <!date...>`; a delegate's name is followed by
    the away approver's (`on_behalf`: "<@U_BOB> for <@U_ALICE>")."""
    emoji = STATUS_EMOJI.get(status, "•")
    stood = on_behalf or {}
    who_ = join([decided_for(b, stood[b]) if b in stood else decider(b) for b in by]) or "someone"
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
    return f"🔄 {escape(sentence(detail))}"


def edit_change(field: str, before: str, after: str) -> str:
    """One edit: `• *amount*: 120.0 → 100` (parts escaped by the caller)."""
    return f"• *{field}*: {before} → {after}"
