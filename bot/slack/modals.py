"""The modals a card's buttons open: reject (a required reason), edit (the editable fields,
prefilled), approve with a grant (how many more, for how long) and the full payload. Ready for `views.open(view=...)`.

`private_metadata` carries the approval (`payloads.approval_id_from_view`); what a person typed
is read by `payloads` (`reason_from_view_state`, `edits_from_view_state`). Wording comes from
`messages`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any

from bot.approvals.models import Approval
from bot.approvals.policy.durations import format_duration
from bot.approvals.policy.grants import GrantLimits

from . import messages as m
from . import reveal
from ._blocks import (
    action_value,
    context,
    is_redacted,
    payload_of,
    plain,
    plain_section,
    section,
    title_of,
    to_text,
)
from .limits import (
    INPUT_HINT_MAX,
    INPUT_LABEL_MAX,
    INPUT_VALUE_MAX,
    MODAL_BUTTON_MAX,
    MODAL_TITLE_MAX,
    OPTION_TEXT_MAX,
    OPTIONS_MAX,
    PAYLOAD_CHUNK_MAX,
    PLACEHOLDER_MAX,
    PRIVATE_METADATA_MAX,
    VIEW_BLOCKS_MAX,
    VIEW_BYTES_MAX,
)
from .mrkdwn import clean, one_line, prefix, shorten, slack_len
from .payloads import (
    EDIT_CALLBACK,
    GRANT_CALLBACK,
    GRANT_FOR_BLOCK,
    GRANT_USES_BLOCK,
    NOTE_BLOCK,
    PAYLOAD_CALLBACK,
    REASON_BLOCK,
    REJECT_CALLBACK,
    VALUE_ACTION,
    edit_block_id,
)

__all__ = [
    "edit_modal",
    "grant_modal",
    "payload_modal",
    "reject_modal",
]


def _metadata(approval: Approval) -> str:
    value = action_value(approval)
    assert slack_len(value) <= PRIVATE_METADATA_MAX
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
        "title": plain(title, MODAL_TITLE_MAX),
        "close": plain(close, MODAL_BUTTON_MAX),
        "private_metadata": metadata,
        "blocks": blocks[:VIEW_BLOCKS_MAX],
    }
    if submit:
        view["submit"] = plain(submit, MODAL_BUTTON_MAX)
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
        element["placeholder"] = plain(placeholder, PLACEHOLDER_MAX)
    if min_length:
        element["min_length"] = min_length
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": plain(label, INPUT_LABEL_MAX),
        "element": element,
        "optional": optional,
    }
    if hint:
        block["hint"] = plain(hint, INPUT_HINT_MAX)
    return block


def reject_modal(approval: Approval) -> dict[str, Any]:
    """The modal Reject opens: a required reason. `private_metadata` carries the approval
    (`payloads.approval_id_from_view`); read the reason with `payloads.reason_from_view_state`."""
    blocks = [
        section(m.reject_intro(title_of(approval), shorten(approval.action, 300))),
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


_WINDOWS = (15 * 60, 30 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 86400, 2 * 86400, 7 * 86400)
"""The windows the grant modal offers (seconds), up to the policy's `longest`."""


def _select(block_id: str, label: str, options: list[tuple[str, str]]) -> dict[str, Any]:
    """A required static select of (value, label) options, the last chosen to begin with."""
    shown = [{"text": plain(text, OPTION_TEXT_MAX), "value": value} for value, text in options][
        :OPTIONS_MAX
    ]
    return {
        "type": "input",
        "block_id": block_id,
        "label": plain(label, INPUT_LABEL_MAX),
        "element": {
            "type": "static_select",
            "action_id": VALUE_ACTION,
            "options": shown,
            "initial_option": shown[-1],
        },
    }


def grant_modal(approval: Approval, limits: GrantLimits) -> dict[str, Any]:
    """The modal "Allow more like this" opens: approve this request, and allow up to N more
    like it for T (N up to the policy's `most`, T up to its `longest`). Read the choice with
    `payloads.grant_from_view_state`; the vote checks it against the policy again."""
    longest = int(limits.longest.total_seconds())
    windows = sorted({w for w in _WINDOWS if w < longest} | {longest})
    blocks = [
        section(
            m.grant_intro(
                shorten(approval.requester, 100),
                [shorten(k, 100) for k in limits.key],
                [shorten(v, 100) for v in limits.vary],
                limits.most,
                format_duration(limits.longest),
            )
        ),
        _select(
            GRANT_USES_BLOCK,
            m.GRANT_USES_LABEL,
            [(str(n), m.grant_uses_option(n)) for n in range(1, limits.most + 1)],
        ),
        _select(
            GRANT_FOR_BLOCK,
            m.GRANT_FOR_LABEL,
            [(str(w), format_duration(dt.timedelta(seconds=w))) for w in windows],
        ),
    ]
    return _modal(
        GRANT_CALLBACK,
        m.GRANT_MODAL_TITLE,
        blocks,
        metadata=_metadata(approval),
        submit=m.GRANT_SUBMIT,
        close=m.CANCEL,
    )


def _edit_initial(value: Any, shown: str | None = None) -> str:
    """What an edit input starts with: the value as the card shows it (42.50), when that reads
    back as the same number, else as it is written."""
    if value is None:
        return ""
    if shown is not None and _reads_as(shown, value):
        return shown
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return to_text(value)


