"""`/agent run`, `/agent retry`, `/agent cancel` and an unknown verb, as a person sees them:
through the real Bolt app and the Slack stand-in (`tests.kit.scenario`).

- `/agent run` answers once with how the run stands (refused, waiting, approved by a rule): its
  ack is empty (nothing is asked of Slack before it) and the outcome is the one message, through
  the command's response_url; no "Starting…" is left above it.
- A run whose approval was rejected is announced without a green mark.
- A failed run's thread says how to retry or cancel it; approvers of its action and starters of
  its workflow may, others are refused (and audited). Its failure message has Retry and Cancel
  buttons for the same people: a double click retries once, and the message then says who did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from bot.slack import messages
from bot.slack.payloads import APPROVE, REASON_BLOCK, REJECT, RUN_CANCEL, RUN_RETRY
from tests.kit import flows
from tests.kit.e2e import text_of
from tests.kit.scenario import POLICY, Scenario, running_scenario

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"

COMMANDS_POLICY = (
    POLICY
    + """
[[actions.send_refund.auto_approve]]
name = "small refunds"
when = { amount = { le = 5 } }

[workflows.flaky]
path = "tests.approvals.test_run_control:build_flaky"
starters = ["U0CAROL"]
"""
)


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, COMMANDS_POLICY) as scenario:
        yield scenario


def said_to(bot: Scenario, user: str) -> list[tuple[str, str]]:
    """What `user` was shown only to them: (source, text), oldest first."""
    return [(e.source, e.text) for e in bot.slack.workspace.ephemerals.get(user, [])]


def thread_of(bot: Scenario, card_ts: str) -> list[str]:
    """The texts of the replies under a card, oldest first."""
    channel = bot.slack.workspace.channels[CHANNEL]
    return [m.text for m in channel.messages.values() if m.thread_ts == card_ts and m.ts != card_ts]


async def settled(bot: Scenario) -> None:
    """Do every due job, and let the background work of the last request finish."""
    for _ in range(3):
        await bot.settle()
        await asyncio.sleep(0.05)


async def thread_ids(bot: Scenario) -> list[str]:
    async with bot.signoff.db.read() as conn:
        rows = await conn.execute(sa.select(t.runs.c.thread_id).order_by(t.runs.c.created_at))
        return [r[0] for r in rows]


async def test_a_refused_run_is_one_answer_with_no_starting_above_it(bot: Scenario) -> None:
    answer = await bot.slack.command("dave", CHANNEL, "run refund customer_id=c1 amount=10")
    assert answer.status == 200
    await settled(bot)
    assert said_to(bot, DAVE) == [
        (
            "response_url",
            messages.start_refused("refund"),
        )
    ]


async def test_a_run_that_pauses_is_answered_with_where_it_waits(bot: Scenario) -> None:
    await bot.slack.command("carol", CHANNEL, "run refund customer_id=c2 order_id=o-2 amount=42.50")
    await settled(bot)
    (thread_id,) = await thread_ids(bot)
    assert said_to(bot, CAROL) == [
        (
            "response_url",
            f"⏸️ Started `refund` as `{thread_id}`: waiting for approval in the channel.",
        )
    ]


async def test_a_run_a_rule_approved_is_not_announced_as_paused(bot: Scenario) -> None:
    await bot.slack.command("carol", CHANNEL, "run refund customer_id=c3 amount=3")
    await settled(bot)
    (thread_id,) = await thread_ids(bot)
    assert said_to(bot, CAROL) == [
        (
            "response_url",
            (
                f"✅ Started `refund` as `{thread_id}`: approved by the rule “small refunds”; "
                "it goes on now."
            ),
        )
    ]
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"


async def test_an_unknown_verb_says_so_and_lists_the_verbs(bot: Scenario) -> None:
    answer = await bot.slack.command("carol", CHANNEL, "frobnicate now")
    assert answer.status == 200
    ((source, _),) = said_to(bot, CAROL)
    shown = text_of(bot.slack.workspace.ephemerals[CAROL][0].blocks)
    assert source == "command_ack"
    assert "I don't know `/agent frobnicate`. Here is what I can do:" in shown
    for verb in ("status", "run", "retry", "cancel", "help"):
        assert f"`/agent {verb}" in shown, verb


async def test_a_rejected_run_is_announced_without_a_green_mark(bot: Scenario) -> None:
    approval, card = await bot.refund("c-rejected")
    await bot.slack.click("bob", CHANNEL, card.ts, REJECT)
    await bot.slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))  # opens after the ack
    await bot.slack.submit("bob", {REASON_BLOCK: "wrong customer"})
    await settled(bot)
    (ended,) = [r for r in thread_of(bot, card.ts) if "Run `" in r]
    assert ended.startswith(f"❌ Run `{approval.thread_id}` of *refund* ended without its action")
    assert "✅" not in ended


async def failed_flaky(bot: Scenario, tmp_path: Path) -> tuple[str, str, Path]:
    """A flaky refund approved by Alice whose payment failed: (thread, card ts, marker)."""
    marker = tmp_path / "payments-down"
    marker.touch()
    report = await bot.signoff.start(
        "flaky", {"marker": str(marker), "amount": 40.0}, requester=CAROL, channel=CHANNEL
    )
    await bot.settle()
    (approval_id,) = report.approvals
    card = bot.card(await bot.signoff.get(approval_id))
    await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)
    await settled(bot)
    assert (await bot.signoff.run_info(report.thread_id) or {})["status"] == "failed"
    return report.thread_id, card.ts, marker


async def test_a_failed_run_is_retried_from_slack_by_an_approver(
    bot: Scenario, tmp_path: Path
) -> None:
    thread_id, card_ts, marker = await failed_flaky(bot, tmp_path)
    (failed,) = [r for r in thread_of(bot, card_ts) if "failed" in r]
    assert f"`/agent retry {thread_id}` goes on from its last checkpoint" in failed
    assert f"`/agent cancel {thread_id}` stops it" in failed

    # Dave neither approves refunds nor starts this workflow.
    await bot.slack.command("dave", CHANNEL, f"cancel {thread_id}")
    assert said_to(bot, DAVE) == [
        (
            "command_ack",
            (
                f"🚫 signoff refused that: U0DAVE may not cancel run '{thread_id}': only "
                "approvers of its actions and starters of 'flaky' may. Nothing was changed."
            ),
        )
    ]
    async with bot.signoff.db.read() as conn:
        refused = await conn.execute(
            sa.select(t.audit_inbox.c.actor, t.audit_inbox.c.data).where(
                t.audit_inbox.c.kind == "run_control_refused"
            )
        )
        assert [(actor, json.loads(data)) for actor, data in refused] == [
            (DAVE, {"what": "cancel", "workflow": "flaky"})
        ]

    marker.unlink()
    await bot.slack.command("bob", CHANNEL, f"retry {thread_id}")
    assert said_to(bot, BOB)[-1] == (
        "command_ack",
        f"🔄 Retrying `{thread_id}` from its last checkpoint; its thread will say how it goes.",
    )
    await settled(bot)
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"
    replies = thread_of(bot, card_ts)
    assert f"🔄 Run `{thread_id}` of *flaky* was retried by <@{BOB}>: it goes on from its last " \
        "checkpoint." in replies  # fmt: skip
    assert replies[-1].startswith(f"✅ Run `{thread_id}` of *flaky* completed.\npaid 40.0")
    # Once: a second retry is told why not.
    await bot.slack.command("alice", CHANNEL, f"retry {thread_id}")
    assert "is completed; only a run that is failed can be retried" in said_to(bot, ALICE)[-1][1]


async def test_a_paused_run_is_cancelled_from_slack_with_its_card(bot: Scenario) -> None:
    approval, card = await bot.refund("c-cancel")
    await bot.slack.command("carol", CHANNEL, f"cancel {approval.thread_id} duplicate order")
    assert said_to(bot, CAROL)[-1] == (
        "command_ack",
        f"⏹️ Cancelled `{approval.thread_id}` with its 1 pending approval.",
    )
    await settled(bot)
    assert (await bot.signoff.get(approval.id)).status == "cancelled"
    updated = bot.card(approval)
    assert "*Cancelled*" in text_of(updated.blocks)
    assert f"⏹️ Run `{approval.thread_id}` of *refund* was cancelled by <@{CAROL}>: duplicate " \
        "order. It will not run again." in thread_of(bot, card.ts)  # fmt: skip
    await bot.slack.command("carol", CHANNEL, "cancel nope")
    assert said_to(bot, CAROL)[-1][1].startswith("🤷 No run has the thread id `nope`.")


def failure_message(bot: Scenario, card_ts: str) -> object:
    """The failed run's message in its card's thread (the stand-in's copy of it)."""
    channel = bot.slack.workspace.channels[CHANNEL]
    (failed,) = [
        m for m in channel.messages.values() if m.thread_ts == card_ts and "failed:" in m.text
    ]
    return failed


def buttons_of(message: object) -> list[str]:
    blocks = getattr(message, "blocks", None) or []
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def run_control_audit(bot: Scenario, kind: str) -> list[tuple[str, dict[str, object]]]:
    async with bot.signoff.db.read() as conn:
        rows = await conn.execute(
            sa.select(t.audit_inbox.c.actor, t.audit_inbox.c.data).where(
                t.audit_inbox.c.kind == kind
            )
        )
        return [(actor, json.loads(data)) for actor, data in rows]


async def test_the_failure_message_retries_once_from_its_button_for_an_approver(
    bot: Scenario, tmp_path: Path
) -> None:
    thread_id, card_ts, marker = await failed_flaky(bot, tmp_path)
    failed = failure_message(bot, card_ts)
    assert buttons_of(failed) == [RUN_RETRY, RUN_CANCEL]
    # Slack takes no buttons in a reply broadcast to the channel: the reply stays in the thread,
    # and the channel hears of it from a message without buttons that links to it
    assert getattr(failed, "subtype", None) is None
    channel = bot.slack.workspace.channels[CHANNEL]
    (notice,) = [m for m in channel.messages.values() if m.in_channel and "failed:" in m.text]
    assert notice.thread_ts is None and buttons_of(notice) == []
    link = f"/archives/{CHANNEL}/p{failed.ts.replace('.', '')}?thread_ts={card_ts}&cid={CHANNEL}"
    assert notice.text.endswith(f"{link}|Retry or cancel it in the card's thread>")
    assert f"Run `{thread_id}` of *flaky* failed:" in text_of(notice.blocks)

    # Dave neither approves refunds nor starts this workflow: refused, audited, nothing moves.
    answer = await bot.slack.click("dave", CHANNEL, failed.ts, RUN_RETRY)
    assert answer.status == 200
    await settled(bot)
    assert said_to(bot, DAVE)[-1][1] == (
        f"🚫 signoff refused that: U0DAVE may not retry run '{thread_id}': only approvers of its "
        "actions and starters of 'flaky' may. Nothing was changed."
    )
    assert await run_control_audit(bot, "run_control_refused") == [
        (DAVE, {"what": "retry", "workflow": "flaky"})
    ]
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "failed"
    assert buttons_of(failure_message(bot, card_ts)) == [RUN_RETRY, RUN_CANCEL]

    marker.unlink()
    first, second = await asyncio.gather(
        bot.slack.click("bob", CHANNEL, failed.ts, RUN_RETRY),
        bot.slack.click("bob", CHANNEL, failed.ts, RUN_RETRY),
    )  # a double click
    assert (first.status, second.status) == (200, 200)
    await settled(bot)
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "completed"
    assert [actor for actor, _ in await run_control_audit(bot, "run_retried")] == [BOB]
    assert "is running: it was retried already" in said_to(bot, BOB)[-1][1]
    updated = failure_message(bot, card_ts)
    assert buttons_of(updated) == []
    assert text_of(updated.blocks).endswith(f"🔄 Retried by <@{BOB}>.")
    assert f"Run `{thread_id}` of *flaky* failed:" in text_of(updated.blocks)
    assert thread_of(bot, card_ts)[-1].startswith(f"✅ Run `{thread_id}` of *flaky* completed.")


async def test_the_failure_message_cancels_from_its_button_for_a_starter(
    bot: Scenario, tmp_path: Path
) -> None:
    thread_id, card_ts, _ = await failed_flaky(bot, tmp_path)
    failed = failure_message(bot, card_ts)
    answer = await bot.slack.click("carol", CHANNEL, failed.ts, RUN_CANCEL)  # she started it
    assert answer.status == 200
    await settled(bot)
    assert (await bot.signoff.run_info(thread_id) or {})["status"] == "cancelled"
    assert [actor for actor, _ in await run_control_audit(bot, "run_cancelled")] == [CAROL]
    updated = failure_message(bot, card_ts)
    assert buttons_of(updated) == []
    assert text_of(updated.blocks).endswith(f"➖ Cancelled by <@{CAROL}>.")


async def test_a_failure_whose_card_is_elsewhere_is_told_without_a_second_set_of_buttons(
    bot: Scenario, tmp_path: Path
) -> None:
    """The card was posted afresh in the default channel (the bot was out of the run's private
    channel). The run's channel hears of the failure from a message without buttons that links
    to the one in the card's thread that has them: one set of buttons, which says who used it."""
    workspace = bot.slack.workspace
    private = workspace.add_channel("C0PRIVATE", "refunds-private", private=True)
    marker = tmp_path / "payments-down"
    marker.touch()
    report = await bot.signoff.start(
        "flaky", {"marker": str(marker), "amount": 40.0}, requester=CAROL, channel="C0PRIVATE"
    )
    await bot.settle()
    (approval_id,) = report.approvals
    private.is_member = False  # /remove @signoff
    await bot.signoff.vote(approval_id, ALICE, True)
    await bot.signoff.run_jobs(("event",))  # the decision: the card is posted afresh
    moved = await bot.signoff.get(approval_id)
    assert moved.channel == CHANNEL and moved.message_ts is not None
    private.is_member = True  # /invite @signoff
    await settled(bot)
    assert (await bot.signoff.run_info(report.thread_id) or {})["status"] == "failed"

    failed = failure_message(bot, moved.message_ts)
    assert buttons_of(failed) == [RUN_RETRY, RUN_CANCEL]
    (notice,) = [m for m in private.messages.values() if "failed:" in m.text]
    assert notice.thread_ts is None and buttons_of(notice) == []
    link = f"/archives/{CHANNEL}/p{failed.ts.replace('.', '')}?thread_ts={moved.message_ts}"
    assert f"{link}&cid={CHANNEL}|Retry or cancel it in the card's thread>" in notice.text


CROWDING_POLICY = (
    POLICY
    + """
[workflows.crowding]
path = "tests.kit.flows:build_crowding"
starters = ["U0CAROL"]
"""
)


async def test_a_run_handed_over_when_the_database_was_full_says_it_goes_on_and_not_to_rerun(
    tmp_path: Path,
) -> None:
    """The run's row is recorded, then every pooled connection is taken before its next
    checkpoint: the start is handed to the worker (the API's 202). The person who typed
    `/agent run` hears that it was recorded and goes on by itself, not a bare "running" that
    invites a second start."""
    async with running_scenario(tmp_path, CROWDING_POLICY) as bot:
        engine: Any = bot.signoff.db.engine
        pool = engine.sync_engine.pool
        pool._timeout = 0.5  # a request waits half a second for a connection, not 30
        async with contextlib.AsyncExitStack() as held:

            async def crowd() -> None:
                for _ in range(pool.size() + pool._max_overflow):
                    await held.enter_async_context(engine.connect())

            flows.CROWD.append(crowd)
            await bot.slack.command(
                "carol", CHANNEL, 'run crowding action=send_refund args={"amount":3}'
            )
            for _ in range(200):
                if said_to(bot, CAROL):
                    break
                await asyncio.sleep(0.05)
        ((source, text),) = said_to(bot, CAROL)
        (thread_id,) = await thread_ids(bot)
        assert source == "response_url"
        assert text == messages.run_handed_over("crowding", thread_id)
        assert "recorded" in text and "do not start it again" in text
        assert (await bot.signoff.run_info(thread_id) or {})["status"] == "running"
