"""The Slack listeners through the front door, in process: signed requests to the real Bolt app.

Each test builds the bot's app on a SQLite file of its own, served on 127.0.0.1, its Web API
client pointed at an in-process fake Slack (`tests.kit.scenario`), and has the fake's people
click, submit and type, or sends hand-made signed requests. It then checks what a user would
notice: the answer to the request, the calls the app made to Slack (counted on the fake), the
cards, ephemerals and modals in the workspace, and what the database recorded. The core flows
run over Socket Mode as well (`over`). Kills, restarts and replicas, which only processes can
show, stay in the end-to-end suites.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox import SlackSigner, limits
from bot.sandbox.processes import CHANNEL
from bot.slack.payloads import APPROVE, REASON_BLOCK, REJECT, REJECT_CALLBACK
from tests.kit.e2e import action_ids, text_of
from tests.kit.scenario import Scenario, running_scenario

ALICE, BOB, DAVE = "U0ALICE", "U0BOB", "U0DAVE"
"""Alice and Bob are @approvers; Dave is not."""


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


@pytest.fixture(params=["http", "socket"])
async def over(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Scenario]:
    """`bot` over each transport: signed HTTP, then Socket Mode through the real
    `AsyncSocketModeHandler` (the core flows take it; hand-signed requests are HTTP's)."""
    async with running_scenario(tmp_path, transport=request.param) as scenario:
        yield scenario


def actions_of(blocks: list[dict[str, Any]]) -> list[str]:
    return action_ids({"blocks": blocks})


async def test_approve_is_recorded_before_the_ack_and_the_card_is_updated(over: Scenario) -> None:
    approval, card = await over.refund("C-approve")
    assert APPROVE in actions_of(card.blocks)
    updates_before = len(over.slack.calls_to("chat.update"))

    started = time.monotonic()
    answer = await over.slack.click("alice", CHANNEL, card.ts, APPROVE)
    acked_in = time.monotonic() - started

    assert answer.status == 200 and acked_in < limits.ACK_DEADLINE
    # committed before the ack: the approval is decided as the answer arrives
    decided = await over.signoff.get(approval.id)
    assert decided.status == "approved"
    assert [(v.user_id, v.decision) for v in decided.votes] == [(ALICE, "approve")]
    assert over.kicks >= 1

    await over.settle()
    updates = over.slack.calls_to("chat.update")[updates_before:]
    assert [(c.params["channel"], c.params["ts"]) for c in updates] == [(CHANNEL, card.ts)]
    updated = over.card(decided)
    assert updated.edited_ts is not None and actions_of(updated.blocks) == []
    assert "<@U0ALICE>" in text_of(updated.blocks)
    assert (await over.signoff.run_info(approval.thread_id) or {})["status"] == "completed"


@pytest.mark.parametrize("how", ["forged signature", "another app's secret", "stale timestamp"])
async def test_a_click_not_signed_by_slack_is_refused_and_changes_nothing(
    bot: Scenario, how: str
) -> None:
    approval, card = await bot.refund("C-forged")
    calls_before = len(bot.slack.calls)
    request = bot.click_request(ALICE, card, APPROVE)

    if how == "forged signature":
        answer = await bot.send(request, signature="v0=" + "0" * 64)
    elif how == "another app's secret":
        answer = await bot.send(request, signer=SlackSigner("another-apps-signing-secret"))
    else:
        answer = await bot.send(request, timestamp=int(time.time()) - limits.SIGNATURE_MAX_AGE - 60)

    assert answer.status == 401
    await bot.settle()
    unchanged = await bot.signoff.get(approval.id)
    assert (unchanged.status, unchanged.votes) == ("pending", ())
    assert bot.slack.calls[calls_before:] == []  # no update, no ephemeral, nothing
    assert bot.kicks == 0
    assert APPROVE in actions_of(bot.card(unchanged).blocks)


async def test_a_click_by_someone_who_may_not_decide_gets_an_ephemeral_refusal(
    over: Scenario,
) -> None:
    approval, card = await over.refund("C-dave")
    updates_before = len(over.slack.calls_to("chat.update"))

    answer = await over.slack.click("dave", CHANNEL, card.ts, APPROVE)

    assert answer.status == 200
    [refusal] = await over.slack.wait_for(lambda s: s.workspace.ephemerals.get(DAVE))
    assert refusal.channel == CHANNEL and refusal.source == "chat.postEphemeral"
    assert "not an approver of *Refund 42.50 to C-dave*" in refusal.text
    assert "Ask @approvers. Nothing was changed." in refusal.text
    await over.settle()
    unchanged = await over.signoff.get(approval.id)
    assert (unchanged.status, unchanged.votes) == ("pending", ())
    assert over.slack.calls_to("chat.update")[updates_before:] == []
    assert set(over.slack.workspace.ephemerals) == {DAVE}
    assert APPROVE in actions_of(over.card(unchanged).blocks)


async def test_reject_opens_the_reason_modal_whose_submission_records_the_rejection(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-reject")
    trigger = bot.slack.triggers.issue(BOB)

    answer = await bot.send(bot.click_request(BOB, card, REJECT, trigger_id=trigger))

    assert answer.status == 200
    [opened] = await bot.slack.wait_for(lambda s: s.calls_to("views.open"))
    assert opened.params["trigger_id"] == trigger and opened.status == 200
    [modal] = bot.slack.workspace.views[BOB]
    assert modal.spec["callback_id"] == REJECT_CALLBACK
    assert (await bot.signoff.get(approval.id)).status == "pending"  # opening decides nothing

    done = await bot.slack.submit("bob", {REASON_BLOCK: "wrong customer"})

    assert done.response is not None and done.response.status == 200
    assert done.errors == {} and done.view is None  # the modal closed
    rejected = await bot.signoff.get(approval.id)
    assert rejected.status == "rejected"
    assert [(v.user_id, v.decision, v.note) for v in rejected.votes] == [
        (BOB, "reject", "wrong customer")
    ]
    await bot.settle()
    [update] = [c for c in bot.slack.calls_to("chat.update") if c.params["ts"] == card.ts]
    assert update.status == 200
    updated = bot.card(rejected)
    assert actions_of(updated.blocks) == [] and "wrong customer" in text_of(updated.blocks)


async def test_agent_status_answers_with_what_waits_on_the_approver(over: Scenario) -> None:
    await over.refund("C-status")

    answer = await over.slack.command("alice", "approvals", "status")

    assert answer.status == 200 and not answer.late
    # acked at once; the list follows through the response_url
    [shown] = await over.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE))
    assert shown.source == "response_url" and shown.channel == CHANNEL
    assert "*Refund 42.50 to C-status*" in text_of(shown.blocks)
    assert shown.text == "1 waiting on you, 0 waiting on others"
    assert over.slack.calls_to("chat.postMessage")[1:] == []  # nothing posted for all to see


