"""Dead ends end: a Slack error that retrying cannot clear is not retried, does not hold back the
run's later messages, is recorded (log, counts), and a card that is gone is posted afresh."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.slack.notify import SlackSink
from tests.kit.e2e import action_ids
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def jobs_left(bot: Scenario) -> int:
    async with bot.signoff.db.read() as conn:
        return int(
            await conn.scalar(
                select(func.count()).select_from(t.jobs).where(t.jobs.c.done_at.is_(None))
            )
            or 0
        )


def sink(bot: Scenario) -> SlackSink:
    assert isinstance(bot.signoff.sink, SlackSink)
    return bot.signoff.sink


async def test_a_deleted_card_is_posted_afresh_and_the_run_s_messages_follow_it(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-deleted")
    bot.slack.workspace.delete(card)

    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()

    decided = await bot.signoff.get(approval.id)
    assert decided.message_ts not in (None, card.ts)
    fresh = bot.card(decided)
    assert action_ids({"blocks": fresh.blocks}) == []  # the decided card
    assert fresh.replies, "the decision's thread reply went to the fresh card"
    assert await jobs_left(bot) == 0


async def test_an_archived_channel_is_given_up_on_recorded_and_blocks_nothing_after_it(
    bot: Scenario, caplog: pytest.LogCaptureFixture
) -> None:
    approval, _ = await bot.refund("C-archived")
    bot.slack.workspace.channels[CHANNEL].is_archived = True
    updates_before = len(bot.slack.calls_to("chat.update"))

    caplog.set_level(logging.ERROR, "signoff.slack")
    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()

    # every event was done once: nothing waits to be retried, the run completed
    assert await jobs_left(bot) == 0
    assert (await bot.signoff.run_info(approval.thread_id) or {})["status"] == "completed"
    assert len(bot.slack.calls_to("chat.update")) == updates_before + 1  # tried once
    assert sink(bot).health.undeliverable["is_inactive"] == 1
    assert sink(bot).health.undeliverable["is_archived"] >= 1
    assert any("gave up on" in r.getMessage() and "is_inactive" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    assert sink(bot).health.token_error is None


async def test_a_revoked_token_is_kept_for_later_and_marks_the_token_dead(bot: Scenario) -> None:
    approval, _ = await bot.refund("C-revoked")
    await bot.signoff.vote(approval.id, ALICE, True)
    bot.slack.revoke_token("xoxb-scenario")
    await bot.settle()

    assert sink(bot).health.token_error == "token_revoked"
    assert await jobs_left(bot) >= 1  # the card update waits for a working token


async def test_a_refusal_nobody_listed_is_given_up_on_recorded_and_blocks_nothing(
    bot: Scenario, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack adds refusals over time: one the bot has no name for (here a channel made
    read-only) is not retried for ever behind the run's later messages."""
    approval, _ = await bot.refund("C-read-only")
    updates_before = len(bot.slack.calls_to("chat.update"))
    bot.slack.fail_next("chat.update", error="restricted_action_read_only_channel")

    caplog.set_level(logging.ERROR, "signoff.slack")
    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()

    assert await jobs_left(bot) == 0
    assert (await bot.signoff.run_info(approval.thread_id) or {})["status"] == "completed"
    assert len(bot.slack.calls_to("chat.update")) == updates_before + 1  # tried once
    assert sink(bot).health.undeliverable["restricted_action_read_only_channel"] == 1
    assert any(
        "gave up on" in r.getMessage() and "restricted_action_read_only_channel" in r.getMessage()
        for r in caplog.records
    )


async def test_what_slack_documents_as_transient_is_asked_again(bot: Scenario) -> None:
    approval, _ = await bot.refund("C-transient")
    updates_before = len(bot.slack.calls_to("chat.update"))
    bot.slack.fail_next("chat.update", error="fatal_error")

    await bot.signoff.vote(approval.id, ALICE, True)
    await bot.settle()
    await asyncio.sleep(1.1)  # the retry's first wait
    await bot.settle()

    assert await jobs_left(bot) == 0
    assert len(bot.slack.calls_to("chat.update")) == updates_before + 2  # refused, then sent
    assert sink(bot).health.undeliverable.get("fatal_error", 0) == 0
