"""The bot end to end: `signoff run` as a real process in HTTP mode, the fake Slack as another,
every Slack request signed and sent over HTTP (through the front door, as Bolt's own scenario
tests do). The core flows (approve, reject, edit, `/agent`, Home) run over Socket Mode too
(`over`): a second bot, `signoff run` with an `xapp-` token, gets them as envelopes on its
WebSocket, through the real `AsyncSocketModeHandler`.

One bot serves the whole module (SQLite, a sweep every 0.3 s); each test starts runs of its own,
told apart by the customer or vendor it names, and waits on the fake's workspace, never sleeps.
The restart and PostgreSQL cases, which need processes of their own, are in
`test_e2e_restart.py` and `test_e2e_postgres.py`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.interactions import REQUIRED_FIELD
from bot.sandbox.processes import APP_TOKEN
from bot.slack import messages
from bot.slack.payloads import (
    APPROVE,
    EDIT,
    EDIT_CALLBACK,
    PAYLOAD,
    PAYLOAD_CALLBACK,
    REJECT,
    REJECT_CALLBACK,
)
from tests.kit.e2e import (
    ALICE,
    API_TOKEN,
    BOB,
    CAROL,
    CHANNEL,
    DAVE,
    E2E,
    JSON,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    action_ids,
    card_of,
    cards_of,
    in_channel,
    messages_of,
    sqlite_url,
    text_of,
    write_policy,
)

POLICY = """
[workflows.refund]
starters = ["U0CAROL", "@approvers"]

[workflows.vendor_payment]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "1h"

[actions.approve_invoice]
title = "Approve a vendor invoice"
tier = "medium"
approvers = ["@approvers"]
expire_after = "2s"

[actions.release_payment]
title = "Release a vendor payment"
tier = "high"
approvers = ["@approvers"]
expire_after = "1h"
"""
"""Approvers are the Slack user group @approvers (alice, bob), resolved through the fake."""


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    directory = tmp_path_factory.mktemp("e2e")
    process = BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, POLICY),
        SIGNOFF_SWEEP_INTERVAL="0.3",
    )  # fmt: skip
    yield process
    process.stop()


@pytest.fixture(scope="module")
def socket_bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    """The module's bot in Socket Mode, on a database of its own (see `over`)."""
    directory = tmp_path_factory.mktemp("e2e-socket")
    process = BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, POLICY),
        app_token=APP_TOKEN, SIGNOFF_SWEEP_INTERVAL="0.3",
    )  # fmt: skip
    yield process
    process.stop()


def header(card: dict) -> str:
    return card["blocks"][0]["text"]["text"]


# ---- the approve flow ---------------------------------------------------------------------------


async def test_a_click_approves_updates_the_card_in_place_runs_the_refund_once_and_tells_the_thread(
    over: E2E,
) -> None:
    run = await over.refund("cust-approve", 42.5)
    assert header(run.card) == "🟠 Refund 42.50 to cust-approve"
    assert action_ids(run.card) == [APPROVE, REJECT, EDIT, PAYLOAD]
    assert "*amount*\n42.5" in text_of(run.card)

    answer = await over.slack.click(BOB, CHANNEL, run.card["ts"], APPROVE)
    assert (answer["status"], answer["body"]) == (200, "")

    card = await over.decided_card(run.approval_id)
    assert card["ts"] == run.card["ts"]  # updated in place, not posted again
    decided_at = over.db.approval(run.approval_id)["decided_at"]
    assert messages.decided_line("approved", [BOB], decided_at) in text_of(card)
    done = messages.run_completed("refund", run.thread_id, "refunded 42.50 to cust-approve")
    replies = await over.replies(
        run.card, lambda r: done in r, "the completion in the card's thread"
    )
    assert replies == [messages.run_approved("Refund 42.50 to cust-approve", [BOB]), done]
    # the channel's notice is that reply, broadcast: one message, in the thread and the channel
    state = await over.slack.state()
    (notice,) = [m for m in in_channel(state) if m["text"] == done]
    assert (notice["subtype"], notice["thread_ts"]) == ("thread_broadcast", run.card["ts"])
    assert [m["text"] for m in messages_of(state)].count(done) == 1

    refunds = over.db.effects(run.thread_id)
    assert [(e["kind"], e["data"]["amount"], e["data"]["customer_id"]) for e in refunds] == [
        ("refund", 42.5, "cust-approve")
    ]
    assert over.db.run(run.thread_id)["status"] == "completed"


