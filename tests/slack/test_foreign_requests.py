"""LangChain's human-in-the-loop requests and Agent Inbox's `HumanInterrupt`s become cards,
through the front door (the real Bolt app, the fake Slack, signed clicks): each action request
is one approval under the policy, the request's config bounds what an approver can choose, and
the answer goes back in the shape that code reads. What the approvers decide is what runs: the
LangChain agent (`create_agent`, `HumanInTheLoopMiddleware`, `ChatOpenAI` against the
chat-completions stand-in) runs an edited refund with the edited amount and never sends the
rejected email, and its model is told why.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack.payloads import APPROVE, EDIT, NOTE_BLOCK, REASON_BLOCK, REJECT, edit_block_id
from tests.kit.chat_api import ChatAPI, serving, tool_call
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario
from tests.slack import foreign_flows
from tests.slack.turn_kit import click_call

POLICY = """
[workflows.langchain_agent]
path = "tests.slack.foreign_flows:langchain_agent"
starters = ["U0CAROL"]

[workflows.inbox_agent]
path = "tests.slack.foreign_flows:inbox_agent"
starters = ["U0CAROL"]

[workflows.inbox_one]
path = "tests.slack.foreign_flows:inbox_one"
starters = ["U0CAROL"]

[workflows.hitl_by_hand]
path = "tests.slack.foreign_flows:hitl_by_hand"
starters = ["U0CAROL"]

[actions.send_refund]
title = "Refund {amount} on {order_id}"
approvers = ["U0ALICE", "U0BOB"]
editable = ["amount"]

[actions.send_refund.args]
order_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }

[actions.email_customer]
title = "Email {to}"
approvers = ["U0ALICE", "U0BOB"]
editable = ["body"]   # the policy would allow it; the requests' configs do not

