"""Ghost decisions: a vote that cannot be recorded within Slack's 3 s is refused ("busy, nothing
was recorded"), and never commits later. The database is held up the ways it is in production:
another PostgreSQL session holding the approval's row lock, another process holding SQLite's
write lock, and a group lookup that used up the click's time.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from bot.approvals.db import DatabaseBusy
from bot.approvals.policy import StaticGroups
from bot.sandbox import limits
from bot.sandbox.processes import CHANNEL
from bot.slack._listener import CLICK_WAIT
from bot.slack.payloads import APPROVE
from tests.kit.scenario import Scenario, running_scenario
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}

HOLD_SQLITE_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
conn.rollback()
"""
"""Another process: takes the SQLite file's write lock and keeps it until told (a line on
stdin), as a long write or a stuck process of another replica would."""


@contextmanager
def another_process_writing(path: Path) -> Iterator[None]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SQLITE_WRITE_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()


async def refused_in_time(kit: Kit, approval_id: str) -> float:
    """Vote as a click does; the refusal must come within Slack's deadline. Seconds it took."""
    started = time.monotonic()
    with pytest.raises(DatabaseBusy, match=r"nothing was (recorded|written)"):
        async with asyncio.timeout(20):  # unbounded today: fail, do not hang
            await kit.app.decide(approval_id, "U_ALICE", True, wait=CLICK_WAIT)
    took = time.monotonic() - started
    assert took < limits.ACK_DEADLINE, f"refused after {took:.1f}s, past Slack's deadline"
    return took


async def nothing_waits_behind(other: psycopg.AsyncConnection[Any]) -> None:
    """While `other` still holds its lock: no session waits for it (a refused statement was
    cancelled on the server, not left queued to go on once the lock is let go), and nothing of
    this process is still running beside the test (no refused vote being tried again). So
    nothing can record a vote once the lock is let go."""
    async with asyncio.timeout(10):
        while await (
            await other.execute(
                "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (other.info.backend_pid,),
            )
        ).fetchall():
            await asyncio.sleep(0.02)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def nothing_recorded(kit: Kit, approval_id: str) -> None:
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    assert [e["kind"] for e in await kit.audit(approval_id=approval_id)] == ["requested"]
    assert await kit.effects() == []


async def then_a_new_vote_works(kit: Kit, approval_id: str) -> None:
    assert await kit.app.decide(approval_id, "U_ALICE", True, wait=CLICK_WAIT)
    assert (await kit.app.get(approval_id)).status == "approved"
    await kit.app.run_jobs(("resume",))
    assert [e["kind"] for e in await kit.effects()] == ["refund"]


@pytest.mark.postgres
async def test_a_vote_behind_another_sessions_row_lock_is_refused_in_time_and_records_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    kit = Kit(pg_url, tmp_path)
    await kit.db.upgrade()
    try:
        (approval_id,) = (await kit.start("refund", REFUND)).approvals
        url = make_url(pg_url)
        other = await psycopg.AsyncConnection.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 5432,
            user=url.username,
            dbname=url.database,
            options=str(url.query["options"]),
        )
        try:
            await other.execute("SELECT id FROM approvals WHERE id = %s FOR UPDATE", (approval_id,))
            await refused_in_time(kit, approval_id)
            # Still held: the refused vote must not be waiting to commit once it is let go.
            await nothing_waits_behind(other)
        finally:
            await other.rollback()
            await other.close()
        await nothing_recorded(kit, approval_id)
        await then_a_new_vote_works(kit, approval_id)
    finally:
        await kit.aclose()


