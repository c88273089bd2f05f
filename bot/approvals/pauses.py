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

from . import _foreign, _turns, store
from ._budgets import past_budget
from ._conceal import Concealer
from ._service_threads import EXTERNAL_WORKFLOW, service_of
from .audit import AuditKind, AuditLog
from .away import Away
from .checks import changes_text
from .decisions import block, new_decision, settled
from .grants import Grant
from .grants import use as use_grant
from .jobs import JobQueue
from .models import APPROVAL_KIND, DecisionStatus, TurnPlace, iso
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

    async def register_all(
        self, thread_id: str, workflow: str, intr: Interrupt, conceal: Concealer | None = None
    ) -> list[str]:
        """The approvals one pause asks for: a `request_approval()`'s one; one per action
        request of a LangChain HITL or Agent Inbox request (`_foreign`), each waiting on
        `<interrupt id>#<place>`; none for any other `interrupt()` (a workflow's own question)."""
        if isinstance(intr.value, dict) and intr.value.get("kind") == APPROVAL_KIND:
            return [await self.register(thread_id, workflow, intr, conceal)]
        request = _foreign.read(intr.value)
        if request is None:
            return []
        return [
            await self.register(thread_id, workflow, replace(intr, id=part, value=payload), conceal)
            for part, payload in _foreign.payloads(intr.id, request)
        ]

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
        requester, channel = (run.requester, run.channel) if run else ("unknown", None)
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
        check = _check_of(p, conceal)
        if capped is None and check is not None and verdict.outcome == "auto_approve":
            capped = _changed_since(check)
        if capped is not None:
            verdict = replace(verdict, outcome="ask", reason=capped)
        if verdict.outcome == "ask" and p.get("dedupe_key"):
            against = await self._against_pending(conn, thread_id, workflow, intr, requester, now)
            if isinstance(against, str):
                return against  # joined the pending one
            verdict_outcome, reason = against
        else:
            verdict_outcome, reason = verdict.outcome, verdict.reason
        if check is not None and "error" in check and verdict_outcome in ("ask", "auto_approve"):
            verdict_outcome = "check_failed"
            reason = f"{check['error']}; a check that fails is a refusal: the action does not run"
        where = (thread_id, workflow)
        # a request asked again because its facts changed is for people, as for a rule
        granted = (
            None
            if check is not None and _changed_since(check)
            else await self._grant(conn, verdict_outcome, rule, shown, requester, where, now)
        )
        if granted is not None:  # approved by a live grant the request lies inside
            verdict_outcome, reason = "auto_approve", _under(granted)
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
            requester=requester,
            status=status,
            **_rule_columns(rule, editable=not p.get("no_edit")),
            note=_hide(conceal, p["note"]) if isinstance(p.get("note"), str) else None,
            asked_because=capped,
            agent_seen=_seen_stored(conceal, p.get("seen")),
            checked=store.dumps(check) if check is not None else None,
            escalated=False,
            granted=store.dumps(granted.said()) if granted is not None else None,
            channel=channel,
            created_at=now,
            updated_at=now,
            version=0,
            **deadlines,
        )
        turn_id, place = _turn_of(p, values)
        if status != "pending":
            by = _deciders(status, verdict_outcome, verdict.auto_rule, granted)
            decision_status: DecisionStatus = "approved" if status == "approved" else "denied"
            decision = new_decision((approval_id, action, fp), decision_status, by, reason, {}, now)
            values.update(
                decision=store.dumps(decision.to_record()), decided_at=now, reason=reason or None
            )
        await store.insert_approval(conn, values)
        data = {"action": action, "args": shown, "tier": values["risk_tier"], "workflow": workflow}
        found = {"budget": capped, "check": check, "grant": granted.said() if granted else None}
        data.update({k: v for k, v in found.items() if v is not None})
        if check is not None:
            await self._recheck_refused(conn, thread_id, check, approval_id, now)
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
            kind = _settled_kind(status, verdict_outcome, granted)
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

    async def _against_pending(
        self,
        conn: AsyncConnection,
        thread_id: str,
        workflow: str,
        intr: Interrupt,
        requester: str,
        now: float,
    ) -> str | tuple[str, str]:
        """A request with a `dedupe_key`, against a pending one of its owner's with that key:
        the pending one's id when it proposes the same arguments (this run waits on it too,
        audited), else (outcome, reason): a conflict with it, or asked as usual."""
        p = intr.value
        service = service_of(thread_id) if workflow == EXTERNAL_WORKFLOW else None
        dup = await store.pending_duplicate(conn, p["action"], p["dedupe_key"], service=service)
        if dup is None:
            return "ask", ""
        if dup.fingerprint == p["fingerprint"]:
            await store.add_waiter(conn, dup.id, thread_id, intr.id, p["fingerprint"], now)
            await self.audit.append(
                conn,
                "requested",
                approval_id=dup.id,
                thread_id=thread_id,
                actor=requester,
                data={"joined": True, "dedupe_key": p["dedupe_key"]},
            )
            return dup.id
        # The pending one is this owner's own (`pending_duplicate`); a service knows it by
        # the id the API gave it (its thread), never by another's approval id.
        named = (
            f"your pending approval {dup.thread_id}"
            if service is not None
            else f"pending approval {dup.id}"
        )
        return "conflict", (
            f"conflicts with {named} for {p['dedupe_key']!r}, which proposes different "
            "arguments; decide that one first"
        )

    async def _recheck_refused(
        self,
        conn: AsyncConnection,
        thread_id: str,
        check: Mapping[str, Any],
        asked: str,
        now: float,
    ) -> None:
        """On the approval a re-check refused (`check["after"]`): that it was not used, why
        (what changed, or the check's error), and the approval asked (or refused) instead; on
        the audit log, and on its card (`not_used` in its `checked`, the card updated)."""
        after = check.get("after")
        if not isinstance(after, str):
            return
        why = {k: check[k] for k in ("changed", "error") if k in check}
        await self.audit.append(
            conn,
            "recheck_refused",
            approval_id=after,
            thread_id=thread_id,
            actor="check",
            data={**why, "asked_again": asked},
        )
        old = await store.get_approval(conn, after)
        if old is None:
            return
        marked = {**(old.checked or {}), "not_used": {**why, "asked_again": asked}}
        await store.set_checked(conn, after, store.dumps(marked))
        await self.jobs.event(conn, "vote_recorded", now, thread_id=thread_id, approval_id=after)

    async def _grant(
        self,
        conn: AsyncConnection,
        outcome: str,
        rule: ActionPolicy | None,
        shown: Mapping[str, Any],
        requester: str,
        where: tuple[str, str],
        now: float,
    ) -> Grant | None:
        """For a request that would be asked of people: the live grant of its action it lies
        inside, one use of it taken (`grants.use`); else None. `where`: its thread and
        workflow (a service's request is bound to that service)."""
        if outcome != "ask" or rule is None or rule.grants is None:
            return None
        thread_id, workflow = where
        service = service_of(thread_id) if workflow == EXTERNAL_WORKFLOW else None
        return await use_grant(conn, self.audit, rule, shown, requester, service, now)

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


