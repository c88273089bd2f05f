"""Approvers who are away, through the front door: Slack's do-not-disturb and statuses (told to
the bot by the stand-in's events), `/agent away ... delegate @person` and `/agent back` typed as
slash commands, and the delegate's click on the card."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack.payloads import APPROVE, AWAY_BACK
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario
from tests.slack.test_card_links import home_of

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
LATER = "2099-01-01"
LATER_TS = 4070908800.0  # 2099-01-01T00:00:00Z

ESCALATING = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
escalate_after = "1d"
escalate_to = ["U0DAVE"]
expire_after = "3d"
"""
"""Alice and Bob (@approvers) decide; after a day, Dave too."""


def delegating(tier: str = "high", delegation: str = "true") -> str:
    return f"""
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "{tier}"
approvers = ["U0ALICE"]
delegation = {delegation}
"""


async def refund(bot: Scenario, customer: str) -> tuple[Approval, Message]:
    """Carol asks for a refund of her own order (`Scenario.refund` names one order for all, and
    a second request for it would be refused as a conflict); the approval and its card."""
    report = await bot.signoff.start(
        "refund",
        {"customer_id": customer, "order_id": f"o-{customer}", "amount": 42.5, "reason": "late"},
        requester=CAROL,
        channel=CHANNEL,
    )
    (approval_id,) = report.approvals
    await bot.settle()
    approval = await bot.signoff.get(approval_id)
    return approval, bot.card(approval)


async def audit(bot: Scenario, kind: str) -> list[dict[str, Any]]:
    await bot.signoff.link_audit()
    async with bot.signoff.db.read() as conn:
        rows = (
            await conn.execute(
                sa.select(t.audit_events)
                .where(t.audit_events.c.kind == kind)
                .order_by(t.audit_events.c.seq)
            )
        ).mappings()
        return [{**r, "data": json.loads(r["data"])} for r in rows]


async def said_to(bot: Scenario, user: str, n: int = 1) -> str:
    """The `n`th ephemeral `user` has been shown (the ack of a command, a refusal)."""
    shown = await bot.slack.wait_for(
        lambda s: len(s.workspace.ephemerals.get(user, [])) >= n and s.workspace.ephemerals[user]
    )
    e = shown[n - 1]
    return e.text + "\n" + text_of(e.blocks)


async def until_away(bot: Scenario, *users: str) -> None:
    """Wait until the bot has heard (by an event) that `users` are away."""
    for _ in range(100):
        if set(await bot.signoff.away.of(users)) == set(users):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the bot never heard that {users} are away")


async def test_an_approval_whose_approvers_are_all_on_dnd_escalates_at_once(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path, ESCALATING) as bot:
        present, _ = await refund(bot, "C-1")
        assert not present.escalated and present.away == ()  # both were there
        assert len(bot.slack.calls_to("dnd.info")) == 1  # Alice is there: Bob is not asked

        until = int(time.time()) + 3600
        assert (await bot.slack.set_dnd("alice", until)) is not None
        assert (await bot.slack.set_dnd("bob", until)) is not None
        await until_away(bot, ALICE, BOB)  # Alice's by the event; Bob's asked of Slack
        asked = len(bot.slack.calls_to("dnd.info"))

        a, card = await refund(bot, "C-2")
        assert a.escalated and DAVE in a.approvers  # not after a day: at once
        assert [x["user"] for x in a.away] == [ALICE, BOB]
        shown = text_of(card.blocks)
        assert "Everyone who could decide this is away" in shown
        assert "<@U0ALICE> (on do-not-disturb until <!date^" + str(until) in shown
        assert "escalated at once" in shown
        assert len(bot.slack.calls_to("dnd.info")) == asked  # the events said it: no more calls
        [entry] = [e for e in await audit(bot, "escalated") if e["approval_id"] == a.id]
        assert entry["data"]["early"] is True and entry["data"]["to"] == [DAVE]
        replies = bot.slack.workspace.channels[CHANNEL].messages
        assert any("Escalated at once" in m.text for m in replies.values() if m.is_reply)

        # the one asked before they went away was looked at again when Slack said so
        for _ in range(100):
            if (await bot.signoff.get(present.id)).escalated:
                break
            await asyncio.sleep(0.02)
        assert (await bot.signoff.get(present.id)).escalated
        assert (await bot.signoff.sweep())["escalated"] == 0

        await bot.slack.click("dave", CHANNEL, card.ts, APPROVE)
        await bot.settle()
        assert (await bot.signoff.get(a.id)).status == "approved"


