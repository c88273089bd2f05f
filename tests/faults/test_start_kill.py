"""SIGKILL a start (`signoff start`) at the two points where its run is recorded as running but
its first stop is not: before the graph saved anything, and after the graph paused but before
the pause was recorded. Another process takes the start over once the dead one's lease runs out:
the run never stays "running" unseen. It ends failed, saying to start it again (nothing of it
ran), or paused on its approval, as it would have; and its Slack thread is told (an event)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from tests.kit.signoff import Kit

KILL = """
import os, signal, sys
from bot.approvals.runs import Runs
from bot.cli import main
from graphs import CompiledGraph

where = sys.argv[1]
if where == "before its first step":
    async def dying_ainvoke(self, *args, **kw):
        os.kill(os.getpid(), signal.SIGKILL)

    CompiledGraph.ainvoke = dying_ainvoke
else:
    async def dying_after_run(self, *args, **kw):
        os.kill(os.getpid(), signal.SIGKILL)

    Runs.after_run = dying_after_run
sys.exit(main(sys.argv[2:]))
"""

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


@pytest.fixture
async def kit(tmp_path: Path) -> Kit:
    bench = Kit(f"sqlite:///{tmp_path / 'signoff.db'}", tmp_path)
    await bench.db.upgrade()
    yield bench  # type: ignore[misc]
    await bench.aclose()


@pytest.mark.parametrize("where", ["before its first step", "before its pause is recorded"])
async def test_a_start_killed_before_its_first_stop_is_recorded_is_taken_over(
    kit: Kit, where: str
) -> None:
    died = kit.python(
        KILL, where, "start", "refund", "--as", "U_CAROL", "--input", json.dumps(REFUND)
    )
    assert died.returncode == -9, died.stderr
    (run,) = await kit.rows(sa.select(t.runs))
    assert run["status"] == "running"  # what the dead process left

    kit.clock.advance(120)  # past the dead process's lease on the start
    await kit.app.run_jobs(("resume",))
    await kit.app.run_jobs(("event",))
    after = await kit.run(run["thread_id"])
    events = [e.kind for e in kit.sink.events if e.thread_id == run["thread_id"]]
    if where == "before its first step":
        assert after["status"] == "failed"
        assert "stopped before its first step was saved" in str(after["error"])
        assert "start it again" in str(after["error"])
        assert "run_failed" in events
    else:
        assert after["status"] == "paused"
        (approval,) = await kit.approvals(run["thread_id"])
        assert approval["status"] == "pending"
        assert "approval_requested" in events
    assert await kit.pending_jobs("resume") == 0
