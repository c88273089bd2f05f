"""The approval card, in each of its states: pending (with its buttons), decided, expired.

Pure: values in, `{"text": fallback, "blocks": [...]}` out, ready for `chat.postMessage` and
`chat.update`; no Slack client, no clock (`now` is passed in, epoch seconds). Wording comes from
`messages`; ids from `payloads`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.approvals.checks import changes_text, facts_text
from bot.approvals.models import Approval
from bot.approvals.policy.grants import GrantLimits

from . import messages as m
from . import reveal
from ._blocks import (
    action_value,
    context,
    deciders,
    decision_of,
    field,
    field_sections,
    header,
    is_redacted,
    message,
    note_of,
    payload_sections,
    plain,
    proposed_of,
    section,
    seen_blocks,
    stood_in,
    title_of,
    to_text,
    value_text,
)
from .limits import (
    BUTTON_TEXT_MAX,
    CARD_FIELDS_MAX,
    CARD_KEY_MAX,
    CONFIRM_BUTTON_MAX,
    CONFIRM_TEXT_MAX,
    CONFIRM_TITLE_MAX,
    SECTION_TEXT_MAX,
)
from .mrkdwn import code, date, escape, escape_fit, one_line, shorten
from .payloads import APPROVE, EDIT, GRANT, PAYLOAD, REJECT

__all__ = [
    "approval_card",
    "card",
    "decided_card",
    "expired_card",
]


def _button(
    text: str,
    action_id: str,
    value: str,
    *,
    style: str | None = None,
    confirm: dict[str, Any] | None = None,
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": plain(text, BUTTON_TEXT_MAX, emoji=True),
        "action_id": action_id,
        "value": value,
    }
    if style:
        button["style"] = style
    if confirm:
        button["confirm"] = confirm
    return button


def _confirm_values(approval: Approval) -> str:
    """The values that run, as plain text for the confirm dialog: `table: users, row_id: 7`."""
    parts = []
    for key, value in approval.current.items():
        shown = approval.shown(str(key), value)
        text = shown if shown is not None else ("•••" if is_redacted(value) else to_text(value))
        parts.append(f"{one_line(str(key))[:40]}: {one_line(text)[:80]}")
    return ", ".join(parts) or "no values"


def _confirm(approval: Approval) -> dict[str, Any]:
    text = m.confirm_critical(title_of(approval), _confirm_values(approval))
    return {
        "title": plain(m.CONFIRM_TITLE, CONFIRM_TITLE_MAX),
        "text": plain(text, CONFIRM_TEXT_MAX),
        "confirm": plain(m.CONFIRM_YES, CONFIRM_BUTTON_MAX),
        "deny": plain(m.CONFIRM_NO, CONFIRM_BUTTON_MAX),
        "style": "danger",
    }


def _buttons(approval: Approval, grants: GrantLimits | None = None) -> dict[str, Any]:
    value = action_value(approval)
    confirm = _confirm(approval) if approval.risk_tier == "critical" else None
    elements = [
        _button(m.APPROVE, APPROVE, value, style="primary", confirm=confirm),
        _button(m.REJECT, REJECT, value, style="danger"),
    ]
    # A grant comes with the approval that decides the request: one person's, never critical.
    if grants is not None and approval.risk_tier != "critical" and approval.required == 1:
        elements.insert(1, _button(m.GRANT_BUTTON, GRANT, value))
    # Once someone approved, an edit would change what they approved: decide() refuses it.
    if approval.editable and approval.approvals_count == 0:
        elements.append(_button(m.EDIT, EDIT, value))
    elements.append(_button(m.FULL_PAYLOAD, PAYLOAD, value))
    return {"type": "actions", "elements": elements}


def _meta_fields(approval: Approval) -> list[str]:
    return [
        field(m.FIELD_RISK, m.tier(shorten(approval.risk_tier, 40))),
        field(m.FIELD_REQUESTER, m.asker(shorten(approval.requester, 200), _via(approval))),
        field(m.FIELD_WORKFLOW, code(shorten(approval.workflow, 300))),
        field(m.FIELD_THREAD, code(shorten(approval.thread_id, 300))),
    ]


def _via(approval: Approval) -> str | None:
    """The service a request came through (the card says "via NAME"), or None."""
    return shorten(approval.service, 40) if approval.service else None


def _approvers(approval: Approval, mentions: Sequence[str] | None) -> str:
    if mentions:
        return m.join(list(mentions[:20]), "or")
    return m.who([shorten(a, 100) for a in approval.approvers[:20]])


def approval_card(
    approval: Approval,
    *,
    now: float,
    progress_users: Sequence[str] | None = None,
    mentions: Sequence[str] | None = None,
    grants: GrantLimits | None = None,
) -> dict[str, Any]:
    """The card for a pending approval: `{"text": ..., "blocks": [...]}`.

    Args:
        approval: the approval, its payload already redacted (`Approval.payload`).
        now: epoch seconds, for whether it has expired ("Expires: now"); the time it expires
            is a Slack date token.
        progress_users: who has approved so far, for "1 of 2 approvals: @alice". Default: the
            approving votes on `approval`.
        mentions: the approvers as Slack mentions (`mentions.approver_mentions`), which notify
            them; shown in the Approvers field and the fallback text. Default: the entries as
            written, groups as plain text (nobody in them is notified).
        grants: the action's `grants` policy, when it allows them: the card offers "Approve +
            allow more" (`modals.grant_modal`). Default none.

    The buttons carry `ActionValue(approval.id, approval.thread_id, approval.interrupt_id)`:
    Approve (primary; a confirm dialog for `critical`), Reject (danger; opens
    `modals.reject_modal`), Edit (only when the action has editable fields and nobody has
    approved yet; opens `modals.edit_modal`) and Full payload (opens `modals.payload_modal`).
    """
    title = title_of(approval)
    users = (
        list(progress_users)
        if progress_users is not None
        else [v.user_id for v in approval.votes if v.decision == "approve"]
    )
    expires = None if approval.expire_at is None else approval.expire_at - now
    fields = _meta_fields(approval) + [
        field(m.FIELD_EXPIRES, m.expiry(expires, approval.expire_at)),
        field(
            m.FIELD_APPROVALS,
            m.quorum(len(users), approval.required, [shorten(u, 100) for u in users[:20]]),
        ),
        field(m.FIELD_APPROVERS, _approvers(approval, mentions)),
    ]
    blocks = [
        header(f"{m.tier_emoji(approval.risk_tier)} {title}"),
        section(
            m.card_summary(
                shorten(approval.requester, 200), shorten(approval.action, 300), _via(approval)
            )
        ),
        *_asker_note(approval),
        *(
            [context(m.asked_because(shorten(approval.asked_because, 1000)))]
            if approval.asked_because
            else []
        ),
        *([context(m.card_away(approval.away[:20], approval.escalated))] if approval.away else []),
        *seen_blocks(approval),
        *facts_blocks(approval),
        *field_sections(fields),
        *payload_sections(approval),
        *_hidden_warning(approval),
        *_pending_edits(approval),
        context(m.card_footer(shorten(approval.id, 300), approval.created_at)),
        _buttons(approval, grants),
    ]
    fallback = m.card_fallback(
        title,
        shorten(approval.action, 300),
        shorten(approval.risk_tier, 40),
        shorten(approval.requester, 200),
        _via(approval),
    ) + m.fallback_deciders(_approvers(approval, mentions), approval.expire_at)
    return message(fallback, blocks)


_KINDS = {"hidden": "hidden characters", "look-alike": "letters of another script"}


def _hidden_warning(approval: Approval) -> list[dict[str, Any]]:
    """A warning line when a value people read on the card (a field, its name, the title, the
    note) holds hidden or look-alike characters: they are shown marked ⟦…⟧ where they are."""
    texts: list[tuple[str, str]] = [("title", approval.title), ("note", approval.note or "")]
    for key, value in list(approval.current.items())[:CARD_FIELDS_MAX]:
        if not is_redacted(value):
            texts.append((str(key), f"{key} {to_text(value)}"))
    found = []
    for name, text in texts:
        kinds = reveal.findings(shorten(text, 5000))
        if kinds:
            words = " and ".join(_KINDS[k] for k in sorted(kinds))
            found.append((shorten(name, 100), words))
    return [context(m.hidden_characters(found[:10]))] if found else []


def facts_blocks(approval: Approval) -> list[dict[str, Any]]:
    """What the action's check read when it was asked (the facts, or its failure), and what
    changed since the approval this one follows (old → new)."""
    checked = approval.checked
    if not checked:
        return []
    at = checked.get("at")
    when = date(at if isinstance(at, (int, float)) else None)
    facts, changed = checked.get("facts"), checked.get("changed")
    if "error" in checked or not isinstance(facts, Mapping):
        return [section(m.check_failed(when, shorten(str(checked.get("error")), 1000)))]
    lines = [m.facts_checked(when, shorten(facts_text(facts), 1500))]
    if isinstance(changed, Mapping) and changed:
        after = shorten(str(checked.get("after") or "?"), 100)
        lines.append(m.facts_changed(after, shorten(changes_text(changed), 1200)))
    not_used = checked.get("not_used")
    if isinstance(not_used, Mapping):
        later = not_used.get("changed")
        why = (
            f"the facts changed ({changes_text(later)})"
            if isinstance(later, Mapping) and later
            else f"the check failed ({not_used.get('error')})"
        )
        asked = shorten(str(not_used.get("asked_again") or "?"), 100)
        lines.append(m.not_used(shorten(why, 1000), asked))
    return [section("\n".join(lines), SECTION_TEXT_MAX)]


def _asker_note(approval: Approval) -> list[dict[str, Any]]:
    """What the requester (a service) wrote beside the arguments, labelled as theirs: never the
    header, never in the confirm dialog."""
    if not approval.note:
        return []
    if approval.turn is not None:  # a foreign request's description: the request's words
        return [section(m.call_note(shorten(approval.note, 2000)))]
    via = _via(approval)
    who = escape(via) if via else m.asker(shorten(approval.requester, 200))
    return [section(m.asker_note(who, shorten(approval.note, 2000)))]


def _pending_edits(approval: Approval) -> list[dict[str, Any]]:
    """What an approver's edit changed, on the card of a request still pending: the fields
    above show the new values, and votes count only for them."""
    changes = approval.changes
    if not changes:
        return []
    lines = [m.edited_heading(approval.revision)]
    for key, before, after, who in changes[:CARD_FIELDS_MAX]:
        name = escape_fit(one_line(str(key)), CARD_KEY_MAX)
        before_text, _ = value_text(before, 200, approval.shown(str(key), before))
        after_text, _ = value_text(after, 200, approval.shown(str(key), after))
        lines.append(m.edit_change(name, before_text, after_text) + m.edited_by(shorten(who, 100)))
    return [section("\n".join(lines), SECTION_TEXT_MAX)]


def card(
    approval: Approval,
    *,
    now: float,
    mentions: Sequence[str] | None = None,
    grants: GrantLimits | None = None,
) -> dict[str, Any]:
    """The card for an approval in any status: pending (`mentions` and `grants` as in
    `approval_card`), decided, or expired."""
    if approval.status == "pending":
        return approval_card(approval, now=now, mentions=mentions, grants=grants)
    if approval.status == "expired":
        return expired_card(approval)
    return decided_card(approval)


def _status_line(approval: Approval) -> tuple[str, str]:
    """(the mrkdwn line saying how it was settled, the emoji for the header)."""
    decision = decision_of(approval)
    if approval.status == "expired":
        return m.expired_line(approval.decided_at, bool(decision.get("approved"))), m.STATUS_EMOJI[
            "expired"
        ]
    if approval.status == "cancelled":
        return m.cancelled_line(approval.decided_at), m.STATUS_EMOJI["cancelled"]
    status = "denied" if decision.get("status") == "denied" else approval.status
    emoji = m.STATUS_EMOJI.get(status, "•")
    line = m.decided_line(status, deciders(approval), approval.decided_at, stood_in(approval))
    return line, emoji


def _edit_lines(approval: Approval) -> str | None:
    edits = decision_of(approval).get("edits")
    if not isinstance(edits, Mapping) or not edits:
        return None
    payload = proposed_of(approval)
    lines = [m.edits_heading()]
    for key, after in list(edits.items())[:CARD_FIELDS_MAX]:
        name = escape_fit(one_line(str(key)), CARD_KEY_MAX)
        before = payload.get(key)
        before_text, _ = value_text(before, 200, approval.shown(str(key), before))
        after_text, _ = value_text(after, 200, approval.shown(str(key), after))
        lines.append(m.edit_change(name, before_text, after_text))
    if len(edits) > CARD_FIELDS_MAX:
        lines.append(m.home_more(len(edits) - CARD_FIELDS_MAX))
    return "\n".join(lines)


def _settled_card(approval: Approval, line: str, emoji: str, fallback: str) -> dict[str, Any]:
    title = title_of(approval)
    blocks = [header(f"{emoji} {title}"), section(line), *_granted(approval)]
    blocks += _asker_note(approval)
    blocks += facts_blocks(approval)
    note = note_of(approval)
    if note and not approval.granted:  # a grant's note is the line `_granted` draws
        blocks.append(section(m.note_line(shorten(note, SECTION_TEXT_MAX))))
    edits = _edit_lines(approval)
    if edits:
        blocks.append(section(edits))
    blocks += [
        *field_sections(_meta_fields(approval)),
        *payload_sections(approval),
        *_hidden_warning(approval),
        context(m.card_footer(shorten(approval.id, 300), approval.created_at)),
    ]
    return message(fallback, blocks)


def _granted(approval: Approval) -> list[dict[str, Any]]:
    """For a request approved under a grant: whose, what is left of it, until when, which."""
    g = approval.granted
    if not g:
        return []
    try:
        line = m.granted_line(
            shorten(str(g["grantor"]), 100), int(g["left"]), int(g["uses"]),
            float(g["until"]), shorten(str(g["id"]), 100),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return []
    return [context(line)]


def decided_card(approval: Approval) -> dict[str, Any]:
    """The card after a decision (approved, rejected, denied, cancelled; expired too): who
    decided and when, the note and the edits, the payload; no buttons."""
    if approval.status == "expired":
        return expired_card(approval)
    line, emoji = _status_line(approval)
    fallback = f"{emoji} {escape(title_of(approval))}: {m.status_word(approval.status)}"
    return _settled_card(approval, line, emoji, fallback)


def expired_card(approval: Approval) -> dict[str, Any]:
    """The card once the sweep expired it: when, and the outcome sent; no buttons."""
    approved = bool(decision_of(approval).get("approved"))
    at = approval.decided_at if approval.decided_at is not None else approval.expire_at
    line = m.expired_line(at, approved)
    emoji = m.STATUS_EMOJI["expired"]
    fallback = f"{emoji} {escape(title_of(approval))}: expired"
    return _settled_card(approval, line, emoji, fallback)
