"""Block Kit primitives the renderers (`cards`, `modals`, `replies`, `status`) share: text
objects and blocks fitted to Slack's limits, and an approval's values as mrkdwn. Private to
`bot.slack`.

Every text object is built by `plain()` or `mrkdwn_text()`, which fit it to the limit of the
place it goes; block counts are capped by the builders (`message()` keeps at most 50 blocks).
Messages are `{"text": fallback, "blocks": [...]}`, ready for `chat.postMessage(channel=...,
**message)`, `chat.update` or `respond()`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.approvals.models import Approval

from . import messages as m
from .limits import (
    BUTTON_VALUE_MAX,
    CARD_FIELDS_MAX,
    CARD_KEY_MAX,
    CARD_VALUE_MAX,
    CONTEXT_ELEMENTS_MAX,
    CONTEXT_TEXT_MAX,
    FIELD_TEXT_MAX,
    FIELDS_MAX,
    HEADER_TEXT_MAX,
    MESSAGE_BLOCKS_MAX,
    MESSAGE_BLOCKS_TEXT_MAX,
    SECTION_TEXT_MAX,
    TEXT_MAX,
)
from .mrkdwn import clean, cut_mrkdwn, escape_fit, escape_fit_cut, fit, one_line, shorten, slack_len
from .payloads import ActionValue

# ---------------------------------------------------------------------------------------------
# Text objects and blocks
# ---------------------------------------------------------------------------------------------


def plain(
    text: str, limit: int, *, emoji: bool = False, single_line: bool = True
) -> dict[str, Any]:
    text = one_line(text) if single_line else clean(text)
    text = fit(text, limit)
    if not text.strip():
        text = "-"
    return {"type": "plain_text", "text": text, "emoji": emoji}


def mrkdwn_text(text: str, limit: int) -> dict[str, Any]:
    text = cut_mrkdwn(text, limit)
    if not text.strip():
        text = "-"
    # verbatim: no auto-linking of URLs, channel names or bare @mentions in the text.
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": plain(text, HEADER_TEXT_MAX)}


def section(text: str, limit: int = SECTION_TEXT_MAX) -> dict[str, Any]:
    return {"type": "section", "text": mrkdwn_text(text, min(limit, SECTION_TEXT_MAX))}


def plain_section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": plain(text, SECTION_TEXT_MAX, single_line=False)}


def field_sections(fields: Sequence[str]) -> list[dict[str, Any]]:
    """Sections of at most FIELDS_MAX mrkdwn fields each."""
    return [
        {
            "type": "section",
            "fields": [mrkdwn_text(f, FIELD_TEXT_MAX) for f in fields[i : i + FIELDS_MAX]],
        }
        for i in range(0, len(fields), FIELDS_MAX)
    ]


def field(label: str, value: str) -> str:
    return f"*{label}*\n{value}"


def context(*texts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [mrkdwn_text(t, CONTEXT_TEXT_MAX) for t in texts[:CONTEXT_ELEMENTS_MAX]],
    }


def divider() -> dict[str, Any]:
    return {"type": "divider"}


def message(text: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    fallback = cut_mrkdwn(text, TEXT_MAX)
    return {
        "text": fallback if fallback.strip() else "signoff",
        "blocks": fit_text(blocks[:MESSAGE_BLOCKS_MAX], MESSAGE_BLOCKS_TEXT_MAX),
    }


def _text_objects(node: Any) -> list[dict[str, Any]]:
    """Every text object in `node` (blocks, elements, options), outermost first."""
    if isinstance(node, list):
        return [o for item in node for o in _text_objects(item)]
    if not isinstance(node, dict):
        return []
    kind, text = node.get("type"), node.get("text")
    own = [node] if kind in ("plain_text", "mrkdwn") and isinstance(text, str) else []
    return own + [o for value in node.values() for o in _text_objects(value)]


def text_length(node: Any) -> int:
    """The characters of every text object in `node`, as Slack counts them toward
    `MESSAGE_BLOCKS_TEXT_MAX`."""
    return sum(slack_len(o["text"]) for o in _text_objects(node))


_KEPT = 40
"""Characters a text keeps at least when `fit_text` shortens it."""


def fit_text(blocks: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """`blocks`, their text together within `limit` (past it Slack refuses the whole message,
    `msg_blocks_too_long`): the longest texts are shortened first, each to no less than
    `_KEPT` characters and an ellipsis, so every block still says what it is."""
    over = text_length(blocks) - limit
    if over <= 0:
        return blocks
    blocks = copy.deepcopy(blocks)
    found = _text_objects(blocks)  # the longest first; of equal ones, the later (the first
    # blocks say what the message is)
    order = sorted(range(len(found)), key=lambda i: (-slack_len(found[i]["text"]), -i))
    for obj in (found[i] for i in order):
        have = slack_len(obj["text"])
        if over <= 0 or have <= _KEPT:
            break
        obj["text"] = cut_mrkdwn(obj["text"], max(have - over, _KEPT))
        over -= have - slack_len(obj["text"])
    return blocks


def reply_text(text: str) -> str:
    """A message text (thread reply, reminder): fitted to TEXT_MAX."""
    return cut_mrkdwn(text, TEXT_MAX)


# ---------------------------------------------------------------------------------------------
# The approval's values
# ---------------------------------------------------------------------------------------------


def is_redacted(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("redacted"), str)


def to_text(value: Any) -> str:
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
        return shorten(repr(value), 10_000)


def value_text(value: Any, limit: int, shown: str | None = None) -> tuple[str, bool]:
    """A payload value as mrkdwn within `limit`, and whether it was shortened; `shown` is it in
    its field's display format (`Approval.shown`), when it has one."""
    if shown is not None:
        return escape_fit_cut(shown, limit)
    if is_redacted(value):
        return f"_{m.REDACTED}_", False
    if value is None:
        return f"_{m.NULL_VALUE}_", False
    if value == "":
        return f"_{m.EMPTY_VALUE}_", False
    return escape_fit_cut(to_text(value), limit)


