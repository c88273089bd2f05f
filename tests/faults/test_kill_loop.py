"""SIGKILL the bot at random points of decide → resume → notify, restart it, and check that
nothing was lost or done twice.

Each iteration (a seeded loop: `SIGNOFF_FAULT_SEED` replays one) starts a few refunds, has alice
approve them all at once, and kills the process after a random delay of 0 to 300 ms: before the
click is decided, between the decision and its acknowledgement, during the resume, between the
refund and the run's record, or while the card or the thread is being told. The next process on
the same database (SQLite; a short job lease, so it takes over the dead one's jobs within a second)
finishes; a click that got no answer is clicked again, as a person would. At the end every
approval is approved by alice once, every run resumed once and completed, one refund each, each
card posted once and each thread told its approval and its outcome once. A process killed inside
the refund's `once()` (between its start and its recorded return, a few milliseconds) leaves the
next one unable to tell whether the refund went out: that run ends "outcome_unknown", with at
most one refund and its thread told so, once (by design: the engine never guesses).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
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
)  # fmt: skip
from tests.kit.faults import QUICK, settled

pytestmark = pytest.mark.slow

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

ITERATIONS = 5 if QUICK else 20
PER_ITERATION = 3
SEED = int(os.environ.get("SIGNOFF_FAULT_SEED", "20261129"))
LEASE = "1"
"""SIGNOFF_JOB_LEASE: a dead process's claimed jobs are free again after a second."""


def phase(db: BotDatabase, run: Run) -> str:
    """How far a run had got when its process was killed."""
    if db.approval(run.approval_id)["status"] == "pending":
        return "before the decision"
    jobs = db.jobs(thread_id=run.thread_id)
    if any(j["kind"] == "resume" and j["done_at"] is None for j in jobs):
        return "decided, resume not done"
    if (db.run(run.thread_id) or {}).get("status") != "completed":
        return "resumed, run not recorded"
    if any(j["done_at"] is None for j in jobs):
        return "run done, Slack not all told"
    return "all told"


async def test_a_bot_killed_anywhere_between_click_and_notice_loses_nothing_and_repeats_nothing(
    fake_slack: FakeSlackProcess, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(SEED)
    policy, db_url = write_policy(tmp_path, POLICY), sqlite_url(tmp_path)
    db = BotDatabase(db_url)
    bot = BotProcess(tmp_path, db_url, fake_slack.url, policy, SIGNOFF_JOB_LEASE=LEASE)
    runs: dict[str, Run] = {}
    delays: list[int] = []
    phases: Counter[str] = Counter()
    """Where the kills landed (reported when the test fails, and printed with -s)."""
    try:
        async with SandboxClient(fake_slack.url) as slack:
            for i in range(ITERATIONS):
                await fake_slack.connect(slack, bot.events_url)
                e2e = E2E(slack, bot, db, http)
                # Bolt's first request calls auth.test; have it done before the race.
                assert (await slack.command(CAROL, CHANNEL, "help"))["status"] == 200
                batch = {
                    f"cust-kill-{i}-{k}": await e2e.refund(f"cust-kill-{i}-{k}")
                    for k in range(PER_ITERATION)
                }
                runs.update(batch)
                await e2e.idle()
                clicks = [
                    asyncio.ensure_future(e2e.signed_click(ALICE, r.card, APPROVE))
                    for r in batch.values()
                ]
                delay = rng.randint(0, 300)
                delays.append(delay)
                await asyncio.sleep(delay / 1000)
                bot.kill()
                await asyncio.gather(*clicks, return_exceptions=True)
                phases.update(phase(db, r) for r in batch.values())

                bot = BotProcess(tmp_path, db_url, fake_slack.url, policy, SIGNOFF_JOB_LEASE=LEASE)
                await fake_slack.connect(slack, bot.events_url)
                e2e = E2E(slack, bot, db, http)
                for r in batch.values():  # a click that never got its answer is clicked again
                    if db.approval(r.approval_id)["status"] == "pending":
                        answer = await e2e.signed_click(ALICE, r.card, APPROVE)
                        assert answer.status == 200, (answer.status, answer.body)
            await settled(E2E(slack, bot, db, http), runs, ALICE, unknown_allowed=True)
            print(f"seed {SEED}: the kills landed {dict(phases)}")
    except BaseException as e:
        raise AssertionError(
            f"seed {SEED}, delays (ms) {delays}, kills landed {dict(phases)}: {e}"
        ) from e
    finally:
        bot.stop()
        db.close()
