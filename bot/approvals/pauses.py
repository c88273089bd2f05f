"""A run's pause becomes an approval: each `request_approval()` interrupt is evaluated against
policy and opened (asked of people), joined (a pending duplicate), or decided at once (denied,
a conflict, or approved by a rule), with its audit entry and event in the same transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from graphs import Interrupt

from . import _turns, store
from ._budgets import past_budget
from ._conceal import Concealer
from ._service_threads import EXTERNAL_WORKFLOW, service_of
from .audit import AuditKind, AuditLog
from .away import Away
from .decisions import block, new_decision, settled
from .jobs import JobQueue
from .models import DecisionStatus, TurnPlace
from .policy import ActionPolicy, Policy, RequestVerdict, evaluate_request, redact

if TYPE_CHECKING:
    from .db import Database

__all__ = ["Pauses"]


class Pauses:
    """Opens the approvals a paused run asks for."""

    def __init__(
        self,
        db: Database,
        policy: Policy,
        audit: AuditLog,
        jobs: JobQueue,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.policy = policy
        self.audit = audit
        self.jobs = jobs
        self.clock = clock
        self.away: Away | None = None
        """Who is away: an approval nobody present could decide escalates at once."""

    async def register(
        self, thread_id: str, workflow: str, intr: Interrupt, conceal: Concealer | None = None
    ) -> str:
        """Open (or find, or join) the approval for one paused `request_approval()`; with
        `conceal` (the thread's secrets, `Runs.concealer`), a secret value quoted in its title,
        its other arguments or a refusal's reason is hidden before anything is stored."""
        try:
            async with self.db.transaction() as conn:
                approval_id = await self._register_in(conn, thread_id, workflow, intr, conceal)
            if self.away is not None:  # after the commit: Slack may be asked who is away
                await self.away.escalate_if_all_away(approval_id)
            return approval_id
        except IntegrityError:
            # Another process registered this interrupt at the same moment: use theirs.
            async with self.db.read() as conn:
                found = await store.approval_for_interrupt(conn, intr.id)
            if found is None:
                raise
            return found.id

    async def _register_in(
        self,
        conn: AsyncConnection,
        thread_id: str,
        workflow: str,
        intr: Interrupt,
        conceal: Concealer | None,
    ) -> str:
        existing = await store.approval_for_interrupt(conn, intr.id)
        if existing is not None:
            return existing.id
        run = await store.get_run(conn, thread_id)
        requester = run.requester if run else "unknown"
        channel = run.channel if run else None
        p = intr.value
        action, args, fp = p["action"], p["args"], p["fingerprint"]
        verdict = evaluate_request(self.policy, action, args)
        rule = verdict.rule
        now = self.clock()
        shown = redact(rule, args, key=self.audit.redaction_key) if rule is not None else args
        if conceal is not None:
            conceal = conceal.learn(p)
            shown = conceal.scrub(shown)
        capped = await _past_budget(conn, verdict, shown, requester, now)
        if capped is not None:
            verdict = replace(verdict, outcome="ask", reason=capped)
        if verdict.outcome == "ask" and p.get("dedupe_key"):
            service = service_of(thread_id) if workflow == EXTERNAL_WORKFLOW else None
            dup = await store.pending_duplicate(conn, action, p["dedupe_key"], service=service)
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
                # The pending one is this owner's own (`pending_duplicate`); a service knows
                # it by the id the API gave it (its thread), never by another's approval id.
                named = (
                    f"your pending approval {dup.thread_id}"
                    if service is not None
                    else f"pending approval {dup.id}"
                )
                verdict_outcome, reason = (
                    "conflict",
                    (
                        f"conflicts with {named} for "
                        f"{p['dedupe_key']!r}, which proposes different arguments; decide that "
                        "one first"
                    ),
                )
            else:
                verdict_outcome, reason = "ask", ""
        else:
            verdict_outcome, reason = verdict.outcome, verdict.reason
        if conceal is not None:
            reason = conceal.text(reason)

        approval_id = store.new_approval_id()
        deadlines = _deadlines(rule if verdict_outcome == "ask" else None, now)
        status = {"ask": "pending", "auto_approve": "approved"}.get(verdict_outcome, "rejected")
        values = dict(
            id=approval_id,
            thread_id=thread_id,
            interrupt_id=intr.id,
            workflow=workflow,
            action=action,
            title=_hide(conceal, p.get("title") or (rule.title if rule else action)),
            payload=store.dumps(shown),
            fingerprint=fp,
            dedupe_key=p.get("dedupe_key"),
            risk_tier=rule.tier if rule else "critical",
            requester=requester,
            status=status,
            required=rule.required if rule else 1,
            approvers=store.dumps(list(rule.approvers) if rule else []),
            editable=store.dumps(list(rule.editable) if rule else []),
            formats=store.dumps(rule.args.formats) if rule and rule.args else None,
            note=_hide(conceal, p["note"]) if isinstance(p.get("note"), str) else None,
            asked_because=capped,
            agent_seen=_seen_stored(conceal, p.get("seen")),
            escalated=False,
            channel=channel,
            created_at=now,
            updated_at=now,
            version=0,
            **deadlines,
        )
        turn_id, place = _turn_of(p, values)
        if status != "pending":
            by = [f"rule:{verdict.auto_rule}"] if status == "approved" else ["policy"]
            decision_status: DecisionStatus = "approved" if status == "approved" else "denied"
            decision = new_decision((approval_id, action, fp), decision_status, by, reason, {}, now)
            values.update(
                decision=store.dumps(decision.to_record()), decided_at=now, reason=reason or None
            )
        await store.insert_approval(conn, values)
        data = {"action": action, "args": shown, "tier": values["risk_tier"], "workflow": workflow}
        if capped is not None:
            data["budget"] = capped
        if status == "pending":
            await self.audit.append(
                conn,
                "requested",
                approval_id=approval_id,
                thread_id=thread_id,
                actor=requester,
                data=data,
            )
            await self.jobs.event(
                conn, "approval_requested", now, thread_id=thread_id, approval_id=approval_id
            )
            await self._refused_before(conn, thread_id, turn_id, place, approval_id, now)
        else:
            kind: AuditKind = {
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
            await settled(
                conn, self.jobs, approval_id, decision, now, opener=thread_id, turn_id=turn_id,
                audit=self.audit,
            )  # fmt: skip
        return approval_id

    async def _refused_before(
        self,
        conn: AsyncConnection,
        thread_id: str,
        turn_id: str | None,
        place: TurnPlace | None,
        approval_id: str,
        now: float,
    ) -> None:
        """A call asked for after a call of its turn it runs after was refused already (denied
        by policy as it was asked for): it does not run either."""
        if turn_id is None or place is None or not place.after:
            return
        await _turns.lock_turn(conn, thread_id, turn_id)
        turn = await _turns.turn_approvals(conn, thread_id, turn_id)
        a = next((o for o in turn if o.id == approval_id), None)
        refused = _turns.refused_by(a, turn) if a is not None else None
        if a is not None and refused is not None:
            await block(conn, self.jobs, self.audit, a, _turns.refusal_note(a, refused), now)


def _turn_of(
    payload: Mapping[str, Any], values: dict[str, Any]
) -> tuple[str | None, TurnPlace | None]:
    """The agent turn a request is a tool call of (`approval_gate`), and its place in it; put
    in the approval's `values` too."""
    place = TurnPlace.from_json(payload.get("turn"))
    turn_id = payload.get("turn_id")
    if place is None or not isinstance(turn_id, str):
        return None, None
    values.update(turn_id=turn_id, turn=store.dumps(place.to_json()))
    return turn_id, place


def _deadlines(rule: ActionPolicy | None, now: float) -> dict[str, float | None]:
    """When a new approval of `rule` is reminded, escalated and expired (all None when it is
    not asked of people: no rule, or decided at once)."""
    deadlines: dict[str, float | None] = {
        "remind_at": None,
        "escalate_at": None,
        "expire_at": None,
    }
    if rule is not None:
        for key, after in (
            ("remind_at", rule.remind_after),
            ("escalate_at", rule.escalate_after),
            ("expire_at", rule.expire_after),
        ):
            deadlines[key] = now + after.total_seconds() if after else None
    return deadlines


def _hide(conceal: Concealer | None, text: str) -> str:
    return conceal.text(text) if conceal is not None else text


async def _past_budget(
    conn: AsyncConnection,
    verdict: RequestVerdict,
    shown: Mapping[str, Any],
    requester: str,
    now: float,
) -> str | None:
    """For a request a rule would approve: why that would take the rule past its budget (the
    request is then asked of people), else None."""
    if verdict.outcome != "auto_approve" or verdict.rule is None:
        return None
    rule = next(r for r in verdict.rule.auto_approve if r.name == verdict.auto_rule)
    return await past_budget(conn, verdict.rule.action, rule, shown, requester, now)


def _seen_stored(conceal: Concealer | None, seen: Any) -> str | None:
    """What the agent saw, as stored: its texts with the thread's secrets hidden, as a title's
    are (`_hide`); None for a request that is not an agent's tool call."""
    if not isinstance(seen, Mapping):
        return None
    found = seen.get("results")
    results: list[Any] = found if isinstance(found, list) else []
    return store.dumps(
        {
            "reason": _hide(conceal, str(seen.get("reason") or "")),
            "results": [
                {
                    "tool": _hide(conceal, str(r.get("tool") or "")),
                    "content": _hide(conceal, str(r.get("content") or "")),
                }
                for r in results
                if isinstance(r, Mapping)
            ],
        }
    )
