"""Resuming a run: the worker's `resume` job with the decision its approval got (checked against
the audit log first), the retry job that goes on from a saved frontier, and when a job is due
again (the thread busy elsewhere, the database down) rather than the workflow failed."""

from __future__ import annotations

import logging
from typing import Any

from graphs import Command, ThreadBusyError

from .. import _foreign, _turns, store
from ..db import database_down
from ..errors import RunStateError
from ..jobs import Job, backoff, finish_in
from ._record import Resumed, RunsBase

__all__ = ["Resuming"]

log = logging.getLogger("signoff")


class Resuming(RunsBase):
    """Performs `resume` jobs: a decision's resume, a retry, a handed-over start."""

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
        answer = await self._with_facts(job)
        graph = self.graph(run.workflow)
        config = self._config(thread_id)
        try:
            state = await graph.aget_state(config)
            pending = {i.id: i for i in state.interrupts}
            part = _foreign.part_of(interrupt_id)
            if part is not None and part[0] in pending:
                # one of several approvals of a LangChain HITL or Agent Inbox request: answered
                # once, in its own shape, when the last of them is settled
                whole = await self._foreign_answer(thread_id, part[0], pending[part[0]].value)
                if whole is None:
                    await self.jobs.finish(job.id)
                    return
                result: Any = await graph.ainvoke(Command(resume={part[0]: whole}), config)
            elif interrupt_id in pending:
                result = await graph.ainvoke(Command(resume={interrupt_id: answer}), config)
            elif state.next:
                # Answered by an attempt that died before finishing: go on from the saved frontier.
                result = await graph.ainvoke(None, config)
            else:
                result = None
        except Exception as e:  # noqa: BLE001 - recorded on the run, or the job due again
            if await self._due_again(job, e):
                return
            result = e
        resumed = Resumed(
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

    async def _foreign_answer(self, thread_id: str, interrupt_id: str, value: Any) -> Any:
        """The answer to a foreign request (`_foreign`) once each of its approvals is settled,
        each decision checked against the audit log; None while one is pending.

        Raises:
            CannotAnswer: a decision the request cannot take (or the audit log does not
                record): the run fails, and nothing of it runs.
        """
        request = _foreign.read(value)
        if request is None:
            raise _foreign.CannotAnswer(f"interrupt {interrupt_id} is not a request signoff asks")
        async with self.db.read() as conn:
            approvals = await _turns.turn_approvals(conn, thread_id, interrupt_id)
            if any(a.status == "pending" for a in approvals):
                return None
            for a in approvals:
                on_record = await self.audit.settlement(conn, a.id)
                decision = a.decision or {}
                if (
                    on_record is None
                    or not on_record.intact
                    or on_record.approved != bool(decision.get("approved"))
                    or on_record.edits != dict(decision.get("edits") or {})
                ):
                    raise _foreign.CannotAnswer(
                        f"the decision of approval {a.id} is not the one the audit log settled "
                        "it with: nothing was resumed; run `signoff audit verify`"
                    )
        return _foreign.answer(request, approvals)

    async def _with_facts(self, job: Job) -> dict[str, Any]:
        """The job's decision, and the facts its approval's check read when it was asked
        (`checked`): what the approver saw, which `request_approval` compares with the facts
        read again before it lets the action run."""
        decision = dict(job.payload["decision"])
        if job.approval_id is None or not decision.get("approved"):
            return decision
        async with self.db.read() as conn:
            approval = await store.get_approval(conn, job.approval_id)
        checked = approval.checked if approval is not None else None
        if checked is not None and isinstance(checked.get("facts"), dict):
            decision["checked"] = checked["facts"]
        return decision

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
            asks = state.interrupts
            if asks:
                conceal = await self.concealer(
                    job.thread_id, workflow, dict(state.values), *(i.value for i in asks)
                )
                for intr in asks:
                    await self.pauses.register_all(job.thread_id, workflow, intr, conceal)
        except Exception as e:
            if await self._due_again(job, e):
                return
            raise
        await self.jobs.finish(job.id)
