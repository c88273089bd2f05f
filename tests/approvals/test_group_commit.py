"""Group commit on a SQLite file: votes that queue at the write gate while another writer holds it
are done in that writer's transaction, one savepoint each, and committed together. Every vote is
still recorded or refused on its own, within its own deadline, and answered after the commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.db import DatabaseBusy
from bot.approvals.errors import AlreadyDecidedError, NotAuthorizedError, SelfApprovalError
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "amount": 42.5, "reason": "damaged"}


@pytest.fixture(params=[True, False], ids=["group-commit", "one-commit-each"])
async def kit(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kit]:
    bench = Kit(f"sqlite:///{tmp_path / 'burst.db'}", tmp_path)
    bench.db.group_commit = request.param
    await bench.db.upgrade()
    yield bench
    await bench.aclose()


async def refunds(kit: Kit, n: int) -> list[str]:
    return [
        (await kit.start("refund", {**REFUND, "order_id": f"o-{i}"})).approvals[0] for i in range(n)
    ]


def commits(kit: Kit) -> list[int]:
    """A count of the commits the bot's async engine makes from now on."""
    count = [0]

    def on_commit(_conn: Any) -> None:
        count[0] += 1

    sa.event.listen(kit.db.engine.sync_engine, "commit", on_commit)
    return count


async def test_concurrent_votes_are_all_recorded_with_fewer_commits_than_votes(kit: Kit) -> None:
    ids = await refunds(kit, 12)
    counted = commits(kit)
    results = await behind_the_gate(kit, [kit.app.vote(i, "U_ALICE", True, wait=10) for i in ids])
    made = counted[0]
    assert results == [True] * 12
    assert [(await kit.app.get(i)).status for i in ids] == ["approved"] * 12
    assert [len((await kit.app.get(i)).votes) for i in ids] == [1] * 12
    assert len(await kit.audit("approved")) == 12
    assert await kit.pending_jobs("resume") == 12
    if kit.db.group_commit:
        assert made <= 2, made  # they queued together: committed together
    else:
        assert made == 12


async def test_a_refused_vote_in_a_group_is_refused_alone_with_its_own_error(kit: Kit) -> None:
    ids = await refunds(kit, 6)
    votes = [
        kit.app.vote(ids[0], "U_MALLORY", True, wait=10),  # first in: the group's leader
        kit.app.vote(ids[1], "U_ALICE", True, wait=10),
        kit.app.vote(ids[2], "U_CAROL", True, wait=10),  # the requester
        kit.app.vote(ids[3], "U_ALICE", True, wait=10),
        kit.app.vote(ids[3], "U_BOB", True, wait=10),  # decided by the vote before it
        kit.app.vote(ids[4], "U_ALICE", True, wait=10),
    ]
    results = await behind_the_gate(kit, votes)
    assert [type(r) if isinstance(r, Exception) else r for r in results] == [
        NotAuthorizedError,
        True,
        SelfApprovalError,
        True,
        AlreadyDecidedError,
        True,
    ]
    status = [(await kit.app.get(i)).status for i in ids]
    assert status == ["pending", "approved", "pending", "approved", "approved", "pending"]
    for i, who in ((ids[0], "U_MALLORY"), (ids[2], "U_CAROL"), (ids[3], "U_BOB")):
        refused = await kit.audit("vote_refused", approval_id=i)
        assert [e["actor"] for e in refused] == [who]
    assert list((await kit.app.get(ids[3])).decided_by) == ["U_ALICE"]
    assert len(await kit.audit("vote")) == 3


