"""Runs: a workflow started on a thread, run until it pauses or ends, and resumed by the worker
with the decision its approval got; how each stop is recorded (the run's status, its audit
entries, its events), and the retention of finished runs."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from graphs import (
    Command,
    CompiledGraph,
    Interrupt,
    RunConfig,
    SideEffectUnknownError,
    ThreadBusyError,
)

from . import store
from . import tables as t
from ._conceal import Concealer
from ._joined import followers_of, shared_with
from ._service_threads import EXTERNAL_WORKFLOW, service_of
from .audit import AuditLog
from .db import database_down
from .decisions import new_decision
from .effects import Effects, NodeServices
from .errors import (
    AlreadyStartedError,
    DatabaseUnavailable,
    InvalidInputError,
    MissingInputError,
    RunControlRefused,
    RunStateError,
    StartRefused,
    UnknownRunError,
    UnknownWorkflowError,
)
from .jobs import Job, JobQueue, _gone_from_this_host, backoff, finish_in
from .models import APPROVAL_KIND, RunRecord, RunStatus, Workflow
from .pauses import Pauses
from .policy import GroupResolver, Policy, may_start, resolve_members
from .policy.schema import SchemaError

if TYPE_CHECKING:
    from .db import Database

__all__ = ["CANCELLABLE", "PURGEABLE", "RETRYABLE", "RunReport", "Runs"]

log = logging.getLogger("signoff")

RETRYABLE: tuple[RunStatus, ...] = ("failed",)
"""What `retry` goes on from. Not `outcome_unknown`: a side effect may have happened, and a
person must check the outside system first (then cancel, or fix it and retry by hand)."""
CANCELLABLE: tuple[RunStatus, ...] = ("failed", "paused", "outcome_unknown")
"""What `cancel` stops. Not a finished run, nor a `running` one whose process is alive (it is
being worked on now); a `running` one whose process died is cancelled (and retried) too."""
PURGEABLE: tuple[RunStatus, ...] = ("completed", "cancelled", "failed")
"""What `purge` deletes once old enough. Never live runs (running, paused) nor
`outcome_unknown` ones, which a person must look at."""


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


class Runs:
    """Starts, resumes and records the runs of the registered workflows."""

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
        self.workflows = dict(workflows)
        self.groups = groups
        self.audit = audit
        self.jobs = jobs
        self.pauses = pauses
        self.clock = clock
        self._graphs: dict[str, CompiledGraph] = {}
        self._handing_over: set[asyncio.Future[None]] = set()
        self._effects = Effects(db.sync_engine, clock)
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
                    "signoff": NodeServices(self._effects, thread_id, self.policy),
                }
            },
        )

    async def start(
        self,
        workflow: str,
        input: Mapping[str, Any],
        *,
        requester: str,
        channel: str | None = None,
        thread_id: str | None = None,
        check_starter: bool = False,
        text_inputs: bool = False,
        request_key: str | None = None,
        internal: bool = False,
    ) -> RunReport:
        """As `Signoff.start`. A refused start (not a starter, an unknown workflow, inputs
        that do not fit, a request seen already) starts nothing and is on the audit log:
        `start_refused`, who, which workflow, why (secret inputs hidden). `internal` only from
        `ExternalApprovals.request`, which has made the service's checks (its workflow and
        thread names are refused to everyone else)."""
        try:
            if not internal and (workflow == EXTERNAL_WORKFLOW or service_of(thread_id)):
                raise StartRefused(
                    f"{EXTERNAL_WORKFLOW!r} runs approvals that services ask for over the "
                    "approvals API, after that API's checks; it cannot be started by name (nor "
                    "an 'api.' thread id taken): POST /api/approvals with a service token"
                )
            return await self._start(
                workflow,
                input,
                requester=requester,
                channel=channel,
                thread_id=thread_id,
                check_starter=check_starter,
                text_inputs=text_inputs,
                request_key=request_key,
            )
        except (StartRefused, UnknownWorkflowError, InvalidInputError) as refusal:
            if not internal:  # the approvals API audits its own refusals (`api_refused`)
                await self._audit_refusal(workflow, input, requester, refusal)
            raise

    async def _audit_refusal(
        self, workflow: str, input: Any, requester: str, refusal: Exception
    ) -> None:
        """The `start_refused` entry, in a transaction of its own; if the database cannot take
        it, the caller still hears the refusal and the log says why."""
        conceal = self._concealer(workflow).learn(input)
        data: dict[str, Any] = {
            "workflow": workflow[:200],
            "refusal": type(refusal).__name__,
            "reason": conceal.text(str(refusal)),
        }
        if isinstance(refusal, InvalidInputError):
            data["problems"] = conceal.scrub(dict(refusal.problems))
        try:
            async with self.db.transaction() as conn:
                await self.audit.append(conn, "start_refused", actor=requester, data=data)
        except Exception as e:  # noqa: BLE001 - the refusal itself must still be told
            log.warning("could not audit a refused start of %s by %s: %s", workflow, requester, e)

    async def _start(
        self,
        workflow: str,
        input: Mapping[str, Any],
        *,
        requester: str,
        channel: str | None,
        thread_id: str | None,
        check_starter: bool,
        text_inputs: bool,
        request_key: str | None,
    ) -> RunReport:
        graph = self.graph(workflow)
        if check_starter:
            wf_policy = self.policy.workflows.get(workflow)
            members = await resolve_members(wf_policy.starters if wf_policy else (), self.groups)
            if not may_start(wf_policy, requester, members):
                raise StartRefused(
                    f"{requester} may not start {workflow!r}: add them to "
                    f"[workflows.{workflow}] starters in the policy"
                )
        wf = self.workflows[workflow]
        if not isinstance(input, Mapping):
            raise InvalidInputError(workflow, {"(inputs)": "must be a table of values"})
        missing = wf.schema.missing(input)
        try:
            input = wf.schema.check(input, text=text_inputs)
        except SchemaError as e:
            if missing:
                raise MissingInputError(workflow, missing, wf.inputs, e.problems) from None
            raise InvalidInputError(workflow, e.problems) from None
        if thread_id is None and request_key:
            digest = hashlib.sha256(f"{workflow}\0{request_key}".encode()).hexdigest()
            thread_id = f"{workflow}-{digest[:12]}"
        thread_id = thread_id or f"{workflow}-{uuid.uuid4().hex[:12]}"
        now = self.clock()
        async with self.db.transaction() as conn:
            created = await store.insert_run(
                conn,
                thread_id=thread_id,
                workflow=workflow,
                requester=requester,
                channel=channel,
                status="running",
                owner=self.jobs.worker_id,
                input=store.dumps(self.hide_secrets(dict(input), workflow)),
                created_at=now,
                updated_at=now,
            )
            if not created and request_key:
                raise AlreadyStartedError(
                    f"this request started {workflow!r} already, as {thread_id!r}; "
                    "nothing new was started",
                    thread_id,
                )
            if not created:
                raise StartRefused(
                    f"thread {thread_id!r} exists already; pick another --thread-id, or resume it"
                )
            await self.audit.append(
                conn,
                "run_started",
                thread_id=thread_id,
                actor=requester,
                data={"workflow": workflow, "channel": channel},
            )
        try:
            result: Any = await graph.ainvoke(dict(input), self._config(thread_id))
        except Exception as e:  # noqa: BLE001 - a failed run is recorded, not lost
            if database_down(e):
                return await self._hand_over(thread_id, workflow, input, e)
            result = e
        try:
            return await self.after_run(thread_id, workflow, result)
        except Exception as e:  # recording how it stopped: the same, once there is room
            if not (isinstance(e, DatabaseUnavailable) or database_down(e)):
                raise
            return await self._hand_over(thread_id, workflow, input, e)

    async def _hand_over(
        self, thread_id: str, workflow: str, input: Mapping[str, Any], error: BaseException
    ) -> RunReport:
        """A start's own run met the database busy (every pooled connection in use) or gone,
        after its row and `run_started` were committed: a transient condition, not the
        workflow's failure, so the run is not failed for it. It stays `running`, and a job is
        queued for the worker to go on from its saved frontier (`_go_on`, backed off while the
        database has no room), as a resume that meets it is. What it did is kept: a node that
        finished is not run again, and nothing half-made is left (no `failed` run, no
        approval without its run).

        A run stopped before its input checkpoint was saved starts from the inputs on its row
        (`runs.input`), when they are the inputs as given: with secret fields (hidden there,
        and kept only in checkpoints) it cannot, and is failed saying to start it again.
        If even the job cannot be written now, this process keeps trying in the background
        (should it die first, the run is `running` with a dead owner: `signoff retry` it)."""
        conceal = self._concealer(workflow).learn(input)
        said = conceal.text(f"{type(error).__name__}: {error}")
        log.warning(
            "run %s met the database busy or down; it goes on once it has room: %s", thread_id, said
        )
        kept = self.hide_secrets(dict(input), workflow) == dict(input)
        payload = {"retry": True, "by": "signoff", "start": True, "input_kept": kept}
        try:
            await self._queue_go_on(thread_id, payload)
        except DatabaseUnavailable:
            task = asyncio.ensure_future(self._queue_go_on_later(thread_id, payload))
            self._handing_over.add(task)
            task.add_done_callback(self._handing_over.discard)
        return RunReport(
            thread_id,
            workflow,
            "running",
            error=(
                f"the database was busy or unreachable while the run went on ({said}); it was "
                "not failed for it: it goes on in the background from where it stopped as soon "
                "as the database has room (its approvals are asked for then). Nothing needs "
                "doing, and starting it again would start a second run"
            ),
        )

    async def _queue_go_on(self, thread_id: str, payload: Mapping[str, Any]) -> None:
        """Queue the job that goes on with a handed-over start (once: its key is the thread's)."""
        async with self.db.transaction() as conn:
            await store.enqueue(
                conn, "resume", f"start:{thread_id}", payload, self.clock(), thread_id=thread_id
            )

    async def _queue_go_on_later(self, thread_id: str, payload: Mapping[str, Any]) -> None:
        """`_queue_go_on`, tried again with backoff until the database takes it."""
        for attempt in itertools.count():
            await asyncio.sleep(backoff(attempt, first=0.5, most=30.0))
            try:
                await self._queue_go_on(thread_id, payload)
            except DatabaseUnavailable as e:
                log.warning("run %s: could not queue its job yet, trying again: %s", thread_id, e)
                continue
            return

    async def after_run(
        self, thread_id: str, workflow: str, result: Any, *, resumed: _Resumed | None = None
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
                if isinstance(intr.value, dict) and intr.value.get("kind") == APPROVAL_KIND:
                    ids.append(await self.pauses.register(thread_id, workflow, intr, conceal))
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

    async def resume(self, job: Job) -> None:
        payload = job.payload
        assert job.thread_id is not None  # a resume job always names its thread
        thread_id = job.thread_id
        if payload.get("retry"):
            await self._go_on(job)
            return
        interrupt_id = payload["interrupt_id"]
        async with self.db.read() as conn:
            run = await store.get_run(conn, thread_id)
        if run is None:
            await self.jobs.finish(job.id, error=f"thread {thread_id!r} has no run record")
            return
        if run.status == "cancelled":
            await self.jobs.finish(job.id, error="the run was cancelled; nothing was resumed")
            return
        if job.approval_id is not None and not await self._as_recorded(job, run.workflow):
            return
        graph = self.graph(run.workflow)
        config = self._config(thread_id)
        try:
            state = await graph.aget_state(config)
            pending = {i.id for i in state.interrupts}
            if interrupt_id in pending:
                result: Any = await graph.ainvoke(
                    Command(resume={interrupt_id: payload["decision"]}), config
                )
            elif state.next:
                # Answered by an attempt that died before finishing: go on from the saved frontier.
                result = await graph.ainvoke(None, config)
            else:
                result = None
        except Exception as e:  # noqa: BLE001 - recorded on the run, or the job due again
            if await self._due_again(job, e):
                return
            result = e
        resumed = _Resumed(
            job.id,
            thread_id,
            job.approval_id,
            interrupt_id,
            bool(payload["decision"]["approved"]),
        )
        if result is None:
            # The graph went on to its end in an attempt that died before recording how it
            # stopped: record it now (and that it resumed), instead of leaving the run "paused"
            # or "running" and the audit log without its "resumed".
            if run.status in ("paused", "running"):
                await self.after_run(thread_id, run.workflow, dict(state.values), resumed=resumed)
            else:
                await self.jobs.finish(job.id)
            return
        await self.after_run(thread_id, run.workflow, result, resumed=resumed)

    async def _due_again(self, job: Job, error: Exception) -> bool:
        """Whether `error`, met running `job`'s thread, is not the workflow's failure, and the
        job was made due again: the thread is busy in another process, or the database went
        away under the run (a restart, a dropped connection), to go on from the saved frontier
        once it is back."""
        if isinstance(error, ThreadBusyError):
            await self.jobs.finish(job.id, error=str(error), retry_in=0.5)
            return True
        if not database_down(error):
            return False
        delay = backoff(job.attempts, first=1.0, most=60.0)
        log.warning(
            "resume of %s met the database down, retrying in %.0fs: %s", job.thread_id, delay, error
        )
        await self.jobs.finish(job.id, error=f"{type(error).__name__}: {error}", retry_in=delay)
        return True

    async def _as_recorded(self, job: Job, workflow: str) -> bool:
        """Whether the job's decision is the one the audit log settled its approval with
        (approved or not, and the same edits). If not (the job or the log was altered), the
        run is failed for a person to look at, the refusal audited, and the job finished, in
        one transaction: nothing runs on a decision nobody recorded."""
        assert job.approval_id is not None and job.thread_id is not None
        thread_id = job.thread_id
        decision = job.payload.get("decision") or {}
        async with self.db.read() as conn:
            on_record = await self.audit.settlement(conn, job.approval_id)
        if on_record is None:
            problem = "the audit log records no settlement of it"
        elif not on_record.intact:
            problem = f"its {on_record.kind!r} entry on the audit log was altered"
        elif bool(decision.get("approved")) != on_record.approved:
            said = "approved" if decision.get("approved") else "not approved"
            problem = f"the job says {said}, the audit log says {on_record.kind!r}"
        elif dict(decision.get("edits") or {}) != on_record.edits:
            problem = "the job's edits are not the ones on the audit log"
        else:
            return True
        error = (
            f"resume of approval {job.approval_id} refused: {problem}; nothing was run. The "
            "job queue or the audit log was changed outside signoff: run `signoff audit verify` "
            "and look at this thread before doing anything by hand"
        )
        log.error("thread %s: %s", thread_id, error)
        now = self.clock()
        async with self.db.transaction() as conn:
            await store.move_run(conn, thread_id, "failed", now, error=error)
            await finish_in(conn, job.id, now, error=error)
            await self.jobs.event(
                conn,
                "run_failed",
                now,
                thread_id=thread_id,
                data={"error": error, "workflow": workflow},
            )
            await self.audit.append(
                conn,
                "resume_refused",
                approval_id=job.approval_id,
                thread_id=thread_id,
                actor=self.jobs.worker_id,
                data={"problem": problem, "job": job.id},
            )
        return False

    # ---- operators: retry, cancel ----------------------------------------------------------

    async def check_control(self, thread_id: str, user: str, what: str) -> None:
        """Refuse (`RunControlRefused`, on the audit log) unless `user` approves one of the
        run's actions or may start its workflow: who may retry or cancel it from Slack.

        Raises:
            UnknownRunError, RunControlRefused, GroupsUnavailable.
        """
        async with self.db.read() as conn:
            run = await _get_run(conn, thread_id)
            approvals = await store.list_approvals(
                conn,
                statuses=("pending", "approved", "rejected", "expired", "cancelled"),
                thread_id=thread_id,
            )
        entries: list[str] = []
        for a in approvals:
            rule = self.policy.actions.get(a.action)
            entries += [*a.approvers, *(rule.approvers if rule else ())]
        wf_policy = self.policy.workflows.get(run.workflow)
        entries += list(wf_policy.starters if wf_policy else ())
        if user in await resolve_members(dict.fromkeys(entries), self.groups):
            return
        async with self.db.transaction() as conn:
            await self.audit.append(
                conn,
                "run_control_refused",
                thread_id=thread_id,
                actor=user,
                data={"what": what, "workflow": run.workflow},
            )
        raise RunControlRefused(
            f"{user} may not {what} run {thread_id!r}: only approvers of its actions and "
            f"starters of {run.workflow!r} may"
        )

    async def retry(self, thread_id: str, *, actor: str) -> None:
        """Go on with a failed run from its last checkpoint: what had finished is not run again.

        Exactly once: the run moves from `failed` to `running` by compare-and-set, in the same
        transaction as the job that resumes it, so of two operators retrying at once one wins
        and the other is told it was retried already. The worker performs the job (the bot's,
        or the CLI's own `run_jobs`).

        Raises:
            UnknownRunError, RunStateError: nothing was changed.
        """
        now = self.clock()
        async with self.db.transaction() as conn:
            run = await _get_run(conn, thread_id)
            leader = await shared_with(conn, thread_id)
            if leader is not None:
                raise RunStateError(
                    f"run {thread_id!r} shared the outcome of run {leader!r} (it joined that "
                    f"run's approval) and has nothing of its own to retry: retry {leader!r}"
                )
            owner = await _owner(conn, run, now) if run.status == "running" else None
            if owner is not None and owner.queued:  # a worker is to take its job: retried already
                raise RunStateError(_cannot("retry", thread_id, "running"))
            if owner is not None and owner.gone:
                # Its process died: go on as after a failure. A job it held is given back (it
                # carries a decision); a run it was starting gets a retry job.
                await _release(conn, thread_id, owner.who)
                error: str | None = f"its process ({owner.who}) died while it was running"
                moved = await conn.execute(
                    update(t.runs)
                    .where(t.runs.c.thread_id == thread_id, t.runs.c.status == "running")
                    .values(updated_at=now, owner=None)
                )
            else:
                error = run.error
                moved = await conn.execute(
                    update(t.runs)
                    .where(t.runs.c.thread_id == thread_id, t.runs.c.status.in_(RETRYABLE))
                    .values(status="running", updated_at=now)
                )
            if moved.rowcount != 1:
                now_is = await _get_run(conn, thread_id)
                raise RunStateError(_cannot("retry", thread_id, now_is.status))
            if owner is None or not owner.held:
                await store.enqueue(
                    conn,
                    "resume",
                    f"retry:{thread_id}:{uuid.uuid4().hex}",
                    {"retry": True, "by": actor},
                    now,
                    thread_id=thread_id,
                )
            await self.audit.append(
                conn,
                "run_retried",
                thread_id=thread_id,
                actor=actor,
                data={"workflow": run.workflow, "error": error},
            )
            await self.jobs.event(
                conn,
                "run_retried",
                now,
                thread_id=thread_id,
                data={"workflow": run.workflow, "by": actor},
            )

    async def _go_on(self, job: Job) -> None:
        """Perform a retry job: run the thread on from its saved frontier, then record how it
        stopped. A run that is not `running` any more (cancelled since, or recorded by an
        attempt that died after it) is left as it is; but a handed-over start recorded
        `paused` has the approvals its pause asks for opened (`_open_approvals`)."""
        assert job.thread_id is not None
        thread_id = job.thread_id
        async with self.db.read() as conn:
            run = await store.get_run(conn, thread_id)
        if run is not None and run.status == "paused" and job.payload.get("start"):
            await self._open_approvals(job, run.workflow)
            return
        if run is None or run.status != "running":
            await self.jobs.finish(job.id)
            return
        graph = self.graph(run.workflow)
        config = self._config(thread_id)
        try:
            state = await graph.aget_state(config)
            if state.next or state.interrupts:
                result: Any = await graph.ainvoke(None, config)
            elif state.created_at is None and job.payload.get("start"):
                # A start handed over before its input checkpoint was saved (`_hand_over`)
                if not job.payload.get("input_kept"):
                    raise RunStateError(
                        f"run {thread_id!r} met the database busy or unreachable before its "
                        "inputs were saved, and they hold secret fields, which are kept only "
                        "in checkpoints: nothing of it ran; start it again"
                    )
                result = await graph.ainvoke(run.inputs, config)
            else:  # it had reached its end; only the record was missing
                result = dict(state.values)
        except Exception as e:  # noqa: BLE001 - recorded on the run, or the job due again
            if await self._due_again(job, e):
                return
            result = e
        await self.after_run(thread_id, run.workflow, result)
        await self.jobs.finish(job.id)

    async def _open_approvals(self, job: Job, workflow: str) -> None:
        """A start handed over after its pause was recorded and before its approvals were
        all opened (`_hand_over`): open those its pending interrupts ask for (once each: an
        opened one is found by its interrupt id). Nothing else is changed: by now a decision
        may have resumed it. The database busy again: the job is due again, backed off."""
        assert job.thread_id is not None
        try:
            state = await self.graph(workflow).aget_state(self._config(job.thread_id))
            asks = [
                i
                for i in state.interrupts
                if isinstance(i.value, dict) and i.value.get("kind") == APPROVAL_KIND
            ]
            if asks:
                conceal = await self.concealer(
                    job.thread_id, workflow, dict(state.values), *(i.value for i in asks)
                )
                for intr in asks:
                    await self.pauses.register(job.thread_id, workflow, intr, conceal)
        except Exception as e:
            if await self._due_again(job, e):
                return
            raise
        await self.jobs.finish(job.id)

    async def cancel(self, thread_id: str, *, actor: str, note: str = "") -> list[str]:
        """Stop a run for good: it is `cancelled`, its pending approvals are cancelled (their
        cards say so), resumes not yet done are dropped, and its Slack thread is told. Returns
        the ids of the approvals cancelled. An approval another run also waits on stays
        pending for that run.

        Raises:
            UnknownRunError, RunStateError: nothing was changed.
        """
        now = self.clock()
        reason = f"cancelled by {actor}" + (f": {note}" if note else "")
        cancelled: list[str] = []
        async with self.db.transaction() as conn:
            run = await _get_run(conn, thread_id)
            cancellable = CANCELLABLE
            if run.status == "running":
                owner = await _owner(conn, run, now)
                if not owner.gone and not owner.queued:
                    raise RunStateError(_live(thread_id, owner.who))
                cancellable = ("running",)  # its process died: nobody runs it
            moved = await conn.execute(
                update(t.runs)
                .where(t.runs.c.thread_id == thread_id, t.runs.c.status.in_(cancellable))
                .values(status="cancelled", error=reason, updated_at=now)
            )
            if moved.rowcount != 1:
                now_is = await _get_run(conn, thread_id)
                raise RunStateError(_cannot("cancel", thread_id, now_is.status))
            for a in await store.list_approvals(conn, statuses=("pending",), thread_id=thread_id):
                if any(other != thread_id for other, _ in await store.waiters(conn, a.id)):
                    w = t.approval_waiters.c
                    await conn.execute(
                        delete(t.approval_waiters).where(
                            w.approval_id == a.id, w.thread_id == thread_id
                        )
                    )
                    continue
                decision = new_decision(a, "cancelled", [actor], reason, {}, now, approved=False)
                if await store.settle(
                    conn, a, "cancelled", decision.to_record(), now, reason=reason
                ):
                    cancelled.append(a.id)
                    await self.audit.append(
                        conn,
                        "cancelled",
                        approval_id=a.id,
                        thread_id=thread_id,
                        actor=actor,
                        data={"reason": reason},
                    )
                    await self.jobs.event(
                        conn, "decided", now, thread_id=thread_id, approval_id=a.id
                    )
            j = t.jobs.c
            await conn.execute(
                update(t.jobs)
                .where(j.thread_id == thread_id, j.kind == "resume", j.done_at.is_(None))
                .values(done_at=now, last_error="the run was cancelled")
            )
            await self._end_followers(conn, thread_id, now, "cancelled", error=reason)
            await self.audit.append(
                conn,
                "run_cancelled",
                thread_id=thread_id,
                actor=actor,
                data={"workflow": run.workflow, "note": note, "approvals": cancelled},
            )
            await self.jobs.event(
                conn,
                "run_cancelled",
                now,
                thread_id=thread_id,
                data={"workflow": run.workflow, "by": actor, "note": note},
            )
        return cancelled

    async def purge(self, older_than_seconds: float) -> int:
        """Delete finished runs (completed, cancelled, failed: `PURGEABLE`), with their
        approvals and checkpoints, not updated for longer than the age given.

        Live runs (running, paused) and `outcome_unknown` ones a person must look at are never
        touched, nor a run with an approval still pending.
        """
        cutoff = self.clock() - older_than_seconds
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(t.runs.c.thread_id).where(
                    t.runs.c.status.in_(PURGEABLE), t.runs.c.updated_at < cutoff
                )
            )
            threads = [r[0] for r in rows]
        for thread_id in threads:
            async with self.db.transaction() as conn:
                live = await store.list_approvals(conn, statuses=("pending",), thread_id=thread_id)
                if live:
                    continue
                ids = [
                    a.id
                    for a in await store.list_approvals(
                        conn,
                        statuses=("approved", "rejected", "expired", "cancelled"),
                        thread_id=thread_id,
                    )
                ]
                for table in (t.votes, t.approval_waiters):
                    await conn.execute(delete(table).where(table.c.approval_id.in_(ids)))
                await conn.execute(delete(t.approvals).where(t.approvals.c.id.in_(ids)))
                await conn.execute(delete(t.runs).where(t.runs.c.thread_id == thread_id))
                await self.audit.append(
                    conn, "purged", thread_id=thread_id, actor="retention", data={"approvals": ids}
                )
            await self.saver.adelete_thread(thread_id)
        return len(threads)


async def _get_run(conn: AsyncConnection, thread_id: str) -> RunRecord:
    run = await store.get_run(conn, thread_id)
    if run is None:
        raise UnknownRunError(
            f"no run has thread id {thread_id!r}; `signoff pending` lists paused ones", thread_id
        )
    return run


@dataclass(frozen=True, slots=True)
class _Owner:
    """Who runs a `running` run: the process holding its resume job, else the one that started
    it (`runs.owner`)."""

    who: str | None
    """Its worker id (`host:pid:tag`); None when not known (a run older than the column)."""
    gone: bool
    """Known dead: a process of this host that no longer runs, or a job whose lease is over."""
    held: bool = False
    """It holds a resume job (which a retry gives back rather than adding another)."""
    queued: bool = False
    """Nobody holds it: its job waits for a worker (given back after its process died)."""


async def _owner(conn: AsyncConnection, run: RunRecord, now: float) -> _Owner:
    j = t.jobs.c
    jobs = (
        await conn.execute(
            select(j.locked_by, j.locked_until).where(
                j.thread_id == run.thread_id, j.kind == "resume", j.done_at.is_(None)
            )
        )
    ).all()
    leased = [(by, until) for by, until in jobs if by is not None]
    if leased:
        live = [by for by, until in leased if not _dead(by, until, now)]
        return _Owner(live[0] if live else leased[0][0], gone=not live, held=True)
    if jobs:
        return _Owner(None, gone=False, queued=True)
    owner = run.owner
    return _Owner(owner, gone=owner is not None and _dead(owner, None, now))


def _dead(worker_id: str, lease_until: float | None, now: float) -> bool:
    """A process of this host is dead when it no longer runs; one of another host only once the
    lease it holds is over (its start holds none: it cannot be told from here)."""
    if worker_id.split(":", 1)[0] == socket.gethostname():
        return _gone_from_this_host(worker_id)
    return lease_until is not None and lease_until < now


async def _release(conn: AsyncConnection, thread_id: str, worker_id: str | None) -> None:
    """Give back the resume jobs of `thread_id` that a dead process held."""
    j = t.jobs.c
    await conn.execute(
        update(t.jobs)
        .where(j.thread_id == thread_id, j.done_at.is_(None), j.locked_by == worker_id)
        .values(locked_by=None, locked_until=None)
    )


def _live(thread_id: str, who: str | None) -> str:
    """Why a `running` run whose process may be alive cannot be cancelled."""
    if who is None:
        return (
            f"run {thread_id!r} is running, and which process runs it is not recorded (it "
            "was started by an older signoff): wait for it to pause or stop"
        )
    host, _, rest = who.partition(":")
    pid = rest.split(":", 1)[0]
    if host == socket.gethostname():
        return (
            f"run {thread_id!r} is running in process {pid} of this host, which is alive: "
            "wait for it to pause or stop (if it hangs, stop that process, then cancel or retry)"
        )
    return (
        f"run {thread_id!r} is running in process {pid} on host {host!r}, which cannot be "
        "checked from here: run this command on that host, or wait for it to pause or stop"
    )


def _cannot(what: str, thread_id: str, status: str) -> str:
    """Why `what` (retry, cancel) cannot act on a run that is `status`."""
    if what == "retry" and status == "running":
        return (
            f"run {thread_id!r} is running: it was retried already, or is being worked on; "
            "`signoff show` says where it is"
        )
    if what == "retry" and status == "outcome_unknown":
        return (
            f"run {thread_id!r} stopped while a side effect was running: check the outside "
            "system first, and `signoff cancel` it if the effect happened"
        )
    can, done = (RETRYABLE, "retried") if what == "retry" else (CANCELLABLE, "cancelled")
    states = f"{', '.join(can[:-1])} or {can[-1]}" if len(can) > 1 else can[0]
    return f"run {thread_id!r} is {status}; only a run that is {states} can be {done}"


@dataclass(frozen=True, slots=True)
class _Resumed:
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
