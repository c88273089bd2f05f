"""Edits and quorum through the front door: what an approver sees is what runs.

With two approvals required and editable fields, an edit makes a new revision of the values:
the card, its thread and the payload modal show it, and a click on the card as it was before
the edit is refused ("the request changed") and never counted. An edit the action's schema
refuses is a form error under its field, and records nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.slack import modals
from bot.slack.payloads import APPROVE, EDIT, NOTE_BLOCK, edit_block_id
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario

ALICE, BOB = "U0ALICE", "U0BOB"

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
required = 2
editable = ["amount", "reason"]
expire_after = "24h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
order_id = { type = "string" }
amount = { type = "number", required = true, exclusive_minimum = 0, maximum = 10000, format = "money" }
reason = { type = "string", max_length = 500 }
"""


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def edit(bot: Scenario, user: str, card_ts: str, amount: str) -> dict[str, str]:
    """`user` clicks Edit on the card and submits `amount`; the form's errors."""
    answer = await bot.slack.click(user.lower(), CHANNEL, card_ts, EDIT)
    assert answer.status == 200
    # the modal opens after the ack (views.open): the person submits it once it is there
    await bot.slack.wait_for(
        lambda s: s.workspace.views.get(bot.slack.workspace.user(user.lower()).id)
    )
    done = await bot.slack.submit(user.lower(), {edit_block_id("amount"): amount, NOTE_BLOCK: ""})
    return dict(done.errors)


async def test_a_vote_on_the_values_before_an_edit_is_refused_and_never_counted(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-quorum", 42.5)
    stale_click = bot.click_request(BOB, card, APPROVE)  # Bob's card shows 42.50

    assert await edit(bot, "alice", card.ts, "40") == {}
    await bot.settle()
    edited = await bot.signoff.get(approval.id)
    assert (edited.status, edited.revision, edited.current["amount"]) == ("pending", 1, 40.0)

    # The card shows the values that run: headline, field, and what changed.
    shown = text_of(bot.card(edited).blocks)
    assert "Refund 40.00 to C-quorum" in shown and "42.50" not in shown.split("→")[0][:60]
    assert "*amount*\n40.00" in shown and "revision 1" in shown
    assert '"amount": 40.00' in text_of(modals.payload_modal(edited)["blocks"])

    # Bob clicks Approve on the card as it was: refused, nothing recorded.
    answer = await bot.send(stale_click)
    assert answer.status == 200
    [refusal] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(BOB))
    # ... saying what changed, each value as the policy shows it everywhere else.
    assert "request changed" in refusal.text and "amount: 42.50 → 40.00" in refusal.text
    unchanged = await bot.signoff.get(approval.id)
    assert (unchanged.status, [v.user_id for v in unchanged.votes]) == ("pending", [ALICE])
    await bot.settle()

    # On the card as it is now, Bob's approval counts, and 40 is refunded.
    answer = await bot.slack.click("bob", CHANNEL, card.ts, APPROVE)
    assert answer.status == 200
    decided = await bot.signoff.get(approval.id)
    assert decided.status == "approved" and decided.decided_by == [ALICE, BOB]
    await bot.settle()
    run = await bot.signoff.run_info(approval.thread_id) or {}
    assert run["status"] == "completed" and "refunded 40.00 to C-quorum" in run["result"]
    thread = text_of(bot.card(decided).blocks)
    assert "Refund 40.00 to C-quorum" in thread

    votes = [e for e in await audit(bot) if e["kind"] == "vote"]
    assert [(e["actor"], e["data"]["revision"]) for e in votes] == [(ALICE, 1), (BOB, 1)]


async def test_an_edit_the_schema_refuses_is_a_form_error_on_its_field(bot: Scenario) -> None:
    approval, card = await bot.refund("C-form", 42.5)
    for typed in ("-1000000", "0", "1e308", "４２", "forty"):
        errors = await edit(bot, "alice", card.ts, typed)
        assert list(errors) == [edit_block_id("amount")], typed
        assert "amount" in errors[edit_block_id("amount")]
    a = await bot.signoff.get(approval.id)
    assert (a.status, a.votes, a.revision) == ("pending", (), 0)


async def audit(bot: Scenario) -> list[dict[str, Any]]:
    await bot.signoff.link_audit()
    async with bot.signoff.db.read() as conn:
        rows = (
            await conn.execute(sa.select(t.audit_events).order_by(t.audit_events.c.seq))
        ).mappings()
        return [{**r, "data": json.loads(r["data"])} for r in rows]


async def test_after_an_edit_the_card_its_thread_and_status_show_the_current_values(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path) as bot:  # one approval decides
        approval, card = await bot.refund("C-shown", 42.5)
        assert await edit(bot, "alice", card.ts, "40") == {}
        await bot.settle()
        decided = await bot.signoff.get(approval.id)
        assert decided.status == "approved" and decided.title == "Refund 40.00 to C-shown"
        shown = text_of(bot.card(decided).blocks)
        assert "Refund 40.00 to C-shown" in shown and "Refund 42.50" not in shown
        channel = bot.slack.workspace.channels[CHANNEL]
        replies = [channel.messages[ts].text for ts in bot.card(decided).replies]
        assert replies and all("42.50" not in r for r in replies)
        assert any("Refund 40.00 to C-shown" in r for r in replies)
        answer = await bot.slack.command("carol", CHANNEL, f"status {approval.thread_id}")
        assert "42.50" not in str(answer.json) and "40.00" in str(answer.json)
