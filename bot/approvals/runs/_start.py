"""Starting a run: the checks made before anything is recorded (starters, inputs, the workflow's
own and the approvals API's names), the run's row and `run_started`, the run itself until it
pauses or ends, and the hand-over to the worker when the database has no room."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from .. import store
from .._service_threads import EXTERNAL_WORKFLOW, service_of
from ..db import database_down
from ..errors import (
    AlreadyStartedError,
    DatabaseUnavailable,
    InvalidInputError,
    MissingInputError,
    StartRefused,
    UnknownWorkflowError,
)
from ..jobs import backoff
from ..limits import value_problems
from ..policy import may_start, resolve_members
from ..policy.schema import SchemaError
from ._record import RunReport, RunsBase

__all__ = ["Starting"]

log = logging.getLogger("signoff")


class Starting(RunsBase):
    """Starts runs (`start`); a refused start is on the audit log."""

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
            if not internal and isinstance(input, Mapping):
                over = value_problems(input, "")
                if over:
                    raise InvalidInputError(workflow, over)
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

    async def refuse_at_door(
        self, reason: str, body: Any = None, refusal: str = "malformed"
    ) -> None:
        """Record a start refused at the API's door, before the run is looked at: a body that
        is not strict JSON or not a request (`malformed`), or a run that could reach no one
        (`unreachable`: no channel for its cards). `start_refused`, with the `reason`; what
        `body` names of the workflow and the requester is kept, never its inputs."""
        fields = body if isinstance(body, Mapping) else {}
        workflow, requester = fields.get("workflow"), fields.get("requester")
        data: dict[str, Any] = {"refusal": refusal, "reason": reason[:500]}
        if isinstance(workflow, str):
            data["workflow"] = workflow[:200]
        try:
            async with self.db.transaction() as conn:
                await self.audit.append(
                    conn,
                    "start_refused",
                    actor=requester[:200] if isinstance(requester, str) and requester else None,
                    data=data,
                )
        except Exception as e:  # noqa: BLE001 - the refusal itself must still be told
            log.warning("could not audit a malformed start request: %s", e)

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