async def test_agent_run_reads_values_as_typed_though_slack_html_escapes_them(
    over: Scenario,
) -> None:
    answer = await over.slack.command(
        "carol", CHANNEL, "run refund customer_id=c-amp order_id=o-1 amount=3 reason='R&D <2>'"
    )
    assert answer.status == 200
    for _ in range(100):  # the run starts after the ack
        await over.settle()
        if await over.signoff.pending():
            break
        await asyncio.sleep(0.05)
    (approval,) = [
        a for a in await over.signoff.pending() if a.payload.get("customer_id") == "c-amp"
    ]
    assert approval.payload["reason"] == "R&D <2>"


async def test_approve_on_a_card_decided_elsewhere_since_this_bot_read_it_is_refused_and_audited(
    over: Scenario,
) -> None:
    """The bot judges an Approve click on the approval as it last read it (posting its card)
    only as far as the vote's compare-and-set on the database confirms it: decided meanwhile
    by another replica, the click is refused, says why, records no vote, and is audited."""
    import json

    import sqlalchemy as sa

    from bot.approvals import tables as t

    approval, card = await over.refund("C-elsewhere")
    known = over.signoff.last_read(approval.id)
    assert known is not None and known.status == "pending"  # what this bot read
    # another replica on the same database: its rejection leaves this bot's copy stale
    await over.signoff.decisions.vote(approval.id, ALICE, False, note="duplicate order")
    assert over.signoff.last_read(approval.id) == known

    answer = await over.slack.click("bob", CHANNEL, card.ts, APPROVE)

    assert answer.status == 200
    [refusal] = await over.slack.wait_for(lambda s: s.workspace.ephemerals.get(BOB))
    assert "This was already rejected by <@U0ALICE>" in refusal.text, refusal.text
    decided = await over.signoff.get(approval.id)
    assert decided.status == "rejected"
    assert [(v.user_id, v.decision) for v in decided.votes] == [(ALICE, "reject")]
    async with over.signoff.db.read() as conn:
        refused = await conn.execute(
            sa.select(t.audit_inbox.c.actor, t.audit_inbox.c.data).where(
                t.audit_inbox.c.kind == "vote_refused"
            )
        )
        assert [(actor, json.loads(data)["refusal"]) for actor, data in refused] == [
            (BOB, "already_decided")
        ]
