"""SIGKILL the bot at random points of decide → resume → notify, restart it, and check that
nothing was lost or done twice.

Each iteration (a seeded loop: `SIGNOFF_FAULT_SEED` replays one) starts a few refunds, has alice
approve them all at once, and kills the process after a random delay of 0 to 300 ms: before the
click is decided, between the decision and its acknowledgement, during the resume, between the
refund and the run's record, or while the card or the thread is being told. The first iterations
aim instead: their process kills itself at one point of its first refund (`tests.kit.dying_bot`),
which random kills seldom reach: as the refund node starts, inside the provider's call before
and after it refunds, and after the node returned. The next process on the same database
(SQLite; a short job lease, so it takes over the dead one's jobs within a second) finishes; a
click that got no answer is clicked again, as a person would.

Where each kill landed, for each run, is read from the database before the next process starts
(`landing`); the aimed kills must land where aimed. At the end every approval is approved by
alice once, every run resumed once, each card posted once and each thread told its approval and
its outcome once. Each run refunded exactly once and completed, except a run whose kill landed
in the refund's window: after `once()` recorded the refund's start and before it recorded the
provider's answer (a few milliseconds). The next process cannot tell whether that refund went
out, so the run ends "outcome_unknown" (by design: the engine never guesses), with no refund if
the kill came before the provider made it and one if after, its thread told so once. So the
runs that end "outcome_unknown" are exactly the ones a kill caught in that window: the two
aimed there, and any a random kill caught (at most one per worker of the killed process).
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
from tests.kit.faults import QUICK, settled, until

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

ITERATIONS = 6 if QUICK else 20
"""Kills, one per iteration: the aimed ones (`AIMED`) first, then random ones."""
PER_ITERATION = 3
SEED = int(os.environ.get("SIGNOFF_FAULT_SEED", "20261129"))
LEASE = "1"
"""SIGNOFF_JOB_LEASE: a dead process's claimed jobs are free again after a second."""

WINDOW = ("in the window, refund not made", "in the window, refund made")
"""The landings after which a run's refund is of unknown outcome (see the module)."""
AIMED = {
    "refund node start": "decided, refund not started",
    "provider, before the refund": WINDOW[0],
    "provider, after the refund": WINDOW[1],
    "refund node returned": "refund recorded, run not recorded",
}
"""Where a process kills itself (`tests.kit.dying_bot.POINTS`) → where its run must land."""


def landing(db: BotDatabase, run: Run) -> str:
    """How far a run had got when its process was killed, read before the next one starts."""
    if db.approval(run.approval_id)["status"] == "pending":
        return "before the decision"
    if (db.run(run.thread_id) or {}).get("status") == "completed":
        if any(j["done_at"] is None for j in db.jobs(thread_id=run.thread_id)):
            return "run done, Slack not all told"
        return "all told"
    made = bool(db.effects(run.thread_id, "refund"))
    once = [v for k, v in db.once_records(run.thread_id).items() if k.startswith("refund:")]
    if once == ["started"]:
        return WINDOW[made]
    if once == ["failed"]:
        return "refund failed"
    return "refund recorded, run not recorded" if made else "decided, refund not started"


def unknown_only_in_the_window(
    db: BotDatabase, runs: dict[str, Run], landed: dict[str, str]
) -> None:
    """Each run refunded once and completed, unless its kill landed in the refund's window:
    then "outcome_unknown", with the refund made before the kill or none."""
    wrong = {}
    for customer, run in runs.items():
        status = (db.run(run.thread_id) or {}).get("status")
        refunds = len(db.effects(run.thread_id, "refund"))
        where = landed[customer]
        expected = (
            ("outcome_unknown", int(where == WINDOW[1])) if where in WINDOW else ("completed", 1)
        )
        if (status, refunds) != expected:
            wrong[customer] = (
                f"killed {where!r}: {status}, {refunds} refund(s); expected {expected}"
            )
    assert not wrong, f"runs that did not end as their kill allows: {wrong}"


async def test_a_bot_killed_anywhere_between_click_and_notice_loses_nothing_and_repeats_nothing(
    fake_slack: FakeSlackProcess, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(SEED)
    policy, db_url = write_policy(tmp_path, POLICY), sqlite_url(tmp_path)
    db = BotDatabase(db_url)
    aims: list[str | None] = [*AIMED, *[None] * (ITERATIONS - len(AIMED))]

    def bot_for(i: int) -> BotProcess:
        """The process of iteration `i`: one that kills itself on its own batch when aimed."""
        if i >= len(aims) or aims[i] is None:
            return BotProcess(tmp_path, db_url, fake_slack.url, policy, SIGNOFF_JOB_LEASE=LEASE)
        return BotProcess(tmp_path, db_url, fake_slack.url, policy, main="tests.kit.dying_bot",
                          SIGNOFF_JOB_LEASE=LEASE, DIE_AT=str(aims[i]), DIE_FOR=f"cust-kill-{i}-")  # fmt: skip

    bot = bot_for(0)
    runs: dict[str, Run] = {}
    delays: list[int] = []
    landed: dict[str, str] = {}
    """Where the kill of each run's iteration landed, by customer."""
    try:
        async with SandboxClient(fake_slack.url) as slack:
            for i, aim in enumerate(aims):
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
                if aim is None:
                    delay = rng.randint(0, 300)
                    delays.append(delay)
                    await asyncio.sleep(delay / 1000)
                    bot.kill()
                else:
                    dying = bot.proc
                    await until(lambda p=dying: p.poll() is not None, f"the bot killing itself at {aim!r}", bot)  # fmt: skip
                await asyncio.gather(*clicks, return_exceptions=True)
                now = {c: landing(db, r) for c, r in batch.items()}
                landed.update(now)
                if aim is not None:
                    assert AIMED[aim] in now.values(), f"killed at {aim!r}, the runs landed {now}"

                bot = bot_for(i + 1)
                await fake_slack.connect(slack, bot.events_url)
                e2e = E2E(slack, bot, db, http)
                for r in batch.values():  # a click that never got its answer is clicked again
                    if db.approval(r.approval_id)["status"] == "pending":
                        answer = await e2e.signed_click(ALICE, r.card, APPROVE)
                        assert answer.status == 200, (answer.status, answer.body)
            await settled(E2E(slack, bot, db, http), runs, ALICE, unknown_allowed=True)
            unknown_only_in_the_window(db, runs, landed)
            print(f"seed {SEED}: the kills landed {dict(Counter(landed.values()))}")
    except BaseException as e:
        raise AssertionError(
            f"seed {SEED}, delays (ms) {delays}, kills landed {dict(Counter(landed.values()))}: {e}"
        ) from e
    finally:
        bot.stop()
        db.close()
