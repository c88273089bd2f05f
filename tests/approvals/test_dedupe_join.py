"""A run whose request joined a pending duplicate (`dedupe_key`) shares the outcome of the run it
joined: it is never resumed to act a second time (the refund is issued once and the joiner does
not fail on the provider's duplicate refusal), and it ends when that run ends, the same way,
saying which run it shared: completed, rejected, expired, failed or cancelled. Never left paused.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.decisions import idempotency_key
from bot.approvals.errors import RunStateError
from bot.approvals.runs import RunReport
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def joined_pair(kit: Kit) -> tuple[RunReport, RunReport]:
    first = await kit.start("refund", REFUND)
    second = await kit.start("refund", REFUND, requester="U_BOB")
    assert second.approvals == first.approvals and second.status == "paused"
    return first, second


async def ended(kit: Kit, leader: str, joiner: str) -> tuple[dict[str, object], dict[str, object]]:
    """Both runs, after every due job ran; the joiner's audit entries name the run it shared."""
    await kit.app.run_jobs(("resume",))
    lead, join = await kit.run(leader), await kit.run(joiner)
    assert join["status"] == lead["status"] != "paused"
    ends = ("run_completed", "run_failed", "outcome_unknown", "run_cancelled")
    shared = [e for e in await kit.audit() if e["thread_id"] == joiner and e["kind"] in ends]
    assert [e["data"]["shared_with"] for e in shared] == [leader], shared
    return lead, join


async def test_an_approved_join_ends_completed_with_the_one_refund(kit: Kit) -> None:
    first, second = await joined_pair(kit)
    await kit.app.decide(first.approvals[0], "U_ALICE", True)
    lead, join = await ended(kit, first.thread_id, second.thread_id)
    assert lead["status"] == "completed" and join["error"] is None
    result = json.loads(str(join["result"]))
    assert result["outcome"] == "refunded 42.50 to cust_1"
    assert result["shared_with"] == first.thread_id
    assert len(await kit.effects("refund")) == 1
    assert await kit.effects(thread_id=second.thread_id) == []


async def test_a_rejected_join_ends_with_the_rejection(kit: Kit) -> None:
    first, second = await joined_pair(kit)
    await kit.app.decide(first.approvals[0], "U_ALICE", False, note="not this one")
    _, join = await ended(kit, first.thread_id, second.thread_id)
    outcome = json.loads(str(join["result"]))["outcome"]
    assert outcome == "declined (rejected): not this one"
    assert await kit.effects("refund") == []
    assert len(await kit.effects("email")) == 1  # the customer is told once, not twice


async def test_an_expired_join_ends_expired(kit: Kit) -> None:
    first, second = await joined_pair(kit)
    kit.clock.advance(timedelta(days=4).total_seconds())
    assert (await kit.app.sweep())["expired"] == 1
    _, join = await ended(kit, first.thread_id, second.thread_id)
    assert json.loads(str(join["result"]))["outcome"].startswith("declined (expired): ")


async def fail_the_refund(kit: Kit, first: RunReport) -> None:
    """Make the provider refuse the approved refund, so the run that acts on it fails."""
    a = await kit.app.get(first.approvals[0])
    key = idempotency_key(a.id, a.fingerprint)
    async with kit.db.transaction() as conn:
        await conn.execute(
            sa.insert(t.effects).values(kind="refund", key=key, data="{}", at=kit.clock())
        )
    await kit.app.decide(a.id, "U_ALICE", True)


async def test_a_join_on_a_run_that_fails_fails_saying_which(kit: Kit) -> None:
    first, second = await joined_pair(kit)
    await fail_the_refund(kit, first)
    lead, join = await ended(kit, first.thread_id, second.thread_id)
    assert lead["status"] == "failed"
    assert str(join["error"]).startswith(f"shared the outcome of run {first.thread_id}, which ")
    assert "DuplicateEffect" in str(join["error"])
    (failed,) = [e for e in await kit.audit("run_failed") if e["thread_id"] == second.thread_id]
    assert failed["data"]["shared_with"] == first.thread_id
    # Nothing of its own to retry: retrying it would only pause it again on a decided approval.
    with pytest.raises(RunStateError, match=f"retry '{first.thread_id}'"):
        await kit.app.retry(second.thread_id, actor="U_DAVE")
    assert (await kit.run(second.thread_id))["status"] == "failed"


async def test_a_join_on_a_run_cancelled_while_paused_after_its_decision_is_cancelled(
    kit: Kit,
) -> None:
    # The leader paused again after its decision was taken (a second approval of its own):
    # cancelling it then cancels the run that shares its outcome.
    first, second = await joined_pair(kit)
    await kit.app.decide(first.approvals[0], "U_ALICE", True)
    async with kit.db.transaction() as conn:  # hold the leader as if paused on a later step
        await conn.execute(
            sa.update(t.runs).where(t.runs.c.thread_id == first.thread_id).values(status="paused")
        )
        await conn.execute(sa.update(t.jobs).values(done_at=kit.clock()))
    await kit.app.cancel(first.thread_id, actor="U_DAVE", note="wrong customer")
    join = await kit.run(second.thread_id)
    assert join["status"] == "cancelled"
    assert str(join["error"]) == (
        f"shared the outcome of run {first.thread_id}, which was cancelled: "
        "cancelled by U_DAVE: wrong customer"
    )
    assert await kit.effects("refund") == []


async def test_cancelling_the_run_that_opened_it_before_the_decision_hands_it_over(
    kit: Kit,
) -> None:
    first, second = await joined_pair(kit)
    assert await kit.app.cancel(first.thread_id, actor="U_CAROL") == []
    await kit.app.decide(first.approvals[0], "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    join = await kit.run(second.thread_id)
    assert join["status"] == "completed"
    assert json.loads(str(join["result"]))["outcome"] == "refunded 42.50 to cust_1"
    assert [e["thread_id"] for e in await kit.effects("refund")] == [second.thread_id]
