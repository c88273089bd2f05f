"""The resume path under random interleavings (Hypothesis stateful testing), in process, on SQLite.

A few approvals are opened (the `ask` test workflow, on actions with a quorum, reminders,
escalation and expiry either way); then votes by random people, sweeps with a clock that moves,
and job runs by two workers (two `Signoff`s, as two processes would be) come in any order.
After every step:

- an approval settles at most once (one settling audit event; `decide` says `settled` at most
  once, and never for an approval the sweep expired);
- a settled approval's thread is resumed at most once, and no thread is resumed before its
  approval settled;
- each run does its side effect at most once (an `act` or a `declined`, never both, and the one
  that matches the decision).

At the end, with the clock moved past every deadline, a final sweep and job run leave nothing
pending that has an expiry (what never expires gets its last votes), every approval's thread
resumed exactly once, one matching effect per run, no job left, and an audit log that verifies.

Derandomized, with a bounded number of examples (fewer with `SIGNOFF_TEST_QUICK=1`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bot.approvals import tables as t
from bot.approvals.errors import DecisionRefused
from bot.approvals.service import Signoff
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

HOUR, DAY = 3600.0, 86400.0

LENIENT = """
[actions.lenient]
title = "Approved when nobody answers"
tier = "low"
approvers = ["@finance"]
expire_after = "2h"
on_expiry = "approve"
"""

ACTIONS = {
    "deploy": {"service": "api"},  # 2 of alice, bob, dave; never expires
    "slow": {"what": "x"},  # @finance; reminded at 10m, escalated to @ops at 1h, rejected at 1d
    "lenient": {"what": "y"},  # @finance; approved when nobody answers in 2h
    "delete_row": {"table": "t", "id": 1},  # 2 of @ops and alice; rejected at 1d
}
PEOPLE = ["U_ALICE", "U_BOB", "U_DAVE", "U_ERIN", "U_CAROL", "U_NOBODY"]
SETTLING = ("approved", "rejected", "expired", "auto_approved", "denied", "conflict")


class ResumeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="signoff-resume-"))
        self.kit = Kit(f"sqlite:///{quote(str(self.dir / 'signoff.db'))}", self.dir)
        self.run(self.kit.db.upgrade())
        policy = POLICY + LENIENT
        self.apps: list[Signoff] = [
            self.kit.new_app(sink=self.kit.sink, share_db=True, policy_text=policy),
            self.kit.new_app(policy_text=policy),  # another process: its own pool and worker id
        ]
        self.approvals: list[str] = []
        self.threads: dict[str, str] = {}
        self.settled_by_decide: Counter[str] = Counter()
        self.expired_by_sweep: Counter[str] = Counter()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        try:
            if self.approvals:
                self.finish()
        finally:
            self.run(self.kit.aclose())
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- what happens ---------------------------------------------------------------------------

    @initialize(actions=st.lists(st.sampled_from(sorted(ACTIONS)), min_size=1, max_size=3))
    def open_approvals(self, actions: list[str]) -> None:
        for action in actions:
            self.open(action)

    def open(self, action: str) -> None:
        report = self.run(
            self.apps[0].start(
                "ask", {"action": action, "args": ACTIONS[action]}, requester="U_CAROL"
            )
        )
        assert report.status == "paused", report
        (approval_id,) = report.approvals
        self.approvals.append(approval_id)
        self.threads[approval_id] = report.thread_id

    @precondition(lambda self: len(self.approvals) < 5)
    @rule(action=st.sampled_from(sorted(ACTIONS)))
    def another(self, action: str) -> None:
        self.open(action)

    @rule(
        which=st.integers(0, 4),
        user=st.sampled_from(PEOPLE),
        approve=st.booleans(),
        app=st.integers(0, 1),
    )
    def decide(self, which: int, user: str, approve: bool, app: int) -> None:
        approval_id = self.approvals[which % len(self.approvals)]
        try:
            result = self.run(
                self.apps[app].decide(approval_id, user, approve, note="" if approve else "no")
            )
        except DecisionRefused:
            return
        if result.settled:
            self.settled_by_decide[approval_id] += 1

    @rule(seconds=st.sampled_from([30.0, 11 * 60.0, HOUR, 2 * HOUR, 6 * HOUR, DAY, 3 * DAY]))
    def time_passes(self, seconds: float) -> None:
        self.kit.clock.advance(seconds)

    @rule(app=st.integers(0, 1))
    def sweep(self, app: int) -> None:
        before = {a: self.status(a) for a in self.approvals}
        counts = self.run(self.apps[app].sweep())
        expired = [
            a for a in self.approvals if before[a] == "pending" and self.status(a) == "expired"
        ]
        assert counts["expired"] == len(expired)
        self.expired_by_sweep.update(expired)

    @rule(app=st.integers(0, 1), limit=st.sampled_from([1, 2, 1000]))
    def run_jobs(self, app: int, limit: int) -> None:
        self.run(self.apps[app].run_jobs(limit=limit))

    # ---- what must hold -------------------------------------------------------------------------

    def rows(self, table: sa.Table, *where: Any) -> list[dict[str, Any]]:
        if table is t.audit_events:
            self.run(self.apps[0].link_audit())  # as a bot's linker would have by now
        return self.run(self.kit.rows(sa.select(table).where(*where)))

    def status(self, approval_id: str) -> str:
        (row,) = self.rows(t.approvals, t.approvals.c.id == approval_id)
        return str(row["status"])

    @invariant()
    def settles_resumes_and_acts_at_most_once(self) -> None:
        audit = self.rows(t.audit_events)
        settling = Counter(e["approval_id"] for e in audit if e["kind"] in SETTLING)
        resumed = Counter(e["approval_id"] for e in audit if e["kind"] == "resumed")
        effects = self.rows(t.effects)
        for approval_id in self.approvals:
            status = self.status(approval_id)
            assert settling[approval_id] == (0 if status == "pending" else 1), (
                approval_id,
                status,
                settling,
            )
            assert self.settled_by_decide[approval_id] + self.expired_by_sweep[approval_id] <= 1, (
                approval_id
            )
            if self.expired_by_sweep[approval_id]:
                assert status == "expired" and not self.settled_by_decide[approval_id]
            assert resumed[approval_id] <= (0 if status == "pending" else 1), (
                approval_id,
                status,
                resumed,
            )
            done = [e for e in effects if e["thread_id"] == self.threads[approval_id]]
            assert len(done) <= 1, done
            if done:
                assert status != "pending" and resumed[approval_id] == 1
                (row,) = self.rows(t.approvals, t.approvals.c.id == approval_id)
                approved = json.loads(row["decision"])["approved"]
                assert done[0]["kind"] == ("act" if approved else "declined"), (
                    row["decision"],
                    done,
                )

    def finish(self) -> None:
        """Past every deadline, one more sweep and job run settle and resume everything."""
        self.kit.clock.advance(30 * DAY)
        self.sweep(0)
        self.run_jobs(1, 1000)
        self.run_jobs(0, 1000)
        self.settles_resumes_and_acts_at_most_once()
        for approval_id in self.approvals:
            (row,) = self.rows(t.approvals, t.approvals.c.id == approval_id)
            if row["expire_at"] is not None:
                assert row["status"] != "pending", f"{approval_id} is pending past its expiry"
            # "deploy" never expires: a final pair of votes settles it
            if row["status"] == "pending":
                for user in ("U_ALICE", "U_BOB"):
                    try:
                        self.run(self.apps[0].decide(approval_id, user, True))
                    except DecisionRefused:
                        pass
        self.run_jobs(0, 1000)
        audit = self.rows(t.audit_events)
        resumed = Counter(e["approval_id"] for e in audit if e["kind"] == "resumed")
        for approval_id in self.approvals:
            assert self.status(approval_id) != "pending", approval_id
            assert resumed[approval_id] == 1, (approval_id, resumed)
            (run,) = self.rows(t.runs, t.runs.c.thread_id == self.threads[approval_id])
            assert run["status"] == "completed", run
            assert (
                len(
                    [e for e in self.rows(t.effects) if e["thread_id"] == self.threads[approval_id]]
                )
                == 1
            )
        assert self.rows(t.jobs, t.jobs.c.done_at.is_(None)) == []
        self.settles_resumes_and_acts_at_most_once()
        report = self.run(self._verify())
        assert report.ok, report.problem

    async def _verify(self) -> Any:
        async with self.kit.db.read() as conn:
            return await self.apps[0].audit.verify(conn)


QUICK = os.environ.get("SIGNOFF_TEST_QUICK", "").lower() not in ("", "0", "false", "no")

ResumeMachine.TestCase.settings = settings(
    max_examples=8 if QUICK else 20,
    stateful_step_count=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_interleavings_of_decide_sweep_and_resume_keep_the_invariants = ResumeMachine.TestCase