@pytest.mark.postgres
async def test_a_click_whose_reads_are_held_up_is_refused_in_time_and_records_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    # Another session's ACCESS EXCLUSIVE lock (a migration, a VACUUM FULL) holds up even reads:
    # the click's read of the approval (its button's check, its groups) is within its bound.
    kit = Kit(pg_url, tmp_path)
    await kit.db.upgrade()
    try:
        (approval_id,) = (await kit.start("refund", REFUND)).approvals
        url = make_url(pg_url)
        other = await psycopg.AsyncConnection.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 5432,
            user=url.username,
            dbname=url.database,
            options=str(url.query["options"]),
        )
        try:
            await other.execute("LOCK TABLE approvals IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            with pytest.raises(DatabaseBusy, match="nothing was recorded"):
                async with asyncio.timeout(20):  # unbounded before: fail, do not hang
                    await kit.app.get(approval_id, wait=CLICK_WAIT)
            assert time.monotonic() - started < limits.ACK_DEADLINE
            await refused_in_time(kit, approval_id)
            await nothing_waits_behind(other)
        finally:
            await other.rollback()
            await other.close()
        await nothing_recorded(kit, approval_id)
        await then_a_new_vote_works(kit, approval_id)
    finally:
        await kit.aclose()


async def test_a_vote_while_another_process_holds_sqlites_write_lock_is_refused_in_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    kit = Kit(f"sqlite:///{path}", tmp_path)
    await kit.db.upgrade()
    try:
        (approval_id,) = (await kit.start("refund", REFUND)).approvals
        with another_process_writing(path):
            await refused_in_time(kit, approval_id)
        await nothing_recorded(kit, approval_id)
        await then_a_new_vote_works(kit, approval_id)
        # The connection that was refused went back to the pool with its usual busy timeout:
        # background writers still queue behind another process instead of failing at once.
        async with kit.db.transaction() as conn:
            timeout = (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar()
        assert timeout == 30000
    finally:
        await kit.aclose()


class SlowGroups(StaticGroups):
    """Group members, looked up slowly (a Slack API call that takes its time)."""

    async def members(self, group: str) -> frozenset[str]:
        await asyncio.sleep(CLICK_WAIT + 0.2)
        return await super().members(group)


async def test_a_vote_whose_lookups_used_up_the_clicks_time_is_refused_not_recorded_late(
    tmp_path: Path,
) -> None:
    """The bound is on the whole decision, not only on the wait for the database."""
    from bot.approvals.service import Signoff

    kit = Kit(f"sqlite:///{tmp_path / 'slow.db'}", tmp_path)
    await kit.db.upgrade()
    try:
        (approval_id,) = (await kit.start("refund", REFUND)).approvals
        slow = Signoff(
            kit.db,
            kit.app.policy,
            kit.app.workflows,
            groups=SlowGroups(kit.app.policy.groups),
            audit=kit.app.audit,
            clock=kit.clock,
        )
        with pytest.raises(DatabaseBusy, match="nothing was recorded"):
            await slow.decide(approval_id, "U_ALICE", True, wait=CLICK_WAIT)
        await nothing_recorded(kit, approval_id)
    finally:
        await kit.aclose()


async def test_a_click_while_another_process_holds_the_write_lock_is_answered_busy(
    tmp_path: Path,
) -> None:
    """Through the front door: the click is answered in time, the person is told nothing was
    recorded, and clicking again once the database is free approves."""
    async with running_scenario(tmp_path) as bot:
        approval, card = await bot.refund("C-busy")
        path = make_url(bot.signoff.db.url).database
        assert path is not None
        with another_process_writing(Path(path)):
            answer = await bot.slack.click("alice", CHANNEL, card.ts, APPROVE)
            assert answer.ok, answer  # within Slack's deadline
            [told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get("U0ALICE"))
        assert "nothing was recorded" in told.text
        # This process's writers take turns, urgent ones (votes) in the order they came: once
        # this one has committed, a vote still queued to write would have committed before it.
        async with bot.signoff.db.transaction(urgent=True):
            pass
        unchanged = await bot.signoff.get(approval.id)
        assert (unchanged.status, unchanged.votes) == ("pending", ())
        await _approve_again(bot, approval.id, card.ts)


async def _approve_again(bot: Scenario, approval_id: str, ts: str) -> None:
    answer = await bot.slack.click("alice", CHANNEL, ts, APPROVE)
    assert answer.ok
    assert (await bot.signoff.get(approval_id)).status == "approved"
