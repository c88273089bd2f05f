"""Two bot replicas on one PostgreSQL database receive the same click (Slack retries a request
it thinks was lost, and a load balancer sends each copy to another replica): one decision, one
resume, one refund, and the thread told once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from bot.sandbox.client import SandboxClient
from bot.sandbox.signing import SlackSigner
from bot.slack.payloads import APPROVE
from tests.kit.e2e import (
    ALICE,
    CAROL,
    CHANNEL,
    E2E,
    SECRET,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    Run,
    pg_schema,
    pg_server,
    pg_url,
    write_policy,
)  # fmt: skip
from tests.kit.faults import QUICK, settled

pytestmark = pytest.mark.postgres

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"
"""

RUNS = 4 if QUICK else 10


@pytest.fixture
def replicas(
    fake_slack: FakeSlackProcess, tmp_path: Path
) -> Iterator[tuple[BotProcess, BotProcess]]:
    pg_server()
    schema, drop = pg_schema("replicas")
    policy = write_policy(tmp_path, POLICY)
    first = BotProcess(tmp_path, pg_url(schema), fake_slack.url, policy)
    second = None
    try:
        second = BotProcess(tmp_path, pg_url(schema), fake_slack.url, policy)
        yield first, second
    finally:
        first.stop()
        if second is not None:
            second.stop()
        drop()


async def test_two_replicas_given_the_same_click_decide_resume_and_refund_once(
    fake_slack: FakeSlackProcess,
    replicas: tuple[BotProcess, BotProcess],
    http: aiohttp.ClientSession,
) -> None:
    first, second = replicas
    db = BotDatabase(first.db_url)
    signer = SlackSigner(SECRET)
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, first.events_url)
            e2e = E2E(slack, first, db, http)
            assert (await slack.command(CAROL, CHANNEL, "help"))["status"] == 200
            runs: dict[str, Run] = {
                f"cust-twice-{k}": await e2e.refund(f"cust-twice-{k}") for k in range(RUNS)
            }
            await e2e.idle()
            for run in runs.values():
                click = await e2e.click_request(ALICE, run.card, APPROVE)
                answers = await asyncio.gather(
                    signer.send(first.events_url, click, session=http),
                    signer.send(second.events_url, click, session=http),
                )
                assert [a.status for a in answers] == [200, 200], [
                    (a.status, a.body) for a in answers
                ]
            await settled(e2e, runs, ALICE)
            for run in runs.values():
                decided = [
                    j
                    for j in db.jobs(thread_id=run.thread_id)
                    if j["kind"] == "event" and '"decided"' in j["payload"]
                ]
                assert len(decided) == 1, decided
    finally:
        db.close()