async def test_the_full_payload_button_opens_a_modal_for_anyone(e2e: E2E) -> None:
    run = await e2e.refund("cust-payload")
    answer = await e2e.slack.click(DAVE, CHANNEL, run.card["ts"], PAYLOAD)
    assert answer["status"] == 200
    # this run's modal: one an earlier module opened for Dave may still be open in the fake
    state = await e2e.wait(
        lambda s: '"customer_id": "cust-payload"' in text_of(s["views"].get(DAVE, [])[-1:]),
        "the payload modal",
    )
    modal = state["views"][DAVE][-1]
    assert modal["callback_id"] == PAYLOAD_CALLBACK
    assert e2e.db.approval(run.approval_id)["status"] == "pending"


# ---- reject and edit through modals -------------------------------------------------------------


async def test_reject_asks_for_a_reason_in_a_modal_and_the_rejection_is_told(over: E2E) -> None:
    run = await over.refund("cust-reject")
    answer = await over.slack.click(ALICE, CHANNEL, run.card["ts"], REJECT)
    assert answer["status"] == 200
    state = await over.wait(lambda s: s["views"].get(ALICE), "the reject modal")
    assert state["views"][ALICE][-1]["callback_id"] == REJECT_CALLBACK

    empty = await over.slack.submit(ALICE, {"reason": ""})  # Slack's client refuses it
    assert (empty["response"], empty["errors"]) == (None, {"reason": REQUIRED_FIELD})
    blank = await over.slack.submit(ALICE, {"reason": "   "})  # the client lets spaces through
    assert blank["response"]["status"] == 200
    assert blank["errors"] == {"reason": messages.reason_required()}
    assert over.db.approval(run.approval_id)["status"] == "pending"

    reason = "Customer was refunded by phone"
    done = await over.slack.submit(ALICE, {"reason": reason})
    assert (done["response"]["status"], done["errors"], done["view"]) == (
        200,
        {},
        None,
    )  # the modal closed

    card = await over.decided_card(run.approval_id)
    assert messages.note_line(reason) in text_of(card)
    assert "*Rejected* by <@U0ALICE>" in text_of(card)
    outcome = messages.run_completed(
        "refund", run.thread_id, f"declined (rejected): {reason}", declined="rejected"
    )
    replies = await over.replies(run.card, lambda r: outcome in r, "the rejection's outcome")
    assert replies == [
        messages.run_rejected("Refund 42.50 to cust-reject", [ALICE], reason),
        outcome,
    ]
    assert [e["kind"] for e in over.db.effects(run.thread_id)] == ["email"]  # no refund
    await over.wait(  # a thread reply does not notify the requester: a DM does, with the card
        lambda s: any(
            m["text"].startswith(
                messages.run_rejected("Refund 42.50 to cust-reject", [ALICE], reason)
            )
            and "|See the card>" in m["text"]
            for m in messages_of(s, "D0CAROL")
        ),
        "the requester's DM",
    )


async def test_edit_then_approve_runs_the_edited_values(over: E2E) -> None:
    run = await over.refund("cust-edit", 80.0)
    await over.slack.click(BOB, CHANNEL, run.card["ts"], EDIT)
    state = await over.wait(lambda s: s["views"].get(BOB), "the edit modal")
    modal = state["views"][BOB][-1]
    assert modal["callback_id"] == EDIT_CALLBACK
    inputs = {
        b["block_id"]: b["element"].get("initial_value")
        for b in modal["blocks"]
        if b["type"] == "input"
    }
    assert inputs == {"edit:amount": "80.0", "edit:reason": "damaged in transit", "note": None}

    wrong = await over.slack.submit(
        BOB, {"edit:amount": "lots", "edit:reason": "damaged in transit"}
    )
    assert set(wrong["errors"]) == {"edit:amount"}
    assert over.db.approval(run.approval_id)["status"] == "pending"

    edited = {
        "edit:amount": "55.5",
        "edit:reason": "partial: one item kept",
        "note": "agreed by phone",
    }
    done = await over.slack.submit(BOB, edited)
    assert (done["errors"], done["view"]) == ({}, None)

    card = await over.decided_card(run.approval_id)
    assert "*Edited before approval:*" in text_of(card)
    outcome = messages.run_completed("refund", run.thread_id, "refunded 55.50 to cust-edit")
    await over.replies(run.card, lambda r: outcome in r, "the edited refund's outcome")
    (refund,) = over.db.effects(run.thread_id, "refund")
    assert (refund["data"]["amount"], refund["data"]["reason"]) == (55.5, "partial: one item kept")


