"""An action that declares a check (`request_approval(..., check=fn)`): the facts it read are on
the card; right before the approved action runs they are read again, and if they changed the
action does not run and a new approval shows old → new; a check that raises or times out is a
refusal. Through the fake Slack and the bot's Bolt app: a real click approves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL, sqlite_url
from bot.slack.mrkdwn import escape
from bot.slack.payloads import APPROVE
from tests.kit.e2e import action_ids, text_of
from tests.kit.scenario import POLICY, Scenario, running_scenario

CHECKED = (
    POLICY
    + """
[workflows.payout]
path = "tests.kit.checked_flow:build"
starters = ["U0CAROL"]

[actions.pay_out]
title = "Pay {amount} out of {account}"
tier = "high"
approvers = ["@approvers"]
"""
)


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, CHECKED) as scenario:
        yield scenario


def ledger(tmp_path: Path, **facts: Any) -> str:
    """The ledger the check reads, written now (the world, as it is from now on)."""
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(facts), encoding="utf-8")
    return str(path)


async def payout(bot: Scenario, path: str) -> Approval:
    """Carol asks to pay 100 out of acct-1; its approval, once its card is posted."""
    report = await bot.signoff.start(
        "payout",
        {"account": "acct-1", "amount": 100, "ledger": path},
        requester="U0CAROL",
        channel=CHANNEL,
    )
    (approval_id,) = report.approvals
    await bot.settle()
    return await bot.signoff.get(approval_id)


def card_text(bot: Scenario, approval: Approval) -> str:
    return text_of(bot.card(approval).to_api())


async def approve(bot: Scenario, approval: Approval) -> None:
    answer = await bot.slack.click("alice", CHANNEL, bot.card(approval).ts, APPROVE)
    assert answer.status == 200
    await bot.settle()


async def rows(bot: Scenario, query: Any) -> list[dict[str, Any]]:
    async with bot.signoff.db.read() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings()]


async def payouts(bot: Scenario) -> list[dict[str, Any]]:
    return await rows(bot, sa.select(t.effects).where(t.effects.c.kind == "payout"))


async def audited(bot: Scenario, kind: str) -> list[dict[str, Any]]:
    await bot.signoff.link_audit()
    found = await rows(bot, sa.select(t.audit_events).where(t.audit_events.c.kind == kind))
    return [{**r, "data": json.loads(r["data"])} for r in found]


async def test_the_card_shows_the_facts_and_unchanged_facts_run_the_action_once(
    bot: Scenario, tmp_path: Path
) -> None:
    approval = await payout(bot, ledger(tmp_path, balance="120.00"))
    shown = card_text(bot, approval)
    assert "Facts checked" in shown and "balance 120.00" in shown

    await approve(bot, approval)

    assert len(await payouts(bot)) == 1
    run = await bot.signoff.run_info(approval.thread_id) or {}
    assert run["status"] == "completed"
    assert [a.id for a in await bot.signoff.thread_approvals(approval.thread_id)] == [approval.id]
    assert await audited(bot, "recheck_refused") == []


async def test_a_fact_changed_before_the_action_stops_it_and_asks_again_showing_old_and_new(
    bot: Scenario, tmp_path: Path
) -> None:
    path = ledger(tmp_path, balance="120.00")
    first = await payout(bot, path)
    ledger(tmp_path, balance="80.00")  # the world changes while the card waits

    await approve(bot, first)

    assert await payouts(bot) == []
    asked = [a for a in await bot.signoff.thread_approvals(first.thread_id) if a.id != first.id]
    assert len(asked) == 1 and asked[0].status == "pending"
    again = asked[0]
    shown = card_text(bot, again)
    assert "balance 120.00 → 80.00" in shown
    assert f"Facts changed since approval {escape(first.id)}* was given" in shown
    assert "acct-1" in shown and APPROVE in action_ids(bot.card(again).to_api())
    used = card_text(bot, await bot.signoff.get(first.id))  # its card, updated
    assert "*Not run:* the facts changed (balance 120.00 → 80.00) after it was decided" in used
    assert f"Asked again: {escape(again.id)}." in used
    assert APPROVE not in action_ids(bot.card(first).to_api())
    (refused,) = await audited(bot, "recheck_refused")
    assert refused["approval_id"] == first.id
    assert refused["data"]["changed"] == {"balance": ["120.00", "80.00"]}
    assert refused["data"]["asked_again"] == again.id

    await approve(bot, again)  # decided on what is true now: it runs, once

    assert len(await payouts(bot)) == 1
    assert (await bot.signoff.run_info(first.thread_id) or {})["status"] == "completed"
    shown = show(tmp_path, first.thread_id)  # and the operator's view says the same
    assert f"facts changed since approval {first.id}: balance 120.00 → 80.00" in shown
    assert f"not run (balance 120.00 → 80.00); asked again: {again.id}" in shown


def show(directory: Path, thread_id: str) -> str:
    """`signoff show THREAD_ID` on the scenario's database, in a process of its own."""
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": sqlite_url(directory),
        "SIGNOFF_POLICY": str(directory / "policy.toml"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "show", thread_id],
        env=env,
        cwd=directory,
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("world", "said"),
    [
        ({}, "the check raised FileNotFoundError"),
        ({"balance": "120.00", "sleep": 2}, "the check did not answer within 0.5s"),
    ],
    ids=["raises", "times out"],
)
async def test_a_check_that_raises_or_times_out_before_the_action_refuses_it(
    bot: Scenario, tmp_path: Path, world: dict[str, Any], said: str
) -> None:
    path = ledger(tmp_path, balance="120.00")
    first = await payout(bot, path)
    Path(path).unlink()
    if world:
        ledger(tmp_path, **world)

    await approve(bot, first)

    assert await payouts(bot) == []
    (refusal,) = [
        a for a in await bot.signoff.thread_approvals(first.thread_id) if a.id != first.id
    ]
    assert refusal.status == "rejected" and refusal.reason is not None
    assert said in refusal.reason and "the action does not run" in refusal.reason
    (failed,) = await audited(bot, "check_failed")
    assert failed["approval_id"] == refusal.id and said in failed["data"]["reason"]
    (refused,) = await audited(bot, "recheck_refused")
    assert refused["approval_id"] == first.id and said in refused["data"]["error"]
    run = await bot.signoff.run_info(first.thread_id) or {}
    assert run["status"] == "completed"
    assert "not paid" in json.dumps(run.get("result") or run)
    told = [text_of(m.to_api()) for m in bot.slack.workspace.channels[CHANNEL].messages.values()]
    assert any(said in text for text in told), told  # the people are told why, in Slack


