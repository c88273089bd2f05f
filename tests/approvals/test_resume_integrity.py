"""A resume runs on the decision the audit chain recorded, not on whatever its job says: someone
with write access to the database who flips a queued resume job's decision gets nothing run,
and the refusal is on the audit log."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from bot.approvals import tables as t
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def tamper_resume_job(kit: Kit, approval_id: str, **decision: Any) -> None:
    """What an intruder with SQL access does to the queued resume."""
    async with kit.db.transaction() as conn:
        row = (
            await conn.execute(
                sa.select(t.jobs.c.id, t.jobs.c.payload).where(
                    t.jobs.c.kind == "resume", t.jobs.c.approval_id == approval_id
                )
            )
        ).one()
        payload = json.loads(row.payload)
        payload["decision"].update(decision)
        await conn.execute(
            sa.update(t.jobs).where(t.jobs.c.id == row.id).values(payload=json.dumps(payload))
        )


async def test_a_rejection_flipped_to_approved_in_the_job_does_not_refund(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", False, note="not this one")
    await kit.app.link_audit()  # linked already, as the bot does within a quarter second
    await tamper_resume_job(kit, approval_id, approved=True, status="approved")

    await kit.app.run_jobs(("resume",))

    assert await kit.effects() == []
    run = await kit.run(report.thread_id)
    assert run["status"] == "failed" and "audit" in (run["error"] or "")
    refused = await kit.audit("resume_refused")
    assert [(e["approval_id"], e["thread_id"]) for e in refused] == [
        (approval_id, report.thread_id)
    ]
    assert await kit.audit("resumed") == []
    await kit.app.link_audit()
    async with kit.db.read() as conn:
        assert (await kit.app.audit.verify(conn)).ok


async def test_a_rejection_flipped_before_it_was_linked_does_not_refund_either(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", False, note="not this one")
    await tamper_resume_job(kit, approval_id, approved=True, status="approved")

    await kit.app.run_jobs(("resume",))

    assert await kit.effects() == []
    assert len(await kit.audit("resume_refused")) == 1


async def test_edits_slipped_into_an_approved_job_do_not_run(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", True)
    await tamper_resume_job(kit, approval_id, edits={"amount": 4999})

    await kit.app.run_jobs(("resume",))

    assert await kit.effects() == []
    assert len(await kit.audit("resume_refused")) == 1


async def test_an_untouched_job_resumes_as_decided(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    assert [e["kind"] for e in await kit.effects()] == ["refund"]
    assert await kit.audit("resume_refused") == []
