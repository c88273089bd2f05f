"""One agent turn, one card, through the front door (the real Bolt app, the fake Slack, signed
clicks): the support agent's model proposes a refund and an email about it in one turn, and
the policy says the email runs after the refund. What the approvers decide on the card is what
runs: a rejected refund keeps the email in, an edited refund asks the email again, and "Approve
all" runs both, once each.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack.payloads import (
    APPROVE,
    APPROVE_TURN,
    EDIT,
    NOTE_BLOCK,
    REASON_BLOCK,
    REJECT,
    edit_block_id,
)
from tests.kit.chat_api import ChatAPI, chat_api  # noqa: F401 -- a fixture
from tests.kit.e2e import text_of
from tests.kit.scenario import Scenario, running_scenario
from tests.slack.test_agent_scenario import POLICY
from tests.slack.turn_kit import click_call

TICKET = {"ticket": "Headphones from o-1002 are silent.", "customer_id": "cust_12"}


@pytest.fixture
async def bot(tmp_path: Path, chat_api: ChatAPI) -> AsyncIterator[Scenario]:  # noqa: F811
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def start(bot: Scenario) -> tuple[str, Approval, Approval]:
    report = await bot.signoff.start("support_agent", TICKET, requester="U0CAROL", channel=CHANNEL)
    await bot.settle()
    refund, email = [await bot.signoff.get(a) for a in report.approvals]
    return report.thread_id, refund, email


def card_of(bot: Scenario) -> Message:
    """The turn's card: the first message in the channel (the run's outcome is broadcast from
    its thread once it is over)."""
    return next(iter(bot.slack.workspace.channels[CHANNEL].messages.values()))


def thread_of(bot: Scenario, card: Message) -> str:
    replies = [bot.slack.workspace.channels[CHANNEL].messages[ts] for ts in card.replies]
    return "\n".join(text_of(m.to_api()) for m in replies)


async def effects(bot: Scenario, thread_id: str) -> list[tuple[str, object]]:
    done = bot.signoff.runs._effects.list(thread_id)
    return [(e["kind"], e.get("amount") or e.get("text")) for e in done]


async def test_the_turn_is_one_card_with_each_call_s_buttons_and_approve_all(
    bot: Scenario,
) -> None:
    _, refund, email = await start(bot)
    card = card_of(bot)
    assert len(bot.slack.workspace.channels[CHANNEL].messages) == 1  # one message, two calls
    assert refund.message_ts == email.message_ts == card.ts
    shown = text_of(card.blocks)
    assert "An agent proposes 2 actions in one turn" in shown
    assert "1. Refund 129.00 to cust_12" in shown and "2. Email cust_12@example.com" in shown
    assert "runs after `send_refund`" in shown
    for position in (1, 2):
        click_call(bot, "U0ALICE", card, position, APPROVE)  # each call has its own buttons
        click_call(bot, "U0ALICE", card, position, REJECT)
    assert "Approve all" in shown


async def test_a_rejected_refund_keeps_the_email_in_and_the_model_is_told(bot: Scenario) -> None:
    thread_id, _refund, _email = await start(bot)
    card = card_of(bot)
    assert (await bot.send(click_call(bot, "U0BOB", card, 1, REJECT))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    done = await bot.slack.submit("bob", {REASON_BLOCK: "the headphones were not returned"})
    assert done.errors == {}
    await bot.settle()

    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"
    assert await effects(bot, thread_id) == []  # no refund, and no email saying there is one
    card = card_of(bot)
    shown = text_of(card.blocks)
    assert "Approve all" not in shown and APPROVE not in str(card.blocks)
    assert "email_customer runs only after send_refund, which was rejected by U0BOB" in shown
    said = thread_of(bot, card)
    assert "Not run: email_customer runs only after send_refund, which was rejected by " in said
    assert "the headphones were not returned" in said


async def test_an_email_approved_before_its_refund_is_edited_must_be_approved_again(
    bot: Scenario,
) -> None:
    thread_id, _refund, email = await start(bot)
    # Alice approves the email first: it waits for the refund
    assert (await bot.send(click_call(bot, "U0ALICE", card_of(bot), 2, APPROVE))).status == 200
    await bot.settle()
    shown = text_of(card_of(bot).blocks)
    assert "runs once `send_refund` is approved" in shown
    assert await effects(bot, thread_id) == []

    # Bob approves the refund at 100.00 instead of 129.00: Alice's approval counts no more
    assert (await bot.send(click_call(bot, "U0BOB", card_of(bot), 1, EDIT))).status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    done = await bot.slack.submit("bob", {edit_block_id("amount"): "100", NOTE_BLOCK: ""})
    assert done.errors == {}
    await bot.settle()
    assert (await bot.signoff.get(email.id)).status == "pending"
    card = card_of(bot)
    shown = text_of(card.blocks)
    assert "`send_refund` was approved with changes (amount: 129.0 → 100.0" in shown
    assert "Decide it again" in shown
    assert await effects(bot, thread_id) == []

    # decided again: both run, once each
    assert (await bot.send(click_call(bot, "U0ALICE", card, 2, APPROVE))).status == 200
    await bot.settle()
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"
    assert sorted(await effects(bot, thread_id), key=str) == [
        ("email", "Refunded."),
        ("refund", 100.0),
    ]


async def test_approve_all_runs_both_calls_once(bot: Scenario) -> None:
    thread_id, refund, email = await start(bot)
    card = copy.deepcopy(card_of(bot))  # as Bob will see it, later, in a stale view
    response = await bot.slack.click("alice", CHANNEL, card.ts, APPROVE_TURN)
    assert response.status == 200
    await bot.settle()

    assert (await bot.signoff.get(refund.id)).status == "approved"
    assert (await bot.signoff.get(email.id)).decided_by == ["U0ALICE"]
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"
    assert sorted(await effects(bot, thread_id), key=str) == [
        ("email", "Refunded."),
        ("refund", 129.0),
    ]
    # a second click (a stale card, a double click) records nothing more
    again = await bot.send(bot.click_request("U0BOB", card, APPROVE_TURN))
    assert again.status == 200
    await bot.settle()
    assert len(await effects(bot, thread_id)) == 2
    [told] = bot.slack.workspace.ephemerals["U0BOB"]
    assert "already" in told.text


async def test_approve_all_by_someone_who_may_not_approve_records_nothing(bot: Scenario) -> None:
    _, refund, email = await start(bot)
    card = card_of(bot)
    assert (await bot.slack.click("carol", CHANNEL, card.ts, APPROVE_TURN)).status == 200
    await bot.settle()
    assert (await bot.signoff.get(refund.id)).votes == ()
    assert (await bot.signoff.get(email.id)).votes == ()
    [told] = bot.slack.workspace.ephemerals["U0CAROL"]
    assert "your own request" in told.text


async def test_agent_status_says_which_calls_wait_and_on_whom(bot: Scenario) -> None:
    thread_id, _, _ = await start(bot)
    assert (await bot.send(click_call(bot, "U0ALICE", card_of(bot), 2, APPROVE))).status == 200
    await bot.settle()
    answer = await bot.slack.command("carol", CHANNEL, f"status {thread_id}")
    assert answer.status == 200
    await bot.settle()
    # the reply: the command's answer, or a message only Carol sees
    said = [json.loads(answer.body)] if answer.body.startswith("{") else []
    said += [e.blocks for e in bot.slack.workspace.ephemerals.get("U0CAROL", [])]
    shown = "\n".join(text_of(s) for s in said)
    assert "*Waiting for* (2 decisions):" in shown
    assert "• *Refund 129.00 to cust_12* (`send_refund`): needs 1 more approval from" in shown
    assert (
        "• *Email cust_12@example.com: Refund* (`email_customer`): approved by <@U0ALICE>; "
        "runs once `send_refund` is approved"
    ) in shown
    assert "step -1" not in shown and "__start__" not in shown


async def test_a_deleted_turn_card_is_posted_again_with_every_call_on_it(bot: Scenario) -> None:
    _, refund, email = await start(bot)
    bot.slack.workspace.delete(card_of(bot))  # someone deleted the card
    await bot.signoff.vote(refund.id, "U0ALICE", True)
    await bot.settle()
    refund, email = await bot.signoff.get(refund.id), await bot.signoff.get(email.id)
    assert refund.message_ts == email.message_ts
    card = bot.card(email)
    assert "1. Refund 129.00 to cust_12" in text_of(card.blocks)
    click_call(bot, "U0BOB", card, 2, REJECT)  # the email's buttons are on the new card


async def test_notify_dm_gives_each_approver_one_dm_for_the_turn_with_every_call_on_it(
    tmp_path: Path,
    chat_api: ChatAPI,  # noqa: F811
) -> None:
    """`notify = "dm"` on both actions: one DM per approver for the whole turn (the turn's card,
    each call with its buttons), not one per call; a decision shows in each copy in place."""
    policy = POLICY.replace(
        'editable = ["amount", "reason"]', 'editable = ["amount", "reason"]\nnotify = "dm"'
    )
    policy = policy.replace(
        'editable = ["subject", "body"]', 'editable = ["subject", "body"]\nnotify = "dm"'
    )
    async with running_scenario(tmp_path, policy) as bot:
        _, refund, _ = await start(bot)
        copies = {}
        for user in ("U0ALICE", "U0BOB"):
            (copy_,) = bot.slack.workspace.im(user).messages.values()
            shown = text_of(copy_.blocks)
            assert "An agent proposes 2 actions in one turn" in shown
            assert (
                "1. Refund 129.00 to cust_12" in shown and "2. Email cust_12@example.com" in shown
            )
            copies[user] = copy_
        assert not bot.slack.workspace.im("U0CAROL").messages  # the requester approves nothing

        # Bob approves the refund from his DM: each copy shows it in place, still one message
        assert (await bot.send(click_call(bot, "U0BOB", copies["U0BOB"], 1, APPROVE))).status == 200
        await bot.settle()
        assert (await bot.signoff.get(refund.id)).status == "approved"
        for user in ("U0ALICE", "U0BOB"):
            (copy_,) = bot.slack.workspace.im(user).messages.values()
            assert copy_.ts == copies[user].ts and copy_.edited_ts is not None
            with pytest.raises(LookupError):
                click_call(bot, user, copy_, 1, APPROVE)  # the refund's buttons are gone
            click_call(bot, user, copy_, 2, APPROVE)  # the email's are there
