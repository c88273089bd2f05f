"""Slack answering 429 (with Retry-After) and 5xx for a while: the bot's cards and notices wait in
its job queue and go out afterwards, each once, in order per thread (the card, then the
approval's reply, then the run's outcome)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from bot.sandbox.client import SandboxClient
from bot.slack.payloads import APPROVE
from tests.kit.e2e import (
    ALICE,
    CAROL,
    CHANNEL,
    E2E,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    Run,
    sqlite_url,
    write_policy,
)
from tests.kit.faults import settled

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"
"""

RUNS = 4


@pytest.fixture
def bot(fake_slack: FakeSlackProcess, tmp_path: Path) -> Iterator[BotProcess]:
    process = BotProcess(
        tmp_path, sqlite_url(tmp_path), fake_slack.url, write_policy(tmp_path, POLICY)
    )
    yield process
    process.stop()


async def test_cards_and_notices_go_out_after_slack_answers_429_and_5xx_for_a_while(
    fake_slack: FakeSlackProcess, bot: BotProcess, http: aiohttp.ClientSession
) -> None:
    db = BotDatabase(bot.db_url)
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, bot.events_url)
            e2e = E2E(slack, bot, db, http)
            assert (await slack.command(CAROL, CHANNEL, "help"))["status"] == 200
            since = len(await slack.calls())

            # The cards meet a rate limit, then a server error.
            await slack.fail_next("chat.postMessage", retry_after=1, count=3)
            await slack.fail_next("chat.postMessage", status=503, count=2)
            runs: dict[str, Run] = {}
            for k in range(RUNS):
                customer = f"cust-outage-{k}"
                runs[customer] = await e2e.start(
                    "refund",
                    {
                        "customer_id": customer,
                        "order_id": f"o-{k}",
                        "amount": 42.5,
                        "reason": "late",
                    },
                    card=False,
                )
            for run in runs.values():
                run.card = await e2e.card(run.approval_id)

            # The decisions' card updates and replies meet both again.
            await slack.fail_next("chat.update", status=500, count=2)
            await slack.fail_next("chat.update", retry_after=1, count=2)
            await slack.fail_next("chat.postMessage", retry_after=1, count=2)
            await slack.fail_next("chat.postMessage", status=502, count=2)
            for run in runs.values():
                answer = await e2e.signed_click(ALICE, run.card, APPROVE)
                assert answer.status == 200, (answer.status, answer.body)
            await settled(e2e, runs, ALICE, timeout=45.0)

            calls = (await slack.calls())[since:]
            failed = [(c["method"], c["status"]) for c in calls if c["status"] != 200]
            assert sorted(failed) == sorted(
                [("chat.postMessage", 429)] * 5
                + [("chat.postMessage", 503)] * 2
                + [("chat.postMessage", 502)] * 2
                + [("chat.update", 500)] * 2
                + [("chat.update", 429)] * 2
            ), failed  # every fault met, and the answers were what the bot retried on
            for run in runs.values():  # per thread: the card, its update, then the replies
                ts = run.card["ts"]
                mine = [
                    c["method"]
                    for c in calls
                    if c["status"] == 200
                    and c["method"] in ("chat.postMessage", "chat.update")
                    and (
                        c["params"].get("ts") == ts
                        or c["params"].get("thread_ts") == ts
                        or c["response"].get("ts") == ts
                    )
                ]
                # a card update is repeated when the reply after it is retried: same card, no harm
                steps = [
                    m
                    for i, m in enumerate(mine)
                    if m != "chat.update" or mine[i - 1] != "chat.update"
                ]
                assert steps == [
                    "chat.postMessage",
                    "chat.update",
                    "chat.postMessage",
                    "chat.postMessage",
                ], mine
    finally:
        db.close()
