"""PostgreSQL restarted while the bot receives clicks: no decision is lost and the bot recovers
by itself (the same process: `/healthz` is 200 again, and it goes on deciding and resuming).

A click that met the database down got a refusal (an ephemeral "try again", or an error status)
and changed nothing: the person clicks again and it counts. A click that was decided is
resumed once and told once. This restarts the local server, so it runs at the very end of the
session (the `restarts_postgres` marker; see conftest.py) and waits for the server before and
after.
"""

from __future__ import annotations

import asyncio
import glob
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import psycopg
import pytest

from bot.sandbox.client import SandboxClient
from bot.sandbox.signing import AppResponse
from bot.slack import messages
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
    ephemerals_of,
    pg_admin,
    pg_schema,
    pg_server,
    pg_url,
    text_of,
    write_policy,
)  # fmt: skip
from tests.kit.faults import QUICK, settled, until

pytestmark = [pytest.mark.postgres, pytest.mark.restarts_postgres]

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"
"""

RUNS = 16 if QUICK else 30
CLICK_EVERY = 0.15
"""Seconds between two clicks: the clicks span the restart (a second or two)."""


def wait_until_up(timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(pg_admin(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "PostgreSQL did not come back"
            time.sleep(0.2)


def restart_postgres() -> None:
    versions = sorted(os.path.basename(p) for p in glob.glob("/etc/postgresql/*"))
    if not versions or not os.path.exists("/usr/bin/pg_ctlcluster"):
        pytest.skip("no local PostgreSQL cluster to restart")
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "restart"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    wait_until_up()


@pytest.fixture
def bot(fake_slack: FakeSlackProcess, tmp_path: Path) -> Iterator[BotProcess]:
    pg_server()
    wait_until_up()
    schema, drop = pg_schema("pg_restart")
    process = BotProcess(
        tmp_path,
        pg_url(schema),
        fake_slack.url,
        write_policy(tmp_path, POLICY),
        SIGNOFF_JOB_LEASE="2",
    )
    yield process
    process.stop()
    wait_until_up()
    drop()


async def healthz(http: aiohttp.ClientSession, bot: BotProcess) -> int:
    try:
        async with http.get(f"{bot.url}/healthz", timeout=aiohttp.ClientTimeout(total=5)) as res:
            return res.status
    except (TimeoutError, aiohttp.ClientError):
        return 0


async def test_a_postgresql_restart_under_clicks_loses_no_decision_and_the_bot_recovers_by_itself(
    fake_slack: FakeSlackProcess, bot: BotProcess, http: aiohttp.ClientSession
) -> None:
    db = BotDatabase(bot.db_url)
    pid = bot.proc.pid
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, bot.events_url)
            e2e = E2E(slack, bot, db, http)
            assert (await slack.command(CAROL, CHANNEL, "help"))["status"] == 200
            runs: dict[str, Run] = {
                f"cust-pgr-{k}": await e2e.refund(f"cust-pgr-{k}") for k in range(RUNS)
            }
            await e2e.idle()
            refusals_before = len(await e2e.ephemerals(ALICE))

            answers: dict[str, AppResponse | BaseException] = {}

            async def click_all() -> None:
                for customer, run in runs.items():
                    try:
                        answers[customer] = await e2e.signed_click(ALICE, run.card, APPROVE)
                    except (TimeoutError, aiohttp.ClientError) as e:
                        answers[customer] = e
                    await asyncio.sleep(CLICK_EVERY)

            clicking = asyncio.ensure_future(click_all())
            await asyncio.sleep(CLICK_EVERY * 3)
            await asyncio.to_thread(restart_postgres)
            await clicking

            # The same process serves again, without a restart of its own.
            deadline = time.monotonic() + 30
            while await healthz(http, bot) != 200:
                assert time.monotonic() < deadline, f"/healthz not 200 within 30s:\n{bot.output()}"
                await asyncio.sleep(0.2)
            assert bot.proc.poll() is None and bot.proc.pid == pid

            errors = {
                c: a
                for c, a in answers.items()
                if not isinstance(a, AppResponse) or a.status != 200
            }
            assert not [a for a in errors.values() if isinstance(a, BaseException)], (
                errors
            )  # the bot always answered
            state = await slack.state()
            told_down = [
                m
                for m in ephemerals_of(state, ALICE)[refusals_before:]
                if messages.database_unavailable() in text_of(m)
            ]
            pending = [
                c for c, r in runs.items() if db.approval(r.approval_id)["status"] == "pending"
            ]
            # every click that did not count was refused, visibly: an error status or the ephemeral
            assert len(pending) <= len(errors) + len(told_down), (
                pending,
                errors,
                len(told_down),
                bot.output(),
            )
            for customer in pending:  # the person clicks again, and now it counts
                answer = await e2e.signed_click(ALICE, runs[customer].card, APPROVE)
                assert answer.status == 200, (answer.status, answer.body)
                approval_id = runs[customer].approval_id
                await until(
                    lambda approval_id=approval_id: (
                        db.approval(approval_id)["status"] == "approved"
                    ),
                    f"{customer} approved",
                    bot,
                )
            await settled(e2e, runs, ALICE)
            assert bot.proc.poll() is None and bot.proc.pid == pid
    finally:
        db.close()
