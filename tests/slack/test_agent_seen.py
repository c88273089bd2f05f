"""The card shows what the agent saw: the tool results the model had just read when it proposed
the calls, and its own words beside them, shortened on the card, whole in the Full payload view.
The support agent's model is a chat-completions stand-in
reached through the real `openai` client; the card and the modal through the real Bolt app.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.slack.payloads import PAYLOAD
from tests.kit.chat_api import serving, support_model
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario
from tests.slack.test_agent_scenario import POLICY
from tests.slack.turn_kit import click_call

SAID = "Order o-1002 was paid 129.00 and the customer says it is silent, so I refund it in full."


@pytest.fixture
async def bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Scenario]:
    async with serving(functools.partial(support_model, said=SAID)) as api:
        monkeypatch.setenv("SIGNOFF_LLM_BASE_URL", api.url)
        monkeypatch.setenv("SIGNOFF_LLM_MODEL", "stand-in")
        monkeypatch.setenv("SIGNOFF_LLM_API_KEY", api.key)
        async with running_scenario(tmp_path, POLICY) as scenario:
            yield scenario


async def test_the_turn_s_card_shows_the_lookup_it_rests_on_and_the_model_s_words(
    bot: Scenario,
) -> None:
    ticket = {"ticket": "Headphones from o-1002 are silent.", "customer_id": "cust_12"}
    report = await bot.signoff.start("support_agent", ticket, requester="U0CAROL", channel=CHANNEL)
    await bot.settle()
    refund = await bot.signoff.get(report.approvals[0])
    assert refund.seen is not None
    (looked,) = refund.seen["results"]
    assert looked["tool"] == "lookup_order" and '"order_id": "o-1002"' in looked["content"]

    card = next(iter(bot.slack.workspace.channels[CHANNEL].messages.values()))
    shown = text_of(card.blocks)
    assert "What the agent saw" in shown
    assert "`lookup_order` returned:" in shown and "o-1002" in shown
    assert f"The model said: {SAID}" in shown

    assert (await bot.send(click_call(bot, "U0ALICE", card, 1, PAYLOAD))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0ALICE"))
    [modal] = bot.slack.workspace.views["U0ALICE"]
    view = text_of(modal.spec)
    assert "What the agent saw" in view
    assert f"- lookup_order returned: {looked['content']}" in view
    assert f"- the model said: {SAID}" in view
    # that Alice opened it goes on the audit log once the modal is open (`signoff report`
    # tells an approval given after reading the payload from one given at a glance)
    viewed: list[tuple[str, str]] = []
    for _ in range(200):
        async with bot.signoff.db.read() as conn:
            viewed = [
                (row.actor, row.approval_id)
                for table in (t.audit_inbox, t.audit_events)
                for row in await conn.execute(
                    sa.select(table).where(table.c.kind == "payload_viewed")
                )
            ]
        if viewed:
            break
        await asyncio.sleep(0.05)
    assert viewed == [("U0ALICE", refund.id)]
