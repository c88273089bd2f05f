"""`Signoff`: the governance core. Starts runs, turns their pauses into approvals, takes decisions,
resumes threads exactly once, sweeps stale approvals. The CLI and the Slack app both drive it.

The rule that makes it exactly-once: whatever must happen after a commit (resume a thread, tell
Slack) is written as a job *in the same transaction* as the decision; the worker performs jobs
and marks them done. A process that dies in between leaves the job for the next worker, and the
runtime's own guarantees (one run per thread, an answer recorded once per interrupt) make a
second attempt harmless.
"""

from __future__ import annotations

import time
from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from graphs import CompiledGraph

from ._service_threads import EXTERNAL_WORKFLOW
from .audit import LINK_BATCH, AuditLog
from .away import Away
from .decisions import DecideResult, Decisions, idempotency_key
from .events import EventSink, NullSink
from .external import ExternalApprovals, external_workflow
from .grants import Grant, GrantAsk, Grants
from .jobs import LEASE_SECONDS, JobKind, JobQueue, Undelivered, WebhookDelivery
from .models import Approval, Workflow
from .pauses import Pauses
from .policy import GroupResolver, Policy, StaticGroups
from .policy.grants import GrantLimits
from .runs import RunReport, Runs
from .sweep import Sweeper
from .views import PendingView, Views

if TYPE_CHECKING:
    from .db import Database

__all__ = ["DecideResult", "PendingView", "RunReport", "Signoff", "idempotency_key"]