async def test_a_vacation_status_is_seen_through_user_change(tmp_path: Path) -> None:
    policy = ESCALATING.replace('approvers = ["@approvers"]', 'approvers = ["U0ALICE"]')
    policy += '\n[away]\nstatuses = [":palm_tree:", "vacation"]\n'
    async with running_scenario(tmp_path, policy) as bot:
        first, _ = await refund(bot, "C-1")
        assert not first.escalated
        looked_up = len(bot.slack.calls_to("users.info"))
        assert looked_up == 1

        answers = await bot.slack.set_status("alice", ":palm_tree:", "Back on Monday")
        assert [a.ok for a in answers] == [True, True]  # user_change, user_status_changed
        await until_away(bot, ALICE)

        a, card = await refund(bot, "C-2")
        assert a.escalated and a.away[0]["why"] == "status"
        shown = text_of(card.blocks)
        assert "<@U0ALICE> (away by their status, :palm_tree: “Back on Monday”)" in shown, shown
        assert len(bot.slack.calls_to("users.info")) == looked_up

        await bot.slack.set_status("alice")  # cleared: she is back
        for _ in range(100):
            if not await bot.signoff.away.of([ALICE]):
                break
            await asyncio.sleep(0.02)
        third, _ = await refund(bot, "C-3")
        assert not third.escalated


async def test_a_delegate_decides_for_an_away_approver_and_both_names_are_recorded(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path, delegating()) as bot:
        assert (
            await bot.slack.command("alice", CHANNEL, f"away until {LATER} delegate <@U0DAVE|dave>")
        ).ok
        said = await said_to(bot, ALICE)
        assert "You are away until <!date^4070908800^" in said and "<@U0DAVE> may decide" in said
        [entry] = await audit(bot, "away_set")
        assert entry["actor"] == ALICE
        assert entry["data"] == {"until": LATER_TS, "delegate": DAVE}

        a, card = await refund(bot, "C-1")
        assert "Everyone who could decide this is away: <@U0ALICE> (away until" in text_of(
            card.blocks
        )
        assert not a.escalated  # the policy names nobody to escalate to
        [all_away] = await audit(bot, "all_away")
        assert all_away["approval_id"] == a.id and all_away["data"]["to"] == []
        replies = bot.slack.workspace.channels[CHANNEL].messages.values()
        assert any("names nobody to escalate to" in m.text for m in replies if m.is_reply)

        await bot.slack.click("dave", CHANNEL, card.ts, APPROVE)
        await bot.settle()
        decided = await bot.signoff.get(a.id)
        assert decided.status == "approved"
        assert [(v.user_id, v.for_user) for v in decided.votes] == [(DAVE, ALICE)]
        assert decided.decision is not None
        assert decided.decision["by"] == [DAVE]
        assert decided.decision["on_behalf"] == {DAVE: ALICE}
        [vote] = [e for e in await audit(bot, "vote") if e["approval_id"] == a.id]
        assert vote["actor"] == DAVE and vote["data"]["for"] == ALICE
        [approved] = [e for e in await audit(bot, "approved") if e["approval_id"] == a.id]
        assert approved["data"]["on_behalf"] == {DAVE: ALICE}
        assert "*Approved* by <@U0DAVE> for <@U0ALICE>" in text_of(bot.card(decided).blocks)


async def test_a_delegate_who_asked_for_it_is_refused(tmp_path: Path) -> None:
    async with running_scenario(tmp_path, delegating()) as bot:
        assert (await bot.slack.command("alice", CHANNEL, "away delegate <@U0CAROL>")).ok
        a, card = await refund(bot, "C-1")  # Carol asks

        await bot.slack.click("carol", CHANNEL, card.ts, APPROVE)
        refusal = await said_to(bot, CAROL)
        assert "doesn't let you approve your own request" in refusal
        assert (await bot.signoff.get(a.id)).status == "pending"
        [refused] = [e for e in await audit(bot, "vote_refused") if e["approval_id"] == a.id]
        assert refused["actor"] == CAROL


