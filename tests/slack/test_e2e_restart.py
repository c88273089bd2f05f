"""The bot killed (SIGKILL) right after it acknowledged a click: the next process on the same
database finishes the resume, and the refund runs once.

To kill it at that very moment, and not a little later, its job worker is kept busy first: the
fake Slack is paused (SIGSTOP), another run is started, and the worker hangs delivering that
run's card. The click is then decided and acknowledged (neither needs Slack), but its resume
cannot have started when the process dies.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from bot.sandbox.client import SandboxClient
from bot.slack import messages
from bot.slack.payloads import APPROVE
from tests.kit.e2e import (
    ALICE,
    CAROL,
    CHANNEL,
    E2E,
    WAIT,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    sqlite_url,
    text_of,
    write_policy,
)

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
editable = ["amount", "reason"]
expire_after = "1h"
"""
"""No Slack user groups: nothing the bot does before the click's ack needs the paused fake."""


async def _until(predicate: Callable[[], object], what: str, bot: BotProcess) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not happen within {WAIT:g}s; the bot said:\n{bot.output()}"
            )
        await asyncio.sleep(0.05)


async def test_a_bot_killed_right_after_acknowledging_a_click_finishes_the_resume_after_restart(
    fake_slack: FakeSlackProcess, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    policy, db_url = write_policy(tmp_path, POLICY), sqlite_url(tmp_path)
    db = BotDatabase(db_url)
    # One job worker, so that it is busy on the second card (Slack paused) when the click comes.
    first = BotProcess(tmp_path, db_url, fake_slack.url, policy, SIGNOFF_WORKERS="1")
    second = None
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, first.events_url)
            e2e = E2E(slack, first, db, http)
            run = await e2e.refund("cust-restart")
            await e2e.idle()
            click = await e2e.click_request(ALICE, run.card, APPROVE)
            # Bolt calls auth.test on the first request it serves; have it done while Slack answers.
            assert (await slack.command(CAROL, CHANNEL, "help"))["status"] == 200

            fake_slack.pause()
            try:
                busy = await e2e.start(
                    "refund", {"customer_id": "cust-busy", "amount": 1.5}, card=False
                )
                await _until(
                    lambda: any(
                        j["locked_by"] for j in db.jobs(thread_id=busy.thread_id, undone=True)
                    ),
                    "the worker taking the second card",
                    first,
                )
                answer = await e2e.send(click)
                first.kill()
            finally:
                fake_slack.resume()

            assert answer.status == 200
            assert db.approval(run.approval_id)["status"] == "approved"  # committed before the ack
            (resume,) = [j for j in db.jobs(thread_id=run.thread_id) if j["kind"] == "resume"]
            assert (resume["attempts"], resume["done_at"]) == (0, None)  # died before resuming
            assert db.effects(run.thread_id) == []

            second = BotProcess(tmp_path, db_url, fake_slack.url, policy)
            await fake_slack.connect(slack, second.events_url)
            e2e = E2E(slack, second, db, http)
            card = await e2e.decided_card(run.approval_id)
            assert "*Approved* by <@U0ALICE>" in text_of(card)
            outcome = messages.run_completed(
                "refund", run.thread_id, "refunded 42.50 to cust-restart"
            )
            await e2e.replies(
                run.card, lambda r: outcome in r, "the outcome, told by the second process"
            )
            assert [e["kind"] for e in db.effects(run.thread_id)] == ["refund"]
            assert db.run(run.thread_id)["status"] == "completed"
    finally:
        first.kill()
        if second is not None:
            second.stop()
        db.close()
