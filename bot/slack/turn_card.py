"""The card of an agent's model turn: the gated tool calls one turn proposed (`approval_gate`),
on one message, each with its own Approve / Reject / Edit / Full payload, and "Approve all"
when every pending call allows it.

Pure, as `cards`: the turn's approvals in, `{"text": fallback, "blocks": [...]}` out. Each call
keeps its own approval (policy applies per call), so its buttons are those of its own card
(`cards`), and what a call shows is its own state: its values, its approvers and quorum, how
it was settled; and, for a call that runs after another of the turn, that dependency, whether
it waits for it, and whether it must be decided again because that one was approved with edits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.approvals.models import Approval

from . import messages as m
from ._blocks import (
    context,
    deciders,
    decision_of,
    field_sections,
    header,
    message,
    note_of,
    payload_sections,
    section,
    seen_blocks,
    stood_in,
    title_of,
    value_text,
)
from .cards import _buttons, _meta_fields
from .limits import BUTTON_TEXT_MAX, BUTTON_VALUE_MAX, MESSAGE_BLOCKS_MAX, SECTION_TEXT_MAX
from .mrkdwn import escape_fit, one_line, shorten, slack_len
from .payloads import APPROVE_TURN, TurnValue

__all__ = ["approve_all_value", "is_turn", "turn_card", "waits_line"]

_CALL_BLOCKS = 4
"""Blocks a call may take: its line, its values (a section, and a note when shortened), its
buttons."""


def is_turn(approvals: Sequence[Approval]) -> bool:
    """Whether these approvals (one turn's) are shown as a turn card: more than one call."""
    return len(approvals) > 1


def _by_call(turn: Sequence[Approval]) -> dict[str, Approval]:
    return {a.turn.call_id: a for a in turn if a.turn is not None}


def _dependencies(a: Approval, turn: Sequence[Approval]) -> list[Approval]:
    calls = _by_call(turn)
    return [calls[c] for c in (a.turn.after if a.turn else ()) if c in calls]


def _changes(a: Approval) -> str:
    """What an approval with edits changed: `amount: 42.50 → 40.00`."""
    edits = decision_of(a).get("edits")
    if not isinstance(edits, Mapping):
        return ""
    proposed = a.payload if isinstance(a.payload, Mapping) else {}
    parts = []
    for key, after in list(edits.items())[:5]:
        name = escape_fit(one_line(str(key)), 40)
        before = proposed.get(key)
        before_text, _ = value_text(before, 60, a.shown(str(key), before))
        after_text, _ = value_text(after, 60, a.shown(str(key), after))
        parts.append(f"{name}: {before_text} → {after_text}")
    return ", ".join(parts)


def _state_line(
    a: Approval, turn: Sequence[Approval], now: float, mentions: Sequence[str] | None
) -> str:
    """Where the call stands: settled (by whom, with the note), waiting for a call it runs
    after, to be decided again, or pending (quorum, approvers, expiry)."""
    if a.status == "expired":
        return m.expired_line(a.decided_at, bool(decision_of(a).get("approved")))
    if a.status == "cancelled":
        return m.cancelled_line(a.decided_at)
    if a.status != "pending":
        status = "denied" if decision_of(a).get("status") == "denied" else a.status
        line = m.decided_line(status, deciders(a), a.decided_at, stood_in(a))
        note = note_of(a)
        return line + ("\n" + m.note_line(shorten(note, 600)) if note else "")
    deps = _dependencies(a, turn)
    approvers = [v.user_id for v in a.votes if v.decision == "approve"]
    waiting = [d.action for d in deps if d.status == "pending"]
    if waiting and len(approvers) >= a.required:
        return m.waits_for(waiting, approvers)
    lines = []
    for d in deps:
        if d.status == "approved" and decision_of(d).get("edits"):
            lines.append(m.decide_again(d.action, _changes(d)))
    expires = None if a.expire_at is None else a.expire_at - now
    lines.append(
        f"{m.quorum(len(approvers), a.required, approvers)} · "
        f"{m.FIELD_APPROVERS}: {_approvers(a, mentions)} · "
        f"{m.FIELD_EXPIRES}: {m.expiry(expires, a.expire_at)}"
    )
    return "\n".join(lines)


def _approvers(a: Approval, mentions: Sequence[str] | None) -> str:
    if mentions:
        return m.join(list(mentions[:20]), "or")
    return m.who([shorten(x, 100) for x in a.approvers[:20]])


def _call_blocks(
    a: Approval,
    position: int,
    turn: Sequence[Approval],
    now: float,
    mentions: Sequence[str] | None,
) -> list[dict[str, Any]]:
    lines = [m.turn_call_line(position, title_of(a), shorten(a.action, 100), m.tier(a.risk_tier))]
    if a.note:
        lines.append(m.call_note(shorten(a.note, 500)))
    deps = _dependencies(a, turn)
    if deps:
        lines.append(m.runs_after([d.action for d in deps]))
    lines.append(_state_line(a, turn, now, mentions))
    blocks = [section("\n".join(lines), SECTION_TEXT_MAX), *payload_sections(a)[:2]]
    if a.status == "pending":
        buttons = _buttons(a)
        buttons["block_id"] = f"signoff.call.{position}"
        blocks.append(buttons)
    return blocks[:_CALL_BLOCKS]


def approve_all_value(turn: Sequence[Approval]) -> str | None:
    """The "Approve all" button's value, or None when the turn offers none: fewer than two
    pending calls, or one that a single click must not approve (a quorum of more than one, a
    critical tier with its own "are you sure?", a call waiting to be decided again), or more
    than a button's value holds."""
    pending = [a for a in turn if a.status == "pending"]
    if len(pending) < 2:
        return None
    for a in pending:
        if a.required > 1 or a.risk_tier == "critical" or a.votes:
            return None
        if any(d.status != "pending" and not decision_of(d).get("approved")
               for d in _dependencies(a, turn)):  # fmt: skip
            return None
    value = TurnValue(pending[0].thread_id, tuple((a.id, a.revision) for a in pending)).encode()
    return value if slack_len(value) <= BUTTON_VALUE_MAX else None


def turn_card(
    turn: Sequence[Approval],
    *,
    now: float,
    mentions: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The card of one agent turn: `turn`, its calls' approvals in the order the model proposed
    them (at least one). `mentions`: by approval id, its approvers as Slack mentions
    (`mentions.approver_mentions`), which notify them; default the entries as written."""
    first = turn[0]
    requester, workflow = shorten(first.requester, 200), shorten(first.workflow, 300)
    blocks: list[dict[str, Any]] = [
        header(m.turn_header(len(turn))),
        section(m.turn_summary(requester, workflow, len(turn))),
        *seen_blocks(first),  # the calls of one turn rest on what it saw
        *field_sections(_meta_fields(first)[1:]),  # each call says its own risk
    ]
    room = MESSAGE_BLOCKS_MAX - len(blocks) - 2  # the Approve all row, the footer
    for i, a in enumerate(turn, start=1):
        call = _call_blocks(a, i, turn, now, (mentions or {}).get(a.id))
        if len(call) > room:
            break  # Slack's limit: the calls past it show on their own payload view
        blocks += call
        room -= len(call)
    value = approve_all_value(turn)
    if value is not None:
        pending = sum(1 for a in turn if a.status == "pending")
        blocks.append(
            {
                "type": "actions",
                "block_id": "signoff.turn",
                "elements": [
                    {
                        "type": "button",
                        "text": {
                            "type": "plain_text",
                            "text": m.APPROVE_ALL[:BUTTON_TEXT_MAX],
                            "emoji": True,
                        },
                        "action_id": APPROVE_TURN,
                        "value": value,
                        "style": "primary",
                    }
                ],
            }
        )
        blocks.append(context(m.approve_all_hint(pending)))
    else:
        blocks.append(
            context(m.card_footer(shorten(first.turn_id or first.id, 300), first.created_at))
        )
    fallback = m.turn_fallback(requester, [title_of(a) for a in turn])
    return message(fallback, blocks)


def waits_line(a: Approval, approvals: Sequence[Approval]) -> str:
    """What pending `a` waits for, in its run's words (`/agent status THREAD`): on whom, and,
    for a call of an agent turn, the calls it runs after. `approvals`: its run's."""
    turn = [o for o in approvals if a.turn_id is not None and o.turn_id == a.turn_id]
    deps = _dependencies(a, turn)
    approvers = [v.user_id for v in a.votes if v.decision == "approve"]
    waiting = [d.action for d in deps if d.status == "pending"]
    waits = m.waits_on(len(approvers), a.required, [shorten(x, 100) for x in a.approvers[:10]])
    if waiting and len(approvers) >= a.required:
        why = m.held_why(waiting, approvers)
    elif deps:
        why = m.after_why([d.action for d in deps], waits)
    else:
        why = waits
    return m.run_waits_line(title_of(a)[:200], shorten(a.action, 100), why)
