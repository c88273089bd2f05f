"""Two bot replicas on one PostgreSQL database post to one channel, with the Slack stand-in's
rate limits on: Slack counts per workspace, so they keep inside one budget between them, and
Slack refuses them no more often than it refuses one process (the post that tells where the
limit is), instead of each pacing as if the channel were its own."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.approvals.db import Database
from bot.approvals.events import RetryLater
from bot.sandbox.client import SandboxClient
from bot.slack.pacing import Pace
from bot.slack.shared_pace import SharedSlots
from tests.kit.e2e import (
    API_TOKEN,
    CAROL,
    CHANNEL,
    BotProcess,
    FakeSlackProcess,
    pg_schema,
    pg_server,
    pg_url,
    write_policy,
)  # fmt: skip

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

CARDS = 20
"""Cards requested, half through each replica, all at once: about twenty seconds of posts at
Slack's pace for one channel; and more runs at once than a replica's connection pool holds (15),
each holding its thread's lock on a connection until it pauses (when the locks took their
connections from the pool the runs' writes need, the requests beyond it failed with a 500)."""


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeSlackProcess]:
    """A stand-in of this test's own: its rate limits and its counts are this test's."""
    process = FakeSlackProcess(tmp_path)
    yield process
    process.stop()


@pytest.fixture
def databases() -> Iterator[list[str]]:
    """Two fresh PostgreSQL databases (schemas): one budget each."""
    pg_server()
    made = [pg_schema(f"shared_pace_{n}") for n in range(2)]
    yield [pg_url(schema) for schema, _ in made]
    for _, drop in made:
        drop()


async def post_cards(tmp_path: Path, fake: FakeSlackProcess, db_url: str, replicas: int) -> int:
    """Start `replicas` bots on `db_url`, request `CARDS` refunds through them (in turn) at
    once, each accepted, and wait until every card is in the channel, once; the
    chat.postMessage 429s Slack gave."""
    tmp_path.mkdir()
    policy = write_policy(tmp_path, POLICY)
    bots: list[BotProcess] = []
    try:
        for _ in range(replicas):
            bots.append(BotProcess(tmp_path, db_url, fake.url, policy))
        async with SandboxClient(fake.url) as slack, aiohttp.ClientSession() as http:
            await slack.reset()
            await slack.set_rate_limits(True)

            async def start(i: int) -> str:
                body: dict[str, Any] = {
                    "workflow": "refund",
                    "input": {
                        "customer_id": f"cust-{i}",
                        "order_id": f"order-{replicas}-{i}",
                        "amount": 10.0,
                        "reason": "shared pace",
                    },
                    "requester": CAROL,
                }
                headers = {"Authorization": f"Bearer {API_TOKEN}"}
                url = f"{bots[i % replicas].url}/api/runs"
                async with http.post(url, json=body, headers=headers) as res:
                    assert res.status == 201, (await res.text(), [b.output() for b in bots])
                    (approval,) = (await res.json())["approvals"]
                    return str(approval)

            approvals = await asyncio.gather(*(start(i) for i in range(CARDS)))
            deadline = time.monotonic() + 120
            while True:
                posted = [
                    c
                    for c in await slack.calls("chat.postMessage")
                    if c["params"].get("channel") == CHANNEL
                ]
                cards = [json.dumps(c["params"]) for c in posted if c["status"] == 200]
                times = {a: sum(a in card for card in cards) for a in approvals}
                if all(times.values()):
                    break
                assert time.monotonic() < deadline, (times, [b.output() for b in bots])
                await asyncio.sleep(0.5)
            assert set(times.values()) == {1} and len(cards) == CARDS, times  # each card once
            await slack.set_rate_limits(False)
            return sum(1 for c in posted if c["status"] == 429)
    finally:
        for bot in bots:
            bot.stop()


async def test_two_replicas_posting_to_one_channel_are_refused_no_more_than_one_process(
    tmp_path: Path, fake: FakeSlackProcess, databases: list[str]
) -> None:
    alone = await post_cards(tmp_path / "one", fake, databases[0], replicas=1)
    together = await post_cards(tmp_path / "two", fake, databases[1], replicas=2)
    assert alone >= 1  # past the burst Slack allows: Slack says where its limit is by a 429
    # The one refused first tells the other; only a post of the other already on its way then
    # (nothing could have told it yet) may be refused too, and on a loaded machine posts sent on
    # their slots can arrive bunched (Slack counts arrivals). Each pacing alone, the two posted
    # twice as fast as Slack takes, and about every other post after the first burst was a 429
    # (6 of 12 cards on main before the shared budget).
    assert together <= alone + 3, (alone, together)


async def test_a_429_told_to_one_process_paces_the_other_and_their_slots_never_overlap(
    databases: list[str],
) -> None:
    dbs = [Database(databases[0]) for _ in range(2)]  # two processes' pools on one database
    try:
        await dbs[0].upgrade()
        first, second = (SharedSlots(db, refresh=0) for db in dbs)
        assert await second.paced_for("post:C1") is None
        await first.limited("post:C1", 2.0, 60.0)
        left = await second.paced_for("post:C1")
        assert left is not None and 61.0 < left <= 62.0
        assert await second.paced_for("post:C2") is None  # another channel's posts are free
        waits = [await slots.reserve("post:C1", 1.0, 60.0, 4.5) for slots in (second, first)]
        assert 1.5 < waits[0] <= 2.0 and waits[1] - waits[0] > 0.95, waits  # one after another
        with pytest.raises(RetryLater) as refused:  # two seconds further: not taken
            await second.reserve("post:C1", 1.0, 60.0, waits[1] + 0.5)
        assert refused.value.seconds > waits[1] + 0.5
        assert await first.reserve("post:C1", 1.0, 60.0, 10.0) - waits[1] < 1.1  # no gap left
    finally:
        for db in dbs:
            await db.aclose()


async def test_a_call_waiting_for_its_shared_slot_holds_no_database_connection(
    databases: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(databases[0])
    try:
        await db.upgrade()
        slots = SharedSlots(db, refresh=0)
        pace = Pace(lambda key: (1, 1.0), shared=slots)
        await slots.limited("post:C1", 1.0, 60.0)  # another replica was refused a second ago
        pool = db.engine.sync_engine.pool
        held: list[int] = []
        sleep = asyncio.sleep

        async def waiting(delay: float, *args: Any) -> Any:
            if delay > 0.2:  # a wait for a turn
                held.append(pool.checkedout())
            return await sleep(delay, *args)

        monkeypatch.setattr(asyncio, "sleep", waiting)
        async with pace.turn("post:C1"):
            pass
        # the pool every request of the process draws on: none of it held through the wait
        assert held == [0]
    finally:
        await db.aclose()


async def test_shared_slots_refuse_sqlite(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'one.db'}")
    with pytest.raises(ValueError) as error:
        SharedSlots(db)
    assert str(error.value) == (
        "shared Slack rate limits need PostgreSQL, not sqlite: on SQLite one process paces its "
        "own calls (`Pace` without `shared`)"
    )
