"""Who asks, when a service asks: a service may name as requester only the people its
`[services.NAME] may_act_for` lists (otherwise the request is the service's own), the card
always names the service ("via billing"), and the service's `owners`, who hold its token, may
not approve what it asks. Through the real Bolt app, signed clicks from the fake Slack."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack.payloads import APPROVE
from tests.kit.scenario import POLICY, Scenario, running_scenario
from tests.slack.test_card_links import home_of

ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"

SERVICE = """
[services.billing]
token_env = "TEST_BILLING_TOKEN"
actions = ["send_refund"]
may_act_for = ["U0CAROL"]
owners = ["U0ALICE"]
"""
REFUND = {"customer_id": "C-1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, POLICY + SERVICE) as scenario:
        yield scenario


async def asked(bot: Scenario, requester: str) -> tuple[Approval, Message]:
    """billing asks for a refund naming `requester`; the approval and its card."""
    found = await bot.signoff.external.request(
        service="billing", action="send_refund", args=REFUND, requester=requester
    )
    await bot.settle()
    (approval,) = await bot.signoff.thread_approvals(found.approval_id)
    return approval, bot.card(approval)


def text_of(card: Message) -> str:
    return json.dumps(card.blocks, ensure_ascii=False)


async def test_a_person_the_service_may_act_for_asks_via_the_service(bot: Scenario) -> None:
    approval, card = await asked(bot, CAROL)
    assert approval.requester == CAROL
    assert f"<@{CAROL}> asks via *billing* to run `send_refund`" in text_of(card)


async def test_anyone_else_named_makes_the_request_the_services_own(bot: Scenario) -> None:
    approval, card = await asked(bot, BOB)
    assert approval.requester == "billing"
    assert f"<@{BOB}>" not in text_of(card)
    assert "The service *billing* asks to run `send_refund` (via *billing*, for itself)" in (
        text_of(card)
    )
    # Bob was only named: he is no requester, so he may approve it.
    await bot.slack.click("bob", CHANNEL, card.ts, APPROVE)
    await bot.settle()
    assert (await bot.signoff.get(approval.id)).status == "approved"


async def test_an_owner_of_the_service_may_not_approve_what_it_asks(bot: Scenario) -> None:
    approval, card = await asked(bot, CAROL)
    assert "Nothing is waiting on you" in await home_of(bot, ALICE)  # not hers to decide
    assert "Send a refund" in await home_of(bot, BOB)
    await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)
    [refusal] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE))
    assert "You own the service *billing* that asked for this" in refusal.text
    await bot.settle()
    assert (await bot.signoff.get(approval.id)).status == "pending"
    await bot.signoff.link_audit()
    async with bot.signoff.db.read() as conn:
        refused = await conn.scalar(
            sa.select(sa.func.count())
            .select_from(t.audit_events)
            .where(t.audit_events.c.kind == "vote_refused")
        )
    assert refused == 1
