"""Block Kit for signoff: approval cards, modals, `/agent` replies, App Home, notification text.

Pure: values in, JSON-ready dicts (or mrkdwn strings) out; no Slack client, no clock (`now`
is passed in, epoch seconds). Wording comes from `messages`; ids from `payloads`.

Slack's limits are enforced here and only here. Every text object is built by `_plain()` or
`_mrkdwn()`, which fit it to the limit of the place it goes; user data is shortened *before*
it is escaped (`escape_fit`), so an ellipsis never cuts an entity or a token in half; block
counts are capped by the builders. `check_limits()` walks a built message or view and lists every
limit it breaks: the tests run it on every renderer with arbitrary data.

Messages (cards, replies) are `{"text": fallback, "blocks": [...]}`, ready for
`chat.postMessage(channel=..., **message)` / `chat.update` / `respond()`. Views are ready for
`views.open(view=...)` and `views.publish(view=...)`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from bot.approvals.models import Approval

from . import messages as m
from .payloads import (
    APPROVE,
    BUTTON_VALUE_MAX,
    EDIT,
    EDIT_CALLBACK,
    ID_MAX,
    NOTE_BLOCK,
    PAYLOAD,
    PAYLOAD_CALLBACK,
    PRIVATE_METADATA_MAX,
    REASON_BLOCK,
    REJECT,
    REJECT_CALLBACK,
    VALUE_ACTION,
    ActionValue,
    edit_block_id,
)

__all__ = [
    "approval_card",
    "card",
    "check_limits",
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
    "thread_reply_approved",
    "thread_reply_completed",
    "thread_reply_decided",
    "thread_reply_expired",
    "thread_reply_failed",
    "thread_reply_outcome_unknown",
    "thread_reply_rejected",
    "thread_status_blocks",
]

# ---------------------------------------------------------------------------------------------
# Slack's limits (lengths in UTF-16 code units, as Slack counts them)
# ---------------------------------------------------------------------------------------------

MESSAGE_BLOCKS_MAX = 50
VIEW_BLOCKS_MAX = 100
"""Modals and the Home tab."""
TEXT_MAX = 3000
"""A message's top-level `text` (the notification and fallback). Slack takes 40,000; we keep
it to what a notification can show."""
SECTION_TEXT_MAX = 3000
FIELD_TEXT_MAX = 2000
FIELDS_MAX = 10
HEADER_TEXT_MAX = 150
CONTEXT_ELEMENTS_MAX = 10
CONTEXT_TEXT_MAX = 2000
ACTIONS_ELEMENTS_MAX = 25
BUTTON_TEXT_MAX = 75
ACTION_ID_MAX = ID_MAX
BLOCK_ID_MAX = ID_MAX
CALLBACK_ID_MAX = ID_MAX
URL_MAX = 3000
CONFIRM_TITLE_MAX = 100
CONFIRM_TEXT_MAX = 300
CONFIRM_BUTTON_MAX = 30
MODAL_TITLE_MAX = 24
MODAL_BUTTON_MAX = 24
INPUT_LABEL_MAX = 2000
INPUT_HINT_MAX = 2000
PLACEHOLDER_MAX = 150
INPUT_VALUE_MAX = 3000
"""A plain_text_input's `max_length` (and so its `initial_value`)."""
OPTION_TEXT_MAX = 75
OPTION_VALUE_MAX = 150

# Our own budgets, within Slack's
CARD_FIELDS_MAX = 20
"""Payload fields shown on a card; the rest are in the Full payload modal."""
CARD_VALUE_MAX = 300
"""Characters of one payload value on a card."""
CARD_KEY_MAX = 80
LIST_TITLE_MAX = 200
ERROR_MAX = 1500
HISTORY_LINES_MAX = 10
PAYLOAD_CHUNK_MAX = 2900

ELLIPSIS = "…"

# ---------------------------------------------------------------------------------------------
# Text, fitted
# ---------------------------------------------------------------------------------------------


def _prefix(text: str, units: int) -> str:
    """The longest prefix of `text` of at most `units` UTF-16 code units."""
    if units <= 0:
        return ""
    cut = text[:units]
    n = m.slack_len(cut)
    i = len(cut)
    while n > units:
        i -= 1
        n -= 2 if ord(cut[i]) > 0xFFFF else 1
    return cut[:i]


def fit(text: str, limit: int) -> str:
    """Plain text cleaned and shortened to `limit` with an ellipsis."""
    text = m.clean(text if len(text) <= limit + 1 else text[: limit + 1])
    if m.slack_len(text) <= limit:
        return text
    return _prefix(text, limit - 1) + ELLIPSIS


def escape_fit(text: str, limit: int) -> str:
    """`messages.escape(text)`, shortened to `limit` with an ellipsis between whole pieces."""
    return _escape_fit(text, limit)[0]


def _escape_fit(text: str, limit: int) -> tuple[str, bool]:
    # Each character escapes to at least one unit, so limit + 1 characters tell an overflow.
    short = text if len(text) <= limit else text[: limit + 1]
    pieces = m.escape_pieces(short)
    if sum(m.slack_len(p) for p in pieces) <= limit:
        return "".join(pieces), False
    budget = limit - 1
    out: list[str] = []
    used = 0
    for piece in pieces:
        n = m.slack_len(piece)
        if used + n > budget:
            break
        out.append(piece)
        used += n
    return "".join(out) + ELLIPSIS, True


def cut_mrkdwn(text: str, limit: int) -> str:
    """Shorten mrkdwn we built to `limit`, never leaving half an entity or a `<...>` token."""
    if m.slack_len(text) <= limit:
        return text
    out = _prefix(text, limit - 1)
    lt = out.rfind("<")
    if lt > out.rfind(">"):
        out = out[:lt]
    amp = out.rfind("&")
    if amp != -1 and ";" not in out[amp:]:
        out = out[:amp]
    return out + ELLIPSIS


