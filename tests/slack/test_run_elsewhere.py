"""`/agent run` typed where signoff cannot post (a DM between two people, a private channel it
was not invited to): the person is told, through the response_url Slack gave the command
(which reaches them wherever they typed), that the run started and where its card went; the
card goes to the default channel, where approvers can act on it; with none, nothing starts and
the person is told how to invite the bot. Before, the card could never be posted and the person
was never told."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.sandbox.slack_api import FakeSlack
from bot.sandbox.workspace import Channel, Ephemeral
from tests.kit.scenario import Scenario, running_scenario

CAROL = "U0CAROL"
RUN = "run refund customer_id=c-{where} order_id=o-1 amount=12 reason=damaged"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


def private_channel_without_the_bot(bot: Scenario) -> str:
    return bot.slack.workspace.add_channel("G0SECRET", "secret", private=True, member=False).id


def dm_between_people(bot: Scenario) -> str:
    dm = Channel("D0CAROLBOB", "carol-bob", is_im=True, is_member=False)
    bot.slack.workspace.channels[dm.id] = dm
    return dm.id


def told(slack: FakeSlack) -> list[Ephemeral]:
    """What Carol was told once her run started."""
    return [e for e in slack.workspace.ephemerals.get(CAROL, []) if "Started" in e.text]


@pytest.mark.parametrize("where", [private_channel_without_the_bot, dm_between_people])
async def test_agent_run_where_signoff_is_not_says_where_the_card_went(
    bot: Scenario, where: Callable[[Scenario], str]
) -> None:
    channel = where(bot)
    answer = await bot.slack.command("carol", channel, RUN.format(where=channel))
    assert answer.status == 200 and not answer.late

    [outcome] = await bot.slack.wait_for(told, timeout=30)
    assert outcome.source == "response_url" and outcome.channel == channel
    assert (
        f"signoff is not in this conversation, so its cards go to <#{CHANNEL}>; invite it "
        "here (`/invite @signoff`) to have them here." in outcome.text
    )

    await bot.settle()
    [approval] = [
        a for a in await bot.signoff.pending() if a.payload.get("customer_id") == f"c-{channel}"
    ]
    assert approval.channel == CHANNEL and approval.message_ts
    assert approval.message_ts in bot.slack.workspace.channels[CHANNEL].messages
    assert not bot.slack.workspace.channels[channel].messages


async def test_agent_run_in_a_channel_signoff_is_in_keeps_the_card_there(bot: Scenario) -> None:
    answer = await bot.slack.command("carol", CHANNEL, RUN.format(where="here"))
    assert answer.status == 200

    [outcome] = await bot.slack.wait_for(told, timeout=30)
    assert "not in this conversation" not in outcome.text
    await bot.settle()
    [approval] = [a for a in await bot.signoff.pending() if a.payload["customer_id"] == "c-here"]
    assert approval.channel == CHANNEL


async def test_agent_run_where_signoff_is_not_and_no_default_channel_is_refused_saying_how(
    tmp_path: Path,
) -> None:
    """With no `SIGNOFF_DEFAULT_CHANNEL`, a card asked for in a DM between people could never
    be posted: nothing is started, and Carol is told so through the response_url (the bot
    cannot post there), with how to invite the bot."""
    async with running_scenario(tmp_path, default_channel=None) as bot:
        channel = dm_between_people(bot)
        answer = await bot.slack.command("carol", channel, RUN.format(where="nowhere"))
        assert answer.status == 200 and not answer.late

        def refused(slack: FakeSlack) -> list[Ephemeral]:
            return [e for e in slack.workspace.ephemerals.get(CAROL, []) if "🚫" in e.text]

        [outcome] = await bot.slack.wait_for(refused, timeout=30)
        assert (outcome.source, outcome.channel) == ("response_url", channel)
        assert "nothing was started. Invite it (`/invite @signoff`)" in outcome.text
        await bot.settle()
        assert await bot.signoff.pending() == []
        async with bot.signoff.db.read() as conn:
            assert await conn.scalar(select(func.count()).select_from(t.runs)) == 0
        assert not bot.slack.calls_to("chat.postMessage")