# ---- refusals -----------------------------------------------------------------------------------


async def test_non_approver_and_self_approval_clicks_get_ephemeral_refusals_and_change_nothing(
    e2e: E2E,
) -> None:
    run = await e2e.refund("cust-refused", requester=ALICE)  # alice is a starter and an approver
    title = "Refund 42.50 to cust-refused"
    dave_before, alice_before = len(await e2e.ephemerals(DAVE)), len(await e2e.ephemerals(ALICE))
    dave_views = len((await e2e.slack.state())["views"].get(DAVE, []))

    assert (await e2e.slack.click(DAVE, CHANNEL, run.card["ts"], APPROVE))["status"] == 200
    assert (await e2e.slack.click(DAVE, CHANNEL, run.card["ts"], REJECT))["status"] == 200
    assert (await e2e.slack.click(ALICE, CHANNEL, run.card["ts"], APPROVE))["status"] == 200

    to_dave = await e2e.new_ephemerals(DAVE, dave_before, 2)
    assert [e["text"] for e in to_dave] == [messages.not_approver(title, ["@approvers"])] * 2
    assert {e["channel"] for e in to_dave} == {CHANNEL}
    (to_alice,) = await e2e.new_ephemerals(ALICE, alice_before)
    assert to_alice["text"] == messages.own_request(["@approvers"])

    state = await e2e.slack.state()
    assert len(state["views"].get(DAVE, [])) == dave_views  # no reject modal for a non-approver
    card = card_of(state, run.approval_id)
    assert card is not None and "edited" not in card and action_ids(card) == action_ids(run.card)
    approval = e2e.db.approval(run.approval_id)
    assert (approval["status"], approval["version"]) == ("pending", 0)
    assert e2e.db.effects(run.thread_id) == []


async def test_a_double_click_runs_it_once_and_the_second_is_told_it_was_decided(e2e: E2E) -> None:
    run = await e2e.refund("cust-double")
    before = len(await e2e.ephemerals(BOB))
    assert (await e2e.slack.click(BOB, CHANNEL, run.card["ts"], APPROVE))["status"] == 200
    again = await e2e.signed_click(
        BOB, run.card, APPROVE
    )  # from the card as it was before the update
    assert again.status == 200

    (told,) = await e2e.new_ephemerals(BOB, before)
    decided_at = e2e.db.approval(run.approval_id)["decided_at"]
    assert told["text"] == messages.already_decided("approved", [BOB], decided_at)
    outcome = messages.run_completed("refund", run.thread_id, "refunded 42.50 to cust-double")
    await e2e.replies(run.card, lambda r: outcome in r, "the refund's outcome")
    assert len(e2e.db.effects(run.thread_id, "refund")) == 1


async def test_two_concurrent_clicks_run_it_once(e2e: E2E) -> None:
    run = await e2e.refund("cust-race")
    before = {u: len(await e2e.ephemerals(u)) for u in (ALICE, BOB)}
    answers = await asyncio.gather(
        e2e.slack.click(ALICE, CHANNEL, run.card["ts"], APPROVE),
        e2e.slack.click(BOB, CHANNEL, run.card["ts"], APPROVE),
    )
    assert [a["status"] for a in answers] == [200, 200]

    card = await e2e.decided_card(run.approval_id)
    winners = re.findall(r"\*Approved\* by <@(U0[A-Z]+)>", text_of(card))
    assert len(winners) == 1 and winners[0] in (ALICE, BOB)
    loser = BOB if winners[0] == ALICE else ALICE
    (told,) = await e2e.new_ephemerals(loser, before[loser])
    assert told["text"].startswith("ℹ️ This was already approved by")
    assert len(await e2e.ephemerals(winners[0])) == before[winners[0]]
    outcome = messages.run_completed("refund", run.thread_id, "refunded 42.50 to cust-race")
    await e2e.replies(run.card, lambda r: outcome in r, "the refund's outcome")
    assert len(e2e.db.effects(run.thread_id, "refund")) == 1