async def test_a_check_that_fails_when_it_is_asked_refuses_at_once(
    bot: Scenario, tmp_path: Path
) -> None:
    report = await bot.signoff.start(
        "payout",
        {"account": "acct-1", "amount": 100, "ledger": str(tmp_path / "missing.json")},
        requester="U0CAROL",
        channel=CHANNEL,
    )
    await bot.settle()
    (approval,) = await bot.signoff.thread_approvals(report.thread_id)
    assert approval.status == "rejected" and approval.votes == ()
    assert approval.reason is not None and "the check raised FileNotFoundError" in approval.reason
    assert await payouts(bot) == []
    assert [e["approval_id"] for e in await audited(bot, "check_failed")] == [approval.id]


async def test_the_demo_refund_rests_on_whether_the_customer_was_refunded_before(
    bot: Scenario,
) -> None:
    asked = []
    for order in ("o-1", "o-2"):
        report = await bot.signoff.start(
            "refund",
            {"customer_id": "cust_x", "order_id": order, "amount": 42.5, "reason": "damaged"},
            requester="U0CAROL",
            channel=CHANNEL,
        )
        asked.append(report.approvals[0])
    await bot.settle()
    first, second = [await bot.signoff.get(a) for a in asked]
    assert "refunded_before no" in card_text(bot, second)

    await approve(bot, first)  # cust_x is refunded while the second card waits
    await approve(bot, second)

    refunds = await rows(bot, sa.select(t.effects).where(t.effects.c.kind == "refund"))
    assert len(refunds) == 1
    (again,) = [
        a for a in await bot.signoff.thread_approvals(second.thread_id) if a.id != second.id
    ]
    assert again.status == "pending"
    assert "refunded_before no → yes, 1 refund(s), 42.50 in all" in card_text(bot, again)
