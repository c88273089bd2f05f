"""Deciding: a person's vote, checked against policy and recorded in one transaction, and the
approval settled when it decides it (quorum reached, or a rejection).

Settling writes the decision and, in the same transaction, a resume job for every thread that
waits on the approval: the worker resumes them afterwards, exactly once (`jobs.py`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from . import _turns, store
from ._joined import resumed_by_decision
from ._vote_refusals import already, stale, visible_text
from .audit import AuditKind, AuditLog
from .away import Absence, Away, stand_in
from .errors import (
    AlreadyVotedError,
    ApprovalExpiredError,
    DecisionRefused,
    GrantRefused,
    InvalidEditError,
    NotAuthorizedError,
    SelfApprovalError,
    UnknownApprovalError,
)
from .grants import GrantAsk, check_ask
from .grants import create as create_grant
from .jobs import JobQueue
from .limits import note_problem
from .models import Approval, Decision, DecisionStatus, iso
from .policy import (
    ActionPolicy,
    GroupResolver,
    Policy,
    StaticGroups,
    check_voter,
    resolve_members,
    validate_edits,
)

if TYPE_CHECKING:
    from .db import Database

__all__ = ["DecideResult", "Decisions", "idempotency_key", "new_decision", "settled", "stale"]


@dataclass(frozen=True, slots=True)
class DecideResult:
    approval: Approval
    settled: bool
    """True when this vote decided the approval (quorum reached, or a rejection)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """A vote judged on one version of its approval, before anything is written."""

    approval: Approval
    approve: bool
    clean: dict[str, Any]
    """The edits, validated ({} for none)."""
    decision: Decision | None
    """The decision this vote makes (quorum reached, or a rejection); None when it does not."""
    grant: GrantAsk | None = None
    """The grant made with this approval (`grants`), checked against the policy; or None."""
    for_user: str | None = None
    """The away approver the voter stands in for as their delegate; None for one's own vote."""

    @property
    def settles(self) -> bool:
        return self.decision is not None


def idempotency_key(approval_id: str, fingerprint: str) -> str:
    """Stable for one approved proposal: what downstream APIs de-duplicate a retry by."""
    return hashlib.sha256(f"{approval_id}:{fingerprint}".encode()).hexdigest()[:32]


def new_decision(
    approval: Approval | tuple[str, str, str],
    status: DecisionStatus,
    by: Iterable[str],
    note: str,
    edits: Mapping[str, Any],
    now: float,
    *,
    approved: bool | None = None,
) -> Decision:
    """The one way a decision is made, by a vote, a rule, policy or the sweep.

    Args:
        approval: the approval decided, or its `(id, action, fingerprint)` before it is stored.
        status: how it was decided; `approved` follows from it unless given (an expiry may
            approve).
        by: user ids, or `rule:<name>`, `policy`, `sweep`.
    """
    if isinstance(approval, Approval):
        approval_id, action, fingerprint = approval.id, approval.action, approval.fingerprint
    else:
        approval_id, action, fingerprint = approval
    return Decision(
        approved=status == "approved" if approved is None else approved,
        status=status,
        approval_id=approval_id,
        action=action,
        fingerprint=fingerprint,
        edits=dict(edits),
        by=tuple(by),
        at=iso(now),
        note=note,
        idempotency_key=idempotency_key(approval_id, fingerprint),
    )