def _under(grant: Grant) -> str:
    """`approved under U_ALICE's grant grt_… (3 of 5 left, until 2026-12-06T15:00:00+00:00)`."""
    return (
        f"approved under {grant.grantor}'s grant {grant.id} ({grant.left} of {grant.uses} "
        f"left, until {iso(grant.expires_at)})"
    )


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


def _check_of(p: Mapping[str, Any], conceal: Concealer | None) -> dict[str, Any] | None:
    """What a request's check read (`bot.approvals.checks`), as stored: its record, with the
    approval a re-check refused (`after`), the thread's secrets hidden; None without a check."""
    found = p.get("check")
    if not isinstance(found, Mapping):
        return None
    check = dict(found)
    if isinstance(p.get("after"), str):
        check["after"] = p["after"]
    if "error" not in check and not isinstance(check.get("facts"), Mapping):
        check["error"] = "the check answered no facts"
    scrubbed = conceal.scrub(check) if conceal is not None else check
    return dict(scrubbed) if isinstance(scrubbed, Mapping) else check


def _rule_columns(rule: ActionPolicy | None, *, editable: bool = True) -> dict[str, Any]:
    """What an approval keeps of its action's policy; an action the policy does not name is
    denied as if critical. Not `editable`: no field is (a foreign request's config allows no
    edit), whatever the policy says."""
    return {
        "risk_tier": rule.tier if rule else "critical",
        "required": rule.required if rule else 1,
        "approvers": store.dumps(list(rule.approvers) if rule else []),
        "editable": store.dumps(list(rule.editable) if rule and editable else []),
        "formats": store.dumps(rule.args.formats) if rule and rule.args else None,
    }


def _deciders(status: str, outcome: str, rule: str | None, granted: Grant | None) -> list[str]:
    """Who decided a request settled as it is asked: the grant or the rule that approved it,
    the check that failed, or the policy that refused it."""
    if granted is not None:
        return [f"grant:{granted.id}"]
    if status == "approved":
        return [f"rule:{rule}"]
    return ["check"] if outcome == "check_failed" else ["policy"]


def _settled_kind(status: str, outcome: str, granted: Grant | None) -> AuditKind:
    """The audit kind of a request settled as it is asked: approved by a rule or a grant, or
    refused (a conflict, a failed check, or denied by policy)."""
    if status == "approved":
        return "auto_approved" if granted is None else "grant_used"
    refusals: dict[str, AuditKind] = {"conflict": "conflict", "check_failed": "check_failed"}
    return refusals.get(outcome, "denied")


def _changed_since(check: Mapping[str, Any]) -> str | None:
    """Why a request a rule would approve is asked of people: the facts changed after an
    earlier approval of it (None when they did not)."""
    changed = check.get("changed")
    if not isinstance(changed, Mapping) or not changed:
        return None
    return f"the facts changed after approval {check.get('after')}: {changes_text(changed)}"


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
