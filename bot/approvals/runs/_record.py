"""The bottom of `Runs`: what every part of a run shares (its parts, compiled graphs, config and
what hides its secrets), `RunReport`, and how each stop is recorded: the run's status, its audit
entries, its events, and the runs that shared its outcome."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from graphs import CompiledGraph, Interrupt, RunConfig, SideEffectUnknownError

from .. import store
from .. import tables as t
from .._conceal import Concealer
from .._joined import followers_of
from .._service_checks import ServiceFacts, bridge
from ..audit import AuditLog
from ..effects import Effects, NodeServices
from ..errors import UnknownWorkflowError
from ..jobs import JobQueue, finish_in
from ..models import RunStatus, Workflow
from ..pauses import Pauses
from ..policy import GroupResolver, Policy

if TYPE_CHECKING:
    from ..db import Database

__all__ = ["Resumed", "RunReport", "RunsBase"]

log = logging.getLogger("signoff")


_FOLLOWER_ENDS: dict[str, tuple[Any, Any, str]] = {
    "completed": ("run_completed", "run_completed", "outcome"),
    "failed": ("run_failed", "run_failed", "error"),
    "outcome_unknown": ("run_outcome_unknown", "outcome_unknown", "error"),
    "cancelled": ("run_cancelled", "run_cancelled", "note"),
}
"""How a run that shared another's outcome ends, by that run's end: its event, its audit
entry and the key its words go under."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """Where a run stands after `start` or a resume."""

    thread_id: str
    workflow: str
    status: RunStatus
    approvals: tuple[str, ...] = ()
    """Ids of the approvals this pause opened (or joined)."""
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class RunsBase:
    """The parts a run needs (database, policy, workflows, groups, audit log, job queue,
    pauses, clock), its compiled graphs and what hides its secrets; and how a run's stop is
    recorded (`after_run`). Starting, resuming and control build on it (`Runs`)."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        workflows: Mapping[str, Workflow],
        groups: GroupResolver,
        audit: AuditLog,
        jobs: JobQueue,
        pauses: Pauses,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.saver = db.saver
        self.policy = policy
        self.workflows = workflows
        self.groups = groups
        self.audit = audit
        self.jobs = jobs
        self.pauses = pauses
        self.clock = clock
        self._graphs: dict[str, CompiledGraph] = {}
        self._handing_over: set[asyncio.Future[None]] = set()
        self._effects = Effects(db.sync_engine, clock)
        self.service_facts: ServiceFacts | None
        self.service_facts = None
        """Reads a service's `check_url` (`ServiceChecks.read`), set by `Signoff`."""
        self._secret_rules = {
            name: rule for rule in policy.actions.values() for name in rule.secret
        }

    def hide_secrets(self, value: Any, workflow: str | None = None) -> Any:
        """`value` (a run's input or state) with every field the policy marks secret (and,
        with `workflow`, every input its schema marks secret), at any depth, replaced by its
        hash, as in approvals, and the values of those fields quoted in its other texts hidden:
        for what is stored, printed or posted. `concealer` knows a whole thread's secrets."""
        return self._concealer(workflow).learn(value).hide(value)

    def _concealer(self, workflow: str | None = None) -> Concealer:
        wf = self.workflows.get(workflow) if workflow is not None else None
        inputs = dict.fromkeys(wf.schema.secret if wf is not None else ())
        return Concealer({**inputs, **self._secret_rules}, self.audit.redaction_key)

    async def concealer(self, thread_id: str, workflow: str, *values: Any) -> Concealer:
        """What hides the secrets of a thread: the values of secret fields in its input, its
        state at every step and the approvals it asked for (from its checkpoints), and in
        `values`. Whatever is derived from the thread (a title, an outcome, an error) goes
        through it before it is stored, logged or posted."""
        found = self._concealer(workflow)
        for value in values:
            found = found.learn(value)
        if not found.rules:
            return found
        graph = self.graph(workflow)
        async for snap in graph.aget_state_history(self._config(thread_id)):
            found = found.learn(snap.values)
            for intr in snap.interrupts:
                found = found.learn(intr.value)
        return found

    def graph(self, workflow: str) -> CompiledGraph:
        graph = self._graphs.get(workflow)
        if graph is None:
            wf = self.workflows.get(workflow)
            if wf is None:
                raise UnknownWorkflowError(
                    f"no workflow named {workflow!r}; known: {sorted(self.workflows)}"
                )
            graph = wf.build().compile(checkpointer=self.saver, interrupt_mode="return")
            self._graphs[workflow] = graph
        return graph

    def _config(self, thread_id: str) -> RunConfig:
        # The runtime hands `configurable` to nodes as it is; signoff's services ride in it
        # under a key of their own, which `graphs.RunConfig` does not declare.
        return cast(
            RunConfig,
            {
                "configurable": {
                    "thread_id": thread_id,
                    "signoff": NodeServices(
                        self._effects, thread_id, self.policy, bridge(self.service_facts)
                    ),
                }
            },
        )

    async def after_run(
        self, thread_id: str, workflow: str, result: Any, *, resumed: Resumed | None = None
    ) -> RunReport:
        """Record how a run stopped: open approvals for its pauses, or note its end.

        After a resume (`resumed`), the "resumed" audit entry and the job's completion go into
        the same transaction as the record: one commit where there were three.
        """
        now = self.clock()
        if isinstance(result, BaseException):
            unknown = isinstance(result, SideEffectUnknownError)
            status: RunStatus = "outcome_unknown" if unknown else "failed"
            conceal = await self.concealer(thread_id, workflow)
            error = conceal.text(f"{type(result).__name__}: {result}")
            log.warning("run %s %s: %s", thread_id, status, error)
            async with self.db.transaction() as conn:
                await store.move_run(conn, thread_id, status, now, error=error)
                await self.jobs.event(
                    conn,
                    "run_outcome_unknown" if unknown else "run_failed",
                    now,
                    thread_id=thread_id,
                    data={"error": error, "workflow": workflow},
                )
                await self._end_followers(conn, thread_id, now, status, error=error)
                if resumed is not None:
                    await resumed.record(conn, self.audit, self.jobs.worker_id, now, finish=True)
                await self.audit.append(
                    conn,
                    "outcome_unknown" if unknown else "run_failed",
                    thread_id=thread_id,
                    data={"error": error},
                )
            return RunReport(thread_id, workflow, status, error=error)

        pauses: list[Interrupt] = result.pop("__interrupt__", None) or []
        conceal = await self.concealer(thread_id, workflow, result, *(i.value for i in pauses))
        if pauses:
            # Paused before the approvals exist: once one does, a worker may resume and finish
            # the run at once, and its status must not be overwritten with "paused" after that.
            async with self.db.transaction() as conn:
                await store.move_run(conn, thread_id, "paused", now)
                if resumed is not None:
                    await resumed.record(conn, self.audit, self.jobs.worker_id, now, finish=False)
            ids = []
            for intr in pauses:
                ids += await self.pauses.register_all(thread_id, workflow, intr, conceal)
            if resumed is not None:
                await self.jobs.finish(resumed.job_id)
            return RunReport(thread_id, workflow, "paused", tuple(ids), result)

        shown = conceal.hide(result)
        summary = store.dumps(shown)
        async with self.db.transaction() as conn:
            await store.move_run(conn, thread_id, "completed", now, result=summary, error=None)
            await self.jobs.event(
                conn,
                "run_completed",
                now,
                thread_id=thread_id,
                data={"workflow": workflow, "values": shown},
            )
            await self._end_followers(conn, thread_id, now, "completed", values=shown)
            # The audit entries last: on PostgreSQL appending takes the log's lock until commit.
            if resumed is not None:
                await resumed.record(conn, self.audit, self.jobs.worker_id, now, finish=True)
            await self.audit.append(
                conn, "run_completed", thread_id=thread_id, data={"workflow": workflow}
            )
        return RunReport(thread_id, workflow, "completed", (), result)

    async def _end_followers(
        self,
        conn: AsyncConnection,
        leader: str,
        now: float,
        status: RunStatus,
        *,
        values: Any = None,
        error: str = "",
    ) -> None:
        """End the runs that joined an approval `leader` acted on (`_joined`) as `leader`'s run
        ended, each saying which run it shared: never left paused on a decision no one will
        resume them with."""
        for thread_id, workflow in await followers_of(conn, leader):
            if status == "completed":
                shared = {**values, "shared_with": leader} if isinstance(values, dict) else values
                fields: dict[str, Any] = {"result": store.dumps(shared), "error": None}
                said = f"shared the outcome of run {leader}"
            else:
                how = {"cancelled": "was cancelled", "outcome_unknown": "stopped"}.get(
                    status, status
                )
                said = f"shared the outcome of run {leader}, which {how}: {error}"
                fields = {"error": said}
            moved = await conn.execute(
                update(t.runs)
                .where(t.runs.c.thread_id == thread_id, t.runs.c.status == "paused")
                .values(status=status, updated_at=now, **fields)
            )
            if moved.rowcount != 1:
                continue
            event, kind, data = _FOLLOWER_ENDS[status]
            details: dict[str, Any] = {"workflow": workflow, "shared_with": leader}
            if status == "completed":
                details["values"] = shared
            elif status == "cancelled":
                details.update(by="signoff", note=said)
            else:
                details["error"] = said
            await self.jobs.event(conn, event, now, thread_id=thread_id, data=details)
            await self.audit.append(
                conn,
                kind,
                thread_id=thread_id,
                actor="signoff",
                data={data: said, "workflow": workflow, "shared_with": leader},
            )


@dataclass(frozen=True, slots=True)
class Resumed:
    """A resume job whose run just stopped, recorded with how it stopped (`Runs.after_run`)."""

    job_id: int
    thread_id: str
    approval_id: str | None
    interrupt_id: str
    approved: bool

    async def record(
        self, conn: AsyncConnection, audit: AuditLog, worker_id: str, now: float, *, finish: bool
    ) -> None:
        if finish:
            await finish_in(conn, self.job_id, now)
        if await audit.recorded(
            conn,
            "resumed",
            thread_id=self.thread_id,
            approval_id=self.approval_id,
            interrupt_id=self.interrupt_id,
        ):
            return  # by an attempt that died before finishing the job: audited once
        await audit.append(
            conn,
            "resumed",
            approval_id=self.approval_id,
            thread_id=self.thread_id,
            actor=worker_id,
            data={"interrupt_id": self.interrupt_id, "approved": self.approved},
        )
