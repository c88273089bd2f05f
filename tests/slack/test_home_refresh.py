"""Home after a burst of decisions: published once, a moment after the person's last click, not
while the clicks are still coming (each publish takes turns of the event loop from the clicks
waiting for their ack); and still published while clicks never stop, at the longest wait."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack import home
from bot.slack.payloads import APPROVE
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

BOB = "U0BOB"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def cards(bot: Scenario, prefix: str, n: int) -> list[Message]:
    """`n` refunds of distinct orders asked by Carol, their cards posted."""
    ids = []
    for i in range(n):
        report = await bot.signoff.start(
            "refund",
            {"customer_id": f"{prefix}-{i}", "order_id": f"{prefix}-o{i}", "amount": 42.5,
             "reason": "damaged"},
            requester="U0CAROL",
            channel=CHANNEL,
        )  # fmt: skip
        ids += report.approvals
    await bot.settle()
    return [bot.card(await bot.signoff.get(i)) for i in ids]


def bob_publishes(bot: Scenario) -> int:
    return sum(c.params.get("user_id") == BOB for c in bot.slack.calls_to("views.publish"))


async def test_a_burst_of_clicks_is_shown_by_one_publish_after_the_last(
    bot: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(home, "HOME_REFRESH_DELAY", 0.4)
    before = bob_publishes(bot)
    for card in await cards(
        bot, "C-burst", 6
    ):  # a click every 0.15 s: longer than the delay from first to last
        answer = await bot.slack.click("bob", CHANNEL, card.ts, APPROVE)
        assert answer.status == 200
        await asyncio.sleep(0.15)
    assert bob_publishes(bot) == before, "Home was published while Bob was still clicking"
    view = await bot.slack.wait_for(lambda s: bob_publishes(bot) > before and s.workspace.home[BOB])
    assert bob_publishes(bot) == before + 1
    shown = text_of(view.spec["blocks"])
    assert "Nothing is waiting on you." in shown  # the one publish shows every decision
    for i in range(6):
        assert f"Refund 42.50 to C-burst-{i} — approved by <@{BOB}>" in shown


async def test_clicks_that_never_stop_still_refresh_home_at_the_longest_wait(
    bot: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(home, "HOME_REFRESH_DELAY", 0.5)
    monkeypatch.setattr(home, "HOME_REFRESH_LONGEST", 0.6)
    before = bob_publishes(bot)
    for card in await cards(
        bot, "C-steady", 8
    ):  # a click every 0.2 s, never a 0.5 s pause, for about 1.6 s
        assert (await bot.slack.click("bob", CHANNEL, card.ts, APPROVE)).status == 200
        await asyncio.sleep(0.2)
    assert bob_publishes(bot) > before, "Home waited for the clicks to stop, however long"
