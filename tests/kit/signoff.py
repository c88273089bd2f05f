"""A test bench for the governance core: `Signoff` instances on one database (each one stands for
a process), a clock the test moves, and the queries a test needs to tell what a user would see:
effects done, audit events, approvals, runs. The `kit` fixture (conftest) builds one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.audit import AuditLog
from bot.approvals.db import Database
from bot.approvals.events import EventSink, RecordingSink
from bot.approvals.policy import load_policy
from bot.approvals.service import RunReport, Signoff
from bot.workflows import load_workflows
from tests.kit.flows import POLICY, env


class Clock:
    """Epoch seconds that move only when the test says so (starts at the real time)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Kit:
    def __init__(self, db_url: str, tmp_path: Path) -> None:
        self.db_url = db_url
        self.tmp_path = tmp_path
        self.policy_path = tmp_path / "signoff.toml"
        self.policy_path.write_text(POLICY, encoding="utf-8")
        self.clock = Clock()
        self.sink = RecordingSink()
        self.db = Database(db_url)
        self._dbs: list[Database] = [self.db]
        self.app = self.new_app(sink=self.sink, share_db=True)
        """The test's main `Signoff`: the kit's clock and sink."""

    def new_app(
        self,
        *,
        sink: EventSink | None = None,
        share_db: bool = False,
        policy_text: str | None = None,
    ) -> Signoff:
        """Another `Signoff` on the same database: a process of its own (own pool) by default."""
        path = self.policy_path
        if policy_text is not None:
            path = self.tmp_path / f"policy-{len(self._dbs)}.toml"
            path.write_text(policy_text, encoding="utf-8")
        policy = load_policy(path)
        workflows = load_workflows({name: wf.path for name, wf in policy.workflows.items()})
        db = self.db if share_db else Database(self.db_url)
        if not share_db:
            self._dbs.append(db)
        return Signoff(db, policy, workflows, audit=AuditLog(), sink=sink, clock=self.clock)

    async def aclose(self) -> None:
        for db in self._dbs:
            await db.aclose()

    # ---- driving ----------------------------------------------------------------------

    async def start(
        self, workflow: str, input: Mapping[str, Any], requester: str = "U_CAROL", **kw: Any
    ) -> RunReport:
        return await self.app.start(workflow, input, requester=requester, **kw)

    async def ask(
        self, action: str, args: Mapping[str, Any], requester: str = "U_CAROL", **kw: Any
    ) -> RunReport:
        """Start the `ask` test workflow on one action."""
        return await self.start("ask", {"action": action, "args": dict(args), **kw}, requester)

    # ---- what a user would see --------------------------------------------------------

    async def rows(self, query: Any) -> list[dict[str, Any]]:
        async with self.db.read() as conn:
            return [dict(r) for r in (await conn.execute(query)).mappings()]

    async def effects(
        self, kind: str | None = None, thread_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The stand-in side effects done (refunds, emails, ...), oldest first."""
        q = sa.select(t.effects).order_by(t.effects.c.id)
        if kind is not None:
            q = q.where(t.effects.c.kind == kind)
        if thread_id is not None:
            q = q.where(t.effects.c.thread_id == thread_id)
        return [{**r, "data": json.loads(r["data"])} for r in await self.rows(q)]

    async def audit(
        self, kind: str | None = None, approval_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The audit log's events, once everything committed is linked (as the bot's linker
        does within a quarter of a second)."""
        await self.app.link_audit()
        q = sa.select(t.audit_events).order_by(t.audit_events.c.seq)
        if kind is not None:
            q = q.where(t.audit_events.c.kind == kind)
        if approval_id is not None:
            q = q.where(t.audit_events.c.approval_id == approval_id)
        return [{**r, "data": json.loads(r["data"])} for r in await self.rows(q)]

    async def run(self, thread_id: str) -> dict[str, Any]:
        info = await self.app.run_info(thread_id)
        assert info is not None, f"no run {thread_id}"
        return dict(info)

    async def approvals(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Raw rows of the approvals table, oldest first."""
        q = sa.select(t.approvals).order_by(t.approvals.c.created_at)
        if thread_id is not None:
            q = q.where(t.approvals.c.thread_id == thread_id)
        return await self.rows(q)

    async def pending_jobs(self, kind: str) -> int:
        q = (
            sa.select(sa.func.count())
            .select_from(t.jobs)
            .where(t.jobs.c.kind == kind, t.jobs.c.done_at.is_(None))
        )
        async with self.db.read() as conn:
            return int((await conn.execute(q)).scalar_one())

    # ---- other processes ----------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return env(self.db_url, self.policy_path)

    def cli(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """`signoff ARGS...` in a process of its own, in the test's directory."""
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", *args],
            env=self.env(),
            cwd=self.tmp_path,
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
        )

    def python(
        self, script: str, *args: str, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        """`python -c SCRIPT ARGS...` in a process of its own, with the kit's environment."""
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            env=self.env(),
            cwd=self.tmp_path,
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
