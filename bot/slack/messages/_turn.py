"""The texts of an agent turn's card: the gated tool calls one model turn proposed, on one
message, each with its own buttons, and "Approve all"."""

from __future__ import annotations

from collections.abc import Sequence

from ..mrkdwn import code, escape, mention
from ._words import STATUS_EMOJI, join, plural

APPROVE_ALL = "Approve all"
"""The button that approves every pending call of the turn at once."""


def turn_header(count: int) -> str:
    """The card's header (plain text)."""
    return f"🤖 An agent proposes {plural(count, 'action')} in one turn"


def turn_summary(requester: str, workflow: str, count: int) -> str:
    return (
        f"{mention(requester)}'s run of {code(workflow)} proposes {plural(count, 'tool call')} "
        "in one model turn. Each is decided on its own below; a call that runs after another "
        "waits for it."
    )


def turn_fallback(requester: str, titles: Sequence[str]) -> str:
    """The notification text of a new turn card."""
    return (
        f"Approval needed: {len(titles)} agent actions ({escape('; '.join(titles))}), "
        f"requested by {mention(requester)}"
    )


def turn_call_line(position: int, title: str, action: str, tier_line: str) -> str:
    """`*1. Refund 42.50 to cust_9*` `send_refund` · 🟠 high"""
    return f"*{position}. {escape(title)}*  {code(action)} · {tier_line}"


def call_note(note: str) -> str:
    """The words a call's request came with (a LangChain HITL or Agent Inbox request's
    description), under its title, labelled: never its title, never in a confirmation."""
    return f"_The request says_ (its words, not checked against the values): {escape(note)}"


def runs_after(actions: Sequence[str]) -> str:
    """The dependency of a call, under its title."""
    return f"↳ runs after {join([code(a) for a in actions])}"


def waits_for(actions: Sequence[str], approvers: Sequence[str]) -> str:
    """A call approved by its own approvers while a call it runs after is pending."""
    return (
        f"{STATUS_EMOJI['pending']} Approved by {join([mention(u) for u in approvers])}; runs "
        f"once {join([code(a) for a in actions])} is approved"
    )


def decide_again(action: str, changes: str) -> str:
    """A pending call whose dependency was approved with edits."""
    return (
        f"⚠️ {code(action)} was approved with changes ({changes}): approvals of this call given "
        "before count no more. Decide it again against what will run."
    )


def approve_all_hint(count: int) -> str:
    return f"“{APPROVE_ALL}” approves the {plural(count, 'pending call')} as shown, in order."


def run_waits_heading(count: int) -> str:
    """`/agent status THREAD`'s section on a paused run: what it waits for, in its calls."""
    return f"*Waiting for* ({plural(count, 'decision')}):"


def run_waits_line(title: str, action: str, why: str) -> str:
    """`• *Refund 42.50 to cust_9* (`send_refund`): needs 1 more approval from @finance`."""
    return f"• *{escape(title)}* ({code(action)}): {why}"


def held_why(actions: Sequence[str], approvers: Sequence[str]) -> str:
    """What a call approved by its approvers waits for: the calls it runs after."""
    return (
        f"approved by {join([mention(u) for u in approvers])}; runs once "
        f"{join([code(a) for a in actions])} is approved"
    )


def after_why(actions: Sequence[str], waits: str) -> str:
    """What a call that runs after others waits for, besides its own approvers."""
    return f"runs after {join([code(a) for a in actions])}; {waits}"