def _reads_as(text: str, value: Any) -> bool:
    try:
        return bool(float(text) == value)
    except ValueError:
        return False


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
    payload = payload_of(approval)
    blocks: list[dict[str, Any]] = [section(m.edit_intro(title_of(approval)))]
    room = VIEW_BLOCKS_MAX - 3  # the intro, the note, the "more" line
    # Slack counts a view's JSON in bytes: many long values (3,000 characters each, three bytes
    # a character in most scripts) would pass 250 kB well before 100 blocks
    budget, used = VIEW_BYTES_MAX - _VIEW_MARGIN, 0
    for i, name in enumerate(names):
        block = _edit_block(payload, approval, name)
        size = _json_bytes(block)
        if len(blocks) - 1 >= room or used + size > budget:
            blocks.append(context(m.edits_omitted(len(names) - i)))
            break
        used += size
        blocks.append(block)
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


def _edit_block(payload: Mapping[str, Any], approval: Approval, name: Any) -> dict[str, Any]:
    """The edit modal's block for one field: its input, or why it cannot be edited here."""
    original = payload.get(name)
    label = one_line(shorten(name, INPUT_LABEL_MAX)) or m.UNNAMED_FIELD
    if is_redacted(original):
        return context(m.edit_not_editable(shorten(name, 200)))
    initial = _edit_initial(original, approval.shown(str(name), original))
    if slack_len(initial) <= INPUT_VALUE_MAX and reveal.findings(initial):
        return context(m.edit_hidden(shorten(name, 200), shorten(initial, 300)))
    if slack_len(initial) > INPUT_VALUE_MAX or clean(initial) != initial:
        return context(m.edit_too_long(shorten(name, 200), len(initial)))
    multiline = isinstance(original, (list, dict)) or (
        isinstance(original, str) and ("\n" in original or len(original) > 80)
    )
    return _text_input(
        edit_block_id(name),
        label,
        hint=m.edit_hint(original),
        initial=initial,
        multiline=multiline,
        optional=original is None or isinstance(original, str),
    )


def _json_bytes(value: Any) -> int:
    """The bytes `value` takes in a view's JSON, as Slack counts them (UTF-8)."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _chunks(text: str, size: int) -> Iterable[tuple[str, int]]:
    """`text` in pieces of at most `size` UTF-16 units, broken at a newline when one is near;
    each with where it ends."""
    pos, n = 0, len(text)
    while pos < n:
        piece = prefix(text[pos : pos + size], size)
        end = pos + len(piece)
        if end < n:
            newline = piece.rfind("\n")
            if newline > size // 2:
                end = pos + newline + 1
        yield text[pos:end], end
        pos = end


_VIEW_MARGIN = 16_000
"""Bytes of a modal's JSON besides the blocks counted one by one (the payload's sections, the
edit form's fields): at most 100 blocks' structure (about 80 bytes each), the intro (3,000
characters), `private_metadata` (3,000), the title and the note input."""


def _payload_json(approval: Approval, shown: Mapping[str, Any]) -> str:
    """`shown` as indented JSON, a number in its field's display format written as that format
    writes it (`"amount": 42.50`, which is still a JSON number)."""
    if not shown:
        return "{}"
    lines = []
    for key, value in shown.items():
        formatted = approval.shown(key, value)
        if formatted is None or not _reads_as(formatted, value):
            formatted = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        body = formatted.replace("\n", "\n  ")
        lines.append(f"  {json.dumps(key, ensure_ascii=False)}: {body}")
    return "{\n" + ",\n".join(lines) + "\n}"


def payload_modal(approval: Approval) -> dict[str, Any]:
    """The Full payload modal: every field as indented JSON, secrets as "[redacted]", split
    across plain-text sections (shown exactly as written: no mrkdwn in user data at all)."""
    shown = {
        (k if isinstance(k, str) else str(k)): (m.REDACTED if is_redacted(v) else v)
        for k, v in payload_of(approval).items()
    }
    try:
        text = _payload_json(approval, shown)
    except (TypeError, ValueError, RecursionError):
        text = repr(shown)
    text = clean(text + _seen_text(approval))
    blocks: list[dict[str, Any]] = [
        section(m.payload_intro(title_of(approval), shorten(approval.action, 300)))
    ]
    room = VIEW_BLOCKS_MAX - 2
    # Slack counts a view's JSON in bytes; the sections' text is nearly all of it. What the rest
    # of the view takes (title, buttons, metadata, the intro, JSON escapes) fits in the margin.
    budget = VIEW_BYTES_MAX - _VIEW_MARGIN
    used = 0
    for chunk, end in _chunks(text, PAYLOAD_CHUNK_MAX):
        size = _json_bytes(chunk)
        if len(blocks) - 1 >= room or used + size > budget:
            blocks.append(context(m.payload_truncated(len(text) - (end - len(chunk)))))
            break
        used += size
        blocks.append(plain_section(chunk if chunk.strip() else chunk.replace(" ", "·") or "·"))
    return _modal(PAYLOAD_CALLBACK, m.PAYLOAD_MODAL_TITLE, blocks, metadata=_metadata(approval))


def _seen_text(approval: Approval) -> str:
    """What the agent saw when it proposed the call, whole, after the arguments (plain text)."""
    seen = approval.seen
    if not seen:
        return ""
    parts = ["", "", "What the agent saw"]
    for r in seen.get("results") or []:
        if isinstance(r, Mapping):
            parts.append(f"- {r.get('tool') or 'a tool'} returned: {r.get('content') or ''}")
    if seen.get("reason"):
        parts.append(f"- the model said: {seen['reason']}")
    return "\n".join(parts)
