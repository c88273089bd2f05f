"""`Signoff`: the governance core. Starts runs, turns their pauses into approvals, takes decisions,
resumes threads exactly once, sweeps stale approvals. The CLI and the Slack app both drive it.

The rule that makes it exactly-once: whatever must happen after a commit (resume a thread, tell
Slack) is written as a job *in the same transaction* as the decision; the worker performs jobs
and marks them done. A process that dies in between leaves the job for the next worker, and the
runtime's own guarantees (one run per thread, an answer recorded once per interrupt) make a
second attempt harmless.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Update,
    and_,
    delete,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from graphs import Command, CompiledGraph, Interrupt, SideEffectUnknownError, ThreadBusyError

from . import store
from . import tables as t
from .audit import LINK_BATCH, AuditKind, AuditLog
from .effects import Effects, NodeServices
from .errors import (
    AlreadyDecidedError,
    AlreadyVotedError,
    ApprovalExpiredError,
    DatabaseUnavailable,
    InvalidEditError,
    MissingInputError,
    NotAuthorizedError,
    StartRefused,
    UnknownApprovalError,
    UnknownWorkflowError,
)
from .events import Event, EventSink, NullSink, RetryLater
from .models import APPROVAL_KIND, Approval, Workflow, iso
from .policy import (
    ActionPolicy,
    GroupResolver,
    Policy,
    StaticGroups,
    check_voter,
    evaluate_request,
    may_start,
    redact,
    resolve_members,
    validate_edits,
)

if TYPE_CHECKING:
    from .db import Database

__all__ = ["DecideResult", "PendingView", "RunReport", "Signoff"]

log = logging.getLogger("signoff")

LEASE_SECONDS = 60.0
"""How long a claimed job is held before another worker may take it over."""
CLAIM_CANDIDATES = 16
"""How many due jobs a SQLite worker reads at once to pick one from (see `Signoff._claim`)."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """Where a run stands after `start` or a resume."""

    thread_id: str
    workflow: str
    status: str
    approvals: tuple[str, ...] = ()
    """Ids of the approvals this pause opened (or joined)."""
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PendingView:
    """What waits on one person (`Signoff.pending_view`): the oldest of each list, and totals."""

    mine: list[Approval]
    """Pending approvals they may decide, oldest first."""
    others: list[Approval]
    """Pending approvals waiting on someone else, oldest first."""
    mine_total: int
    others_total: int


@dataclass(frozen=True, slots=True)
class DecideResult:
    approval: Approval
    settled: bool
    """True when this vote decided the approval (quorum reached, or a rejection)."""


def idempotency_key(approval_id: str, fingerprint: str) -> str:
    return hashlib.sha256(f"{approval_id}:{fingerprint}".encode()).hexdigest()[:32]


class Signoff:
    """The governance core, bound to one database, policy and set of workflows."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        workflows: Mapping[str, Workflow],
        *,
        groups: GroupResolver | None = None,
        audit: AuditLog | None = None,
        sink: EventSink | None = None,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.db = db
        self.saver = db.saver
        self.policy = policy
        self.workflows = dict(workflows)
        self.groups = groups or StaticGroups(policy.groups)
        self.audit = audit or AuditLog.from_env()
        self.sink = sink or NullSink()
        self.clock = clock
        self.lease_seconds = lease_seconds
        """How long a claimed job stays locked to this worker; past it, another may take it over."""
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._graphs: dict[str, CompiledGraph] = {}
        self._held: set[int] = set()
        """Ids of the jobs this process's workers hold right now."""
        self._effects = Effects(db.sync_engine, clock)
        self._secret_rules = {
            name: rule for rule in policy.actions.values() for name in rule.secret
        }

    def hide_secrets(self, value: Any) -> Any:
        """`value` (a run's input or state) with every field the policy marks secret, at any
        depth, replaced by its hash, as in approvals: for what is stored, printed or posted."""
        if isinstance(value, Mapping):
            return {
                k: redact(self._secret_rules[k], {k: v}, key=self.audit.redaction_key)[k]
                if k in self._secret_rules
                else self.hide_secrets(v)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.hide_secrets(v) for v in value]
        return value

    # ---- graphs ------------------------------------------------------------------------

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

    def _config(self, thread_id: str) -> dict[str, Any]:
        return {
            "configurable": {
                "thread_id": thread_id,
                "signoff": NodeServices(effects=self._effects, thread_id=thread_id),
            }
        }

    # ---- starting runs -----------------------------------------------------------------

    async def start(
        self,
        workflow: str,
        input: Mapping[str, Any],
        *,
        requester: str,
        channel: str | None = None,
        thread_id: str | None = None,
        check_starter: bool = False,
    ) -> RunReport:
        """Start `workflow` on a new thread and run it until it pauses or ends.

        Args:
            requester: who asked (a Slack user id, a service name). They may not approve their
                own requests unless the policy allows it.
            channel: where this run's cards and notifications go.
            check_starter: enforce the policy's `starters` (Slack and the HTTP API do; the CLI
                is an operator's tool and does not).

        Raises:
            UnknownWorkflowError, StartRefused, MissingInputError: nothing was recorded.
        """
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
        missing = [k for k in wf.required if input.get(k) in (None, "")]
        if missing:
            raise MissingInputError(workflow, missing, wf.inputs or wf.required)
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
                input=store.dumps(self.hide_secrets(dict(input))),
                created_at=now,
                updated_at=now,
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
            result = e
        return await self._after_run(thread_id, workflow, result)

    async def _after_run(
        self, thread_id: str, workflow: str, result: Any, *, resumed: _Resumed | None = None
    ) -> RunReport:
        """Record how a run stopped: open approvals for its pauses, or note its end.

        After a resume (`resumed`), the "resumed" audit entry and the job's completion go into
        the same transaction as the record: one commit where there were three.
        """
        now = self.clock()
        if isinstance(result, BaseException):
            unknown = isinstance(result, SideEffectUnknownError)
            status = "outcome_unknown" if unknown else "failed"
            error = f"{type(result).__name__}: {result}"
            log.warning("run %s %s: %s", thread_id, status, error)
            async with self.db.transaction() as conn:
                await store.set_run(conn, thread_id, now, status=status, error=error)
                await self._event(
                    conn,
                    "run_outcome_unknown" if unknown else "run_failed",
                    now,
                    thread_id=thread_id,
                    data={"error": error, "workflow": workflow},
                )
                if resumed is not None:
                    await resumed.record(self, conn, now, finish=True)
                await self.audit.append(
                    conn,
                    status if unknown else "run_failed",
                    thread_id=thread_id,
                    data={"error": error},
                )
            return RunReport(thread_id, workflow, status, error=error)

        pauses: list[Interrupt] = result.pop("__interrupt__", None) or []
        if pauses:
            # Paused before the approvals exist: once one does, a worker may resume and finish
            # the run at once, and its status must not be overwritten with "paused" after that.
            async with self.db.transaction() as conn:
                await store.set_run(conn, thread_id, now, status="paused")
                if resumed is not None:
                    await resumed.record(self, conn, now, finish=False)
            ids = []
            for intr in pauses:
                if isinstance(intr.value, dict) and intr.value.get("kind") == APPROVAL_KIND:
                    ids.append(await self._register(thread_id, workflow, intr))
            if resumed is not None:
                await self._finish_job(resumed.job_id)
            return RunReport(thread_id, workflow, "paused", tuple(ids), result)

        shown = self.hide_secrets(result)
        summary = store.dumps(shown)
        async with self.db.transaction() as conn:
            await store.set_run(
                conn, thread_id, now, status="completed", result=summary, error=None
            )
            await self._event(
                conn,
                "run_completed",
                now,
                thread_id=thread_id,
                data={"workflow": workflow, "values": shown},
            )
            # The audit entries last: on PostgreSQL appending takes the log's lock until commit.
            if resumed is not None:
                await resumed.record(self, conn, now, finish=True)
            await self.audit.append(
                conn, "run_completed", thread_id=thread_id, data={"workflow": workflow}
            )
        return RunReport(thread_id, workflow, "completed", (), result)

    async def _register(self, thread_id: str, workflow: str, intr: Interrupt) -> str:
        """Open (or find, or join) the approval for one paused `request_approval()`."""
        try:
            async with self.db.transaction() as conn:
                return await self._register_in(conn, thread_id, workflow, intr)
        except IntegrityError:
            # Another process registered this interrupt at the same moment: use theirs.
            async with self.db.read() as conn:
                found = await store.approval_for_interrupt(conn, intr.id)
            if found is None:
                raise
            return found.id

    async def _register_in(
        self, conn: AsyncConnection, thread_id: str, workflow: str, intr: Interrupt
    ) -> str:
        existing = await store.approval_for_interrupt(conn, intr.id)
        if existing is not None:
            return existing.id
        run = await store.get_run(conn, thread_id)
        requester = run["requester"] if run else "unknown"
        channel = run["channel"] if run else None
        p = intr.value
        action, args, fp = p["action"], p["args"], p["fingerprint"]
        verdict = evaluate_request(self.policy, action, args)
        rule = verdict.rule
        now = self.clock()
        shown = redact(rule, args, key=self.audit.redaction_key) if rule is not None else args
        if verdict.outcome == "ask" and p.get("dedupe_key"):
            dup = await store.pending_duplicate(conn, action, p["dedupe_key"])
            if dup is not None and dup.fingerprint == fp:
                await store.add_waiter(conn, dup.id, thread_id, intr.id, fp, now)
                await self.audit.append(
                    conn,
                    "requested",
                    approval_id=dup.id,
                    thread_id=thread_id,
                    actor=requester,
                    data={"joined": True, "dedupe_key": p["dedupe_key"]},
                )
                return dup.id
            if dup is not None:
                verdict_outcome, reason = (
                    "conflict",
                    (
                        f"conflicts with pending approval {dup.id} for {p['dedupe_key']!r}, which "
                        "proposes different arguments; decide that one first"
                    ),
                )
            else:
                verdict_outcome, reason = "ask", ""
        else:
            verdict_outcome, reason = verdict.outcome, verdict.reason

        approval_id = store.new_approval_id()
        deadlines: dict[str, float | None] = {
            "remind_at": None,
            "escalate_at": None,
            "expire_at": None,
        }
        if rule is not None and verdict_outcome == "ask":
            for key, after in (
                ("remind_at", rule.remind_after),
                ("escalate_at", rule.escalate_after),
                ("expire_at", rule.expire_after),
            ):
                deadlines[key] = now + after.total_seconds() if after else None
        status = {"ask": "pending", "auto_approve": "approved"}.get(verdict_outcome, "rejected")
        values = dict(
            id=approval_id,
            thread_id=thread_id,
            interrupt_id=intr.id,
            workflow=workflow,
            action=action,
            title=p.get("title") or (rule.title if rule else action),
            payload=store.dumps(shown),
            fingerprint=fp,
            dedupe_key=p.get("dedupe_key"),
            risk_tier=rule.tier if rule else "critical",
            requester=requester,
            status=status,
            required=rule.required if rule else 1,
            approvers=store.dumps(list(rule.approvers) if rule else []),
            editable=store.dumps(list(rule.editable) if rule else []),
            escalated=False,
            channel=channel,
            created_at=now,
            updated_at=now,
            version=0,
            **deadlines,
        )
        if status != "pending":
            by = [f"rule:{verdict.auto_rule}"] if status == "approved" else ["policy"]
            decision_status = "approved" if status == "approved" else "denied"
            decision = _decision(approval_id, action, fp, decision_status, by, reason, {}, now)
            values.update(decision=store.dumps(decision), decided_at=now, reason=reason or None)
        await store.insert_approval(conn, values)
        data = {"action": action, "args": shown, "tier": values["risk_tier"], "workflow": workflow}
        if status == "pending":
            await self.audit.append(
                conn,
                "requested",
                approval_id=approval_id,
                thread_id=thread_id,
                actor=requester,
                data=data,
            )
            await self._event(
                conn, "approval_requested", now, thread_id=thread_id, approval_id=approval_id
            )
        else:
            kind = {
                "approved": "auto_approved",
                "rejected": "conflict" if verdict_outcome == "conflict" else "denied",
            }[status]
            await self.audit.append(
                conn,
                kind,
                approval_id=approval_id,
                thread_id=thread_id,
                actor=by[0],
                data={**data, "reason": reason},
            )
            await self._settled(conn, approval_id, decision, now)
        return approval_id

    # ---- deciding ----------------------------------------------------------------------

    async def decide(
        self,
        approval_id: str,
        user: str,
        approve: bool,
        *,
        note: str = "",
        edits: Mapping[str, Any] | None = None,
        wait: float | None = None,
    ) -> DecideResult:
        """Record `user`'s vote (`vote`), then read the approval as it now stands.

        Raises:
            As `vote`.
        """
        settled = await self.vote(approval_id, user, approve, note=note, edits=edits, wait=wait)
        # Read after the commit: the write lock is held for the decision alone.
        return DecideResult(await self.get(approval_id), settled)

    async def vote(
        self,
        approval_id: str,
        user: str,
        approve: bool,
        *,
        note: str = "",
        edits: Mapping[str, Any] | None = None,
        wait: float | None = None,
    ) -> bool:
        """Record `user`'s vote; settle the approval when it decides it. One transaction.
        Returns whether this vote settled it (quorum reached, or a rejection). A click needs
        no more than that: it answers Slack as soon as the vote is committed.

        `wait` bounds how long the vote queues for its turn to write (a click must be answered
        within Slack's 3 seconds): past it, `DatabaseBusy` and nothing is recorded.

        Raises:
            UnknownApprovalError, NotAuthorizedError, SelfApprovalError, AlreadyDecidedError,
            AlreadyVotedError, ApprovalExpiredError, InvalidEditError: nothing was changed.
        """
        now = self.clock()
        note = note.strip()
        async with self.db.transaction(urgent=True, wait=wait) as conn:
            a = await store.get_approval(conn, approval_id, for_update=True)
            if a is None:
                raise UnknownApprovalError(approval_id)
            rule = await self._check_voter(a, user, now, approve=approve)
            if not approve and not note:
                raise InvalidEditError("a rejection needs a reason: pass a note", a.id)
            clean: dict[str, Any] = {}
            if approve and edits:
                if a.approvals_count:
                    raise InvalidEditError(
                        f"{a.approvals_count} person(s) approved the current values already; "
                        "an edit would change what they approved: reject with a note instead",
                        a.id,
                    )
                assert rule is not None  # an approval needs the action's policy
                clean = validate_edits(rule, edits, a.payload)
            decision_word = "approve" if approve else "reject"
            if not await store.insert_vote(conn, a.id, user, decision_word, note, clean, now):
                raise AlreadyVotedError(f"{user} has voted on approval {a.id} already", a.id)
            audit: list[tuple[AuditKind, dict[str, Any]]] = [
                ("vote", {"decision": decision_word, "note": note, "edits": clean})
            ]
            if clean:
                audit.append(
                    ("edited", {"before": {k: a.payload.get(k) for k in clean}, "after": clean})
                )
            approvers_so_far = [v.user_id for v in a.votes if v.decision == "approve"]
            settled = not approve or len(approvers_so_far) + 1 >= a.required
            if settled:
                status = "approved" if approve else "rejected"
                by = approvers_so_far + [user] if approve else [user]
                all_edits = {**{k: v for vote in a.votes for k, v in vote.edits.items()}, **clean}
                notes = "; ".join([v.note for v in a.votes if v.note] + ([note] if note else []))
                decision = _decision(
                    a.id, a.action, a.fingerprint, status, by, notes, all_edits, now
                )
                if not await store.settle(conn, a, status, decision, now):
                    raise self._already(await store.get_approval(conn, a.id) or a)
                await self._settled(conn, a.id, decision, now)
                audit.append((status, {"by": by, "note": notes, "edits": all_edits}))
            else:
                if not await store.bump(conn, a, now):
                    raise self._already(await store.get_approval(conn, a.id) or a)
                await self._event(
                    conn, "vote_recorded", now, thread_id=a.thread_id, approval_id=a.id
                )
            for kind, data in audit:
                await self.audit.append(
                    conn, kind, approval_id=a.id, thread_id=a.thread_id, actor=user, data=data
                )
        return settled

    async def check_voter(self, approval_id: str, user: str, *, approve: bool = True) -> Approval:
        """Raise the refusal `decide` would give `user`, recording nothing (e.g. before a form).

        Raises:
            UnknownApprovalError, NotAuthorizedError, SelfApprovalError, AlreadyDecidedError,
            AlreadyVotedError, ApprovalExpiredError.
        """
        a = await self.get(approval_id)
        await self._check_voter(a, user, self.clock(), approve=approve)
        if any(v.user_id == user for v in a.votes):
            raise AlreadyVotedError(f"{user} has voted on approval {a.id} already", a.id)
        return a

    async def _check_voter(
        self, a: Approval, user: str, now: float, *, approve: bool = True
    ) -> ActionPolicy | None:
        """The action's policy, or None for a rejection of an action the policy no longer names."""
        if a.status != "pending":
            raise self._already(a)
        if a.expire_at is not None and now >= a.expire_at:
            raise ApprovalExpiredError(
                f"approval {a.id} expired at {iso(a.expire_at)}; the workflow gets the "
                "expiry outcome",
                a.id,
            )
        rule = self.policy.actions.get(a.action)
        members = await resolve_members(a.approvers, self.groups)
        if rule is None:
            # Deny by default: nobody may approve it any more, but its approvers may reject it.
            if approve or user not in members:
                raise NotAuthorizedError(
                    f"action {a.action!r} is no longer in the policy, so nobody may approve it; "
                    f"one of its approvers ({', '.join(a.approvers)}) may reject it, or add it back "
                    "to the policy",
                    a.id,
                )
            return None
        refusal = check_voter(rule, requester=a.requester, actor=user, approvers=members)
        if refusal is not None:
            refusal.approval_id = a.id
            raise refusal
        return rule

    def _already(self, a: Approval) -> AlreadyDecidedError | ApprovalExpiredError:
        if a.status == "expired":
            return ApprovalExpiredError(
                f"approval {a.id} expired{' at ' + iso(a.decided_at) if a.decided_at else ''}", a.id
            )
        by = a.decided_by
        when = f" at {iso(a.decided_at)}" if a.decided_at else ""
        return AlreadyDecidedError(
            f"approval {a.id} was {a.status} already by {', '.join(by) or 'someone'}{when}",
            a.id,
            a.status,
            by,
            a.decided_at,
        )

    async def _settled(
        self, conn: AsyncConnection, approval_id: str, decision: dict[str, Any], now: float
    ) -> None:
        """Enqueue a resume for every thread waiting on the approval, and the `decided` event."""
        waiting = await store.waiters(conn, approval_id)
        for thread_id, interrupt_id in waiting:
            await store.enqueue(
                conn,
                "resume",
                f"resume:{interrupt_id}",
                {"interrupt_id": interrupt_id, "decision": decision},
                now,
                approval_id=approval_id,
                thread_id=thread_id,
            )
        kind = "expired" if decision["status"] == "expired" else "decided"
        thread = waiting[0][0] if waiting else None
        await self._event(conn, kind, now, thread_id=thread, approval_id=approval_id)

    async def _event(
        self,
        conn: AsyncConnection,
        kind: str,
        now: float,
        *,
        thread_id: str | None = None,
        approval_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        key = f"event:{kind}:{approval_id or thread_id}:{uuid.uuid4().hex}"
        await store.enqueue(
            conn,
            "event",
            key,
            {"kind": kind, "data": dict(data or {})},
            now,
            approval_id=approval_id,
            thread_id=thread_id,
        )

    # ---- the worker --------------------------------------------------------------------

    async def run_jobs(
        self,
        kinds: tuple[str, ...] = ("resume", "event"),
        *,
        limit: int = 1000,
        prefer: str | None = None,
    ) -> int:
        """Perform due jobs until none is left (or `limit`); return how many were done.

        `prefer` (a kind) takes due jobs of that kind before older ones of other kinds: with
        workers preferring each kind, a backlog of resumes does not hold up card updates, nor
        the other way round.
        """
        done = 0
        while done < limit:
            job = await self._claim(kinds, prefer)
            if job is None:
                break
            try:
                if job["kind"] == "resume":
                    await self._resume(job)
                else:
                    await self._deliver(job)
            finally:
                self._held.discard(job["id"])
            done += 1
        return done

    async def _claim(
        self, kinds: tuple[str, ...], prefer: str | None = None
    ) -> Mapping[str, Any] | None:
        """Take the oldest due job of the first kind that has one (leased to this worker), or
        None; kind `prefer` is asked first, then `kinds` in order.

        Each kind is one walk of the pending-jobs index in `id` order that stops at the first
        due job, so a claim costs the same with a backlog of thousands as with none.
        PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas never wait on each other's picks.
        SQLite: the due jobs are found with a read (no write lock: most passes find nothing),
        then one is taken with a compare-and-set; jobs this process holds are skipped, so its
        workers do not race for the same one.
        """
        now = self.clock()
        order = sorted(kinds, key=lambda kind: kind != prefer)  # stable: `prefer`, then the rest
        if self.db.dialect == "postgresql":
            async with self.db.transaction() as conn:
                job = None
                for kind in order:
                    due = _due_jobs(kind, now).limit(1).with_for_update(skip_locked=True, of=t.jobs)
                    job = (await conn.execute(due)).mappings().first()
                    if job is not None:
                        break
                if job is None or not await self._take(conn, job, now):
                    return None
            self._held.add(job["id"])
            return dict(job)
        async with self.db.read() as conn:
            candidates = [
                job
                for kind in order
                for job in (await conn.execute(_due_jobs(kind, now).limit(CLAIM_CANDIDATES)))
                .mappings()
                .all()
            ]
        for job in candidates:
            if job["id"] in self._held:
                continue
            self._held.add(job["id"])
            try:
                taken = await self.db.write(self._take_statement(job, now)) == 1
            except BaseException:
                self._held.discard(job["id"])
                raise
            if taken:
                return dict(job)
            self._held.discard(job["id"])
        return None

    async def resumes_due(self, approval_id: str) -> int:
        """How many resumes of `approval_id`'s waiting threads are not done yet."""
        j = t.jobs.c
        async with self.db.read() as conn:
            return (
                await conn.scalar(
                    select(func.count())
                    .select_from(t.jobs)
                    .where(j.kind == "resume", j.approval_id == approval_id, j.done_at.is_(None))
                )
                or 0
            )

    async def link_audit(self) -> int:
        """Link every committed audit entry into the hash chain (`AuditLog.link`), in batches;
        return how many. The bot does it every quarter of a second, the sweep and each
        `signoff` command too; with nothing waiting it is one read."""
        async with self.db.read() as conn:
            if not await self.audit.unlinked(conn):
                return 0
        linked = 0
        while True:
            async with self.db.transaction() as conn:
                n = await self.audit.link(conn)
            linked += n
            if n < LINK_BATCH:
                return linked

    async def release_dead_leases(self) -> int:
        """Give back at once the jobs leased to processes of this host that are gone (killed,
        crashed), instead of after their lease: a bot restarted after a crash picks up where
        its predecessor stopped. Processes of other hosts are waited out (their lease). Returns
        how many jobs went back to the queue."""
        j = t.jobs.c
        async with self.db.read() as conn:
            holders = (
                (
                    await conn.execute(
                        select(j.locked_by)
                        .where(j.done_at.is_(None), j.locked_by.is_not(None))
                        .distinct()
                    )
                )
                .scalars()
                .all()
            )
        dead = [h for h in holders if _gone_from_this_host(h)]
        if not dead:
            return 0
        async with self.db.transaction() as conn:
            released = await conn.execute(
                update(t.jobs)
                .where(j.done_at.is_(None), j.locked_by.in_(dead))
                .values(locked_until=None, locked_by=None)
            )
        log.warning(
            "took back %d job(s) from process(es) that died: %s", released.rowcount, ", ".join(dead)
        )
        return int(released.rowcount)

    async def _take(self, conn: AsyncConnection, job: Mapping[str, Any], now: float) -> bool:
        """Lease `job` to this worker if it is still as it was read (nobody took it since)."""
        return (await conn.execute(self._take_statement(job, now))).rowcount == 1

    def _take_statement(self, job: Mapping[str, Any], now: float) -> Update:
        j = t.jobs.c
        return (
            update(t.jobs)
            .where(
                j.id == job["id"],
                j.done_at.is_(None),
                j.attempts == job["attempts"],
                j.available_at <= now,
            )
            .where((j.locked_until.is_(None)) | (j.locked_until < now))
            .values(
                locked_until=now + self.lease_seconds,
                locked_by=self.worker_id,
                attempts=j.attempts + 1,
            )
        )

    async def _finish_job(
        self, job_id: int, *, error: str | None = None, retry_in: float | None = None
    ) -> None:
        await self.db.write(_finish_statement(job_id, self.clock(), error=error, retry_in=retry_in))

    async def _resume(self, job: Mapping[str, Any]) -> None:
        payload = json.loads(job["payload"])
        thread_id = job["thread_id"]
        interrupt_id = payload["interrupt_id"]
        async with self.db.read() as conn:
            run = await store.get_run(conn, thread_id)
        if run is None:
            await self._finish_job(job["id"], error=f"thread {thread_id!r} has no run record")
            return
        graph = self.graph(run["workflow"])
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
        except ThreadBusyError as e:
            await self._finish_job(job["id"], error=str(e), retry_in=0.5)
            return
        except Exception as e:  # noqa: BLE001 - recorded on the run
            if _database_down(e):
                # Not the workflow's failure: the database went away under the run (a restart,
                # a dropped connection). Go on from the saved frontier once it is back.
                delay = min(2.0 ** min(int(job["attempts"]), 6), 60.0)
                log.warning(
                    "resume of %s met the database down, retrying in %.0fs: %s", thread_id, delay, e
                )
                await self._finish_job(job["id"], error=f"{type(e).__name__}: {e}", retry_in=delay)
                return
            result = e
        if result is None:
            # The graph went on to its end in an attempt that died before recording how it
            # stopped: record it now, instead of leaving the run "paused" or "running".
            if run["status"] in ("paused", "running"):
                await self._after_run(thread_id, run["workflow"], dict(state.values))
            await self._finish_job(job["id"])
            return
        resumed = _Resumed(
            job["id"],
            thread_id,
            job["approval_id"],
            interrupt_id,
            bool(payload["decision"]["approved"]),
        )
        await self._after_run(thread_id, run["workflow"], result, resumed=resumed)

    async def _deliver(self, job: Mapping[str, Any]) -> None:
        payload = json.loads(job["payload"])
        event = Event(
            job["id"],
            payload["kind"],
            job["thread_id"],
            job["approval_id"],
            payload["data"],
            attempt=int(job["attempts"]) + 1,
        )
        try:
            await self.sink.deliver(event)
        except RetryLater as e:
            await self._finish_job(job["id"], error=str(e), retry_in=max(e.seconds, 0.1))
        except Exception as e:  # noqa: BLE001 - retried with backoff, never lost
            delay = min(2.0 ** min(job["attempts"], 8), 300.0)
            log.warning(
                "event %s (%s) failed, retrying in %.0fs: %s", job["id"], payload["kind"], delay, e
            )
            await self._finish_job(job["id"], error=f"{type(e).__name__}: {e}", retry_in=delay)
        else:
            await self._finish_job(job["id"])

    # ---- the sweep ---------------------------------------------------------------------

    async def sweep(self) -> dict[str, int]:
        """Remind, escalate and expire what is due. Safe with several sweepers at once."""
        now = self.clock()
        counts = {"reminded": 0, "escalated": 0, "expired": 0}
        async with self.db.read() as conn:
            due = await store.due_approvals(conn, now)
        for a in due:
            async with self.db.transaction() as conn:
                cur = await store.get_approval(conn, a.id, for_update=True)
                if cur is None or cur.status != "pending":
                    continue
                rule = self.policy.actions.get(cur.action)
                if cur.expire_at is not None and now >= cur.expire_at:
                    outcome = rule.on_expiry if rule else "reject"
                    reason = f"expired: nobody decided by {iso(cur.expire_at)}"
                    decision = _decision(
                        cur.id,
                        cur.action,
                        cur.fingerprint,
                        "expired",
                        ["sweep"],
                        reason,
                        {},
                        now,
                        approved=outcome == "approve",
                    )
                    if await store.settle(conn, cur, "expired", decision, now, reason=reason):
                        await self.audit.append(
                            conn,
                            "expired",
                            approval_id=cur.id,
                            thread_id=cur.thread_id,
                            actor="sweep",
                            data={"outcome": outcome},
                        )
                        await self._settled(conn, cur.id, decision, now)
                        counts["expired"] += 1
                elif cur.escalate_at is not None and now >= cur.escalate_at and not cur.escalated:
                    extra = list(rule.escalate_to) if rule else []
                    approvers = list(dict.fromkeys([*cur.approvers, *extra]))
                    if await store.bump(
                        conn,
                        cur,
                        now,
                        escalated=True,
                        escalated_at=now,
                        approvers=store.dumps(approvers),
                    ):
                        await self.audit.append(
                            conn,
                            "escalated",
                            approval_id=cur.id,
                            thread_id=cur.thread_id,
                            actor="sweep",
                            data={"to": extra},
                        )
                        await self._event(
                            conn,
                            "escalated",
                            now,
                            thread_id=cur.thread_id,
                            approval_id=cur.id,
                            data={"to": extra},
                        )
                        counts["escalated"] += 1
                elif (
                    cur.remind_at is not None
                    and now >= cur.remind_at
                    and cur.reminded_at is None
                    and await store.bump(conn, cur, now, reminded_at=now)
                ):
                    await self.audit.append(
                        conn,
                        "reminded",
                        approval_id=cur.id,
                        thread_id=cur.thread_id,
                        actor="sweep",
                        data={},
                    )
                    await self._event(
                        conn, "reminded", now, thread_id=cur.thread_id, approval_id=cur.id
                    )
                    counts["reminded"] += 1
        return counts

    # ---- reading -----------------------------------------------------------------------

    async def get(self, approval_id: str) -> Approval:
        async with self.db.read() as conn:
            a = await store.get_approval(conn, approval_id)
        if a is None:
            raise UnknownApprovalError(approval_id)
        return a

    async def pending(self, *, user: str | None = None) -> list[Approval]:
        """The oldest pending approvals (at most 200); with `user`, those they may decide first."""
        async with self.db.read() as conn:
            items = await store.list_approvals(conn)
        if user is None:
            return items
        mine = [await self.may_decide(a, user) for a in items]
        return [a for a, m in zip(items, mine) if m] + [a for a, m in zip(items, mine) if not m]

    async def pending_view(self, user: str, *, limit: int = 50) -> PendingView:
        """What waits on `user` and what waits on others: the oldest `limit` of each, and how
        many there are in all. The database does the sorting and counting (five indexed
        queries whatever the number of pauses), so the answer stays quick with 100,000 pending.

        Raises:
            GroupsUnavailable: the user's groups could not be looked up.
        """
        decidable = await self._decidable_by(user)
        pending = t.approvals.c.status == "pending"
        async with self.db.read() as conn:
            total = await store.count_approvals(conn, pending)
            mine_total = await store.count_approvals(conn, and_(pending, decidable))
            mine = await store.list_approvals(conn, where=decidable, limit=limit)
            others = await store.list_approvals(conn, where=~decidable, limit=limit)
        # The query decides from what is stored; the policy check is the authority.
        checked = [a for a in mine if await self.may_decide(a, user)]
        return PendingView(
            checked, others, mine_total - (len(mine) - len(checked)), total - mine_total
        )

    async def _decidable_by(self, user: str) -> ColumnElement[bool]:
        """A condition on `approvals`: those `user` may vote on, as `may_decide` would say, for
        the database to filter with. An approval's `approvers` is a JSON list of user ids and
        @groups; `user` matches it by id or through a group of the policy they are in."""
        names = {
            e[1:]
            for rule in self.policy.actions.values()
            for e in (*rule.approvers, *rule.escalate_to)
            if e.startswith("@")
        }
        names |= {g.removeprefix("@") for g in self.policy.groups}
        entries = [user] + [f"@{g}" for g in sorted(names) if user in await self.groups.members(g)]
        c = t.approvals.c
        self_ok = [name for name, rule in self.policy.actions.items() if rule.allow_self_approval]
        return and_(
            or_(*(c.approvers.contains(json.dumps(e), autoescape=True) for e in entries)),
            c.action.in_(list(self.policy.actions)),
            or_(c.requester != user, c.action.in_(self_ok)),
            ~exists().where(t.votes.c.approval_id == c.id, t.votes.c.user_id == user),
        )

    async def mark_posted(self, approval_id: str, channel: str, message_ts: str) -> None:
        """Record where the approval's card was posted (Slack), so later updates edit it."""
        async with self.db.transaction() as conn:
            await store.set_posted(conn, approval_id, channel, message_ts)

    async def may_decide(self, approval: Approval, user: str) -> bool:
        """Whether `user` may vote on `approval` now (policy, groups, self-approval, votes)."""
        if approval.status != "pending" or any(v.user_id == user for v in approval.votes):
            return False
        rule = self.policy.actions.get(approval.action)
        if rule is None:
            return False
        members = await resolve_members(approval.approvers, self.groups)
        return (
            check_voter(rule, requester=approval.requester, actor=user, approvers=members) is None
        )

    async def approval_counts(self) -> dict[str, int]:
        """How many approvals there are in each status (one grouped query)."""
        async with self.db.read() as conn:
            return await store.count_by_status(conn)

    async def recent(self, limit: int = 10) -> list[Approval]:
        """The most recently decided approvals, newest first."""
        async with self.db.read() as conn:
            return await store.recent_decided(conn, limit)

    async def run_info(self, thread_id: str) -> Mapping[str, Any] | None:
        async with self.db.read() as conn:
            return await store.get_run(conn, thread_id)

    async def thread_approvals(self, thread_id: str) -> list[Approval]:
        async with self.db.read() as conn:
            return await store.list_approvals(
                conn,
                statuses=("pending", "approved", "rejected", "expired", "cancelled"),
                thread_id=thread_id,
            )

    async def purge(self, older_than_seconds: float) -> int:
        """Delete settled runs (and their approvals and checkpoints) older than the age given.

        Live runs (running, paused) and failed ones a person must look at are never touched.
        """
        cutoff = self.clock() - older_than_seconds
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(t.runs.c.thread_id).where(
                    t.runs.c.status == "completed", t.runs.c.updated_at < cutoff
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


@dataclass(frozen=True, slots=True)
class _Resumed:
    """A resume job whose run just stopped, recorded with how it stopped (`_after_run`)."""

    job_id: int
    thread_id: str
    approval_id: str | None
    interrupt_id: str
    approved: bool

    async def record(
        self, signoff: Signoff, conn: AsyncConnection, now: float, *, finish: bool
    ) -> None:
        if finish:
            await _finish_job_in(conn, self.job_id, now)
        await signoff.audit.append(
            conn,
            "resumed",
            approval_id=self.approval_id,
            thread_id=self.thread_id,
            actor=signoff.worker_id,
            data={"interrupt_id": self.interrupt_id, "approved": self.approved},
        )


def _due_jobs(kind: str, now: float) -> Select[Any]:
    """Due, unleased jobs of `kind`, oldest first (through the index `ix_jobs_pending`); a
    thread's events only once the ones before them are done, so they go out in order."""
    j = t.jobs.c
    due = select(t.jobs).where(
        j.done_at.is_(None),
        j.kind == kind,
        j.available_at <= now,
        (j.locked_until.is_(None)) | (j.locked_until < now),
    )
    if kind == "event":
        earlier = t.jobs.alias("earlier")
        due = due.where(
            ~exists().where(
                earlier.c.kind == "event",
                earlier.c.thread_id == j.thread_id,
                earlier.c.id < j.id,
                earlier.c.done_at.is_(None),
            )
        )
    return due.order_by(j.id)


async def _finish_job_in(
    conn: AsyncConnection,
    job_id: int,
    now: float,
    *,
    error: str | None = None,
    retry_in: float | None = None,
) -> None:
    """Mark a job done (or due again in `retry_in` seconds) and let go of its lease."""
    await conn.execute(_finish_statement(job_id, now, error=error, retry_in=retry_in))


def _finish_statement(
    job_id: int, now: float, *, error: str | None = None, retry_in: float | None = None
) -> Update:
    values: dict[str, Any] = {"locked_until": None, "locked_by": None, "last_error": error}
    if retry_in is None:
        values["done_at"] = now
    else:
        values["available_at"] = now + retry_in
    return update(t.jobs).where(t.jobs.c.id == job_id).values(**values)


def _gone_from_this_host(worker_id: str) -> bool:
    """True when `worker_id` (`host:pid:tag`) names a process of this host that no longer runs."""
    parts = worker_id.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it runs, as another user
        return False
    try:  # killed but not yet reaped by its parent: a zombie runs nothing
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _database_down(error: BaseException) -> bool:
    """True when `error` (or what caused it) is the database going away, not the run failing."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, DatabaseUnavailable) or (
            isinstance(e, DBAPIError) and e.connection_invalidated
        ):
            return True
        if type(e).__module__.startswith("psycopg") and any(
            c.__name__ == "OperationalError" for c in type(e).__mro__
        ):
            return True
        e = e.__cause__ or e.__context__
    return False


def _decision(
    approval_id: str,
    action: str,
    fingerprint: str,
    status: str,
    by: list[str],
    note: str,
    edits: Mapping[str, Any],
    now: float,
    *,
    approved: bool | None = None,
) -> dict[str, Any]:
    return {
        "approved": status == "approved" if approved is None else approved,
        "status": status,
        "approval_id": approval_id,
        "action": action,
        "fingerprint": fingerprint,
        "edits": dict(edits),
        "by": list(by),
        "at": iso(now),
        "note": note,
        "idempotency_key": idempotency_key(approval_id, fingerprint),
    }
