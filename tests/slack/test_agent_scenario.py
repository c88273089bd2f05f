"""The support agent through the front door: the real Bolt app, the fake Slack, the agent's model
served by a chat-completions stand-in through the real `openai` client.

One model turn proposes a refund and an email about it: one card for the turn, each call with
its arguments and its own buttons, the email marked as running after the refund. Alice edits
the refund's amount (her edit is her approval), Bob rejects the email; then the bot "restarts"
(a new runtime on the same SQLite file) and the new one resumes the run: the refund ran once
with the edited amount, the email never, and the agent's reply is in the card's thread. The
turn card's own stories (a rejected refund keeps the email in; an edited refund asks the email
again; "Approve all") are in `test_agent_turn_card.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import Settings
from bot.http import build_runtime
from bot.sandbox.processes import CHANNEL, SIGNING_SECRET, sqlite_url
from bot.slack.payloads import EDIT, NOTE_BLOCK, REASON_BLOCK, REJECT, edit_block_id
from tests.kit.chat_api import ChatAPI, chat_api  # noqa: F401 -- a fixture
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario
from tests.slack.turn_kit import click_call

POLICY = """
[workflows.support_agent]
starters = ["U0CAROL"]

[agents]
free_tools = ["lookup_order"]

[actions.send_refund]
title = "Send a refund"
approvers = ["@approvers"]
editable = ["amount", "reason"]

[actions.send_refund.args]
customer_id = { type = "string", required = true }
order_id = { type = "string" }
amount = { type = "number", required = true, exclusive_minimum = 0, maximum = 10000 }
reason = { type = "string", max_length = 500 }

[actions.email_customer]
title = "Email a customer"
tier = "medium"
approvers = ["@approvers"]
editable = ["subject", "body"]
after = ["send_refund"]

[actions.email_customer.args]
to = { type = "string", required = true }
subject = { type = "string", required = true }
body = { type = "string", required = true }
"""


@pytest.fixture
async def bot(tmp_path: Path, chat_api: ChatAPI) -> AsyncIterator[Scenario]:  # noqa: F811
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def test_the_agent_s_turn_is_one_card_its_calls_decided_apart_and_resumed_after_a_restart(
    bot: Scenario, tmp_path: Path
) -> None:
    report = await bot.signoff.start(
        "support_agent",
        {"ticket": "Headphones from o-1002 are silent.", "customer_id": "cust_12"},
        requester="U0CAROL",
        channel=CHANNEL,
    )
    await bot.settle()
    refund, email = [await bot.signoff.get(a) for a in report.approvals]
    assert (refund.action, email.action) == ("send_refund", "email_customer")
    # one message for the turn, each call on it with its arguments
    card = bot.card(refund)
    assert email.message_ts == refund.message_ts
    assert len(bot.slack.workspace.channels[CHANNEL].messages) == 1
    shown = text_of(card.blocks)
    assert "Refund 129.00 to cust_12" in shown and "o-1002" in shown
    assert "cust_12@example.com" in shown and "runs after `send_refund`" in shown

    # Alice edits the refund to 100 (and so approves it); Bob rejects the email.
    response = await bot.send(click_call(bot, "U0ALICE", card, 1, EDIT))
    assert response.status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0ALICE"))  # opens after the ack
    done = await bot.slack.submit("alice", {edit_block_id("amount"): "100", NOTE_BLOCK: ""})
    assert done.errors == {}
    await bot.settle()
    card = bot.card(await bot.signoff.get(email.id))
    assert (await bot.send(click_call(bot, "U0BOB", card, 2, REJECT))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    done = await bot.slack.submit("bob", {REASON_BLOCK: "we call first"})
    assert done.errors == {}
    assert (await bot.signoff.get(refund.id)).status == "approved"
    assert (await bot.signoff.get(email.id)).status == "rejected"

    # A restart before the worker resumed the run: a new runtime on the same file does it.
    settings = Settings(
        database_url=sqlite_url(tmp_path),
        policy_path=tmp_path / "policy.toml",
        slack_bot_token=bot.slack.bot_token,
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=bot.slack.url,
        default_channel=CHANNEL,
    )
    second, _ = build_runtime(settings)
    try:
        while await second.run_jobs():
            pass
        run = await second.run_info(report.thread_id) or {}
        assert run["status"] == "completed"
        effects = second.runs._effects.list(report.thread_id)
        assert [(e["kind"], e["amount"]) for e in effects] == [("refund", 100.0)]
    finally:
        await second.db.aclose()

    # The agent's reply, in the thread of the run's card.
    card = bot.card(await bot.signoff.get(email.id))
    replies = [bot.slack.workspace.channels[CHANNEL].messages[ts] for ts in card.replies]
    said = "\n".join(text_of(m.to_api()) for m in replies)
    assert "refunded 100.00 to cust_12 for order o-1002" in said
    assert "U0BOB rejected the call to email_customer" in said and "we call first" in said
    # The refund ran: the run is not announced as having done nothing, and each decision is named.
    assert "ended without its action" not in said
    assert "*send_refund* ✅ approved · *email_customer* ❌ rejected" in said
