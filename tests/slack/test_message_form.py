"""How the bot's messages look in Slack: no link previews in approval threads, and an expiry
every reader sees in their own time zone that never goes stale."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox.processes import CHANNEL
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def test_no_message_the_bot_posts_unfurls_the_links_in_it(bot: Scenario) -> None:
    report = await bot.signoff.start(
        "refund",
        {
            "customer_id": "C-links",
            "order_id": "o-1",
            "amount": 5,
            "reason": "see https://shop.example.com/orders/o-1 and https://img.example.com/x.png",
        },
        requester="U0CAROL",
        channel=CHANNEL,
    )
    await bot.settle()
    await bot.signoff.vote(report.approvals[0], ALICE, True)
    await bot.settle()

    posts = bot.slack.calls_to("chat.postMessage")
    assert len(posts) >= 2  # the card and its thread replies
    assert any("shop.example.com" in text_of(c.params.get("blocks") or []) for c in posts)
    assert [(c.params.get("unfurl_links"), c.params.get("unfurl_media")) for c in posts] == [
        (False, False)
    ] * len(posts)


async def test_the_card_shows_its_expiry_as_a_date_token_not_a_countdown(bot: Scenario) -> None:
    approval, card = await bot.refund("C-expiry")
    assert approval.expire_at is not None
    shown = text_of(card.blocks)
    [expires] = re.findall(r"\*Expires\*\n(.*)", shown)
    assert re.fullmatch(
        rf"<!date\^{int(approval.expire_at)}\^\{{date_short_pretty\}} at \{{time\}}"
        r"\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>",
        expires,
    ), expires
