"""A message is posted once even when Slack's answer to `chat.postMessage` is lost: the fake
posts it, then drops the connection before answering (`FakeSlack.lose_next`), as a timeout or a
reset on the way back would. The bot cannot tell whether it was posted; it must look (every
message it posts is tagged with what posted it) before posting again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.transports import TransportName
from bot.slack.payloads import APPROVE
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

PATIENCE = 30.0
"""Seconds the queue may take to retry what failed (its backoff is a few seconds)."""


async def until(bot: Scenario, done: Callable[[], bool], what: str) -> None:
    """Do the due jobs, again as retries fall due, until `done()` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not done():
        if loop.time() > deadline:
            said = [(c.method, c.params.get("text"), c.lost) for c in bot.slack.calls]
            raise AssertionError(f"{what} did not happen within {PATIENCE:g}s: {said}")
        await bot.settle()
        await asyncio.sleep(0.2)


def cards_of(bot: Scenario, approval: Approval) -> list[str]:
    channel = bot.slack.workspace.channels[CHANNEL]
    return [
        m.ts
        for m in channel.messages.values()
        if not m.is_reply and f"`{approval.id}`" in text_of(m.blocks)
    ]


async def posted_refund(bot: Scenario, customer: str) -> Approval:
    """Carol asks for a refund; the approval once its card is recorded as posted (the queue
    retrying what failed meanwhile)."""
    report = await bot.signoff.start(
        "refund",
        {"customer_id": customer, "order_id": "o-1", "amount": 42.5, "reason": "damaged"},
        requester="U0CAROL",
        channel=CHANNEL,
    )
    (approval_id,) = report.approvals
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not (approval := await bot.signoff.get(approval_id)).message_ts:
        assert loop.time() < deadline, "the card was never recorded as posted"
        await bot.settle()
        await asyncio.sleep(0.2)
    return approval


async def test_a_card_and_its_replies_are_posted_once_when_slacks_answer_is_lost(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path) as bot:
        bot.slack.lose_next("chat.postMessage")
        approval = await posted_refund(bot, "C-lost")
        assert [c.lost for c in bot.slack.calls_to("chat.postMessage")][:1] == [True]
        assert cards_of(bot, approval) == [approval.message_ts]  # one card, the one recorded

        # The decision's reply, the requester's DM, the outcome: each answer lost once.
        bot.slack.lose_next("chat.postMessage", count=3)
        answer = await bot.slack.click("alice", CHANNEL, approval.message_ts or "", APPROVE)
        assert answer.status == 200
        channel = bot.slack.workspace.channels[CHANNEL]

        def told() -> bool:
            card = channel.messages[approval.message_ts or ""]
            texts = [channel.messages[ts].text for ts in card.replies]
            return any("refunded 42.50 to C-lost" in t for t in texts) and not bot.slack.losses

        await until(bot, told, "the thread told its approval and its outcome")
        await bot.settle()
        card = channel.messages[approval.message_ts or ""]
        replies = Counter(channel.messages[ts].text for ts in card.replies)
        assert replies and all(n == 1 for n in replies.values()), replies
        top = Counter(m.text for m in channel.messages.values() if not m.is_reply)
        assert all(n == 1 for n in top.values()), top
        dms = Counter(
            (c.params.get("channel"), c.params.get("text"))
            for c in bot.slack.calls_to("chat.postMessage")
            if str(c.params.get("channel", "")).startswith("D")
        )
        assert all(n == 1 for n in dms.values()), dms
        assert cards_of(bot, approval) == [approval.message_ts]


async def test_a_post_slack_refused_is_posted_on_its_retry_without_reading_the_channel_first(
    tmp_path: Path,
) -> None:
    """A 429 is Slack saying it did not post: the retry posts at once. Looking first would
    spend a rate-limited read per retry, and under a burst of 429s double the calls."""
    async with running_scenario(tmp_path) as bot:
        bot.slack.fail_next("chat.postMessage", status=429, retry_after=1)
        approval = await posted_refund(bot, "C-429")
        posts = bot.slack.calls_to("chat.postMessage")
        assert len(posts) >= 2  # the refused one, then the card
        assert cards_of(bot, approval) == [approval.message_ts]
        assert bot.slack.calls_to("conversations.history") == []


SLOW = 3.0
"""The bot's Slack timeout in the next test (seconds): the card's post is answered 2 s after it."""


@pytest.mark.parametrize("transport", ["http", "socket"])
async def test_a_card_slack_posts_after_the_bot_stopped_waiting_is_posted_once(
    tmp_path: Path, transport: TransportName
) -> None:
    """Slack takes longer than the bot waits, and posts the card all the same (issue 15). The
    retry waits as long again before it looks in the channel: it finds the card and posts
    nothing. (Looked for after the queue's usual second, the card was not there yet.)"""
    async with running_scenario(tmp_path, transport=transport, slack_timeout=SLOW) as bot:
        sent = bot.slack.clock()
        bot.slack.delay("chat.postMessage", SLOW + 2)
        report = await bot.signoff.start(
            "refund",
            {"customer_id": "C-slow", "order_id": "o-1", "amount": 42.5, "reason": "damaged"},
            requester="U0CAROL",
            channel=CHANNEL,
        )
        (approval_id,) = report.approvals
        await bot.settle()  # the post: no answer within the timeout
        assert (await bot.signoff.get(approval_id)).message_ts is None
        bot.slack.delay("chat.postMessage", 0)  # the retry is answered at once

        def landed() -> bool:  # the slow post is in the channel, answered to no one
            return any(c.time >= sent + SLOW + 2 for c in bot.slack.calls_to("chat.postMessage"))

        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE
        while not (landed() and (approval := await bot.signoff.get(approval_id)).message_ts):
            assert loop.time() < deadline, "the slow card never landed and was recorded"
            await bot.settle()
            await asyncio.sleep(0.2)
        await bot.settle()
        assert cards_of(bot, approval) == [approval.message_ts]
        assert len(bot.slack.calls_to("chat.postMessage")) == 1  # the retry only looked
