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


async def _refunds(bot: Scenario, names: list[str]) -> list[str]:
    """Carol asks for a refund for each name, in #approvals; the approval ids."""
    ids: list[str] = []
    for name in names:
        report = await bot.signoff.start(
            "refund",
            {"customer_id": f"C-{name}", "order_id": f"o-{name}", "amount": 5, "reason": "late"},
            requester="U0CAROL",
            channel=CHANNEL,
        )
        ids += report.approvals
    return ids


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
    pace = Pace(lambda key: (2, 30.0), memory=60.0, longest_wait=5.0, clock=lambda: now[0])
    started = time.monotonic()
    async with pace.turn("post:C1"):  # never limited: at once
        pass
    async with pace.turn("post:C1") as refused:
        refused.refused(0.0)  # Slack's 429: counted by nobody
    async with pace.turn("post:C1"):  # the window (2 in 30 s) holds one more
        pass
    with pytest.raises(RetryLater) as far:
        async with pace.turn("post:C1"):  # full until 30 s after the first answer
            pass
    assert 30 <= far.value.seconds <= 30.1
    async with pace.turn("post:C2"):  # another channel is not held back
        pass
    now[0] += 120.0  # long after the last 429: not paced any more
    async with pace.turn("post:C1"):
        pass
    assert time.monotonic() - started < 1.0


async def test_the_window_counts_from_the_answer_and_retry_after_is_kept() -> None:
    """Slack counts a call when it arrives, which may be as late as its answer: a call sent a
    window after the previous one was sent, but less after its slow answer, could be refused."""
    now = [100.0]
    pace = Pace(lambda key: (1, 10.0), longest_wait=3.0, clock=lambda: now[0])
    pace.limited("chat.update", retry_after=7.0)
    with pytest.raises(RetryLater) as early:
        async with pace.turn("chat.update"):
            pass
    assert early.value.seconds == pytest.approx(7.0, abs=0.05)  # Retry-After, to the letter
    now[0] = 107.0
    async with pace.turn("chat.update"):
        now[0] += 4.0  # answered 4 s after it was sent
    now[0] = 117.0  # 10 s after the send, 6 after the answer
    with pytest.raises(RetryLater) as late:
        async with pace.turn("chat.update"):
            pass
    assert late.value.seconds == pytest.approx(4.0, abs=0.05)


class _SlowEveryFourthPost(dict[str, float]):
    """The fake's per-method delays, with every fourth `chat.postMessage` slow to arrive."""

    def __init__(self, slow: float) -> None:
        super().__init__()
        self.slow = slow
        self.posts = 0
        self.now = 0.0

    def get(self, method: str, default: float | None = None) -> float | None:  # type: ignore[override]
        if method != "chat.postMessage":
            return super().get(method, default)
        self.posts += 1
        self.now = self.slow if self.posts % 4 == 1 else 0.0
        return self.now

    def __getitem__(self, method: str) -> float:
        return self.now if method == "chat.postMessage" else super().__getitem__(method)


async def test_posts_keep_inside_the_channel_s_window_when_some_arrive_late(bot: Scenario) -> None:
    """Ten cards for one channel, two workers, Slack's limit on (3 posts in any 3 s), and every
    fourth post slow on the way: after the 429 that shows where the limit is, no other."""
    bot.slack.rate_limits = True
    bot.slack.latency = _SlowEveryFourthPost(0.3)
    ids = await _refunds(bot, [f"w{n}" for n in range(10)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        await asyncio.gather(bot.signoff.run_jobs(), bot.signoff.run_jobs())
        if all([(await bot.signoff.get(a)).message_ts for a in ids]):
            break
        await asyncio.sleep(0.05)
    posts = [c for c in bot.slack.calls if c.method == "chat.postMessage"]
    limited = [c.time for c in posts if c.status == 429]
    # the first 429 shows where the limit is; the other worker's post may be on its way then
    # (refused too, at the same moment). After that, none: the posts keep inside the window
    assert 1 <= len(limited) <= 2, [(c.status, round(c.time, 3)) for c in posts]
    assert limited[-1] - limited[0] < 0.5, [(c.status, round(c.time, 3)) for c in posts]
    channel = bot.slack.workspace.channels[CHANNEL]
    assert len(channel.messages) == 10, "every card, once"


async def test_the_requester_s_dm_is_opened_once_for_all_their_outcomes(bot: Scenario) -> None:
    approvals = await _refunds(bot, ["dm-1", "dm-2"])
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
    pace = Pace(lambda key: (1, 30.0), memory=60.0, longest_wait=5.0, clock=lambda: now[0])
    pace.limited("chat.update", retry_after=0.0)
    for at in (100.0, 150.0, 200.0):  # a call every 50 s: past 160, a minute after the 429
        now[0] = at
        async with pace.turn("chat.update"):
            pass
    with pytest.raises(RetryLater):
        async with pace.turn("chat.update"):  # still paced: the next turn is 30 s away
            pass
    now[0] += 61.0  # a minute idle: the pacing ends
    for _ in range(2):
        async with pace.turn("chat.update"):
            pass


async def test_a_listener_s_call_waits_out_the_retry_after_slack_gave_another(
    bot: Scenario,
) -> None:
    """Slack rate-limited a Home publish: the next one (another person opening Home) waits
    out `Retry-After` rather than asking at once, to be refused again. Every call to Slack, the
    listeners' as the sink's, takes its turn of the one pacer the client owns."""
    bot.slack.fail_next("views.publish", status=429, retry_after=1)
    assert (await bot.slack.open_home(ALICE)).ok
    await bot.slack.wait_for(lambda s: s.calls_to("views.publish"))
    assert (await bot.slack.open_home("U0BOB")).ok
    await bot.slack.wait_for(lambda s: s.workspace.home.get("U0BOB"), timeout=10)
    refused, published = bot.slack.calls_to("views.publish")
    assert (refused.status, refused.params["user_id"]) == (429, ALICE)
    assert (published.status, published.params["user_id"]) == (200, "U0BOB")
    assert published.time - refused.time >= 1.0, "asked again before Slack's Retry-After"
