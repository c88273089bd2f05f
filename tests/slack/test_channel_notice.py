"""The channel hears how a run ended from one message: the reply in the card's thread, broadcast
to the channel (`reply_broadcast`, which Slack stores once, as a `thread_broadcast` reply listed
in the channel's history too). Where the card is not in the run's channel (it was posted afresh
in the default channel while the bot was out of the run's), the channel gets a message of its
own that links to the card; with `SIGNOFF_NOTIFY_CHANNEL=false`, the thread alone hears it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Channel, Message
from bot.slack import messages
from bot.slack.notify import SlackSink
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"
PRIVATE = "C0PRIVATE"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


def sink(bot: Scenario) -> SlackSink:
    assert isinstance(bot.signoff.sink, SlackSink)
    return bot.signoff.sink


def outcome(thread_id: str, customer: str) -> str:
    return messages.run_completed("refund", thread_id, f"refunded 42.50 to {customer}")


def shown_in_channel(channel: Channel) -> list[Message]:
    return [m for m in channel.messages.values() if m.in_channel]


def thread(channel: Channel, card_ts: str) -> list[str]:
    return [channel.messages[ts].text for ts in channel.messages[card_ts].replies]


async def test_the_outcome_is_the_card_s_thread_reply_broadcast_to_the_channel(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-broadcast")
    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()

    channel = bot.slack.workspace.channels[CHANNEL]
    done = outcome(approval.thread_id, "C-broadcast")
    assert thread(channel, card.ts) == [messages.run_approved("Refund 42.50 to C-broadcast",
                                                              [ALICE]), done]  # fmt: skip
    (notice,) = [m for m in shown_in_channel(channel) if m.text == done]
    assert (notice.subtype, notice.thread_ts) == ("thread_broadcast", card.ts)
    # one post for it, not a reply and a second channel message
    posts = [c for c in bot.slack.calls_to("chat.postMessage") if c.params.get("text") == done]
    assert [(p.params.get("reply_broadcast"), p.params.get("thread_ts")) for p in posts] == [
        (True, card.ts)
    ]


async def test_without_channel_notices_the_outcome_stays_in_the_thread(bot: Scenario) -> None:
    sink(bot).notify_channel = False  # SIGNOFF_NOTIFY_CHANNEL=false
    approval, card = await bot.refund("C-quiet")
    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()

    channel = bot.slack.workspace.channels[CHANNEL]
    done = outcome(approval.thread_id, "C-quiet")
    assert thread(channel, card.ts)[-1] == done
    assert done not in [m.text for m in shown_in_channel(channel)]


async def test_a_card_posted_elsewhere_is_linked_from_the_run_s_channel(bot: Scenario) -> None:
    """The bot was taken out of the run's private channel: the decided card was posted afresh
    in the default channel. Invited back before the run ends, the run's channel gets the
    outcome with a link to the card; the card's thread gets it as a plain reply."""
    workspace = bot.slack.workspace
    private = workspace.add_channel(PRIVATE, "refunds-private", private=True)
    report = await bot.signoff.start(
        "refund",
        {"customer_id": "C-moved", "order_id": "o-1", "amount": 42.5, "reason": "damaged"},
        requester="U0CAROL",
        channel=PRIVATE,
    )
    await bot.settle()
    (approval_id,) = report.approvals
    assert (await bot.signoff.get(approval_id)).channel == PRIVATE

    private.is_member = False  # /remove @signoff
    await bot.signoff.vote(approval_id, ALICE, True)
    await bot.signoff.run_jobs(("event",))  # the decision: the card is posted afresh
    moved = await bot.signoff.get(approval_id)
    assert moved.channel == CHANNEL and moved.message_ts is not None
    private.is_member = True  # /invite @signoff
    await bot.settle()  # the run resumes and ends

    done = outcome(report.thread_id, "C-moved")
    default = workspace.channels[CHANNEL]
    assert thread(default, moved.message_ts)[-1] == done
    assert done not in [m.text for m in shown_in_channel(default)]  # not broadcast there
    (notice,) = [m for m in private.messages.values() if m.text.startswith(done)]
    assert notice.thread_ts is None
    link = bot.slack.calls_to("chat.getPermalink")[-1].response["permalink"]
    assert notice.text == f"{done}\n{messages.card_link(link)}"
    assert f"archives/{CHANNEL}/p{moved.message_ts.replace('.', '')}" in link
