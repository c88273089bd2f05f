"""Home and `/agent status` link to each card they list (Slack's `chat.getPermalink`), ask Slack
for a card's link once (it never changes), and list without the link when Slack is slow to give
it.

Slack's permalinks are https links on the workspace's domain; the stand-in's point at itself
over plain http, which signoff does not put in a message. The stand-in is made to answer as
Slack does here (`https_permalinks`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox import _web_api
from bot.sandbox.processes import CHANNEL
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

BOB = "U0BOB"


@pytest.fixture
def https_permalinks(monkeypatch: pytest.MonkeyPatch) -> None:
    """`chat.getPermalink` answers `https://sandbox.slack.com/archives/...`, as Slack does."""
    served = _web_api.METHODS["chat.getPermalink"]

    def as_slack(ctx: _web_api.ApiContext, params: dict[str, Any]) -> dict[str, Any]:
        answer = served(ctx, params)
        path = answer["permalink"].removeprefix(ctx.public_url)
        return {**answer, "permalink": f"https://sandbox.slack.com/{path}"}

    monkeypatch.setitem(_web_api.METHODS, "chat.getPermalink", as_slack)


@pytest.fixture
async def bot(tmp_path: Path, https_permalinks: None) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


def link_to(card_ts: str) -> str:
    return f"<https://sandbox.slack.com/archives/{CHANNEL}/p{card_ts.replace('.', '')}|"


async def home_of(bot: Scenario, user: str) -> str:
    before = bot.slack.workspace.home.get(user)
    version = before.hash if before else None
    assert (await bot.slack.open_home(user)).ok
    view = await bot.slack.wait_for(
        lambda s: (v := s.workspace.home.get(user)) is not None and v.hash != version and v
    )
    return text_of(view.spec["blocks"])


async def test_home_links_the_card_waiting_on_you_and_asks_slack_for_its_link_once(
    bot: Scenario,
) -> None:
    _, card = await bot.refund("C-home")

    shown = await home_of(bot, BOB)
    assert f"{link_to(card.ts)}Refund 42.50 to C-home>" in shown
    asked = [
        (c.params["channel"], c.params["message_ts"])
        for c in bot.slack.calls_to("chat.getPermalink")
    ]
    assert asked == [(CHANNEL, card.ts)]

    assert link_to(card.ts) in await home_of(bot, BOB)  # opened again: the link is known
    assert len(bot.slack.calls_to("chat.getPermalink")) == 1


async def test_home_without_slack_s_link_in_time_lists_the_card_unlinked(bot: Scenario) -> None:
    await bot.refund("C-home-slow")
    bot.slack.delay("chat.getPermalink", 1.5)  # past PERMALINK_WAIT

    shown = await home_of(bot, BOB)
    assert "Refund 42.50 to C-home-slow" in shown
    assert "https://sandbox.slack.com/" not in shown


async def test_agent_status_links_each_card(bot: Scenario) -> None:
    _, card = await bot.refund("C-status")
    assert (await bot.slack.command("bob", CHANNEL, "status")).ok
    answer = await bot.slack.wait_for(
        lambda s: [e for e in s.workspace.ephemerals.get(BOB, []) if e.source == "response_url"]
    )
    assert f"{link_to(card.ts)}Refund 42.50 to C-status>" in text_of(answer[-1].blocks)


async def test_home_s_links_wait_their_turn_after_slack_limits_them(bot: Scenario) -> None:
    # Slack answers one chat.getPermalink 429 with Retry-After 30 s: the bot's later calls to it
    # (Home's links as the sink's) wait out that time instead of each drawing a 429 of its own.
    _, first = await bot.refund("C-limit-1")
    bot.slack.fail_next("chat.getPermalink", retry_after=30)

    shown = await home_of(bot, BOB)
    assert "Refund 42.50 to C-limit-1" in shown and link_to(first.ts) not in shown
    assert len(bot.slack.calls_to("chat.getPermalink")) == 1  # the one Slack refused

    _, second = await bot.refund("C-limit-2")
    shown = await home_of(bot, BOB)  # within the 30 s: listed, unlinked, Slack not asked
    assert "Refund 42.50 to C-limit-2" in shown and link_to(second.ts) not in shown
    assert len(bot.slack.calls_to("chat.getPermalink")) == 1
