"""A request an auto-approval rule would have approved, asked of people because the rule is past
its budget: the card says so, and which cap (the fake Slack, the bot's Bolt app)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox.processes import CHANNEL
from tests.kit.e2e import text_of
from tests.kit.scenario import POLICY, Scenario, running_scenario

BUDGETED = (
    POLICY
    + """
[[actions.send_refund.auto_approve]]
name = "small refunds"
when = { amount = { le = 5 } }
budget = { count = 5, per = ["requester"], window = "1d" }
"""
)


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, BUDGETED) as scenario:
        yield scenario


async def test_the_card_of_a_request_past_the_rule_s_budget_says_which_cap(bot: Scenario) -> None:
    reports = []
    for n in range(6):
        reports.append(
            await bot.signoff.start(
                "refund",
                {"customer_id": "cust_b", "order_id": f"o-{n}", "amount": 1.0, "reason": "x"},
                requester="U0CAROL",
                channel=CHANNEL,
            )
        )
    await bot.settle()
    statuses = [(await bot.signoff.get(r.approvals[0])).status for r in reports]
    assert statuses == ["approved"] * 5 + ["pending"]
    card = bot.card(await bot.signoff.get(reports[-1].approvals[0]))
    shown = text_of(card.to_api())
    assert "Asked because" in shown
    assert "the rule 'small refunds' is past its budget (at most 5 approvals per requester" in shown
    assert "it approved 5 already" in shown