async def settled(
    conn: AsyncConnection,
    jobs: JobQueue,
    approval_id: str,
    decision: Decision,
    now: float,
    *,
    opener: str,
    turn_id: str | None = None,
    audit: AuditLog | None = None,
) -> None:
    """Enqueue a resume for the thread that acts on the decision (a run that joined the
    approval as a duplicate ends as that one does instead: `_joined`), the webhooks of those an
    outside service asked for, and the `decided` event. `opener`: the thread that opened the
    approval (`Approval.thread_id`). `turn_id`: the agent turn it is a call of
    (`Approval.turn_id`), whose calls that run after it are then settled, held or asked again
    as `_turns` says, each on `audit`."""
    waiting = await store.waiters(conn, approval_id)
    for thread_id, interrupt_id in resumed_by_decision(opener, waiting):
        await jobs.resume(
            conn,
            now,
            thread_id=thread_id,
            interrupt_id=interrupt_id,
            approval_id=approval_id,
            decision=decision.to_record(),
        )
    await jobs.webhooks(conn, now, approval_id=approval_id, threads=[t for t, _ in waiting])
    thread = waiting[0][0] if waiting else None
    await jobs.event(
        conn,
        "expired" if decision.status == "expired" else "decided",
        now,
        thread_id=thread,
        approval_id=approval_id,
    )
    if turn_id is not None and audit is not None:
        await _after_in_turn(conn, jobs, audit, opener, turn_id, approval_id, decision, now)


async def _after_in_turn(
    conn: AsyncConnection,
    jobs: JobQueue,
    audit: AuditLog,
    thread_id: str,
    turn_id: str,
    approval_id: str,
    decision: Decision,
    now: float,
) -> None:
    """What the settlement of `approval_id` means for the calls of its turn that run after it
    (`_turns`): denied when it was not approved, asked again when it was approved with edits,
    settled when it was the last thing a call approved by its own approvers waited for."""
    await _turns.lock_turn(conn, thread_id, turn_id)
    turn = await _turns.turn_approvals(conn, thread_id, turn_id)
    done = next((a for a in turn if a.id == approval_id), None)
    if done is None or done.turn is None:
        return
    for a in turn:
        if a.status != "pending" or a.turn is None or done.turn.call_id not in a.turn.after:
            continue
        refused = _turns.refused_by(a, turn)
        if refused is not None:
            await block(conn, jobs, audit, a, _turns.refusal_note(a, refused), now)
        elif decision.edits:
            await _ask_again(conn, jobs, audit, a, done, now)
        elif not _turns.held_by(a, turn) and a.approvals_count >= a.required:
            await _release(conn, jobs, audit, a, now)


async def block(
    conn: AsyncConnection, jobs: JobQueue, audit: AuditLog, a: Approval, note: str, now: float
) -> None:
    """Deny pending `a`, a call whose turn refused a call it runs after (`note` says which)."""
    decision = new_decision(a, "denied", ["policy"], note, {}, now)
    if not await store.settle(conn, a, "rejected", decision.to_record(), now, reason=note):
        return  # settled meanwhile (PostgreSQL): that settlement stands
    data = {"action": a.action, "args": a.payload, "reason": note, "after": True}
    await audit.append(
        conn, "denied", approval_id=a.id, thread_id=a.thread_id, actor="policy", data=data
    )
    await settled(
        conn, jobs, a.id, decision, now, opener=a.thread_id, turn_id=a.turn_id, audit=audit
    )


async def _ask_again(
    conn: AsyncConnection,
    jobs: JobQueue,
    audit: AuditLog,
    a: Approval,
    edited: Approval,
    now: float,
) -> None:
    """`a` runs after `edited`, which was approved with edits: the votes `a` had were given
    against other values, so they count no more."""
    if not a.votes or not await store.bump(conn, a, now):
        return
    await _turns.drop_votes(conn, a.id)
    data = {
        "again": True,
        "because": f"{edited.action} was approved with edits",
        "votes_dropped": [v.user_id for v in a.votes],
    }
    await audit.append(
        conn, "requested", approval_id=a.id, thread_id=a.thread_id, actor="policy", data=data
    )
    await jobs.event(conn, "vote_recorded", now, thread_id=a.thread_id, approval_id=a.id)