class Signoff:
    """The governance core, bound to one database, policy and set of workflows.

    A facade: each part holds one idea and is composed here, on the same database, clock, audit
    log and job queue. `jobs` (the queue), `decisions` (votes), `sweeper` (remind, escalate,
    expire), `runs` (start, resume, record) with `pauses` (a pause becomes an approval), and
    `views` (reading), `away` (who is away: `/agent away`, Slack's do-not-disturb and statuses,
    early escalation, delegates). Callers use the methods below; the parts are there for tests
    and tools.
    """

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
        self.audit = audit or AuditLog.from_env()
        self.sink: EventSink = sink or NullSink()
        """Where events go; the bot sets its Slack sink once the Slack client exists."""
        self.clock = clock
        self.jobs = JobQueue(db, clock, lease_seconds=lease_seconds)
        groups = groups or StaticGroups(policy.groups)
        self.decisions = Decisions(db, policy, groups, self.audit, self.jobs, clock)
        self.sweeper = Sweeper(db, policy, self.audit, self.jobs, clock)
        self.pauses = Pauses(db, policy, self.audit, self.jobs, clock)
        self.away = Away(db, policy, groups, self.audit, self.jobs, clock)
        """Who is away (`/agent away`, Slack's DND and statuses): early escalation, delegates."""
        self.decisions.away = self.pauses.away = self.sweeper.away = self.away
        if EXTERNAL_WORKFLOW in workflows:
            raise ValueError(
                f"{EXTERNAL_WORKFLOW!r} is the name of signoff's own workflow for approvals asked "
                "over the API; name yours otherwise"
            )
        self._workflows = workflows
        # a view, not a copy: a workflow's module may be imported on its first lookup
        # (`bot.workflows.Workflows`), which a copy would do for all of them at once
        own = {EXTERNAL_WORKFLOW: external_workflow()}
        every = ChainMap(own, workflows)  # type: ignore[arg-type]  # it writes only to `own`
        self.runs = Runs(db, policy, every, groups, self.audit, self.jobs, self.pauses, clock)
        self.views = Views(db, policy, groups)
        self.grants = Grants(db, policy, groups, self.audit, clock)
        """Grants made from cards: read and revoked here, made by votes, used by pauses."""
        self.external = ExternalApprovals(policy, db, self.audit, self.jobs, self.runs, clock)
        self.runs.service_facts = self.external.checks.read
        """Approvals asked for from outside: services over the HTTP API, MCP (`external.py`)."""

    # ---- what the parts share -------------------------------------------------------------

    @property
    def groups(self) -> GroupResolver:
        """Who is in each `@group` (the policy's `[groups]`, then Slack's, in the bot)."""
        return self.views.groups

    @groups.setter
    def groups(self, groups: GroupResolver) -> None:
        self.decisions.groups = self.runs.groups = self.views.groups = groups
        self.grants.groups = groups
        self.away.groups = groups

    @property
    def workflows(self) -> Mapping[str, Workflow]:
        """The workflows a person may start by name (signoff's own `external_approval`, which
        only the approvals API starts, is not among them)."""
        return self._workflows

    @property
    def lease_seconds(self) -> float:
        """How long a claimed job stays locked to this worker; past it, another may take it over."""
        return self.jobs.lease_seconds

    @property
    def worker_id(self) -> str:
        return self.jobs.worker_id

    def hide_secrets(self, value: Any) -> Any:
        """`value` (a run's input or state) with every field the policy marks secret, at any
        depth, replaced by its hash, as in approvals: for what is stored, printed or posted."""
        return self.runs.hide_secrets(value)

    async def hide_thread_secrets(self, thread_id: str, workflow: str, value: Any) -> Any:
        """`value` (something derived from the thread: its state, an outcome) with every secret
        the thread ever held hidden, as `hide_secrets` and wherever it is quoted."""
        return (await self.runs.concealer(thread_id, workflow, value)).hide(value)

    # ---- runs ------------------------------------------------------------------------------

    def graph(self, workflow: str) -> CompiledGraph:
        return self.runs.graph(workflow)

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
    ) -> RunReport:
        """Start `workflow` on a new thread and run it until it pauses or ends.

        Args:
            requester: who asked (a Slack user id, a service name). They may not approve their
                own requests unless the policy allows it.
            channel: where this run's cards and notifications go.
            check_starter: enforce the policy's `starters` (Slack and the HTTP API do; the CLI
                is an operator's tool and does not).
            text_inputs: the inputs were typed as text (`/agent run key=value`): each is parsed
                by the workflow's schema (a number field's `"12.50"` is 12.5; ASCII digits
                only) before it is checked. Otherwise values are checked as they are
                (`"12.50"` is not a number).
            request_key: what identifies the request that asks for the run (Slack's
                `trigger_id`): the thread id is derived from it, so the same request made again
                (a replay of a signed request, a retry) starts nothing and raises
                `AlreadyStartedError`, on every replica (the runs table's key).

        Raises:
            UnknownWorkflowError, StartRefused, InvalidInputError (MissingInputError): nothing
                was recorded.
            AlreadyStartedError: `request_key` started a run already; nothing new was recorded.
        """
        return await self.runs.start(
            workflow,
            input,
            requester=requester,
            channel=channel,
            thread_id=thread_id,
            check_starter=check_starter,
            text_inputs=text_inputs,
            request_key=request_key,
        )

    async def purge(self, older_than_seconds: float) -> int:
        """As `Runs.purge`: delete completed, cancelled and failed runs older than the age."""
        return await self.runs.purge(older_than_seconds)

    async def purge_grants(self, older_than_seconds: float) -> int:
        """As `Grants.purge`: delete the grants that ended longer ago than the age."""
        return await self.grants.purge(older_than_seconds)

    async def retry(self, thread_id: str, *, actor: str, check_control: bool = False) -> None:
        """Go on with a failed run from its last checkpoint, exactly once (`Runs.retry`); the
        worker performs it. `check_control` (Slack): only approvers of the run's actions and
        starters of its workflow may (`Runs.check_control`); the CLI is an operator's tool.

        Raises:
            UnknownRunError, RunStateError, RunControlRefused: nothing was changed.
        """
        if check_control:
            await self.runs.check_control(thread_id, actor, "retry")
        await self.runs.retry(thread_id, actor=actor)

    async def cancel(
        self, thread_id: str, *, actor: str, note: str = "", check_control: bool = False
    ) -> list[str]:
        """Cancel a run and its pending approvals (`Runs.cancel`); `check_control` as for
        `retry`. Returns the ids of the approvals cancelled.

        Raises:
            UnknownRunError, RunStateError, RunControlRefused: nothing was changed.
        """
        if check_control:
            await self.runs.check_control(thread_id, actor, "cancel")
        return await self.runs.cancel(thread_id, actor=actor, note=note)

    async def undelivered(self, thread_id: str | None = None) -> list[Undelivered]:
        """Messages Slack refused for good (an archived channel, the bot not in it), of one
        thread or all, oldest first (`JobQueue.undelivered`)."""
        return await self.jobs.undelivered(thread_id)

    async def webhooks(self, thread_id: str) -> list[WebhookDelivery]:
        """The webhooks of a service's request (its thread), oldest first: delivered, retrying
        (tries made, when next) or given up (`JobQueue.webhooks_of`)."""
        return await self.jobs.webhooks_of(thread_id)

    async def redeliver(self, target: str, *, actor: str) -> list[Undelivered]:
        """Queue again the given-up messages of `target` (a thread id or a job id), once its
        cause is fixed; audited (`redelivered`). The worker delivers them, looking first for
        any that did land, so none is posted twice. Returns them (empty: nothing to redeliver).
        """
        now = self.clock()
        async with self.db.transaction() as conn:
            picked = await self.jobs.redeliver_in(conn, target, now)
            for thread_id in sorted({u.thread_id or "" for u in picked}):
                mine = [u for u in picked if (u.thread_id or "") == thread_id]
                await self.audit.append(
                    conn,
                    "redelivered",
                    thread_id=thread_id or None,
                    actor=actor,
                    data={
                        "jobs": [u.job_id for u in mine],
                        "events": [u.event for u in mine],
                        "errors": sorted({u.error for u in mine}),
                    },
                )
        return picked

    async def payload_viewed(self, approval: Approval, user: str) -> None:
        """Note that `user` opened the approval's Full payload (audited, `payload_viewed`), so
        `signoff report` can tell an approval given after reading it from one given at a glance.
        """
        async with self.db.transaction() as conn:
            await self.audit.append(
                conn,
                "payload_viewed",
                approval_id=approval.id,
                thread_id=approval.thread_id,
                actor=user,
                data={"action": approval.action},
            )

    # ---- deciding --------------------------------------------------------------------------

    async def decide(
        self,
        approval_id: str,
        user: str,
        approve: bool,
        *,
        note: str = "",
        edits: Mapping[str, Any] | None = None,
        wait: float | None = None,
        revision: int | None = None,
        grant: GrantAsk | None = None,
    ) -> DecideResult:
        """Record `user`'s vote (`vote`), then read the approval as it now stands.

        Raises:
            As `vote`.
        """
        settled = await self.vote(
            approval_id, user, approve, note=note, edits=edits, wait=wait, revision=revision,
            grant=grant,
        )  # fmt: skip
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
        revision: int | None = None,
        seen: Approval | None = None,
        grant: GrantAsk | None = None,
    ) -> bool:
        """Record `user`'s vote; settle the approval when it decides it. One transaction.
        Returns whether this vote settled it (quorum reached, or a rejection). A click needs
        no more than that: it answers Slack as soon as the vote is committed.

        `wait` bounds the whole vote in seconds (a click must be answered within Slack's 3
        seconds): its lookups, its turn to write, the locks it waits for, its statements; it
        is checked again right before the commit. Past it, `DatabaseBusy` and nothing is
        recorded: it never commits later.

        `revision` is the `Approval.revision` the voter was shown (Slack's buttons and modals
        carry it): when an edit has changed the values since, the vote is refused
        (`StaleRevisionError`). None (the CLI, code) votes on the values as they are now.

        `seen`: the approval as the caller read it a moment ago (a click, to check its button):
        which groups to look up is taken from it instead of reading it once more, and the vote
        is judged on it and recorded with compare-and-set on its version (every vote, edit,
        reminder and decision moves it), so it is not read again while the vote holds the write
        lock. When it has changed since, or the vote would be refused, the vote is judged on
        the row as it is then, locked.

        `grant`: with an approval that decides the request, "and allow up to `uses` more like
        this for `window`" (`bot.approvals.grants`), within the action's `grants` policy;
        refused (`GrantRefused`, nothing recorded) otherwise.

        Raises:
            UnknownApprovalError, NotAuthorizedError, SelfApprovalError, AlreadyDecidedError,
            AlreadyVotedError, ApprovalExpiredError, InvalidEditError, StaleRevisionError:
                nothing was changed.
            GroupsUnavailable: a group's members could not be looked up; nothing was changed.
        """
        try:
            return await self.decisions.vote(
                approval_id,
                user,
                approve,
                note=note,
                edits=edits,
                wait=wait,
                revision=revision,
                seen=seen,
                grant=grant,
            )
        finally:
            # changed, or judged on a copy found stale: the next click reads it again
            self.views.forget(approval_id)

    def grant_limits(self, approval: Approval) -> GrantLimits:
        """What the action's policy lets an approver grant with their approval of `approval`
        (the grant modal's choices).

        Raises:
            GrantRefused: it allows no grants (any more), or not for this approval.
        """
        return self.grants.limits(approval)

    async def live_grants(self, *, user: str | None = None) -> list[Grant]:
        """The grants that may still approve something (`Grants.live`); with `user`, those
        they may revoke."""
        return await self.grants.live(user=user)

    async def revoke_grant(self, grant_id: str, user: str) -> Grant:
        """End a grant (`Grants.revoke`): its grantor or an approver of its action may.

        Raises:
            GrantRefused: anyone else, or a grant that is over; audited, nothing changed.
        """
        return await self.grants.revoke(grant_id, user)

    async def check_voter(self, approval_id: str, user: str, *, approve: bool = True) -> Approval:
        """Raise the refusal `decide` would give `user`, recording nothing (e.g. before a form).

        Raises:
            UnknownApprovalError, NotAuthorizedError, SelfApprovalError, AlreadyDecidedError,
            AlreadyVotedError, ApprovalExpiredError.
        """
        return await self.decisions.check_voter(approval_id, user, approve=approve)

    # ---- the worker ------------------------------------------------------------------------

    async def run_jobs(
        self,
        kinds: tuple[JobKind, ...] = ("resume", "event", "webhook"),
        *,
        limit: int = 1000,
        prefer: JobKind | None = None,
        before_each: Callable[[], Awaitable[None]] | None = None,
    ) -> int:
        """Perform due jobs until none is left (or `limit`); return how many were done.

        `prefer` (a kind) takes due jobs of that kind before older ones of other kinds: with
        workers preferring each kind, a backlog of resumes does not hold up card updates, nor
        the other way round. `before_each` is awaited before each job is claimed (the bot's
        workers give way to the clicks being served there: `bot.scheduler.Foreground`).
        """
        done = 0
        while done < limit:
            if before_each is not None:
                await before_each()
            job = await self.jobs.claim(kinds, prefer)
            if job is None:
                break
            try:
                if job.kind == "resume":
                    await self.runs.resume(job)
                elif job.kind == "webhook":
                    await self.external.deliver(job)
                else:
                    await self.jobs.deliver(job, self.sink)
            finally:
                self.jobs.held.discard(job.id)
            done += 1
        return done

    async def resumes_due(self, approval_id: str) -> int:
        """How many resumes of `approval_id`'s waiting threads are not done yet."""
        return await self.jobs.resumes_due(approval_id)

    async def release_dead_leases(self) -> int:
        """Give back at once the jobs leased to processes of this host that are gone (see
        `JobQueue.release_dead_leases`); return how many."""
        return await self.jobs.release_dead_leases()

    async def link_audit(self) -> int:
        """Link every committed audit entry into the hash chain (`AuditLog.link`), in batches;
        return how many. The bot does it every quarter of a second, the sweep and each
        `signoff` command too; with nothing waiting it is one read. The refusals' windows
        that are over by this `Signoff`'s clock are written too (`AuditLog.refusal`)."""
        now = self.clock()
        async with self.db.read() as conn:
            if not await self.audit.unlinked(conn, now=now):
                return 0
        linked = 0
        while True:
            async with self.db.transaction() as conn:
                n = await self.audit.link(conn, now=now)
            linked += n
            if n < LINK_BATCH:
                return linked

    # ---- the sweep -------------------------------------------------------------------------

    async def sweep(self) -> dict[str, int]:
        """Remind, escalate and expire what is due; end the grants a policy change left
        without ground (`Grants.end_stale`). Safe with several sweepers at once."""
        counts = await self.sweeper.sweep()
        await self.grants.end_stale()
        return counts

    # ---- reading ---------------------------------------------------------------------------

    async def get(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """`wait` bounds the read in seconds, as `vote`'s (a click's read of what it is on).

        Raises: UnknownApprovalError; DatabaseBusy (with `wait`), it could not be read in time.
        """
        deadline = None if wait is None else time.monotonic() + wait
        return await self.views.get(approval_id, deadline=deadline)

    def last_read(self, approval_id: str) -> Approval | None:
        """The approval as this process last read it (`get`), or None. Possibly stale: a hint
        for `vote(seen=...)`, which checks it against the database (compare-and-set on its
        version, or the row read again) before anything is recorded; never an answer to show
        or decide on by itself."""
        return self.views.last_read(approval_id)

    async def pending(self, *, user: str | None = None) -> list[Approval]:
        """The oldest pending approvals (at most 200); with `user`, those they may decide first."""
        return await self.views.pending(user=user)

    async def pending_view(self, user: str, *, limit: int = 50) -> PendingView:
        """What waits on `user` and what waits on others (`Views.pending_view`).

        Raises:
            GroupsUnavailable: the user's groups could not be looked up.
        """
        return await self.views.pending_view(user, limit=limit)

    async def may_decide(self, approval: Approval, user: str) -> bool:
        """Whether `user` may vote on `approval` now (policy, groups, self-approval, votes)."""
        return await self.views.may_decide(approval, user)

    async def mark_posted(self, approval_id: str, channel: str, message_ts: str) -> None:
        """Record where the approval's card was posted (Slack), so later updates edit it."""
        await self.views.mark_posted(approval_id, channel, message_ts)

    async def approval_counts(self) -> dict[str, int]:
        """How many approvals there are in each status (one grouped query)."""
        return await self.views.approval_counts()

    async def recent(self, limit: int = 10) -> list[Approval]:
        """The most recently decided approvals, newest first."""
        return await self.views.recent(limit)

    async def run_info(self, thread_id: str) -> Mapping[str, Any] | None:
        return await self.views.run_info(thread_id)

    async def thread_approvals(self, thread_id: str) -> list[Approval]:
        return await self.views.thread_approvals(thread_id)
