"""Nothing from Slack before the ack: a click or a command is answered within Slack's 3 seconds
however slow Slack's own Web API is, because nothing it waits on before the ack is a Slack call
of unbounded length.

The stand-in's latency injection makes the methods a listener could call before its ack
(`usergroups.list`, `usergroups.users.list`, `chat.getPermalink`) take longer than Slack's
deadline. The stand-in reports an answer that came after the deadline as `late` (Slack shows
the person an error): the tests assert on that report, not on a clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox import limits
from bot.sandbox.processes import CHANNEL
from bot.slack.app import SlackGroups
from bot.slack.notify import SlackSink
from bot.slack.payloads import APPROVE, REJECT
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"
SLOW = limits.ACK_DEADLINE + 0.5
"""Seconds Slack takes to answer the slowed methods: past the ack deadline."""
GROUP_METHODS = ("usergroups.list", "usergroups.users.list")


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


def slack_groups(bot: Scenario) -> SlackGroups:
    sink = bot.signoff.sink
    assert isinstance(sink, SlackSink) and isinstance(sink.group_ids, SlackGroups)
    return sink.group_ids


def forget_groups(bot: Scenario) -> None:
    """As a bot that has not asked Slack about its groups yet (just started, say)."""
    groups = slack_groups(bot)
    groups._members.clear()
    groups._ids = None


def slow_groups(bot: Scenario) -> None:
    for method in GROUP_METHODS:
        bot.slack.delay(method, SLOW)


async def test_a_click_whose_groups_slack_is_slow_to_give_is_answered_in_time_and_records_nothing(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-slow-groups")
    forget_groups(bot)
    slow_groups(bot)
    asked = len(bot.slack.calls_to("usergroups.users.list"))

    answer = await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)

    assert answer.status == 200 and not answer.late
    [told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE))  # after the ack
    assert "Slack is slow to say who is in @approvers, so nothing was recorded" in told.text
    still = await bot.signoff.get(approval.id)
    assert still.status == "pending" and still.votes == ()

    # the lookup went on after the ack and filled the cache: the next click counts, in time
    await bot.slack.wait_for(
        lambda s: len(s.calls_to("usergroups.users.list")) > asked or None, timeout=30
    )
    again = await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)
    assert again.status == 200 and not again.late
    decided = await bot.signoff.get(approval.id)
    assert decided.status == "approved" and [v.user_id for v in decided.votes] == [ALICE]


async def test_reject_with_slow_groups_answers_in_time_and_opens_no_modal_on_a_guess(
    bot: Scenario,
) -> None:
    _, card = await bot.refund("C-slow-reject")
    forget_groups(bot)
    slow_groups(bot)

    answer = await bot.slack.click("alice", CHANNEL, card.ts, REJECT)

    assert answer.status == 200 and not answer.late
    assert not bot.slack.workspace.views.get(ALICE)
    [told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE))  # after the ack
    assert "nothing was recorded" in told.text


async def test_groups_kept_fresh_in_the_background_let_a_click_count_while_slack_is_slow(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-refreshed")
    forget_groups(bot)
    groups = slack_groups(bot)
    asked = len(bot.slack.calls_to("usergroups.users.list"))  # opening it asked (who is away)
    refresher = asyncio.ensure_future(
        groups.refresh_forever(bot.signoff.policy.external_groups, every=0.05)
    )
    try:
        # the policy's Slack group is asked for without anyone clicking
        await bot.slack.wait_for(lambda s: len(s.calls_to("usergroups.users.list")) > asked or None)
        slow_groups(bot)

        answer = await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)
    finally:
        refresher.cancel()

    assert answer.status == 200 and not answer.late
    decided = await bot.signoff.get(approval.id)
    assert decided.status == "approved" and [v.user_id for v in decided.votes] == [ALICE]


async def test_agent_status_acks_before_it_asks_slack_for_groups_or_card_links(
    bot: Scenario,
) -> None:
    await bot.refund("C-status-slow")
    forget_groups(bot)
    bot.slack.delay("chat.getPermalink", SLOW)
    slow_groups(bot)

    answer = await bot.slack.command("alice", "approvals", "status")

    assert answer.status == 200 and not answer.late
    # the list follows, once Slack has answered what it could
    [shown] = await bot.slack.wait_for(
        lambda s: s.workspace.ephemerals.get(ALICE) or None, timeout=30
    )
    assert shown.source == "response_url"
    assert "Refund 42.50 to C-status-slow" in text_of(shown.blocks)