async def _release(
    conn: AsyncConnection, jobs: JobQueue, audit: AuditLog, a: Approval, now: float
) -> None:
    """Settle `a`, approved by its own approvers while a call it runs after was pending."""
    by = [v.user_id for v in a.votes if v.decision == "approve"]
    edits = {k: v for vote in a.votes for k, v in vote.edits.items()}
    notes = "; ".join(v.note for v in a.votes if v.note)
    decision = new_decision(a, "approved", by, notes, edits, now)
    if not await store.settle(conn, a, "approved", decision.to_record(), now):
        return
    data = {"by": by, "note": notes, "edits": edits}
    await audit.append(
        conn, "approved", approval_id=a.id, thread_id=a.thread_id, actor=by[-1], data=data
    )
    await settled(
        conn, jobs, a.id, decision, now, opener=a.thread_id, turn_id=a.turn_id, audit=audit
    )


log = logging.getLogger("signoff")


async def _held(conn: AsyncConnection, a: Approval) -> bool:
    """Whether a call `a` runs after in its agent turn is not settled yet (no query for an
    approval that runs after nothing)."""
    if a.turn is None or not a.turn.after or a.turn_id is None:
        return False
    await _turns.lock_turn(conn, a.thread_id, a.turn_id)
    turn = await _turns.turn_approvals(conn, a.thread_id, a.turn_id)
    return bool(_turns.held_by(a, turn))