async def test_a_bad_signature_or_a_stale_timestamp_gets_401_and_changes_nothing(e2e: E2E) -> None:
    run = await e2e.refund("cust-forged")
    before = len(await e2e.ephemerals(BOB))
    forged = await e2e.signed_click(BOB, run.card, APPROVE, signature="v0=" + "0" * 64)
    stale = await e2e.signed_click(BOB, run.card, APPROVE, timestamp=int(time.time()) - 6 * 60)
    assert (forged.status, stale.status) == (401, 401)
    approval = e2e.db.approval(run.approval_id)
    assert (approval["status"], approval["version"]) == ("pending", 0)
    assert len(await e2e.ephemerals(BOB)) == before

    fine = await e2e.signed_click(BOB, run.card, APPROVE)  # the same click, signed now, works
    assert fine.status == 200
    await e2e.decided_card(run.approval_id)


# ---- /agent and App Home ------------------------------------------------------------------------


async def test_agent_status_lists_what_is_pending_and_status_thread_and_help_answer(
    over: E2E,
) -> None:
    run = await over.refund("cust-status")
    title = "Refund 42.50 to cust-status"

    before = len(await over.ephemerals(ALICE))
    answer = await over.slack.command(ALICE, CHANNEL, "status")
    assert answer["status"] == 200 and not answer.get("late")
    # acked at once (nothing asked of Slack first); the list follows through the response_url
    [shown] = await over.new_ephemerals(ALICE, before)
    assert (shown["source"], shown["channel"]) == ("response_url", CHANNEL)
    mine = text_of(shown["blocks"])
    assert mine.startswith("*Waiting on you*"), mine
    assert title in mine

    before = len(await over.ephemerals(CAROL))
    await over.slack.command(CAROL, CHANNEL, "status")  # carol asked for it
    [theirs] = await over.new_ephemerals(CAROL, before)
    assert title in text_of(theirs["blocks"]) and "Waiting on you" not in text_of(theirs["blocks"])

    thread = (await over.slack.command(BOB, CHANNEL, f"status {run.thread_id}"))["json"]
    text = text_of(thread["blocks"])
    assert run.thread_id in text and "refund" in text and "paused" in text.lower()
    assert title in text

    for line in ("help", "frobnicate"):
        help_ = (await over.slack.command(DAVE, CHANNEL, line))["json"]
        assert help_["response_type"] == "ephemeral"
        assert "/agent status" in text_of(help_["blocks"])


async def test_agent_run_starts_a_run_for_a_starter_and_refuses_anyone_else(over: E2E) -> None:
    line = "run refund customer_id=cust-slash order_id=o-slash amount=12.5 reason='wrong size'"
    carol_before, dave_before = len(await over.ephemerals(CAROL)), len(await over.ephemerals(DAVE))
    runs_before = over.db.runs_count()

    # One answer each, the outcome itself: no "Starting…" left standing above it.
    answer = await over.slack.command(DAVE, CHANNEL, line)
    assert not (answer["json"] or {}).get("text")  # an empty ack: the outcome is the one message
    told = await over.new_ephemerals(DAVE, dave_before, 1)
    assert [e["text"] for e in told] == [messages.start_refused("refund")]
    assert over.db.runs_count() == runs_before

    await over.slack.command(CAROL, CHANNEL, line)
    (told_carol,) = await over.new_ephemerals(CAROL, carol_before, 1)
    started = re.fullmatch(
        r"⏸️ Started `refund` as `(refund-[0-9a-f]+)`: waiting for approval in the channel\.",
        told_carol["text"],
    )
    assert started is not None, told_carol["text"]
    thread_id = started.group(1)
    assert over.db.run(thread_id)["requester"] == CAROL
    # This run's card, found by its approval: the module's other bot shares the channel and
    # posted the same title when this test ran over the other transport.
    (approval_id,) = over.db.approvals_of(thread_id)
    card = await over.card(approval_id, what="the card of the run started with /agent run")
    assert header(card) == "🟠 Refund 12.50 to cust-slash"
    assert action_ids(card) == [APPROVE, REJECT, EDIT, PAYLOAD]
    assert "*reason*\nwrong size" in text_of(card)
    await over.idle()  # nothing left to post: the card is there once
    assert [m["ts"] for m in cards_of(await over.slack.state(), approval_id)] == [card["ts"]]

    # without the amount: told what is missing and how to ask; nothing is started
    carol_before, runs_before = len(await over.ephemerals(CAROL)), over.db.runs_count()
    await over.slack.command(CAROL, CHANNEL, "run refund customer_id=cust-short")
    told = [e["text"] for e in await over.new_ephemerals(CAROL, carol_before, 1)]
    assert (
        messages.missing_inputs(
            "refund", ["amount"], ["customer_id", "order_id", "amount", "reason"]
        )
        in told
    )
    assert "`/agent run refund customer_id=… order_id=… amount=… reason=…`" in "".join(told)
    assert over.db.runs_count() == runs_before


