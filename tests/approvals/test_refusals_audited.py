"""Every refusal is on the audit log: a vote refused (not an approver, their own request, decided
already, an edit out of bounds, no such approval) and a start refused (not a starter, no such
workflow, inputs that do not fit), each with who, what and why, while nothing else changes.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.errors import (
    AlreadyDecidedError,
    InvalidEditError,
    InvalidInputError,
    NotAuthorizedError,
    SelfApprovalError,
    StartRefused,
    UnknownApprovalError,
    UnknownWorkflowError,
)
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def test_refused_votes_are_audited_with_who_what_and_why(kit: Kit) -> None:
    report = await kit.start("refund", REFUND, requester="U_ALICE")  # alice is in finance
    (approval,) = report.approvals

    refusals = [
        ("U_CAROL", True, {}, NotAuthorizedError, "not_approver"),
        ("U_ALICE", True, {}, SelfApprovalError, "self_approval"),
        ("U_BOB", True, {"amount": -5}, InvalidEditError, "invalid_edit"),
    ]
    for user, approve, edits, error, _ in refusals:
        with pytest.raises(error):
            await kit.app.decide(approval, user, approve, edits=edits or None)
    assert (await kit.app.get(approval)).votes == ()  # nothing recorded on the approval
    await kit.app.decide(approval, "U_BOB", True)
    with pytest.raises(AlreadyDecidedError):
        await kit.app.decide(approval, "U_ERIN", False, note="too late")
    with pytest.raises(UnknownApprovalError):
        await kit.app.decide("apr_nope", "U_BOB", True)

    entries = await kit.audit("vote_refused")
    got = [
        (e["actor"], e["approval_id"], e["data"]["decision"], e["data"]["refusal"]) for e in entries
    ]
    expected = [(user, approval, "approve", code) for user, _, _, _, code in refusals]
    expected += [
        ("U_ERIN", approval, "reject", "already_decided"),
        ("U_BOB", None, "approve", "UnknownApprovalError"),
    ]
    assert got == expected
    assert all(e["data"]["reason"] for e in entries)
    assert "amount" in entries[2]["data"]["reason"]
    assert entries[-1]["data"]["approval"] == "apr_nope"
    assert [e["actor"] for e in await kit.audit("vote")] == ["U_BOB"]
    async with kit.db.read() as conn:
        assert (await kit.app.audit.verify(conn)).ok


async def test_refused_starts_are_audited_with_who_what_and_why(kit: Kit) -> None:
    before = await kit.rows(sa.select(t.runs))
    with pytest.raises(StartRefused):
        await kit.start("refund", REFUND, requester="U_DAVE", check_starter=True)  # ops
    with pytest.raises(UnknownWorkflowError):
        await kit.start("refnud", REFUND, requester="U_CAROL")
    with pytest.raises(InvalidInputError):
        await kit.start("refund", {**REFUND, "amount": -1_000_000}, requester="U_CAROL")
    assert await kit.rows(sa.select(t.runs)) == before == []  # no run started

    entries = await kit.audit("start_refused")
    assert [(e["actor"], e["data"]["workflow"], e["data"]["refusal"]) for e in entries] == [
        ("U_DAVE", "refund", "StartRefused"),
        ("U_CAROL", "refnud", "UnknownWorkflowError"),
        ("U_CAROL", "refund", "InvalidInputError"),
    ]
    assert "starters" in entries[0]["data"]["reason"]
    assert list(entries[2]["data"]["problems"]) == ["amount"]
    assert await kit.audit("run_started") == []
