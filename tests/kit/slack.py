"""Approvals to render, built so new model fields (defaulting to None) do not break the tests."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from collections.abc import Mapping as _Mapping
from typing import Any

from bot.approvals.models import Approval, Vote

NOW = 1_700_000_000.0
"""A fixed clock: 2023-11-14 22:13:20 UTC."""

_DEFAULTS: dict[str, Any] = {
    "id": "apr_TESTabcdefghijklmnop12",
    "thread_id": "refund-0123456789ab",
    "interrupt_id": "int-1",
    "workflow": "refund",
    "action": "send_refund",
    "title": "Refund 12.00 to C1",
    "payload": {"customer_id": "C1", "amount": 12.0, "reason": "damaged"},
    "fingerprint": "f" * 64,
    "dedupe_key": None,
    "risk_tier": "high",
    "requester": "U_CAROL",
    "status": "pending",
    "required": 1,
    "approvers": ("@finance", "U_DAVE"),
    "editable": ("amount", "reason"),
    "escalated": False,
    "decision": None,
    "reason": None,
    "channel": "C_REFUNDS",
    "message_ts": None,
    "created_at": NOW - 3 * 3600,
    "updated_at": NOW - 3 * 3600,
    "decided_at": None,
    "remind_at": None,
    "escalate_at": None,
    "expire_at": NOW + 2 * 86400 + 3 * 3600 + 59,
    "version": 0,
    "votes": (),
}


def make_approval(**overrides: Any) -> Approval:
    values = {}
    for f in dataclasses.fields(Approval):
        if f.name in overrides:
            values[f.name] = overrides.pop(f.name)
        elif f.name in _DEFAULTS:
            values[f.name] = _DEFAULTS[f.name]
        elif f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        else:
            values[f.name] = None
    assert not overrides, f"Approval has no fields {sorted(overrides)}"
    return Approval(**values)


def vote(
    user: str, decision: str = "approve", note: str = "", edits: dict[str, Any] | None = None
) -> Vote:
    return Vote(user, decision, note, edits or {}, NOW - 60)  # type: ignore[arg-type]


def decision(
    status: str,
    by: list[str],
    *,
    note: str = "",
    edits: dict[str, Any] | None = None,
    approved: bool | None = None,
) -> dict[str, Any]:
    return {
        "approved": status == "approved" if approved is None else approved,
        "status": status,
        "approval_id": _DEFAULTS["id"],
        "action": "send_refund",
        "fingerprint": "f" * 64,
        "edits": edits or {},
        "by": by,
        "at": "2023-11-14T22:13:20+00:00",
        "note": note,
        "idempotency_key": "k",
    }


# ---- reading what we rendered ------------------------------------------------------------------

TOKEN = re.compile(r"<[^<>]*>")
ESCAPE_TOKEN = re.compile(r"<!date\^00000000\^\{_\}\|(?:[*_~`＊＿｀]+|:)>")
DATE_TOKEN = re.compile(r"<!date\^-?\d+\^\{date_short_pretty\} at \{time\}\|[0-9: -]+UTC>")


def mrkdwn_texts(payload: Any) -> Iterator[str]:
    """Every string Slack reads as mrkdwn: mrkdwn text objects and a message's top-level text."""
    if isinstance(payload, _Mapping):
        if payload.get("type") == "mrkdwn" and isinstance(payload.get("text"), str):
            yield payload["text"]
        if "blocks" in payload and isinstance(payload.get("text"), str):
            yield payload["text"]
        for value in payload.values():
            if isinstance(value, (dict, list)):
                yield from mrkdwn_texts(value)
    elif isinstance(payload, list):
        for item in payload:
            yield from mrkdwn_texts(item)


def live_tokens(
    text: str,
    *,
    users: set[str] = frozenset(),
    links: set[str] = frozenset(),
    channels: set[str] = frozenset(),
) -> list[str]:
    """The `<...>` tokens of `text` that are not ours: not an inert escape token, not a date,
    not a mention of one of `users`, not a link to one of `links`. Also reports a stray `<`/`>`."""
    tokens = TOKEN.findall(text)
    bad = []
    for tok in tokens:
        if ESCAPE_TOKEN.fullmatch(tok) or DATE_TOKEN.fullmatch(tok):
            continue
        if tok[1:2] == "@" and tok[2:-1] in users:
            continue
        if tok[1:2] == "#" and tok[2:-1] in channels:
            continue
        if tok[1:].split("|", 1)[0] in links:
            continue
        bad.append(tok)
    if text.count("<") != len(tokens) or text.count(">") != len(tokens):
        bad.append(f"stray angle bracket in {text[:200]!r}")
    return bad
