"""Who is away: `/agent away` and `/agent back`, the Home tab's line, the card's line when
everyone who could decide is away, and the thread's notice of an early escalation."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..mrkdwn import date, escape, mention
from ._words import approver, join

WHY = {"away": "away", "dnd": "on do-not-disturb", "status": "away by their status"}
"""How each way of knowing reads ("<@U> is on do-not-disturb until ...")."""


def _until(until: float | None) -> str:
    return f" until {date(until)}" if until is not None else ""


def away_set(until: float | None, delegate: str | None) -> str:
    """The answer to `/agent away`."""
    who = (
        f" {mention(delegate)} may decide for you where the policy allows delegation."
        if delegate
        else " Nobody decides for you meanwhile; an approval only you could decide escalates."
    )
    return (
        f"🌴 You are away{_until(until) or ' until you say `/agent back`'}.{who} "
        "`/agent back` (or Home's button) ends it."
    )


def no_such_person(handle: str, *, slack_failed: bool = False) -> str:
    """`/agent away ... delegate @handle` naming nobody Slack knows (or Slack did not say)."""
    if slack_failed:
        return (
            f"⚠️ Slack did not say who {escape(handle)} is, so nothing was changed: try again "
            "in a minute, or pick the person from Slack's list."
        )
    return (
        f"🚫 Nobody in this workspace is called {escape(handle)}, so nothing was changed: pick "
        "the person from Slack's list as you type their name."
    )


def back() -> str:
    return "👋 Welcome back: you are no longer away, and approvals wait on you again."


def back_button_plain() -> str:
    return "I'm back"


def home_away(until: float | None, delegate: str | None) -> str:
    """Home's line while its person is away."""
    by = f"; {mention(delegate)} decides for you where the policy allows it" if delegate else ""
    return f"🌴 *You are away*{_until(until)}{by}."


def away_person(entry: Mapping[str, Any]) -> str:
    """`<@U> (on do-not-disturb until <date>)` from an approval's `away` record."""
    why = WHY.get(str(entry.get("why")), "away")
    until = entry.get("until")
    detail = entry.get("detail")
    said = f", {_status(str(detail))}" if detail else ""
    return f"{mention(str(entry.get('user')))} ({why}{_until(until if isinstance(until, int | float) else None)}{said})"


_EMOJI = re.compile(r"(:[a-z0-9_+'-]{1,100}:)\s*(.*)", re.DOTALL)


def _status(detail: str) -> str:
    """A Slack status: its emoji as Slack shows it (an emoji code is no mention or link), its
    words escaped."""
    found = _EMOJI.fullmatch(detail)
    if found is None:
        return f"“{escape(detail)}”"
    words = f" “{escape(found.group(2))}”" if found.group(2) else ""
    return found.group(1) + words


def card_away(away: Sequence[Mapping[str, Any]], escalated: bool) -> str:
    """The card's line when everyone who could decide was away."""
    then = (
        ", so it was escalated at once."
        if escalated
        else "; the policy names nobody to escalate to (`escalate_to`)."
    )
    return (
        f"🌴 Everyone who could decide this is away: {join([away_person(e) for e in away])}{then}"
    )


def status_away(away: Sequence[Mapping[str, Any]]) -> str:
    """`/agent status`'s line under an approval everyone who could decide was away from."""
    return f"🌴 everyone who could decide it is away: {join([away_person(e) for e in away])}"


def escalation_away(title: str, away: Sequence[Mapping[str, Any]], added: Sequence[str]) -> str:
    """The thread's notice when an approval escalated at once because everyone was away."""
    gone = join([away_person(e) for e in away])
    if not added:
        return (
            f"🌴 Everyone who could decide {escape(title)} is away ({gone}), and the policy "
            "names nobody to escalate to (`escalate_to`): it waits for them."
        )
    return (
        f"🔺 Escalated at once: everyone who could decide {escape(title)} is away ({gone}). "
        f"{join([approver(a) for a in added])} can now decide it."
    )


def decided_for(delegate: str, principal: str) -> str:
    """`<@BOB> for <@ALICE>`: a delegate's decision, with both names."""
    return f"{mention(delegate)} for {mention(principal)}"