async def test_a_vote_past_its_deadline_in_a_group_is_busy_and_nothing_of_it_is_committed(
    kit: Kit,
) -> None:
    first, late = await refunds(kit, 2)

    async def slow_writer() -> None:  # joins after the late vote and outlasts its deadline
        async with kit.db.transaction(urgent=True) as conn:
            await conn.execute(sa.update(t.approvals).where(sa.false()).values(reason="x"))
            await asyncio.sleep(3.0)

    results = await behind_the_gate(
        kit,
        [
            kit.app.vote(first, "U_ALICE", True),
            kit.app.vote(late, "U_ALICE", True, wait=1.5),
            slow_writer(),
        ],
    )
    assert results[0] is True
    assert (await kit.app.get(first)).status == "approved"
    if not kit.db.group_commit:  # alone, it commits before the slow writer even starts
        assert results[1] is True
        return
    assert isinstance(results[1], DatabaseBusy)
    assert str(results[1]).endswith(
        "is busy: it took too long to be committed in time; nothing was recorded, try again"
    )
    assert isinstance(results[2], DatabaseBusy)  # rolled back with it: it came after
    a = await kit.app.get(late)
    assert (a.status, a.votes) == ("pending", ())
    assert [e["kind"] for e in await kit.audit(approval_id=late)] == ["requested"]
    assert await kit.pending_jobs("resume") == 1


async def test_a_late_vote_in_the_middle_of_a_group_is_refused_alone_and_the_votes_after_it_commit(
    kit: Kit,
) -> None:
    first, late, after, decided, refused = await refunds(kit, 5)
    runs = 0

    async def slow(conn: Any) -> None:  # joins after the late vote and outlasts its deadline
        nonlocal runs
        runs += 1
        await conn.execute(sa.update(t.approvals).where(sa.false()).values(reason="x"))
        if runs == 1:
            await asyncio.sleep(1.0)

    results = await behind_the_gate(
        kit,
        [
            kit.app.vote(first, "U_ALICE", True, wait=10),  # the group's leader
            kit.app.vote(late, "U_ALICE", True, wait=0.6),
            kit.db.transact(slow, urgent=True),
            kit.app.vote(after, "U_ALICE", True, wait=10),
            kit.app.vote(decided, "U_ALICE", True, wait=10),
            kit.app.vote(decided, "U_BOB", True, wait=10),  # decided by the vote before it
            kit.app.vote(refused, "U_CAROL", True, wait=10),  # the requester
        ],
    )
    if kit.db.group_commit:
        assert isinstance(results[1], DatabaseBusy)
        assert str(results[1]).endswith(
            "is busy: it took too long to be committed in time; nothing was recorded, try again"
        )
        assert runs == 2  # rolled back with the late vote, and run again
    else:  # alone, it commits before the slow writer even starts
        assert results[1] is True
        assert runs == 1
    assert [results[0], *results[2:5]] == [True, None, True, True]
    assert [type(r) for r in results[5:]] == [AlreadyDecidedError, SelfApprovalError]
    status = [(await kit.app.get(i)).status for i in (first, after, decided, refused)]
    assert status == ["approved", "approved", "approved", "pending"]
    assert list((await kit.app.get(decided)).decided_by) == ["U_ALICE"]
    kinds = [e["kind"] for e in await kit.audit(approval_id=late)]
    assert kinds == (["requested"] if kit.db.group_commit else ["requested", "vote", "approved"])
    for i, who in ((decided, "U_BOB"), (refused, "U_CAROL")):
        assert [e["actor"] for e in await kit.audit("vote_refused", approval_id=i)] == [who]
    assert await kit.pending_jobs("resume") == 3 + (not kit.db.group_commit)
    assert (await kit.app.audit.verify(kit.db.engine)).ok


async def behind_the_gate(kit: Kit, calls: list[Any]) -> list[Any]:
    """Start `calls` (coroutines) one after another while another thread holds the SQLite
    file's write gate, each once the one before it waits for its turn to write (so they queue in
    that order); then let the gate go. Their results, or the exceptions they raised, in order."""
    gate = kit.db.saver._gate
    assert gate is not None
    await asyncio.to_thread(gate.acquire)  # a long write of another thread
    tasks = []
    try:
        for n, call in enumerate(calls, 1):
            tasks.append(asyncio.ensure_future(call))
            async with asyncio.timeout(30):
                while writers_waiting(kit) < n:
                    await asyncio.sleep(0.005)
    finally:
        gate.release()
    return list(await asyncio.gather(*tasks, return_exceptions=True))


def writers_waiting(kit: Kit) -> int:
    """Writers of this process waiting for their turn: at the gate, or in a group's queue."""
    gate = kit.db.saver._gate
    assert gate is not None
    return len(gate._queue) + sum(len(b.queue) for b in kit.db._batches.values())