async def quiet(over: E2E, request: pytest.FixtureRequest) -> None:
    """Both of the module's bots idle (they share the fake): a fault injected now meets this
    test's call, not a post the other bot still had to make."""
    for name in ("bot_db", "socket_bot_db"):
        db: BotDatabase = request.getfixturevalue(name)
        await E2E(over.slack, over.bot, db, over.http).idle()


def started_thread(told: JSON) -> str:
    found = re.search(r"Started `refund` as `(refund-[0-9a-f]+)`", told["text"])
    assert found is not None, told["text"]
    return found.group(1)


async def test_agent_run_sent_twice_with_one_trigger_starts_one_run_and_posts_one_card(
    over: E2E,
) -> None:
    """The same command delivered again (a client or a proxy that resends it; Slack gives each
    command its own trigger_id): the second is told the run was started, nothing is doubled."""
    line = "run refund customer_id=cust-twice order_id=o-twice amount=9 reason=resent"
    carol_before, runs_before = len(await over.ephemerals(CAROL)), over.db.runs_count()
    trigger = await over.slack.trigger_id(CAROL)
    first = await over.slack.command(CAROL, CHANNEL, line, trigger_id=trigger)
    (started,) = await over.new_ephemerals(CAROL, carol_before, 1)
    thread_id = started_thread(started)
    second = await over.slack.command(CAROL, CHANNEL, line, trigger_id=trigger)
    assert (first["status"], second["status"]) == (200, 200)
    told = await over.new_ephemerals(CAROL, carol_before, 2)
    assert told[1]["text"] == messages.run_already_started("refund", thread_id)
    assert over.db.runs_count() == runs_before + 1

    (approval_id,) = over.db.approvals_of(thread_id)
    card = await over.card(approval_id)
    await over.idle()
    assert [m["ts"] for m in cards_of(await over.slack.state(), approval_id)] == [card["ts"]]


async def test_a_card_whose_post_lost_slacks_answer_is_posted_once(
    over: E2E, request: pytest.FixtureRequest
) -> None:
    """Slack posts the card, then the connection drops before its answer: the bot cannot tell,
    and its retry looks in the channel for the card before posting it again."""
    await quiet(over, request)
    since = len(await over.slack.calls())
    carol_before = len(await over.ephemerals(CAROL))
    await over.slack.lose_next("chat.postMessage")
    line = "run refund customer_id=cust-lost order_id=o-lost amount=7 reason=lost"
    await over.slack.command(CAROL, CHANNEL, line)
    (started,) = await over.new_ephemerals(CAROL, carol_before, 1)
    (approval_id,) = over.db.approvals_of(started_thread(started))
    card = await over.card(approval_id)
    await over.idle()

    posts = await over.slack.calls("chat.postMessage", since=since)
    lost = [c for c in posts if c.get("lost")]
    assert len(lost) == 1 and f"`{approval_id}`" in json.dumps(lost[0]["params"]), posts
    assert [m["ts"] for m in cards_of(await over.slack.state(), approval_id)] == [card["ts"]]
    assert over.db.approval(approval_id)["message_ts"] == card["ts"]