def _one_line(text: str) -> str:
    return " ".join(m.clean(text).split())


def _plain(text: str, limit: int, *, emoji: bool = False, one_line: bool = True) -> dict[str, Any]:
    text = _one_line(text) if one_line else m.clean(text)
    text = fit(text, limit)
    if not text.strip():
        text = "-"
    return {"type": "plain_text", "text": text, "emoji": emoji}


def _mrkdwn(text: str, limit: int) -> dict[str, Any]:
    text = cut_mrkdwn(text, limit)
    if not text.strip():
        text = "-"
    # verbatim: no auto-linking of URLs, channel names or bare @mentions in the text.
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": _plain(text, HEADER_TEXT_MAX)}


def _section(text: str, limit: int = SECTION_TEXT_MAX) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text, min(limit, SECTION_TEXT_MAX))}


def _plain_section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": _plain(text, SECTION_TEXT_MAX, one_line=False)}


def _fields(fields: Sequence[str]) -> list[dict[str, Any]]:
    """Sections of at most FIELDS_MAX mrkdwn fields each."""
    return [
        {
            "type": "section",
            "fields": [_mrkdwn(f, FIELD_TEXT_MAX) for f in fields[i : i + FIELDS_MAX]],
        }
        for i in range(0, len(fields), FIELDS_MAX)
    ]


def _field(label: str, value: str) -> str:
    return f"*{label}*\n{value}"


def _context(*texts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [_mrkdwn(t, CONTEXT_TEXT_MAX) for t in texts[:CONTEXT_ELEMENTS_MAX]],
    }


def _divider() -> dict[str, Any]:
    return {"type": "divider"}


