"""A step of an event Slack rate-limited: the retry does only what is left (the card, updated
already, is not updated again, spending Slack's budget for nothing), and the refused post waits
its turn in this process instead of asking again the moment Retry-After passes (where, under a
burst, every job asking at once is refused again)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.approvals.events import RetryLater
from bot.sandbox.processes import CHANNEL
from bot.slack.pacing import Pace
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def test_a_rate_limited_reply_is_retried_without_updating_the_card_again(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-limited")
    await bot.signoff.vote(approval.id, ALICE, True)
    bot.slack.fail_next("chat.postMessage", status=429, retry_after=1)  # the decision's reply

    calls_before = len(bot.slack.calls)
    await bot.settle()
    limited = [c for c in bot.slack.calls[calls_before:] if c.status == 429]
    assert [c.method for c in limited] == ["chat.postMessage"]
    await asyncio.sleep(1.1)
    await bot.settle()

    calls = bot.slack.calls[calls_before:]
    updates = [c for c in calls if c.method == "chat.update" and c.params.get("ts") == card.ts]
    assert len(updates) == 1, "the retry updated the card again"
    assert [c.method for c in calls if c.status == 429] == ["chat.postMessage"]
    assert bot.card(await bot.signoff.get(approval.id)).replies, "the reply went out after all"


async def test_a_limited_key_takes_turns_and_a_far_turn_goes_back_to_the_queue() -> None:
    now = [100.0]
    pace = Pace(memory=60.0, longest_wait=5.0, clock=lambda: now[0])
    started = time.monotonic()
    await pace.turn("post:C1")  # never limited: at once
    pace.limited("post:C1", retry_after=0.0, interval=30.0)
    await pace.turn("post:C1")  # its first turn is now
    with pytest.raises(RetryLater) as far:
        await pace.turn("post:C1")  # the next is 30 s away: back to the queue
    assert 29 <= far.value.seconds <= 30
    await pace.turn("post:C2")  # another channel is not held back
    now[0] += 120.0  # long after the last 429: not paced any more
    await pace.turn("post:C1")
    assert time.monotonic() - started < 1.0


async def test_the_requester_s_dm_is_opened_once_for_all_their_outcomes(bot: Scenario) -> None:
    approvals = []
    for n in (1, 2):
        report = await bot.signoff.start(
            "refund",
            {"customer_id": f"C-dm-{n}", "order_id": f"o-dm-{n}", "amount": 5, "reason": "late"},
            requester="U0CAROL",
            channel=CHANNEL,
        )
        approvals += report.approvals
    await bot.settle()
    opened_before = len(bot.slack.calls_to("conversations.open"))

    for approval_id in approvals:
        await bot.signoff.vote(approval_id, ALICE, True)
    await bot.settle()

    assert len(bot.slack.calls_to("conversations.open")) - opened_before <= 1
    dm = bot.slack.workspace.im("U0CAROL")
    told = [m.text for m in dm.messages.values() if "C-dm-" in m.text]
    assert len(told) == 2, told


async def test_a_key_in_use_stays_paced_past_its_memory_and_ends_once_idle() -> None:
    """Under a sustained burst the limit is still there a minute after the 429: pacing that
    ended then had every waiting worker ask at once and be refused again, once a minute."""
    now = [100.0]
    pace = Pace(memory=60.0, longest_wait=5.0, clock=lambda: now[0])
    pace.limited("chat.update", retry_after=0.0, interval=30.0)
    for at in (100.0, 150.0, 200.0):  # a call every 50 s: past 160, a minute after the 429
        now[0] = at
        await pace.turn("chat.update")
    with pytest.raises(RetryLater):
        await pace.turn("chat.update")  # still paced: the next turn is 30 s away
    now[0] += 61.0  # a minute idle: the pacing ends
    await pace.turn("chat.update")
    await pace.turn("chat.update")