class Decisions:
    """Votes: who may cast them, and what one does to its approval."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        groups: GroupResolver,
        audit: AuditLog,
        jobs: JobQueue,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.policy = policy
        self.groups = groups
        self.audit = audit
        self.jobs = jobs
        self.clock = clock
        self.away: Away | None = None
        """Who is away and whom they named to decide for them (set by `Signoff`)."""

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
        """As `Signoff.vote`. A refused vote (`DecisionRefused`, an unknown approval) records
        nothing on the approval, and is on the audit log: `vote_refused`, who, what, why."""
        kw: dict[str, Any] = {"note": note, "edits": edits, "wait": wait, "revision": revision}
        try:
            try:
                return await self._vote(approval_id, user, approve, seen=seen, grant=grant, **kw)
            except NotAuthorizedError as e:
                # Not an approver: maybe the delegate of one who is away. Asked only now, so
                # an approver's click reads nothing more than before.
                delegating = await self._delegating(user, e)
                if not delegating:
                    raise
                return await self._vote(
                    approval_id, user, approve, delegating=delegating, grant=grant, **kw
                )
        except (DecisionRefused, UnknownApprovalError) as refusal:
            await self._audit_refusal(approval_id, user, approve, refusal)
            raise

    async def _delegating(self, user: str, refused: NotAuthorizedError) -> dict[str, Absence]:
        """Those away who named `user`, refused as no approver (`Away.named_by_them`)."""
        return await self.away.named_by_them(user, refused) if self.away is not None else {}

    async def _audit_refusal(
        self, approval_id: str, user: str, approve: bool, refusal: Exception
    ) -> None:
        """The `vote_refused` entry, in a transaction of its own (the vote's rolled back). If
        the database cannot take it, the person still hears the refusal; the log says why.
        Urgent, as the vote was: the person hears the refusal once it is recorded (on SQLite it
        commits with the votes queued at the write gate)."""

        async def record(conn: AsyncConnection) -> None:
            a = await store.get_approval(conn, approval_id)
            data = {
                "decision": "approve" if approve else "reject",
                "refusal": getattr(refusal, "code", type(refusal).__name__),
                "reason": str(refusal),
            }
            if a is None:
                data["approval"] = approval_id[:200]
            await self.audit.append(
                conn,
                "vote_refused",
                approval_id=a.id if a else None,
                thread_id=a.thread_id if a else None,
                actor=user,
                data=data,
            )

        try:
            await self.db.transact(record, urgent=True)
        except Exception as e:  # noqa: BLE001 - the refusal itself must still be told
            log.warning("could not audit a refused vote of %s on %s: %s", user, approval_id, e)

    async def _vote(
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
        delegating: Mapping[str, Absence] | None = None,
    ) -> bool:
        """The vote itself (`vote` audits a refusal); `delegating`: the people away who named
        `user` to decide for them.

        Edits and quorum: every person counted toward a decision was shown the values that run.
        An edit makes a new revision of the values (`Approval.revision`), which the card, the
        payload modal and Home show; the editor's approval is for it. An edit is refused once
        anyone has approved (they approved other values), and a vote for an earlier revision
        than the current one is refused (`StaleRevisionError`): it is never counted. The audit
        log's `vote` entry says which revision each vote was for.
        """
        # `wait` bounds the whole vote, its lookups included: a click must be answered in time.
        deadline = None if wait is None else time.monotonic() + wait
        now = self.clock()
        note = visible_text(note)
        groups = await self._groups_for(approval_id, deadline, seen)

        async def record(conn: AsyncConnection) -> _Plan:
            # Only statements on `conn`: on SQLite it may be run again (`Database.transact`).
            plan: _Plan | None = None
            if seen is not None and seen.id == approval_id:
                # The approval as the caller read it a moment ago: when the compare-and-set on
                # its version succeeds, nothing has changed since (every vote, edit, reminder
                # and decision moves the version), so it need not be read again while the
                # vote holds the write lock. A refusal, or a change since, is judged again on
                # the row as it is now.
                held = await _held(conn, seen)
                try:
                    plan = await self._plan(
                        seen,
                        user,
                        approve,
                        note,
                        edits,
                        revision,
                        now,
                        groups,
                        held,
                        grant,
                        delegating,
                    )
                except DecisionRefused:
                    plan = None
                if plan is not None and not await self._claim(conn, plan, now):
                    plan = None
            if plan is None:
                # A call that runs after another: its turn is locked before its row (`_held`)
                known = seen if seen is not None and seen.id == approval_id else None
                if known is None and conn.dialect.name == "postgresql":
                    known = await store.get_approval(conn, approval_id)
                held = await _held(conn, known) if known is not None else False
                a = await store.get_approval(conn, approval_id, for_update=True)
                if a is None:
                    raise UnknownApprovalError(approval_id)
                held = await _held(conn, a) if known is None else held
                plan = await self._plan(
                    a,
                    user,
                    approve,
                    note,
                    edits,
                    revision,
                    now,
                    groups,
                    held,
                    grant,
                    delegating,
                )
                if not await self._claim(conn, plan, now):
                    raise already(await store.get_approval(conn, a.id) or a)
            await self._record(conn, plan, user, note, now)
            return plan

        return (await self.db.transact(record, urgent=True, deadline=deadline)).settles

    async def _plan(
        self,
        a: Approval,
        user: str,
        approve: bool,
        note: str,
        edits: Mapping[str, Any] | None,
        revision: int | None,
        now: float,
        groups: GroupResolver,
        held: bool = False,
        grant: GrantAsk | None = None,
        delegating: Mapping[str, Absence] | None = None,
    ) -> _Plan:
        """What `user`'s vote on `a` does, or the refusal (nothing written yet). `held`: a call
        `a` runs after is not settled yet, so an approval reaching the quorum does not settle
        it (the settlement of that call does, `settled`)."""
        rule, for_user = await self._check(
            a, user, now, groups, approve=approve, delegating=delegating
        )
        if revision is not None and revision != a.revision:
            raise stale(a, revision)
        if not approve and not note:
            raise InvalidEditError("a rejection needs a reason: pass a note", a.id)
        too_long = note_problem(note)
        if too_long is not None:
            raise InvalidEditError(too_long, a.id)
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
        if any(v.user_id == user or v.for_user == user for v in a.votes):
            raise AlreadyVotedError(f"{user} has voted on approval {a.id} already", a.id)
        approvers_so_far = [v.user_id for v in a.votes if v.decision == "approve"]
        decision: Decision | None = None
        if not approve or (len(approvers_so_far) + 1 >= a.required and not held):
            status: DecisionStatus = "approved" if approve else "rejected"
            by = approvers_so_far + [user] if approve else [user]
            all_edits = {**{k: v for vote in a.votes for k, v in vote.edits.items()}, **clean}
            notes = "; ".join([v.note for v in a.votes if v.note] + ([note] if note else []))
            decision = new_decision(a, status, by, notes, all_edits, now)
            stood_in = {v.user_id: v.for_user for v in a.votes if v.for_user}
            if for_user is not None:
                stood_in[user] = for_user
            stood_in = {k: v for k, v in stood_in.items() if k in decision.by}
            if stood_in:
                decision = replace(decision, on_behalf=stood_in)
        if grant is not None:
            check_ask(rule if approve else None, grant, a.id, a.action)
            if decision is None or not decision.approved:
                raise GrantRefused(
                    "a grant comes with the approval that decides the request, and yours does "
                    "not decide it yet; approve without a grant",
                    a.id,
                )
        return _Plan(a, approve, clean, decision, grant, for_user)

    async def _claim(self, conn: AsyncConnection, plan: _Plan, now: float) -> bool:
        """Settle or bump the approval, compare-and-set on the version `plan` was made from;
        False (nothing written) when it has changed since."""
        a, decision = plan.approval, plan.decision
        if decision is not None:
            return await store.settle(conn, a, decision.status, decision.to_record(), now)
        return await store.bump(conn, a, now)

    async def _record(
        self, conn: AsyncConnection, plan: _Plan, user: str, note: str, now: float
    ) -> None:
        """The rest of a vote whose approval `_claim` has moved: the vote, its jobs, its audit."""
        a, decision, clean = plan.approval, plan.decision, plan.clean
        decision_word = "approve" if plan.approve else "reject"
        if not await store.insert_vote(
            conn, a.id, user, decision_word, note, clean, now, plan.for_user
        ):
            raise AlreadyVotedError(f"{user} has voted on approval {a.id} already", a.id)
        voted_for = a.revision + 1 if clean else a.revision
        audit: list[tuple[AuditKind, Mapping[str, Any]]] = [
            (
                "vote",
                {
                    "decision": decision_word, "note": note, "edits": clean,
                    "revision": voted_for,
                    **({"for": plan.for_user} if plan.for_user else {}),
                },
            )
        ]  # fmt: skip
        if clean:
            # The vote entry beside it says the revision the edit made (`voted_for`).
            audit.append(
                ("edited", {"before": {k: a.current.get(k) for k in clean}, "after": clean})
            )
        if decision is not None:
            audit.append(
                (
                    decision.status,
                    {
                        "by": list(decision.by),
                        "note": decision.note,
                        "edits": decision.edits,
                        **({"on_behalf": decision.on_behalf} if decision.on_behalf else {}),
                    },
                )
            )
        await self.audit.append_many(
            conn, audit, approval_id=a.id, thread_id=a.thread_id, actor=user
        )
        if plan.grant is not None and decision is not None:
            rule = self.policy.actions[a.action]  # checked by `_plan` (check_ask)
            await create_grant(conn, self.audit, a, decision, plan.grant, rule, user, now)
        if decision is not None:
            # after its entries: the calls of its turn it settles are logged after it
            await settled(
                conn, self.jobs, a.id, decision, now, opener=a.thread_id, turn_id=a.turn_id,
                audit=self.audit,
            )  # fmt: skip
        else:
            await self.jobs.event(
                conn, "vote_recorded", now, thread_id=a.thread_id, approval_id=a.id
            )

    async def _groups_for(
        self, approval_id: str, deadline: float | None, seen: Approval | None
    ) -> GroupResolver:
        """The members of every group a vote on the approval may be judged by, looked up now,
        before the vote's write transaction opens: a group lookup may be a Slack Web API call,
        which must never run while SQLite's write lock is held (every other writer would queue
        behind Slack).

        The groups are those the approval lists and those its action's policy may add
        (escalation), so whatever the approval lists when the transaction reads it again, the
        check inside runs on the stored row with no lookup. If someone joins or leaves a group
        in between, the vote is judged on membership as it was a moment before the commit:
        the same answer it would have had a moment earlier, and the policy check itself (the
        approval's status, its listed approvers, self-approval, one vote per person) is made on
        the locked row. A group no snapshot holds has no members: deny by default.

        Read within the vote's `deadline`, or not at all when the caller has just read the
        approval (`seen`): the groups to look up are the same.
        """
        if seen is not None and seen.id == approval_id:
            a: Approval | None = seen
        else:
            async with self.db.read(deadline=deadline) as conn:
                a = await store.get_approval(conn, approval_id)
        if a is None or a.status != "pending":
            return StaticGroups({})  # refused inside, without a lookup
        rule = self.policy.actions.get(a.action)
        service = self.policy.services.get(a.service or "")
        entries = [
            *a.approvers,
            *(rule.approvers if rule else ()),
            *(rule.escalate_to if rule else ()),
            *(service.owners if service else ()),
        ]
        names = sorted({e[1:] for e in entries if e.startswith("@")})
        return StaticGroups({name: await self.groups.members(name) for name in names})

    async def check_voter(self, approval_id: str, user: str, *, approve: bool = True) -> Approval:
        """As `Signoff.check_voter`."""
        async with self.db.read() as conn:
            a = await store.get_approval(conn, approval_id)
        if a is None:
            raise UnknownApprovalError(approval_id)
        try:
            await self._check(a, user, self.clock(), self.groups, approve=approve)
        except NotAuthorizedError as e:
            delegating = await self._delegating(user, e)
            if not delegating:
                raise
            await self._check(
                a, user, self.clock(), self.groups, approve=approve, delegating=delegating
            )
        if any(v.user_id == user or v.for_user == user for v in a.votes):
            raise AlreadyVotedError(f"{user} has voted on approval {a.id} already", a.id)
        return a

    async def _check(
        self,
        a: Approval,
        user: str,
        now: float,
        groups: GroupResolver,
        *,
        approve: bool = True,
        delegating: Mapping[str, Absence] | None = None,
    ) -> tuple[ActionPolicy | None, str | None]:
        """The action's policy (None for a rejection of an action the policy no longer names),
        and the away approver `user` decides for as their delegate (`delegating`: the people
        away who named `user`), or None for their own vote."""
        if a.status != "pending":
            raise already(a)
        if a.expire_at is not None and now >= a.expire_at:
            raise ApprovalExpiredError(
                f"approval {a.id} expired at {iso(a.expire_at)}; the workflow gets the "
                "expiry outcome",
                a.id,
            )
        rule = self.policy.actions.get(a.action)
        members = await resolve_members(a.approvers, groups)
        if rule is None:
            # Deny by default: nobody may approve it any more, but its approvers may reject it.
            if approve or user not in members:
                raise NotAuthorizedError(
                    f"action {a.action!r} is no longer in the policy, so nobody may approve it; "
                    f"one of its approvers ({', '.join(a.approvers)}) may reject it, or add it back "
                    "to the policy",
                    a.id,
                )
            return None, None
        refusal = check_voter(rule, requester=a.requester, actor=user, approvers=members)
        for_user = None  # not an approver, but maybe the delegate of one who is away:
        if isinstance(refusal, NotAuthorizedError) and delegating:
            for_user, refusal = stand_in(rule, a, user, members, delegating, refusal)
        service = self.policy.services.get(a.service or "")
        if refusal is None and approve and service is not None and service.owners:
            owners = await resolve_members(service.owners, groups)
            if user in owners:
                refusal = SelfApprovalError(
                    f"you own the service {service.name} that asked for this ({rule.title}), "
                    f"and nobody may approve their own request ([services.{service.name}] "
                    "owners); ask another of its approvers",
                    service=service.name,
                )
        if refusal is not None:
            refusal.approval_id = a.id
            raise refusal
        return rule, for_user