def _message(text: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    fallback = cut_mrkdwn(text, TEXT_MAX)
    return {
        "text": fallback if fallback.strip() else "signoff",
        "blocks": blocks[:MESSAGE_BLOCKS_MAX],
    }


def _text(text: str) -> str:
    """A message text (thread reply, reminder): fitted to TEXT_MAX."""
    return cut_mrkdwn(text, TEXT_MAX)


def _raw(text: object, limit: int) -> str:
    """User text shortened before formatting, so huge values cost nothing."""
    s = text if isinstance(text, str) else str(text)
    return s if len(s) <= limit else s[: limit - 1] + ELLIPSIS


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def _is_redacted(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("redacted"), str)


def _to_text(value: Any) -> str:
    """A value as one string: text as is, numbers and booleans as JSON writes them, the rest as
    JSON (or its repr when it is not JSON-able)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    try:
        if isinstance(value, (int, float)):
            return repr(value) if isinstance(value, float) else str(value)
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        if isinstance(value, int):
            return f"(a {value.bit_length()}-bit number)"
        return _raw(repr(value), 10_000)


def _value(value: Any, limit: int) -> tuple[str, bool]:
    """A payload value as mrkdwn within `limit`, and whether it was shortened."""
    if _is_redacted(value):
        return f"_{m.REDACTED}_", False
    if value is None:
        return f"_{m.NULL_VALUE}_", False
    if value == "":
        return f"_{m.EMPTY_VALUE}_", False
    return _escape_fit(_to_text(value), limit)


def _key(key: Any) -> str:
    text = _one_line(key if isinstance(key, str) else str(key))
    if not text:
        return f"_{m.UNNAMED_FIELD}_"
    return f"*{escape_fit(text, CARD_KEY_MAX)}*"


def _payload(approval: Approval) -> dict[str, Any]:
    payload = approval.payload
    if isinstance(payload, Mapping):
        return dict(payload)
    return {"value": payload}


def _payload_sections(approval: Approval) -> list[dict[str, Any]]:
    """The payload as section fields, and a note when fields were left out or shortened."""
    items = list(_payload(approval).items())
    if not items:
        return []
    shown = items[:CARD_FIELDS_MAX]
    shortened = False
    fields: list[str] = []
    for key, value in shown:
        label = _key(key)
        text, cut = _value(value, min(CARD_VALUE_MAX, FIELD_TEXT_MAX - m.slack_len(label) - 1))
        shortened = shortened or cut
        fields.append(f"{label}\n{text}")
    blocks = _fields(fields)
    if len(items) > len(shown):
        blocks.append(_context(m.fields_omitted(len(shown), len(items))))
    elif shortened:
        blocks.append(_context(m.values_shortened()))
    return blocks


def _title(approval: Approval) -> str:
    title = _one_line(_raw(approval.title or "", 400))
    return title or _one_line(_raw(approval.action, 400)) or "Approval"


# ---------------------------------------------------------------------------------------------
# Cards
# ---------------------------------------------------------------------------------------------


def _action_value(approval: Approval) -> str:
    value = ActionValue(approval.id, approval.thread_id, approval.interrupt_id).encode()
    if m.slack_len(value) > BUTTON_VALUE_MAX:
        value = ActionValue(approval.id, "", None).encode()
    if m.slack_len(value) > BUTTON_VALUE_MAX:
        raise ValueError(
            f"approval id {approval.id[:40]!r}… is too long for a Slack button value "
            f"({BUTTON_VALUE_MAX} characters); signoff's ids are 26 characters"
        )
    return value


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
        "text": _plain(text, BUTTON_TEXT_MAX, emoji=True),
        "action_id": action_id,
        "value": value,
    }
    if style:
        button["style"] = style
    if confirm:
        button["confirm"] = confirm
    return button


def _confirm(approval: Approval) -> dict[str, Any]:
    return {
        "title": _plain(m.CONFIRM_TITLE, CONFIRM_TITLE_MAX),
        "text": _plain(m.confirm_critical(_title(approval)), CONFIRM_TEXT_MAX),
        "confirm": _plain(m.CONFIRM_YES, CONFIRM_BUTTON_MAX),
        "deny": _plain(m.CONFIRM_NO, CONFIRM_BUTTON_MAX),
        "style": "danger",
    }


def _buttons(approval: Approval) -> dict[str, Any]:
    value = _action_value(approval)
    confirm = _confirm(approval) if approval.risk_tier == "critical" else None
    elements = [
        _button(m.APPROVE, APPROVE, value, style="primary", confirm=confirm),
        _button(m.REJECT, REJECT, value, style="danger"),
    ]
    # Once someone approved, an edit would change what they approved: decide() refuses it.
    if approval.editable and approval.approvals_count == 0:
        elements.append(_button(m.EDIT, EDIT, value))
    elements.append(_button(m.FULL_PAYLOAD, PAYLOAD, value))
    return {"type": "actions", "elements": elements}


def _meta_fields(approval: Approval) -> list[str]:
    return [
        _field(m.FIELD_RISK, m.tier(_raw(approval.risk_tier, 40))),
        _field(m.FIELD_REQUESTER, m.mention(_raw(approval.requester, 200))),
        _field(m.FIELD_WORKFLOW, m.code(_raw(approval.workflow, 300))),
        _field(m.FIELD_THREAD, m.code(_raw(approval.thread_id, 300))),
    ]


def _approvers(approval: Approval) -> str:
    return m.who([_raw(a, 100) for a in approval.approvers[:20]])


def approval_card(
    approval: Approval, *, now: float, progress_users: Sequence[str] | None = None
) -> dict[str, Any]:
    """The card for a pending approval: `{"text": ..., "blocks": [...]}`.

    Args:
        approval: the approval, its payload already redacted (`Approval.payload`).
        now: epoch seconds, for "expires in 2d 3h".
        progress_users: who has approved so far, for "1 of 2 approvals: @alice". Default: the
            approving votes on `approval`.

    The buttons carry `ActionValue(approval.id, approval.thread_id, approval.interrupt_id)`:
    Approve (primary; a confirm dialog for `critical`), Reject (danger; opens `reject_modal`),
    Edit (only when the action has editable fields and nobody has approved yet; opens
    `edit_modal`) and Full payload (opens `payload_modal`).
    """
    title = _title(approval)
    users = (
        list(progress_users)
        if progress_users is not None
        else [v.user_id for v in approval.votes if v.decision == "approve"]
    )
    expires = None if approval.expire_at is None else approval.expire_at - now
    fields = _meta_fields(approval) + [
        _field(m.FIELD_EXPIRES, m.expiry(expires, approval.expire_at)),
        _field(
            m.FIELD_APPROVALS,
            m.quorum(len(users), approval.required, [_raw(u, 100) for u in users[:20]]),
        ),
        _field(m.FIELD_APPROVERS, _approvers(approval)),
    ]
    blocks = [
        _header(f"{m.tier_emoji(approval.risk_tier)} {title}"),
        _section(m.card_summary(_raw(approval.requester, 200), _raw(approval.action, 300))),
        *_fields(fields),
        *_payload_sections(approval),
        _context(m.card_footer(_raw(approval.id, 300), approval.created_at)),
        _buttons(approval),
    ]
    fallback = m.card_fallback(
        title,
        _raw(approval.action, 300),
        _raw(approval.risk_tier, 40),
        _raw(approval.requester, 200),
    )
    return _message(fallback, blocks)


def card(approval: Approval, *, now: float) -> dict[str, Any]:
    """The card for an approval in any status: pending, decided, or expired."""
    if approval.status == "pending":
        return approval_card(approval, now=now)
    if approval.status == "expired":
        return expired_card(approval)
    return decided_card(approval)


def _decision(approval: Approval) -> Mapping[str, Any]:
    return approval.decision if isinstance(approval.decision, Mapping) else {}


def _by(approval: Approval) -> list[str]:
    return [_raw(b, 200) for b in approval.decided_by[:20] if isinstance(b, str)]


def _note(approval: Approval) -> str:
    note = _decision(approval).get("note") or approval.reason or ""
    return note if isinstance(note, str) else str(note)


def _status_line(approval: Approval) -> tuple[str, str]:
    """(the mrkdwn line saying how it was settled, the emoji for the header)."""
    decision = _decision(approval)
    if approval.status == "expired":
        return m.expired_line(approval.decided_at, bool(decision.get("approved"))), m.STATUS_EMOJI[
            "expired"
        ]
    if approval.status == "cancelled":
        return m.cancelled_line(approval.decided_at), m.STATUS_EMOJI["cancelled"]
    status = "denied" if decision.get("status") == "denied" else approval.status
    emoji = m.STATUS_EMOJI.get(status, "•")
    return m.decided_line(status, _by(approval), approval.decided_at), emoji


def _edit_lines(approval: Approval) -> str | None:
    edits = _decision(approval).get("edits")
    if not isinstance(edits, Mapping) or not edits:
        return None
    payload = _payload(approval)
    lines = [m.edits_heading()]
    for key, after in list(edits.items())[:CARD_FIELDS_MAX]:
        name = escape_fit(_one_line(str(key)), CARD_KEY_MAX)
        before_text, _ = _value(payload.get(key), 200)
        after_text, _ = _value(after, 200)
        lines.append(m.edit_change(name, before_text, after_text))
    if len(edits) > CARD_FIELDS_MAX:
        lines.append(m.home_more(len(edits) - CARD_FIELDS_MAX))
    return "\n".join(lines)


def _settled_card(approval: Approval, line: str, emoji: str, fallback: str) -> dict[str, Any]:
    title = _title(approval)
    blocks = [_header(f"{emoji} {title}"), _section(line)]
    note = _note(approval)
    if note:
        blocks.append(_section(m.note_line(_raw(note, SECTION_TEXT_MAX))))
    edits = _edit_lines(approval)
    if edits:
        blocks.append(_section(edits))
    blocks += [
        *_fields(_meta_fields(approval)),
        *_payload_sections(approval),
        _context(m.card_footer(_raw(approval.id, 300), approval.created_at)),
    ]
    return _message(fallback, blocks)


def decided_card(approval: Approval) -> dict[str, Any]:
    """The card after a decision (approved, rejected, denied, cancelled; expired too): who
    decided and when, the note and the edits, the payload; no buttons."""
    if approval.status == "expired":
        return expired_card(approval)
    line, emoji = _status_line(approval)
    fallback = f"{emoji} {m.escape(_title(approval))}: {m.status_word(approval.status)}"
    return _settled_card(approval, line, emoji, fallback)


def expired_card(approval: Approval) -> dict[str, Any]:
    """The card once the sweep expired it: when, and the outcome sent; no buttons."""
    approved = bool(_decision(approval).get("approved"))
    at = approval.decided_at if approval.decided_at is not None else approval.expire_at
    line = m.expired_line(at, approved)
    emoji = m.STATUS_EMOJI["expired"]
    fallback = f"{emoji} {m.escape(_title(approval))}: expired"
    return _settled_card(approval, line, emoji, fallback)


# ---------------------------------------------------------------------------------------------
# Thread replies, reminders, escalation (mrkdwn strings for chat.postMessage `text`)
# ---------------------------------------------------------------------------------------------


def thread_reply_completed(workflow: str, thread_id: str, outcome: str | None = None) -> str:
    """Posted in the card's thread when the run reaches its end."""
    return _text(
        m.run_completed(
            _raw(workflow, 200), _raw(thread_id, 300), _raw(outcome, ERROR_MAX) if outcome else None
        )
    )


def thread_reply_failed(workflow: str, thread_id: str, error: str) -> str:
    """Posted when a node raised: the error, and where to look."""
    return _text(m.run_failed(_raw(workflow, 200), _raw(thread_id, 300), _raw(error, ERROR_MAX)))


def thread_reply_outcome_unknown(workflow: str, thread_id: str, error: str) -> str:
    """Posted when a side effect's outcome is unknown: a person must check."""
    return _text(
        m.run_outcome_unknown(_raw(workflow, 200), _raw(thread_id, 300), _raw(error, ERROR_MAX))
    )


def thread_reply_approved(approval: Approval) -> str:
    return _text(m.run_approved(_title(approval), _by(approval)))


def thread_reply_rejected(approval: Approval) -> str:
    """Posted when a person rejected it (with the reason) or policy denied it."""
    denied = _decision(approval).get("status") == "denied"
    return _text(
        m.run_rejected(
            _title(approval), _by(approval), _raw(_note(approval), ERROR_MAX), denied=denied
        )
    )


def thread_reply_expired(approval: Approval) -> str:
    return _text(m.run_expired(_title(approval), bool(_decision(approval).get("approved"))))


def thread_reply_decided(approval: Approval) -> str:
    """The thread reply for a settled approval, whatever its outcome."""
    if approval.status == "expired":
        return thread_reply_expired(approval)
    if approval.status == "approved":
        return thread_reply_approved(approval)
    return thread_reply_rejected(approval)


def _who(approval: Approval, users: Sequence[str] | None) -> list[str]:
    entries = approval.approvers if users is None else users
    return [_raw(e, 100) for e in entries[:30]]


def reminder_text(approval: Approval, *, now: float, mentions: Sequence[str] | None = None) -> str:
    """A reminder for the card's thread.

    Args:
        mentions: the user ids to mention (approvers resolved from groups, minus those who
            voted). Default: the policy entries, where a group is named but not pinged.
    """
    return _text(
        m.reminder(
            _title(approval),
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
    return _text(
        m.escalation(
            _title(approval), now - approval.created_at, _who(approval, added), approval.expire_at
        )
    )


def text_blocks(text: str) -> dict[str, Any]:
    """A one-section message of mrkdwn `text` (a `messages` string), fitted to the limits."""
    return _message(text, [_section(text)])


# ---------------------------------------------------------------------------------------------
# Modals
# ---------------------------------------------------------------------------------------------


def _metadata(approval: Approval) -> str:
    value = _action_value(approval)
    assert m.slack_len(value) <= PRIVATE_METADATA_MAX
    return value


def _modal(
    callback_id: str,
    title: str,
    blocks: list[dict[str, Any]],
    *,
    metadata: str,
    submit: str | None = None,
    close: str = m.CLOSE,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": callback_id,
        "title": _plain(title, MODAL_TITLE_MAX),
        "close": _plain(close, MODAL_BUTTON_MAX),
        "private_metadata": metadata,
        "blocks": blocks[:VIEW_BLOCKS_MAX],
    }
    if submit:
        view["submit"] = _plain(submit, MODAL_BUTTON_MAX)
    return view


def _text_input(
    block_id: str,
    label: str,
    *,
    hint: str | None = None,
    initial: str | None = None,
    multiline: bool = False,
    optional: bool = False,
    placeholder: str | None = None,
    min_length: int | None = None,
) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": VALUE_ACTION,
        "multiline": multiline,
        "max_length": INPUT_VALUE_MAX,
    }
    if initial:
        element["initial_value"] = initial
    if placeholder:
        element["placeholder"] = _plain(placeholder, PLACEHOLDER_MAX)
    if min_length:
        element["min_length"] = min_length
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": _plain(label, INPUT_LABEL_MAX),
        "element": element,
        "optional": optional,
    }
    if hint:
        block["hint"] = _plain(hint, INPUT_HINT_MAX)
    return block


def reject_modal(approval: Approval) -> dict[str, Any]:
    """The modal Reject opens: a required reason. `private_metadata` carries the approval
    (`payloads.approval_id_from_view`); read the reason with `payloads.reason_from_view_state`."""
    blocks = [
        _section(m.reject_intro(_title(approval), _raw(approval.action, 300))),
        _text_input(
            REASON_BLOCK,
            m.REASON_LABEL,
            hint=m.REASON_HINT,
            multiline=True,
            placeholder=m.REASON_PLACEHOLDER,
            min_length=1,
        ),
    ]
    return _modal(
        REJECT_CALLBACK,
        m.REJECT_MODAL_TITLE,
        blocks,
        metadata=_metadata(approval),
        submit=m.REJECT_MODAL_SUBMIT,
        close=m.CANCEL,
    )


def _edit_initial(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return _to_text(value)


def edit_modal(approval: Approval, editable_fields: Iterable[str] | None = None) -> dict[str, Any]:
    """The modal Edit opens: one input per editable field, prefilled, with a hint of the type
    expected; submitting approves with the changed values (`payloads.edits_from_view_state`).

    A value too long for a Slack input (3000 characters), holding characters Slack cannot show,
    or redacted, is listed but cannot be edited here.

    Args:
        editable_fields: the fields to offer (names; a mapping's keys). Default:
            `approval.editable`.
    """
    names = list(
        dict.fromkeys(editable_fields if editable_fields is not None else approval.editable)
    )
    payload = _payload(approval)
    blocks: list[dict[str, Any]] = [_section(m.edit_intro(_title(approval)))]
    room = VIEW_BLOCKS_MAX - 3  # the intro, the note, the "more" line
    for i, name in enumerate(names):
        if len(blocks) - 1 >= room:
            blocks.append(_context(m.edits_omitted(len(names) - i)))
            break
        original = payload.get(name)
        label = _one_line(_raw(name, INPUT_LABEL_MAX)) or m.UNNAMED_FIELD
        if _is_redacted(original):
            blocks.append(_context(m.edit_not_editable(_raw(name, 200))))
            continue
        initial = _edit_initial(original)
        if m.slack_len(initial) > INPUT_VALUE_MAX or m.clean(initial) != initial:
            blocks.append(_context(m.edit_too_long(_raw(name, 200), len(initial))))
            continue
        multiline = isinstance(original, (list, dict)) or (
            isinstance(original, str) and ("\n" in original or len(original) > 80)
        )
        blocks.append(
            _text_input(
                edit_block_id(name),
                label,
                hint=m.edit_hint(original),
                initial=initial,
                multiline=multiline,
                optional=original is None or isinstance(original, str),
            )
        )
    blocks.append(
        _text_input(NOTE_BLOCK, m.NOTE_LABEL, hint=m.NOTE_HINT, multiline=True, optional=True)
    )
    return _modal(
        EDIT_CALLBACK,
        m.EDIT_MODAL_TITLE,
        blocks,
        metadata=_metadata(approval),
        submit=m.EDIT_MODAL_SUBMIT,
        close=m.CANCEL,
    )


def _chunks(text: str, size: int) -> Iterable[tuple[str, int]]:
    """`text` in pieces of at most `size` UTF-16 units, broken at a newline when one is near;
    each with where it ends."""
    pos, n = 0, len(text)
    while pos < n:
        piece = _prefix(text[pos : pos + size], size)
        end = pos + len(piece)
        if end < n:
            newline = piece.rfind("\n")
            if newline > size // 2:
                end = pos + newline + 1
        yield text[pos:end], end
        pos = end


def payload_modal(approval: Approval) -> dict[str, Any]:
    """The Full payload modal: every field as indented JSON, secrets as "[redacted]", split
    across plain-text sections (shown exactly as written: no mrkdwn in user data at all)."""
    shown = {
        (k if isinstance(k, str) else str(k)): (m.REDACTED if _is_redacted(v) else v)
        for k, v in _payload(approval).items()
    }
    try:
        text = json.dumps(shown, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(shown)
    text = m.clean(text)
    blocks: list[dict[str, Any]] = [
        _section(m.payload_intro(_title(approval), _raw(approval.action, 300)))
    ]
    room = VIEW_BLOCKS_MAX - 2
    for chunk, end in _chunks(text, PAYLOAD_CHUNK_MAX):
        if len(blocks) - 1 >= room:
            blocks.append(_context(m.payload_truncated(len(text) - (end - len(chunk)))))
            break
        blocks.append(_plain_section(chunk if chunk.strip() else chunk.replace(" ", "·") or "·"))
    return _modal(PAYLOAD_CALLBACK, m.PAYLOAD_MODAL_TITLE, blocks, metadata=_metadata(approval))


# ---------------------------------------------------------------------------------------------
# /agent status, /agent status THREAD, /agent help, App Home
# ---------------------------------------------------------------------------------------------


def _permalink(url: object) -> str | None:
    if not isinstance(url, str) or not url.startswith("https://") or len(url) > 1000:
        return None
    if any(c in url for c in '<>| \n\t"') or m.clean(url) != url:
        return None
    return url


def _voted(approval: Approval, user: str | None) -> bool:
    return user is not None and any(v.user_id == user for v in approval.votes)


def _may_decide(approval: Approval, user: str) -> bool:
    return user in approval.approvers and user != approval.requester and not _voted(approval, user)


def _pending_item(
    approval: Approval, *, now: float, user: str | None, permalinks: Mapping[str, str] | None
) -> dict[str, Any]:
    title = _title(approval)[:LIST_TITLE_MAX]
    url = _permalink((permalinks or {}).get(approval.id))
    shown = f"<{url}|{m.link_label(title)}>" if url else m.escape(title)
    expires = None if approval.expire_at is None else approval.expire_at - now
    waits = m.waits_on(
        approval.approvals_count,
        approval.required,
        [_raw(a, 100) for a in approval.approvers[:10]],
        voted=_voted(approval, user),
    )
    lines = [
        f"{m.tier_emoji(approval.risk_tier)} *{shown}*",
        m.status_item_meta(_raw(approval.action, 200), now - approval.created_at, waits, expires),
        f"requested by {m.mention(_raw(approval.requester, 200))}",
    ]
    return _section("\n".join(lines))


def _list(
    heading: str, items: Sequence[Any], render: Any, room: int, more: Any, total: int | None = None
) -> list[dict[str, Any]]:
    """A heading and one block per item, within `room` blocks; when not all of `total` (default
    `len(items)`: `items` may be the first page of more) fit, the last says how many more."""
    total = len(items) if total is None else max(total, len(items))
    out = [_section(heading)]
    if total == len(items) and len(items) + 1 <= room:
        return out + [render(i) for i in items]
    keep = min(len(items), max(room - 2, 0))
    return out + [render(i) for i in items[:keep]] + [_context(more(total - keep))]


def status_blocks(
    approvals: Sequence[Approval],
    user: str,
    now: float,
    *,
    decidable: Collection[str] | None = None,
    permalinks: Mapping[str, str] | None = None,
    totals: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The `/agent status` reply: pending approvals, those `user` can decide first, each with
    its age, what it waits on and a link to its card.

    Args:
        approvals: pending approvals, oldest first (`Signoff.pending(user=...)`).
        user: who asked.
        now: epoch seconds.
        decidable: ids of the approvals `user` may decide (groups resolved). Default: those
            listing `user` by id, not requested by them, and not voted on by them.
        permalinks: approval id -> the card's permalink (`chat.getPermalink`), when known.
        totals: how many are waiting on `user` and on others in all, when `approvals` holds
            only the first of each (`Signoff.pending_view`).
    """
    pending = [a for a in approvals if a.status == "pending"]
    if decidable is None:
        mine = [a for a in pending if _may_decide(a, user)]
    else:
        mine = [a for a in pending if a.id in decidable]
    ids = {a.id for a in mine}
    others = [a for a in pending if a.id not in ids]
    mine_total, others_total = totals if totals is not None else (len(mine), len(others))

    def render(a: Approval) -> dict[str, Any]:
        return _pending_item(a, now=now, user=user, permalinks=permalinks)

    blocks: list[dict[str, Any]] = []
    if not pending:
        blocks.append(_section(m.status_none()))
    if mine:
        room = MESSAGE_BLOCKS_MAX - (3 if others else 0)
        blocks += _list(
            m.status_mine_heading(mine_total), mine, render, room, m.status_more, mine_total
        )
    if others:
        if blocks:
            blocks.append(_divider())
        room = MESSAGE_BLOCKS_MAX - len(blocks)
        blocks += _list(
            m.status_others_heading(others_total), others, render, room, m.status_more, others_total
        )
    return _message(m.status_fallback(mine_total, others_total), blocks)


def _approval_line(approval: Approval) -> str:
    status: str = approval.status
    if status == "rejected" and _decision(approval).get("status") == "denied":
        status = "denied"
    return m.approval_line(
        status, _title(approval)[:LIST_TITLE_MAX], _by(approval), approval.decided_at
    )


def _lines_section(heading: str, lines: Sequence[str], more: Any) -> dict[str, Any]:
    """A section of `heading` and as many whole lines as fit, then how many did not."""
    out = heading
    for i, line in enumerate(lines):
        tail = "\n" + m.home_more(len(lines) - i)
        if m.slack_len(out) + 1 + m.slack_len(line) + m.slack_len(tail) > SECTION_TEXT_MAX:
            return _section(out + "\n" + more(len(lines) - i))
        out += "\n" + line
    return _section(out)


def _summary(state: object) -> Mapping[str, Any]:
    """A state summary from a mapping or from a `graphs.StateSnapshot` (its `next` and step)."""
    if state is None:
        return {}
    if isinstance(state, Mapping):
        return state
    metadata = getattr(state, "metadata", None) or {}
    step = metadata.get("step") if isinstance(metadata, Mapping) else None
    summary: dict[str, Any] = {"next": list(getattr(state, "next", None) or [])}
    if isinstance(step, int):
        summary["step"] = step
    return summary


def thread_status_blocks(
    run: Mapping[str, Any],
    state_summary: Mapping[str, Any] | object | None,
    approvals: Sequence[Approval],
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """The `/agent status THREAD_ID` reply: the run, where it is paused, on what, its history.

    Args:
        run: the run record (`Signoff.run_info`): thread_id, workflow, requester, channel,
            status, error, created_at, updated_at.
        state_summary: a `graphs.StateSnapshot` (`aget_state`), or a mapping with, all
            optional: `next` (node names it is paused at), `step` (supersteps so far) and
            `history` (short lines, oldest first).
        approvals: the thread's approvals (`Signoff.thread_approvals`).
        now: epoch seconds; default the current time.
    """
    now = time.time() if now is None else now
    thread_id = str(run.get("thread_id") or "?")
    status = str(run.get("status") or "unknown")
    fields = [
        _field(m.FIELD_WORKFLOW, m.code(_raw(run.get("workflow") or "?", 200))),
        _field(
            m.FIELD_STATUS,
            f"{m.RUN_STATUS_EMOJI.get(status, '•')} {m.escape(m.status_word(_raw(status, 40)))}",
        ),
        _field(m.FIELD_REQUESTER, m.mention(_raw(run.get("requester") or "?", 200))),
    ]
    if run.get("channel"):
        fields.append(_field(m.FIELD_CHANNEL, m.channel(_raw(run["channel"], 100))))
    for label, key in ((m.FIELD_STARTED, "created_at"), (m.FIELD_UPDATED, "updated_at")):
        ts = run.get(key)
        if isinstance(ts, (int, float)) and math.isfinite(ts):
            fields.append(_field(label, f"{m.date(ts)} ({m.ago(now - ts)})"))
    blocks: list[dict[str, Any]] = [
        _header(m.thread_heading_plain(_raw(thread_id, 200))),
        *_fields(fields),
    ]
    if run.get("error"):
        blocks.append(_section(m.thread_error(_raw(run["error"], ERROR_MAX))))
    summary = _summary(state_summary)
    nodes = [_raw(n, 100) for n in list(summary.get("next") or [])[:20]]
    if nodes or status == "paused":
        step = summary.get("step")
        blocks.append(_section(m.thread_paused_at(nodes, step if isinstance(step, int) else None)))
    history = [str(h) for h in list(summary.get("history") or [])]
    if history:
        last = history[-HISTORY_LINES_MAX:]
        lines = [f"• {escape_fit(_one_line(h), 200)}" for h in last]
        blocks.append(
            _section("\n".join([m.thread_history_heading(len(last), len(history)), *lines]))
        )
    if approvals:
        lines = [_approval_line(a) for a in approvals]
        blocks.append(
            _lines_section(m.thread_approvals_heading(len(approvals)), lines, m.home_more)
        )
    else:
        blocks.append(_context(m.thread_no_approvals()))
    fallback = f"Thread {m.code(_raw(thread_id, 200))}: {m.escape(m.status_word(_raw(status, 40)))}"
    return _message(fallback, blocks)


def help_blocks(workflows: Sequence[str] = (), *, unknown: str | None = None) -> dict[str, Any]:
    """The `/agent help` reply, and the answer to anything `/agent` does not know.

    Args:
        workflows: workflow names to list.
        unknown: the word `/agent` did not know (`AgentCommand.unknown`), said first.
    """
    names = [_raw(w, 100) for w in workflows[:50]]
    head = [_section(m.unknown_command(_raw(unknown, 100)))] if unknown else []
    return _message(m.help_fallback(), [*head, _header(m.HELP_TITLE), _section(m.help_text(names))])


def home_view(
    pending: Sequence[Approval],
    recent: Sequence[Approval],
    *,
    user: str | None = None,
    now: float | None = None,
    permalinks: Mapping[str, str] | None = None,
    notice: str | None = None,
    pending_total: int | None = None,
) -> dict[str, Any]:
    """The App Home tab: the user's pending approvals and recent decisions (`views.publish`).

    Args:
        pending: approvals waiting on the user.
        recent: recently settled approvals, newest first.
        user: the user (to say "you approved" on the ones they voted on).
        now: epoch seconds; default the current time.
        permalinks: approval id -> card permalink.
        notice: a `messages` string shown first (e.g. `messages.database_unavailable()`).
        pending_total: how many wait on the user in all, when `pending` is the first of them.
    """
    now = time.time() if now is None else now
    total = len(pending) if pending_total is None else pending_total
    blocks: list[dict[str, Any]] = [_header(m.home_heading_plain())]
    if notice:
        blocks.append(_section(notice))
    half = (VIEW_BLOCKS_MAX - 4) // 2

    def render(a: Approval) -> dict[str, Any]:
        return _pending_item(a, now=now, user=user, permalinks=permalinks)

    if pending:
        blocks += _list(m.home_pending_heading(total), pending, render, half, m.home_more, total)
    else:
        blocks.append(_section(m.home_none_pending()))
    blocks.append(_divider())
    if recent:
        room = VIEW_BLOCKS_MAX - len(blocks)
        blocks += _list(
            m.home_recent_heading(len(recent)),
            recent,
            lambda a: _section(_approval_line(a)),
            room,
            m.home_more,
        )
    else:
        blocks.append(_section(m.home_none_recent()))
    return {"type": "home", "blocks": blocks[:VIEW_BLOCKS_MAX]}


def home_unavailable_view() -> dict[str, Any]:
    """The App Home tab when the database cannot be reached."""
    return {
        "type": "home",
        "blocks": [_header(m.home_heading_plain()), _section(m.home_unavailable())],
    }


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


def check_limits(payload: Mapping[str, Any]) -> list[str]:
    """Every Slack limit a message (`{"text", "blocks"}`) or view (`{"type": "modal"|"home"}`)
    breaks, as readable strings; [] when Slack will take it."""
    problems: list[str] = []
    kind = payload.get("type")
    is_view = kind in ("modal", "home")
    blocks = payload.get("blocks", [])
    limit = VIEW_BLOCKS_MAX if is_view else MESSAGE_BLOCKS_MAX
    if not isinstance(blocks, list):
        return ["blocks: not a list"]
    if len(blocks) > limit:
        problems.append(f"blocks: {len(blocks)} > {limit}")
    if not is_view:
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append("text: missing or blank")
        elif m.slack_len(text) > TEXT_MAX:
            problems.append(f"text: {m.slack_len(text)} > {TEXT_MAX}")
    if kind == "modal":
        _check_text(payload.get("title"), "title", MODAL_TITLE_MAX, problems, plain=True)
        for key in ("submit", "close"):
            if key in payload:
                _check_text(payload[key], key, MODAL_BUTTON_MAX, problems, plain=True)
        _check_len(
            payload.get("private_metadata", ""), "private_metadata", PRIVATE_METADATA_MAX, problems
        )
        _check_len(payload.get("callback_id", ""), "callback_id", CALLBACK_ID_MAX, problems)
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        path = f"blocks[{i}]"
        if not isinstance(block, Mapping):
            problems.append(f"{path}: not an object")
            continue
        block_id = block.get("block_id")
        if block_id is not None:
            _check_len(block_id, f"{path}.block_id", BLOCK_ID_MAX, problems, min_len=1)
            if block_id in seen:
                problems.append(f"{path}.block_id: {block_id!r} is used twice")
            seen.add(block_id)
        _check_block(block, path, problems)
    return problems


def _check_len(value: object, path: str, limit: int, problems: list[str], min_len: int = 0) -> None:
    if not isinstance(value, str):
        problems.append(f"{path}: not a string")
        return
    n = m.slack_len(value)
    if n > limit or n < min_len:
        problems.append(f"{path}: length {n} not within {min_len}..{limit}")


def _check_text(
    obj: object, path: str, limit: int, problems: list[str], *, plain: bool = False
) -> None:
    if not isinstance(obj, Mapping) or obj.get("type") not in ("plain_text", "mrkdwn"):
        problems.append(f"{path}: not a text object")
        return
    if plain and obj["type"] != "plain_text":
        problems.append(f"{path}: must be plain_text")
    if obj["type"] == "plain_text" and "verbatim" in obj:
        problems.append(f"{path}: verbatim is only for mrkdwn")
    if obj["type"] == "mrkdwn" and "emoji" in obj:
        problems.append(f"{path}: emoji is only for plain_text")
    text = obj.get("text")
    _check_len(text, f"{path}.text", limit, problems, min_len=1)
    if isinstance(text, str) and not text.strip():
        problems.append(f"{path}.text: blank")


def _check_block(block: Mapping[str, Any], path: str, problems: list[str]) -> None:
    kind = block.get("type")
    if kind == "header":
        _check_text(block.get("text"), f"{path}.text", HEADER_TEXT_MAX, problems, plain=True)
    elif kind == "section":
        if "text" not in block and "fields" not in block:
            problems.append(f"{path}: a section needs text or fields")
        if "text" in block:
            _check_text(block["text"], f"{path}.text", SECTION_TEXT_MAX, problems)
        if "fields" in block:
            fields = block["fields"]
            if not isinstance(fields, list) or not 1 <= len(fields) <= FIELDS_MAX:
                problems.append(f"{path}.fields: must be 1..{FIELDS_MAX} items")
            else:
                for j, f in enumerate(fields):
                    _check_text(f, f"{path}.fields[{j}]", FIELD_TEXT_MAX, problems)
        if "accessory" in block:
            _check_element(block["accessory"], f"{path}.accessory", problems)
    elif kind == "context":
        elements = block.get("elements")
        if not isinstance(elements, list) or not 1 <= len(elements) <= CONTEXT_ELEMENTS_MAX:
            problems.append(f"{path}.elements: must be 1..{CONTEXT_ELEMENTS_MAX} items")
        else:
            for j, e in enumerate(elements):
                _check_text(e, f"{path}.elements[{j}]", CONTEXT_TEXT_MAX, problems)
    elif kind == "actions":
        elements = block.get("elements")
        if not isinstance(elements, list) or not 1 <= len(elements) <= ACTIONS_ELEMENTS_MAX:
            problems.append(f"{path}.elements: must be 1..{ACTIONS_ELEMENTS_MAX} items")
        else:
            ids = [e.get("action_id") for e in elements if isinstance(e, Mapping)]
            if len(ids) != len(set(ids)):
                problems.append(f"{path}.elements: action_ids are not unique")
            for j, e in enumerate(elements):
                _check_element(e, f"{path}.elements[{j}]", problems)
    elif kind == "input":
        _check_text(block.get("label"), f"{path}.label", INPUT_LABEL_MAX, problems, plain=True)
        if "hint" in block:
            _check_text(block["hint"], f"{path}.hint", INPUT_HINT_MAX, problems, plain=True)
        _check_element(block.get("element"), f"{path}.element", problems)
    elif kind != "divider":
        problems.append(f"{path}: unexpected block type {kind!r}")


def _check_element(element: object, path: str, problems: list[str]) -> None:
    if not isinstance(element, Mapping):
        problems.append(f"{path}: not an object")
        return
    _check_len(
        element.get("action_id", ""), f"{path}.action_id", ACTION_ID_MAX, problems, min_len=1
    )
    kind = element.get("type")
    if kind == "button":
        _check_text(element.get("text"), f"{path}.text", BUTTON_TEXT_MAX, problems, plain=True)
        if "value" in element:
            _check_len(element["value"], f"{path}.value", BUTTON_VALUE_MAX, problems, min_len=1)
        if "url" in element:
            _check_len(element["url"], f"{path}.url", URL_MAX, problems, min_len=1)
        if element.get("style") not in (None, "primary", "danger"):
            problems.append(f"{path}.style: {element.get('style')!r}")
        confirm = element.get("confirm")
        if confirm is not None:
            _check_text(
                confirm.get("title"),
                f"{path}.confirm.title",
                CONFIRM_TITLE_MAX,
                problems,
                plain=True,
            )
            _check_text(confirm.get("text"), f"{path}.confirm.text", CONFIRM_TEXT_MAX, problems)
            for key in ("confirm", "deny"):
                _check_text(
                    confirm.get(key),
                    f"{path}.confirm.{key}",
                    CONFIRM_BUTTON_MAX,
                    problems,
                    plain=True,
                )
    elif kind == "plain_text_input":
        max_length = element.get("max_length", INPUT_VALUE_MAX)
        if not isinstance(max_length, int) or not 1 <= max_length <= INPUT_VALUE_MAX:
            problems.append(f"{path}.max_length: {max_length!r}")
            max_length = INPUT_VALUE_MAX
        if "initial_value" in element:
            _check_len(element["initial_value"], f"{path}.initial_value", max_length, problems)
        if "placeholder" in element:
            _check_text(
                element["placeholder"], f"{path}.placeholder", PLACEHOLDER_MAX, problems, plain=True
            )
    elif kind in ("static_select", "radio_buttons", "checkboxes", "overflow"):
        for j, option in enumerate(element.get("options") or []):
            _check_text(option.get("text"), f"{path}.options[{j}].text", OPTION_TEXT_MAX, problems)
            _check_len(
                option.get("value", ""), f"{path}.options[{j}].value", OPTION_VALUE_MAX, problems
            )
    else:
        problems.append(f"{path}: unexpected element type {kind!r}")
