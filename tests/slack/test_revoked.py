"""`tokens_revoked` and `app_uninstalled`: Slack tells the app its bot token is dead. The bot
says so loudly, marks Slack's health as refused (so `/healthz` answers 503 saying where to fix
it), and what it still has to post waits in the queue, nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.slack.app import SlackGroups
from bot.slack.guard import TokenGuard
from bot.slack.health import SlackHealth
from bot.slack.notify import SlackSink
from tests.kit.scenario import Scenario, running_scenario


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


@pytest.mark.parametrize(
    ("uninstall", "code"), [(True, "app_uninstalled"), (False, "tokens_revoked")]
)
async def test_slack_saying_the_token_is_dead_degrades_health_and_loses_nothing(
    bot: Scenario, caplog: pytest.LogCaptureFixture, uninstall: bool, code: str
) -> None:
    caplog.set_level(logging.ERROR, "signoff.slack")
    sink = bot.signoff.sink
    assert isinstance(sink, SlackSink) and sink.health.token_error is None

    answer = await bot.slack.driver.revoke("xoxb-scenario", uninstall=uninstall)

    assert answer.status == 200 and not answer.late
    assert sink.health.token_error == code
    assert any(f"Slack says {code}" in r.getMessage() for r in caplog.records)

    # a card asked for now cannot go out; it waits for a new token instead of being dropped
    report = await bot.signoff.start(
        "refund",
        {"customer_id": "C-dead", "order_id": "o-1", "amount": 3, "reason": "damaged"},
        requester="U0CAROL",
        channel=CHANNEL,
    )
    await bot.settle()
    waiting = await bot.signoff.get(report.approvals[0])
    assert waiting.message_ts is None and waiting.status == "pending"
    assert sink.health.token_error == code  # kept until a restart: no call went to Slack
    async with bot.signoff.db.read() as conn:
        kept = await conn.scalar(
            select(func.count()).select_from(t.jobs).where(t.jobs.c.done_at.is_(None))
        )
    assert kept, "the card's job is kept for when the token is fixed"


async def test_a_dead_token_stops_the_group_refresh_without_a_warning_a_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    health = SlackHealth()
    health.token_refused("token_revoked")
    client = TokenGuard(health=health, token="xoxb-dead", base_url="http://127.0.0.1:9/")
    groups = SlackGroups(client, budget=0.05)
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.DEBUG, "signoff.slack")  # its rounds

    def rounds() -> int:
        return sum(r.getMessage().startswith("group refresh round done") for r in caplog.records)

    refreshing = asyncio.ensure_future(groups.refresh_forever(["approvers"], every=0.01))
    async with asyncio.timeout(10):
        while rounds() < 5:
            await asyncio.sleep(0.01)
    refreshing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await refreshing

    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == []  # the sink said it, once
