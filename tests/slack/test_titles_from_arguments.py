"""A card's header comes from the arguments: the action's title filled with the values that
run, in their formats. What a service wrote is shown as its note, labelled as its words, never
as the header, in the notification, or in a critical action's "are you sure?", which names the
values. Through the real Bolt app, the fake Slack's cards."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.approvals.models import Approval
from bot.sandbox.workspace import Message
from bot.slack.payloads import APPROVE
from tests.kit.scenario import Scenario, running_scenario

POLICY = """
[actions.send_refund]
title = "Refund {amount} to {customer_id}"
tier = "high"
approvers = ["@approvers"]

[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, format = "money" }

[actions.delete_row]
title = "Delete a row"
tier = "critical"
approvers = ["@approvers"]

[services.billing]
token_env = "TEST_BILLING_TOKEN"
actions = ["send_refund", "delete_row"]
may_act_for = ["U0CAROL"]
"""


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def asked(
    bot: Scenario, action: str, args: dict[str, Any], title: str
) -> tuple[Approval, Message]:
    found = await bot.signoff.external.request(
        service="billing", action=action, args=args, requester="U0CAROL", title=title
    )
    await bot.settle()
    (approval,) = await bot.signoff.thread_approvals(found.approval_id)
    return approval, bot.card(approval)


def block_texts(card: Message, kind: str) -> list[str]:
    return [b["text"]["text"] for b in card.blocks if b["type"] == kind and "text" in b]


async def test_the_header_names_the_amount_and_the_services_words_are_its_note(
    bot: Scenario,
) -> None:
    _, card = await asked(bot, "send_refund", {"customer_id": "C-1", "amount": 4999}, "Refund 4.99")
    (head,) = block_texts(card, "header")
    assert head.endswith("Refund 4999.00 to C-1")
    assert "4.99" not in card.text  # the notification
    notes = [t for t in block_texts(card, "section") if "Refund 4.99" in t]
    assert notes == [
        "*Note from billing* (their words, not checked against the values):\nRefund 4.99"
    ]


async def test_a_critical_actions_confirmation_names_the_values(bot: Scenario) -> None:
    _, card = await asked(
        bot, "delete_row", {"table": "users", "row_id": "7"}, "Delete an unused test row"
    )
    buttons = [e for b in card.blocks if b["type"] == "actions" for e in b["elements"]]
    (approve,) = [e for e in buttons if e["action_id"] == APPROVE]
    text = approve["confirm"]["text"]["text"]
    assert text.startswith("You approve row_id: 7, table: users. “Delete a row” is a critical")
    assert "unused test row" not in json.dumps(approve)