[actions.email_customer.args]
to = { type = "string", required = true }
body = { type = "string", required = true }
"""


def model(body: dict[str, Any]) -> dict[str, Any]:
    """Proposes a refund and an email in one turn, then says what the tools said."""
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return {"role": "assistant", "content": None, "tool_calls": [
            tool_call("call_1", "send_refund", {"order_id": "o-1", "amount": 42.5}),
            tool_call("call_2", "email_customer",
                      {"to": "kim@example.com", "body": "We refunded 42.50."}),
        ]}  # fmt: skip
    told = [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    return {"role": "assistant", "content": "Done. " + " | ".join(told)}


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatAPI]:
    async with serving(model) as served:
        monkeypatch.setenv("SIGNOFF_LLM_BASE_URL", served.url)
        monkeypatch.setenv("SIGNOFF_LLM_MODEL", "stand-in")
        monkeypatch.setenv("SIGNOFF_LLM_API_KEY", served.key)
        yield served


@pytest.fixture
async def bot(tmp_path: Path, api: ChatAPI) -> AsyncIterator[Scenario]:
    foreign_flows.RAN.clear()
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def start(bot: Scenario, workflow: str, inputs: dict[str, Any]) -> tuple[str, list[Approval]]:
    report = await bot.signoff.start(workflow, inputs, requester="U0CAROL", channel=CHANNEL)
    await bot.settle()
    return report.thread_id, [await bot.signoff.get(a) for a in report.approvals]


def card_of(bot: Scenario) -> Message:
    return next(iter(bot.slack.workspace.channels[CHANNEL].messages.values()))


def buttons(card: Message, position: int) -> list[str]:
    [block] = [b for b in card.blocks if b.get("block_id") == f"signoff.call.{position}"]
    return [e["action_id"] for e in block["elements"]]


async def reject(bot: Scenario, user: str, name: str, position: int, reason: str) -> None:
    assert (await bot.send(click_call(bot, user, card_of(bot), position, REJECT))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get(user))
    assert (await bot.slack.submit(name, {REASON_BLOCK: reason})).errors == {}
    await bot.settle()


async def settled_as(bot: Scenario, approval_id: str) -> tuple[str, dict[str, Any]]:
    async with bot.signoff.db.read() as conn:
        entry = await bot.signoff.audit.settlement(conn, approval_id)
    assert entry is not None and entry.intact
    return entry.kind, entry.edits


async def test_a_langchain_agent_s_turn_is_one_card_and_runs_what_was_decided(
    bot: Scenario, api: ChatAPI
) -> None:
    thread_id, (refund, email) = await start(bot, "langchain_agent", {"request": "refund o-1"})
    assert (refund.action, refund.payload) == ("send_refund", {"order_id": "o-1", "amount": 42.5})
    assert (email.action, email.payload["to"]) == ("email_customer", "kim@example.com")
    assert foreign_flows.RAN == []  # nothing runs before a person decides
    card = card_of(bot)
    assert refund.message_ts == email.message_ts == card.ts  # one card for the turn
    shown = text_of(card.blocks)
    assert "1. Refund 42.5 on o-1" in shown and "2. Email kim@example.com" in shown
    assert "Tool execution requires approval" in shown  # the middleware's words, as its note
    # the middleware allows edits of the refund, not of the email
    assert EDIT in buttons(card, 1) and EDIT not in buttons(card, 2)

    # Bob approves the refund at 40 instead of 42.50; Alice rejects the email
    assert (await bot.send(click_call(bot, "U0BOB", card, 1, EDIT))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    done = await bot.slack.submit("bob", {edit_block_id("amount"): "40", NOTE_BLOCK: ""})
    assert done.errors == {}
    await bot.settle()
    assert foreign_flows.RAN == []  # the email is still undecided: the turn waits
    await reject(bot, "U0ALICE", "alice", 2, "wait until the kettle is back")

    run = await bot.signoff.run_info(thread_id) or {}
    assert run["status"] == "completed", run
    assert foreign_flows.RAN == [("send_refund", {"order_id": "o-1", "amount": 40.0})]
    told = {m["tool_call_id"]: str(m["content"]) for m in api.requests[-1]["messages"]
            if m["role"] == "tool"}  # fmt: skip
    assert "refunded 40.0 on o-1" in told["call_1"]
    assert "replaced this tool call" in told["call_1"]  # LangChain's edit notice
    assert told["call_2"] == (
        "User rejected the tool call for `email_customer` with reason: email_customer was "
        "rejected by U0ALICE: wait until the kettle is back"
    )
    assert await settled_as(bot, refund.id) == ("approved", {"amount": 40.0})
    assert await settled_as(bot, email.id) == ("rejected", {})


async def test_agent_inbox_requests_are_answered_with_human_responses(bot: Scenario) -> None:
    thread_id, (refund, email) = await start(bot, "inbox_agent", {"order_id": "o-7"})
    card = card_of(bot)
    assert refund.message_ts == email.message_ts == card.ts
    assert "The kettle arrived broken." in text_of(card.blocks)
    assert EDIT in buttons(card, 1) and EDIT not in buttons(card, 2)  # allow_edit: False

    assert (await bot.send(click_call(bot, "U0ALICE", card, 1, APPROVE))).status == 200
    await bot.settle()
    await reject(bot, "U0BOB", "bob", 2, "not before the refund shows")

    run = await bot.signoff.run_info(thread_id) or {}
    assert run["status"] == "completed", run
    assert foreign_flows.RAN == [("send_refund", {"order_id": "o-7", "amount": 42.5})]
    # accepted: run as asked; refused where the config allows only "ignore": ignored
    assert json.loads(run["result"])["outcome"] == [
        "refunded 42.5 on o-7",
        "email_customer ignore: None",
    ]
    assert await settled_as(bot, refund.id) == ("approved", {})
    assert await settled_as(bot, email.id) == ("rejected", {})


async def test_an_action_the_policy_does_not_name_is_rejected_and_does_not_run(
    bot: Scenario,
) -> None:
    thread_id, (refund, deletion) = await start(bot, "hitl_by_hand", {})
    assert (deletion.action, deletion.status) == ("delete_account", "rejected")  # by policy
    assert refund.status == "pending"
    assert (await bot.send(click_call(bot, "U0ALICE", card_of(bot), 1, APPROVE))).status == 200
    await bot.settle()

    run = await bot.signoff.run_info(thread_id) or {}
    assert run["status"] == "completed", run
    assert foreign_flows.RAN == [("send_refund", {"order_id": "o-9", "amount": 5.0})]
    decisions = json.loads(run["result"])["decisions"]
    assert decisions[0] == {"type": "approve"}
    assert decisions[1]["type"] == "reject"
    assert decisions[1]["message"].startswith("delete_account was denied by policy")
    assert await settled_as(bot, deletion.id) == ("denied", {})


async def test_a_refusal_the_request_cannot_take_stops_the_run_and_nothing_runs(
    bot: Scenario,
) -> None:
    thread_id, (refund, _deletion) = await start(bot, "hitl_by_hand", {})
    # the request allows only "approve" for the refund: there is no way to say no to it
    assert EDIT not in buttons(card_of(bot), 1)
    await reject(bot, "U0BOB", "bob", 1, "no refunds this week")

    run = await bot.signoff.run_info(thread_id) or {}
    assert run["status"] == "failed", run
    assert (
        "send_refund was not approved (send_refund was rejected by U0BOB: no refunds this "
        "week), and its request's config allows no refusal to be sent back: the run stops "
        "here and the tool does not run"
    ) in run["error"]
    assert foreign_flows.RAN == []
    assert await settled_as(bot, refund.id) == ("rejected", {})


async def test_one_agent_inbox_request_is_a_card_of_its_own_answered_with_one_response(
    bot: Scenario,
) -> None:
    thread_id, (refund,) = await start(bot, "inbox_one", {"order_id": "o-3"})
    card = card_of(bot)
    shown = text_of(card.blocks)
    assert "One refund, asked alone." in shown and "The request says" in shown
    assert "Note from" not in shown  # the request's words, not Carol's
    assert (await bot.slack.click("bob", CHANNEL, card.ts, EDIT)).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    done = await bot.slack.submit("bob", {edit_block_id("amount"): "30", NOTE_BLOCK: ""})
    assert done.errors == {}
    await bot.settle()

    run = await bot.signoff.run_info(thread_id) or {}
    assert run["status"] == "completed", run
    assert foreign_flows.RAN == [("send_refund", {"order_id": "o-3", "amount": 30.0})]
    assert json.loads(run["result"])["outcome"] == ["refunded 30.0 on o-3"]
    assert await settled_as(bot, refund.id) == ("approved", {"amount": 30.0})
