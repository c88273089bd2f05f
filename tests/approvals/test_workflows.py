"""The bundled workflows and what workflow authors rely on: a refund issued once (or a rejection
notified), edit-then-approve, auto-approval, de-duplication, approvals bound to their arguments,
two approval steps, custom workflows by dotted path, and a crash inside a side effect surfaced as
"outcome unknown". SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import pytest

from bot.approvals.errors import AlreadyDecidedError, InvalidEditError, NotAuthorizedError
from bot.approvals.service import idempotency_key
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def outcome(kit: Kit, thread_id: str) -> str:
    run = await kit.run(thread_id)
    assert run["status"] == "completed", run
    return str(json.loads(run["result"])["outcome"])


async def outcome_values(kit: Kit, thread_id: str) -> dict[str, Any]:
    run = await kit.run(thread_id)
    assert run["status"] == "completed", run
    return dict(json.loads(run["result"]))


# ---- the refund flow ---------------------------------------------------------------------


async def test_an_approved_refund_is_issued_once(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    assert report.status == "paused"
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert (a.action, a.status, a.risk_tier, a.requester) == (
        "send_refund",
        "pending",
        "high",
        "U_CAROL",
    )
    assert a.payload == {
        "customer_id": "cust_1",
        "order_id": "o-1",
        "amount": 42.5,
        "reason": "damaged",
    }
    assert await kit.effects() == []

    result = await kit.app.decide(approval_id, "U_ALICE", True, note="ok")
    decision = result.approval.decision
    assert decision is not None and decision["idempotency_key"] == idempotency_key(
        approval_id, a.fingerprint
    )
    assert await kit.app.run_jobs(("resume",)) == 1
    assert await kit.app.run_jobs(("resume",)) == 0
    assert await outcome(kit, report.thread_id) == "refunded 42.50 to cust_1"
    (refund,) = await kit.effects()
    assert refund["kind"] == "refund"
    assert refund["key"] == decision["idempotency_key"]  # what a provider would de-duplicate on
    assert refund["data"] == {"customer_id": "cust_1", "amount": 42.5, "reason": "damaged"}
    assert [e["kind"] for e in await kit.audit()] == [
        "run_started",
        "requested",
        "vote",
        "approved",
        "resumed",
        "run_completed",
    ]


async def test_a_rejected_refund_notifies_the_customer_and_refunds_nothing(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    await kit.app.decide(report.approvals[0], "U_BOB", False, note="outside the window")
    await kit.app.run_jobs(("resume",))
    assert await outcome(kit, report.thread_id) == "declined (rejected): outside the window"
    (email,) = await kit.effects()
    assert email["kind"] == "email"
    assert email["data"] == {"to": "cust_1", "text": "Your refund request was declined."}


# ---- edit-then-approve -------------------------------------------------------------------


async def test_the_edited_amount_is_what_the_refund_ran_with(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    result = await kit.app.decide(
        approval_id,
        "U_ALICE",
        True,
        note="partial",
        edits={"amount": "40", "reason": "damaged box"},
    )
    assert result.approval.decision is not None
    assert result.approval.decision["edits"] == {"amount": 40.0, "reason": "damaged box"}
    await kit.app.run_jobs(("resume",))
    assert await outcome(kit, report.thread_id) == "refunded 40.00 to cust_1"
    (refund,) = await kit.effects("refund")
    assert refund["data"] == {"customer_id": "cust_1", "amount": 40.0, "reason": "damaged box"}
    (edited,) = await kit.audit("edited")
    assert edited["actor"] == "U_ALICE"
    assert edited["data"] == {
        "before": {"amount": 42.5, "reason": "damaged"},
        "after": {"amount": 40.0, "reason": "damaged box"},
    }
    # The approval still shows what was proposed; the decision says what changed.
    assert (await kit.app.get(approval_id)).payload["amount"] == 42.5


async def test_editing_a_field_that_is_not_editable_is_refused(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    for edits in (
        {"customer_id": "cust_666"},
        {"amount": "forty"},
        {"amount": "40", "order_id": "o-2"},
    ):
        with pytest.raises(InvalidEditError):
            await kit.app.decide(approval_id, "U_ALICE", True, edits=edits)
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    assert await kit.audit("edited") == [] and await kit.audit("vote") == []
    await kit.app.decide(approval_id, "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    assert (await kit.effects("refund"))[0]["data"]["customer_id"] == "cust_1"


async def test_an_edit_after_someone_approved_is_refused(kit: Kit) -> None:
    # delete_row needs two approvers and nothing is editable; vendor invoices are editable by
    # one approver. An edit in the middle of a quorum would change what the first one approved.
    policy = (
        kit.policy_path.read_text()
        + '\n[actions.double_refund]\napprovers = ["@finance", "U_DAVE"]\nrequired = 2\neditable = ["amount"]\n'
    )
    app = kit.new_app(policy_text=policy)
    report = await app.start(
        "ask", {"action": "double_refund", "args": {"amount": 10.0}}, requester="U_CAROL"
    )
    (approval_id,) = report.approvals
    await app.decide(approval_id, "U_ALICE", True)
    with pytest.raises(InvalidEditError, match="approved the current values already"):
        await app.decide(approval_id, "U_BOB", True, edits={"amount": "99"})
    await app.decide(approval_id, "U_BOB", True)
    await app.run_jobs(("resume",))
    assert [e["data"] for e in await kit.effects("act")] == [{"amount": 10.0}]


# ---- auto-approval -------------------------------------------------------------------------


async def test_a_small_refund_is_approved_by_the_rule_and_audited_as_such(kit: Kit) -> None:
    report = await kit.start("refund", {**REFUND, "amount": 5})
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert a.status == "approved"
    assert a.decided_by == ["rule:small refunds"]
    (auto,) = await kit.audit("auto_approved")
    assert (auto["approval_id"], auto["actor"]) == (approval_id, "rule:small refunds")
    assert await kit.audit("vote") == []
    await kit.app.run_jobs(("resume",))
    assert await outcome(kit, report.thread_id) == "refunded 5.00 to cust_1"
    assert len(await kit.effects("refund")) == 1

    bigger = await kit.start("refund", {**REFUND, "order_id": "o-2", "amount": 5.01})
    assert (await kit.app.get(bigger.approvals[0])).status == "pending"


async def test_critical_actions_are_never_auto_approved(kit: Kit) -> None:
    # delete_row is critical and needs two people; a rule could not even be written for it.
    report = await kit.start("delete_row", {"table": "users", "row_id": "7", "reason": "gdpr"})
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert (a.status, a.risk_tier, a.required) == ("pending", "critical", 2)
    await kit.app.decide(approval_id, "U_DAVE", True)
    await kit.app.run_jobs(("resume",))
    assert await kit.effects() == []
    await kit.app.decide(approval_id, "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    assert await outcome(kit, report.thread_id) == "deleted row 7 of users"
    assert [e["data"] for e in await kit.effects("delete_row")] == [
        {"table": "users", "row_id": "7"}
    ]


# ---- de-duplication ------------------------------------------------------------------------


async def test_the_same_request_joins_the_pending_one(kit: Kit) -> None:
    first = await kit.start("refund", REFUND)
    second = await kit.start("refund", REFUND, requester="U_BOB")
    assert second.status == "paused"
    assert second.approvals == first.approvals
    assert len(await kit.approvals()) == 1
    joined = (await kit.audit("requested"))[-1]
    assert joined["thread_id"] == second.thread_id and joined["data"]["joined"] is True

    await kit.app.decide(first.approvals[0], "U_ALICE", True)
    # One decision ends both threads: the first acts, the second shares its outcome.
    assert await kit.app.run_jobs(("resume",)) == 1
    for thread_id in (first.thread_id, second.thread_id):
        assert (await kit.run(thread_id))["status"] == "completed"
    # Both threads hold the same idempotency key, so the refund is issued once, not twice.
    assert len(await kit.effects("refund")) == 1


async def test_the_same_request_from_four_processes_at_once_opens_one_approval(kit: Kit) -> None:
    apps = [kit.new_app() for _ in range(4)]
    reports = await asyncio.gather(
        *(app.start("refund", REFUND, requester="U_CAROL") for app in apps)
    )
    (approval,) = await kit.approvals()
    assert [r.approvals for r in reports] == [(approval["id"],)] * 4
    await kit.app.decide(approval["id"], "U_ALICE", True)
    assert await kit.app.run_jobs(("resume",)) == 1
    assert len(await kit.effects("refund")) == 1
    for r in reports:
        assert (await kit.run(r.thread_id))["status"] == "completed"


async def test_the_same_key_with_other_arguments_is_a_loud_conflict(kit: Kit) -> None:
    first = await kit.start("refund", REFUND)
    second = await kit.start("refund", {**REFUND, "amount": 99.0})
    (conflict_id,) = second.approvals
    assert conflict_id != first.approvals[0]
    c = await kit.app.get(conflict_id)
    assert c.status == "rejected"
    assert (
        c.reason is not None and f"conflicts with pending approval {first.approvals[0]}" in c.reason
    )
    (audited,) = await kit.audit("conflict")
    assert audited["approval_id"] == conflict_id and "refund:o-1" in audited["data"]["reason"]
    # Not an overwrite: the pending one still proposes the first amount.
    assert (await kit.app.get(first.approvals[0])).payload["amount"] == 42.5

    await kit.app.run_jobs(("resume",))
    assert (await outcome(kit, second.thread_id)).startswith(
        "declined (denied): conflicts with pending approval"
    )
    assert await kit.effects("refund") == []
    assert (await kit.run(first.thread_id))["status"] == "paused"


# ---- approvals are bound to their arguments -----------------------------------------------


async def test_a_replay_proposing_other_arguments_asks_again(kit: Kit) -> None:
    report = await kit.start("replay", {"amount": 10.0})
    (old_id,) = report.approvals
    graph = kit.app.graph("replay")
    config = {"configurable": {"thread_id": report.thread_id}}
    await graph.aupdate_state(config, {"amount": 900.0})  # someone changed the run meanwhile

    await kit.app.decide(old_id, "U_ALICE", True, note="10 is fine")
    await kit.app.run_jobs(("resume",))
    assert await kit.effects() == []  # the 10.00 decision was not used for 900.00
    run = await kit.run(report.thread_id)
    assert run["status"] == "paused"
    (new,) = [a for a in await kit.app.thread_approvals(report.thread_id) if a.id != old_id]
    assert (new.status, new.payload["amount"]) == ("pending", 900.0)
    assert new.fingerprint != (await kit.app.get(old_id)).fingerprint

    await kit.app.decide(new.id, "U_BOB", True)
    await kit.app.run_jobs(("resume",))
    assert [e["data"]["amount"] for e in await kit.effects("refund")] == [900.0]
    assert await outcome(kit, report.thread_id) == "approved 900.0"


# ---- two approval steps ---------------------------------------------------------------------

PAYMENT = {"vendor": "acme", "invoice_id": "inv-7", "amount": 1200.0}


async def test_a_vendor_payment_needs_both_approvals(kit: Kit) -> None:
    report = await kit.start("vendor_payment", PAYMENT, requester="U_ALICE")
    (invoice_id,) = report.approvals
    await kit.app.decide(invoice_id, "U_BOB", True, edits={"amount": "1100"})
    await kit.app.run_jobs(("resume",))
    assert (await kit.run(report.thread_id))["status"] == "paused"
    (release,) = [a for a in await kit.app.thread_approvals(report.thread_id) if a.id != invoice_id]
    assert (release.action, release.payload["amount"], release.required) == (
        "release_payment",
        1100.0,
        2,
    )
    assert await kit.effects() == []

    with pytest.raises(NotAuthorizedError):
        await kit.app.decide(release.id, "U_CAROL", True)
    await kit.app.decide(release.id, "U_BOB", True)
    await kit.app.decide(release.id, "U_DAVE", True)
    await kit.app.run_jobs(("resume",))
    assert await outcome(kit, report.thread_id) == "paid 1100.00 to acme"
    assert [e["data"] for e in await kit.effects("payment")] == [
        {"vendor": "acme", "amount": 1100.0, "invoice_id": "inv-7"}
    ]


async def test_a_rejected_invoice_is_never_paid(kit: Kit) -> None:
    report = await kit.start("vendor_payment", PAYMENT, requester="U_ALICE")
    await kit.app.decide(report.approvals[0], "U_BOB", False, note="duplicate invoice")
    await kit.app.run_jobs(("resume",))
    assert (
        await outcome(kit, report.thread_id)
        == "not paid (approve_invoice rejected): duplicate invoice"
    )
    assert len(await kit.app.thread_approvals(report.thread_id)) == 1
    assert await kit.effects() == []


async def test_two_approvals_of_one_run_resumed_by_two_workers_at_once(kit: Kit) -> None:
    report = await kit.start("parallel", {})
    deploy, crowd = report.approvals
    await kit.app.decide(crowd, "U_P01", True)
    await kit.app.decide(deploy, "U_ALICE", True)
    await kit.app.decide(deploy, "U_BOB", True)
    one, two = kit.new_app(), kit.new_app()
    for _ in range(5):  # the worker that finds the thread busy retries shortly after
        await asyncio.gather(one.run_jobs(("resume",)), two.run_jobs(("resume",)))
        if await kit.pending_jobs("resume") == 0:
            break
        kit.clock.advance(1)
    assert sorted((await outcome_values(kit, report.thread_id))["done"]) == [
        "crowd:approved",
        "deploy:approved",
    ]
    assert sorted(e["kind"] for e in await kit.effects()) == ["crowd", "deploy"]
    assert len(await kit.audit("resumed")) == 2


# ---- workflows by dotted path ----------------------------------------------------------------


async def test_a_custom_workflow_path_that_does_not_import_is_refused(kit: Kit) -> None:
    from bot.workflows import load_workflows

    with pytest.raises(ValueError, match="workflow 'mine': cannot import 'nowhere_at_all:build'"):
        load_workflows({"mine": "nowhere_at_all:build"})
    with pytest.raises(ValueError, match="must look like 'package.module:function'"):
        load_workflows({"mine": "_signoff_flows.build_ask"})


# ---- a crash inside a side effect ------------------------------------------------------------

DIE_IN_REFUND = """
import asyncio, os, signal, sys
from bot.approvals.effects import Effects
from bot.config import Settings, build_signoff