@pytest.mark.parametrize("delegation", ["true", "false"])
async def test_critical_refuses_delegation_without_the_explicit_key(
    tmp_path: Path, delegation: str
) -> None:
    async with running_scenario(tmp_path, delegating("critical", delegation)) as bot:
        assert (await bot.slack.command("alice", CHANNEL, "away delegate <@U0DAVE>")).ok
        a, card = await refund(bot, "C-1")
        await bot.slack.click("dave", CHANNEL, card.ts, APPROVE)
        refusal = await said_to(bot, DAVE)
        assert refusal.startswith("🚫 You stand in for <@U0ALICE> while they are away, but ")
        critical = "is critical, and the policy lets a delegate decide it only where it says so"
        assert (critical in refusal) == (delegation == "true"), refusal
        assert (await bot.signoff.get(a.id)).status == "pending"
        [refused] = [e for e in await audit(bot, "vote_refused") if e["approval_id"] == a.id]
        assert refused["actor"] == DAVE
        assert "delegation = " in json.dumps(refused["data"])


async def test_critical_may_be_delegated_where_the_policy_names_it(tmp_path: Path) -> None:
    async with running_scenario(tmp_path, delegating("critical", '"critical"')) as bot:
        assert (await bot.slack.command("alice", CHANNEL, "away delegate <@U0DAVE>")).ok
        a, card = await refund(bot, "C-1")
        await bot.slack.click("dave", CHANNEL, card.ts, APPROVE)
        await bot.settle()
        assert (await bot.signoff.get(a.id)).status == "approved"


async def test_agent_back_ends_it_and_so_does_home_s_button(tmp_path: Path) -> None:
    async with running_scenario(tmp_path, delegating()) as bot:
        assert (await bot.slack.command("alice", CHANNEL, "away delegate <@U0DAVE>")).ok
        home = await home_of(bot, ALICE)
        assert "*You are away*; <@U0DAVE> decides for you" in home and "I'm back" in home

        assert (await bot.slack.command("alice", CHANNEL, "back")).ok
        assert "Welcome back" in await said_to(bot, ALICE, 2)
        assert [e["actor"] for e in await audit(bot, "away_ended")] == [ALICE]
        a, card = await refund(bot, "C-1")
        assert a.away == ()  # she is there again
        await bot.slack.click("dave", CHANNEL, card.ts, APPROVE)
        assert "not" in (await said_to(bot, DAVE)).lower()  # no longer her delegate
        assert (await bot.signoff.get(a.id)).status == "pending"

        assert (await bot.slack.command("alice", CHANNEL, "away until 3d")).ok
        await home_of(bot, ALICE)
        assert (await bot.slack.click_home("alice", AWAY_BACK)).ok
        await bot.slack.wait_for(
            lambda s: (
                (v := s.workspace.home.get(ALICE)) is not None
                and "You are away" not in text_of(v.spec["blocks"])
            )
        )
        assert await bot.signoff.away.said(ALICE) is None
        assert len(await audit(bot, "away_ended")) == 2


async def test_away_says_what_was_wrong(tmp_path: Path) -> None:
    async with running_scenario(tmp_path, delegating()) as bot:
        await bot.slack.command("alice", CHANNEL, "away until 2001-01-01")
        assert "is not in the future" in await said_to(bot, ALICE, 1)
        await bot.slack.command("alice", CHANNEL, "away delegate <@U0ALICE>")
        assert "cannot be your own delegate" in await said_to(bot, ALICE, 2)
        await bot.slack.command("alice", CHANNEL, "away until someday")
        assert "is not a date" in await said_to(bot, ALICE, 3)
        await bot.slack.command("alice", CHANNEL, "back")
        assert "you had not said you were away" in await said_to(bot, ALICE, 4)
        assert await audit(bot, "away_set") == []


async def test_a_delegate_named_as_slack_sends_an_unescaped_command_is_looked_up(
    tmp_path: Path,
) -> None:
    # The app's /agent does not escape (manifest: should_escape false): Slack sends "@dave".
    async with running_scenario(tmp_path, delegating()) as bot:
        assert (await bot.slack.command("alice", CHANNEL, "away delegate @nobody")).ok
        assert "Nobody in this workspace is called @nobody" in await said_to(bot, ALICE)
        assert await bot.signoff.away.said(ALICE) is None

        assert (await bot.slack.command("alice", CHANNEL, "away delegate @Dave")).ok
        assert "<@U0DAVE> may decide for you" in await said_to(bot, ALICE, 2)
        said = await bot.signoff.away.said(ALICE)
        assert said is not None and said.delegate == DAVE
        assert len(bot.slack.calls_to("users.list")) == 2  # one page each, 4 people