def key_text(key: Any) -> str:
    text = one_line(key if isinstance(key, str) else str(key))
    if not text:
        return f"_{m.UNNAMED_FIELD}_"
    return f"*{escape_fit(text, CARD_KEY_MAX)}*"


def payload_of(approval: Approval) -> dict[str, Any]:
    """The values that run if it is approved now: the proposal with the edits applied."""
    payload = approval.payload
    if isinstance(payload, Mapping):
        return approval.current
    return {"value": payload}


def proposed_of(approval: Approval) -> dict[str, Any]:
    """The values as they were proposed, before any edit."""
    payload = approval.payload
    if isinstance(payload, Mapping):
        return dict(payload)
    return {"value": payload}


def payload_sections(approval: Approval) -> list[dict[str, Any]]:
    """The payload as section fields, and a note when fields were left out or shortened."""
    items = list(payload_of(approval).items())
    if not items:
        return []
    shown = items[:CARD_FIELDS_MAX]
    shortened = False
    fields: list[str] = []
    for key, value in shown:
        label = key_text(key)
        room = min(CARD_VALUE_MAX, FIELD_TEXT_MAX - slack_len(label) - 1)
        text, cut = value_text(value, room, approval.shown(str(key), value))
        shortened = shortened or cut
        fields.append(f"{label}\n{text}")
    blocks = field_sections(fields)
    if len(items) > len(shown):
        blocks.append(context(m.fields_omitted(len(shown), len(items))))
    elif shortened:
        blocks.append(context(m.values_shortened()))
    return blocks


def title_of(approval: Approval) -> str:
    title = one_line(shorten(approval.title or "", 400))
    return title or one_line(shorten(approval.action, 400)) or "Approval"


# ---------------------------------------------------------------------------------------------
# What every renderer reads off an approval
# ---------------------------------------------------------------------------------------------


def action_value(approval: Approval) -> str:
    value = ActionValue(
        approval.id, approval.thread_id, approval.interrupt_id, approval.revision
    ).encode()
    if slack_len(value) > BUTTON_VALUE_MAX:
        value = ActionValue(approval.id, "", None, approval.revision).encode()
    if slack_len(value) > BUTTON_VALUE_MAX:
        raise ValueError(
            f"approval id {approval.id[:40]!r}… is too long for a Slack button value "
            f"({BUTTON_VALUE_MAX} characters); signoff's ids are 26 characters"
        )
    return value


def decision_of(approval: Approval) -> Mapping[str, Any]:
    return approval.decision if isinstance(approval.decision, Mapping) else {}


def deciders(approval: Approval) -> list[str]:
    return [shorten(b, 200) for b in approval.decided_by[:20] if isinstance(b, str)]


def stood_in(approval: Approval) -> dict[str, str]:
    """Delegate -> the away approver they decided for, from the decision ("Bob for Alice")."""
    found = decision_of(approval).get("on_behalf")
    if not isinstance(found, Mapping):
        return {}
    return {shorten(str(k), 200): shorten(str(v), 200) for k, v in list(found.items())[:20]}


def note_of(approval: Approval) -> str:
    note = decision_of(approval).get("note") or approval.reason or ""
    return note if isinstance(note, str) else str(note)


SEEN_RESULTS_SHOWN = 3
"""Tool results a card shows of what the agent saw (the latest); the payload view shows all."""


def seen_blocks(approval: Approval) -> list[dict[str, Any]]:
    """The card's "What the agent saw" line: the tool results the model had just read and its
    words beside the call, shortened; none for a request that is not an agent's tool call."""
    seen = approval.seen
    if not seen:
        return []
    results = [
        (shorten(str(r.get("tool") or ""), 60), one_line(shorten(str(r.get("content") or ""), 240)))
        for r in (seen.get("results") or [])[-SEEN_RESULTS_SHOWN:]
        if isinstance(r, Mapping)
    ]
    reason = one_line(shorten(str(seen.get("reason") or ""), 400))
    if not results and not reason:
        return []
    return [context(m.agent_saw(reason, results))]