def die(self, kind, key, data, thread_id=None):  # the process dies while the refund is in flight
    os.kill(os.getpid(), signal.SIGKILL)

Effects.record = die

async def main():
    app = build_signoff(Settings.from_env())
    await app.decide(sys.argv[1], "U_ALICE", True)
    await app.run_jobs(("resume",))

asyncio.run(main())
"""


async def test_a_crash_during_the_refund_is_outcome_unknown_not_a_second_refund(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    died = await asyncio.to_thread(kit.python, DIE_IN_REFUND, approval_id)
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert (await kit.app.get(approval_id)).status == "approved"

    kit.clock.advance(120)  # the dead worker's lease on the resume job runs out
    assert await kit.new_app().run_jobs(("resume",)) == 1
    run = await kit.run(report.thread_id)
    assert run["status"] == "outcome_unknown"
    assert "refund" in run["error"]
    (audited,) = await kit.audit("outcome_unknown")
    assert audited["thread_id"] == report.thread_id
    assert await kit.effects("refund") == []  # never silently retried
    assert await kit.new_app().run_jobs(("resume",)) == 0
    with pytest.raises(AlreadyDecidedError):
        await kit.app.decide(approval_id, "U_BOB", True)


async def test_a_start_without_a_required_input_is_refused_before_anything_is_recorded(
    kit: Kit,
) -> None:
    from sqlalchemy import select

    from bot.approvals.errors import MissingInputError
    from bot.approvals.tables import runs

    with pytest.raises(
        MissingInputError,
        match=r"workflow 'refund' needs amount \(it takes customer_id, order_id, amount, reason\)",
    ) as raised:
        await kit.start("refund", {"customer_id": "cust_1", "amount": ""})
    assert raised.value.missing == ("amount",)
    with pytest.raises(MissingInputError, match="needs table, row_id"):
        await kit.start("delete_row", {}, requester="U_DAVE")
    assert await kit.rows(select(runs)) == []
    assert [e["kind"] for e in await kit.audit()] == ["start_refused"] * 2  # the refusals only
    # the optional ones have defaults: a refund with only what it needs runs to its approval
    report = await kit.start("refund", {"customer_id": "cust_1", "amount": 42.5})
    assert report.status == "paused"