async def test_app_home_publishes_the_users_pending_approvals(over: E2E) -> None:
    # a customer of this bot's own: the other transport's bot published Bob's Home in this
    # fake before, and a title both share would be found in that view
    customer = f"cust-home-{over.bot.port}"
    await over.refund(customer)
    title = f"Refund 42.50 to {customer}"
    for user in (BOB, DAVE):
        assert (await over.slack.open_home(user))["status"] == 200
    # Bob's Home may already hold an earlier view (it is refreshed after each of his decisions):
    # wait for the one that lists the new request.
    state = await over.wait(
        lambda s: BOB in s["home"] and title in text_of(s["home"][BOB]) and DAVE in s["home"],
        "both Home tabs published, Bob's listing the new request",
    )
    assert title not in text_of(state["home"][DAVE])  # dave may decide nothing


# ---- the sweep, Slack's rate limit ------------------------------------------------------------


async def test_the_sweep_expires_a_card_and_removes_its_buttons(e2e: E2E) -> None:
    started = time.time()
    run = await e2e.start(
        "vendor_payment", {"vendor": "vendor-expiry", "invoice_id": "inv-1", "amount": 300}
    )
    assert action_ids(run.card) == [
        APPROVE,
        REJECT,
        PAYLOAD,
    ]  # approve_invoice has no editable field

    card = await e2e.card(run.approval_id, lambda c: not action_ids(c), "the expired card")
    approval = e2e.db.approval(run.approval_id)
    assert approval["status"] == "expired" and approval["decided_at"] - started >= 2
    assert messages.expired_line(approval["decided_at"], False) in text_of(card)
    told = messages.run_expired("Invoice inv-1 from vendor-expiry", False)
    await e2e.replies(run.card, lambda r: told in r, "the expiry in the card's thread")
    await e2e.wait(
        lambda s: any(m["text"].startswith(told) for m in messages_of(s, "D0CAROL")),
        "the requester's DM",
    )


async def test_a_429_from_slack_is_retried_after_retry_after_and_the_card_still_arrives(
    e2e: E2E,
) -> None:
    await e2e.idle()  # nothing else in flight could take the fault
    since = len(await e2e.slack.calls())
    await e2e.slack.fail_next("chat.postMessage", status=429, retry_after=1)
    run = await e2e.refund("cust-429")
    assert action_ids(run.card) == [APPROVE, REJECT, EDIT, PAYLOAD]

    posts = await e2e.slack.calls("chat.postMessage", since=since)
    assert [p["status"] for p in posts[:2]] == [429, 200]
    assert posts[1]["time"] - posts[0]["time"] >= 0.9  # Retry-After honoured
    cards = [
        m for m in messages_of(await e2e.slack.state()) if f"`{run.approval_id}`" in text_of(m)
    ]
    assert len(cards) == 1  # posted once


# ---- health, metrics, the runs API ------------------------------------------------------------


async def test_healthz_answers_and_metrics_count_approvals_by_status(e2e: E2E) -> None:
    status, body = await e2e.api("GET", "/healthz", token=None)
    assert status == 200 and body["ok"] is True
    await e2e.refund("cust-metrics")

    status, text = await e2e.api("GET", "/metrics", token=None)
    assert status == 200
    shown = {
        m.group(1): int(float(m.group(2)))
        for m in re.finditer(r'^signoff_approvals\{status="(\w+)"\} (\S+)$', text, re.MULTILINE)
    }
    counts = e2e.db.approval_counts()
    assert shown == {
        s: counts.get(s, 0) for s in ("pending", "approved", "rejected", "expired", "cancelled")
    }
    assert shown["pending"] >= 1
    assert re.search(r'^signoff_slack_requests_total\{status="200"\} [1-9]', text, re.MULTILINE)
    assert "signoff_decision_latency_seconds_bucket" in text


async def test_a_card_slack_refuses_for_good_is_counted_in_metrics_by_its_error(e2e: E2E) -> None:
    def given_up(text: str) -> int:
        found = re.search(
            r'^signoff_slack_undeliverable_total\{error="channel_not_found"\} (\S+)$',
            text,
            re.MULTILINE,
        )
        return int(float(found.group(1))) if found else 0

    before = given_up((await e2e.api("GET", "/metrics", token=None))[1])
    await e2e.idle()  # nothing else in flight could take the fault
    await e2e.slack.fail_next("chat.postMessage", error="channel_not_found")
    refund = {"customer_id": "cust-given-up", "amount": 3.5, "reason": "damaged"}
    run = await e2e.start("refund", refund, card=False)
    await e2e.idle()
    assert e2e.db.approval(run.approval_id)["message_ts"] is None
    assert not e2e.db.jobs(thread_id=run.thread_id, undone=True)  # given up, not retried
    assert given_up((await e2e.api("GET", "/metrics", token=None))[1]) == before + 1


