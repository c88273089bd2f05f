"""Updates to one card still queued coalesce: while Slack rate-limits `chat.update`, a vote and
then the decision queue up behind it, and the card is updated once, with the decision, not
once per event; every other message of those events still goes out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.slack.payloads import APPROVE
from tests.kit.scenario import POLICY, Scenario, running_scenario

ALICE, BOB = "U0ALICE", "U0BOB"
QUORUM = POLICY.replace('approvers = ["@approvers"]', 'approvers = ["@approvers"]\nrequired = 2')


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, QUORUM) as scenario:
        yield scenario


async def test_a_vote_and_the_decision_queued_for_one_card_update_it_once_with_the_decision(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-coalesce")
    bot.slack.fail_next("chat.update", status=429, retry_after=1)
    await bot.signoff.vote(approval.id, ALICE, True)  # 1 of 2: its update is refused
    calls_before = len(bot.slack.calls)
    await bot.settle()
    assert [c.status for c in bot.slack.calls[calls_before:] if c.method == "chat.update"] == [429]

    await bot.signoff.vote(approval.id, BOB, True)  # 2 of 2: decided, queued behind the vote
    await asyncio.sleep(1.1)
    after_limit = len(bot.slack.calls)
    await bot.settle()

    updates = [
        c
        for c in bot.slack.calls[after_limit:]
        if c.method == "chat.update" and c.params.get("ts") == card.ts
    ]
    assert len(updates) == 1, f"{len(updates)} updates of one card, wanted one"
    assert updates[0].status == 200
    shown = bot.card(await bot.signoff.get(approval.id))
    assert APPROVE not in json.dumps(shown.blocks), "the card still offers Approve"
    assert "approved" in json.dumps(shown.blocks).lower()
    assert shown.replies, "the decision's thread reply was lost"