async def test_starting_a_run_over_http_needs_the_bearer_token(e2e: E2E) -> None:
    before = e2e.db.runs_count()
    body = {
        "workflow": "refund",
        "input": {"customer_id": "cust-api", "amount": 1},
        "requester": CAROL,
    }
    for token in (None, "wrong", API_TOKEN[:-1]):
        status, answer = await e2e.api("POST", "/api/runs", token=token, body=body)
        assert (status, answer["ok"]) == (401, False)
        assert "Bearer" in answer["error"]
    assert e2e.db.runs_count() == before


async def test_slack_s_unsigned_ssl_check_gets_200_and_an_unsigned_click_still_401(
    e2e: E2E,
) -> None:
    answer = await e2e.slack.ssl_check()
    assert answer["status"] == 200
    run = await e2e.refund("cust-ssl")
    forged = await e2e.signed_click(BOB, run.card, APPROVE, signature="v0=" + "0" * 64)
    assert forged.status == 401


async def test_a_click_that_reached_the_bot_too_slowly_is_answered_busy_and_records_nothing(
    e2e: E2E,
) -> None:
    """A click's budget counts from when its request arrived, not from when its handler ran.
    Its body trickles in over more than the budget (as a request queued behind a starved
    process, or a slow network, would reach the handler): the click is answered, the person is
    told nothing was recorded, and no vote is; clicking again approves."""
    from bot.slack._listener import CLICK_WAIT

    run = await e2e.refund("cust-slow-click")
    request = await e2e.slack.click_request(BOB, run.card, APPROVE)
    headers = e2e.signer.headers(request)
    told_before = len(await e2e.ephemerals(BOB))

    async def trickle() -> AsyncIterator[bytes]:
        body = request.body.encode()
        yield body[:10]
        await asyncio.sleep(CLICK_WAIT + 0.5)
        yield body[10:]

    async with e2e.http.post(e2e.bot.events_url, data=trickle(), headers=headers) as answer:
        assert answer.status == 200
    (told,) = await e2e.new_ephemerals(BOB, told_before)
    assert "nothing was recorded" in told["text"]
    assert e2e.db.approval(run.approval_id)["status"] == "pending"
    votes = e2e.db.rows(sa.select(t.votes).where(t.votes.c.approval_id == run.approval_id))
    assert votes == []

    again = await e2e.slack.click(BOB, CHANNEL, run.card["ts"], APPROVE)
    assert again["status"] == 200
    await e2e.decided_card(run.approval_id)
    assert e2e.db.approval(run.approval_id)["status"] == "approved"


@pytest.mark.parametrize("waited", [0, 5])
async def test_a_click_slack_signed_long_before_it_reached_the_bot_records_nothing(
    e2e: E2E, waited: int
) -> None:
    """Time before the route sees a click (the accept queue of a starved process) is counted
    by its signed timestamp: a click Slack sent 5 s ago is answered busy and records nothing
    (Slack gave up on it); one signed this second, or a second or so off by clock skew, is
    not made busy by it."""
    run = await e2e.refund(f"cust-queued-{waited}")
    request = await e2e.slack.click_request(BOB, run.card, APPROVE)
    headers = e2e.signer.headers(request, timestamp=int(time.time()) - waited - 1)
    told_before = len(await e2e.ephemerals(BOB))
    async with e2e.http.post(e2e.bot.events_url, data=request.body, headers=headers) as answer:
        assert answer.status == 200
    if waited:
        (told,) = await e2e.new_ephemerals(BOB, told_before)
        assert "nothing was recorded" in told["text"]
        assert e2e.db.approval(run.approval_id)["status"] == "pending"
    else:
        await e2e.decided_card(run.approval_id)
        assert e2e.db.approval(run.approval_id)["status"] == "approved"
