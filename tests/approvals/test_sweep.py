"""What happens to approvals nobody answers: reminders, escalation, expiry (once, with several
sweepers at once), and retention of settled runs. The clock is moved, never slept on.
SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.approvals.errors import ApprovalExpiredError, NotAuthorizedError
from tests.kit.signoff import Kit
from tests.kit.together import run_together

HOUR, DAY = 3600.0, 86400.0
# send_refund in the demo policy: remind after 4h, escalate to @ops after 1d, expire after 3d.
REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}

SWEEP_LATER = """
import asyncio, json, sys, time
from bot.approvals.audit import AuditLog
from bot.approvals.policy import load_policy
from bot.approvals.service import Signoff
from bot.config import Settings
from bot.approvals.db import Database
from bot.workflows import load_workflows

offset = float(sys.argv[1])

async def main():
    settings = Settings.from_env()
    policy = load_policy(settings.policy_path)
    workflows = load_workflows({n: w.path for n, w in policy.workflows.items()})
    app = Signoff(Database(settings.database_url), policy, workflows, audit=AuditLog(),
                  clock=lambda: time.time() + offset)
    await app.db.ping()
    wait_for_go()
    counts = await app.sweep()
    resumed = await app.run_jobs(("resume",))
    await app.db.aclose()
    print(json.dumps({**counts, "resumed": resumed}))

asyncio.run(main())
"""


async def test_an_expired_approval_is_expired_once_by_two_sweeping_processes(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    for key, value in kit.env().items():
        monkeypatch.setenv(key, value)
    later = str(3 * DAY + HOUR)  # past the deadline, in both processes' clocks
    results = await asyncio.to_thread(run_together, SWEEP_LATER, [[later], [later]])
    counts = []
    for r in results:
        assert r.returncode == 0, r.stderr
        counts.append(json.loads(r.stdout.splitlines()[-1]))
    assert sum(c["expired"] for c in counts) == 1
    assert sum(c["resumed"] for c in counts) == 1

    a = await kit.app.get(approval_id)
    assert a.status == "expired"
    assert a.decision is not None and (a.decision["approved"], a.decision["by"]) == (
        False,
        ["sweep"],
    )
    assert len(await kit.audit("expired")) == 1
    assert len(await kit.audit("resumed")) == 1
    # The graph took its rejection branch: the customer is told, nothing is refunded.
    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    assert json.loads(run["result"])["outcome"].startswith(
        "declined (expired): expired: nobody decided by"
    )
    assert [e["kind"] for e in await kit.effects()] == ["email"]
    with pytest.raises(ApprovalExpiredError, match=f"approval {approval_id} expired"):
        await kit.app.decide(approval_id, "U_ALICE", True)


async def test_nothing_happens_before_its_time(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    kit.clock.advance(4 * HOUR - 60)
    assert await kit.app.sweep() == {"reminded": 0, "escalated": 0, "expired": 0}
    assert (await kit.app.get(report.approvals[0])).status == "pending"
    assert len(await kit.audit()) == 2  # run_started, requested


async def test_a_decision_after_the_deadline_is_refused_even_before_the_sweep(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    kit.clock.advance(3 * DAY + 1)
    with pytest.raises(ApprovalExpiredError, match="expired at"):
        await kit.app.decide(report.approvals[0], "U_ALICE", True)
    assert await kit.audit("vote") == []
    assert (await kit.app.sweep())["expired"] == 1
    await kit.app.run_jobs(("resume",))
    assert [e["kind"] for e in await kit.effects()] == ["email"]


async def test_reminders_and_escalation_happen_once_with_two_sweepers(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    one, two = kit.new_app(), kit.new_app()

    async def both_sweep() -> dict[str, int]:
        a, b = await asyncio.gather(one.sweep(), two.sweep())
        return {k: a[k] + b[k] for k in a}

    kit.clock.advance(4 * HOUR + 60)
    assert await both_sweep() == {"reminded": 1, "escalated": 0, "expired": 0}
    assert await both_sweep() == {"reminded": 0, "escalated": 0, "expired": 0}
    with pytest.raises(NotAuthorizedError):  # ops are not approvers yet
        await kit.app.decide(approval_id, "U_DAVE", True)

    kit.clock.advance(DAY)
    assert await both_sweep() == {"reminded": 0, "escalated": 1, "expired": 0}
    assert await both_sweep() == {"reminded": 0, "escalated": 0, "expired": 0}
    assert [e["kind"] for e in await kit.audit(approval_id=approval_id)] == [
        "requested",
        "reminded",
        "vote_refused",  # Dave's, before the escalation made ops approvers
        "escalated",
    ]
    (escalated,) = await kit.audit("escalated")
    assert escalated["data"] == {"to": ["@ops"]}
    a = await kit.app.get(approval_id)
    assert a.escalated and a.approvers == ("@finance", "@ops")

    await kit.app.run_jobs(("event",))
    kinds = [e.kind for e in kit.sink.events if e.approval_id == approval_id]
    assert kinds == ["approval_requested", "reminded", "escalated"]

    # An escalation approver may now decide, and the run goes on.
    assert (await kit.app.decide(approval_id, "U_DAVE", True)).settled
    await kit.app.run_jobs(("resume",))
    assert [e["data"]["amount"] for e in await kit.effects("refund")] == [42.5]


async def test_a_sweep_long_after_everything_expires_without_reminding(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    kit.clock.advance(4 * DAY)
    assert await kit.app.sweep() == {"reminded": 0, "escalated": 0, "expired": 1}
    assert await kit.app.sweep() == {"reminded": 0, "escalated": 0, "expired": 0}
    assert [e["kind"] for e in await kit.audit(approval_id=report.approvals[0])] == [
        "requested",
        "expired",
    ]


async def test_expiry_may_approve_a_low_risk_action_where_the_policy_says_so(kit: Kit) -> None:
    policy = kit.policy_path.read_text() + (
        '\n[actions.restart_worker]\ntier = "low"\napprovers = ["@ops"]\n'
        'expire_after = "30m"\non_expiry = "approve"\n'
    )
    app = kit.new_app(policy_text=policy)
    report = await app.start(
        "ask", {"action": "restart_worker", "args": {"worker": "w1"}}, requester="U_CAROL"
    )
    kit.clock.advance(31 * 60)
    assert (await app.sweep())["expired"] == 1
    await app.run_jobs(("resume",))
    a = await app.get(report.approvals[0])
    assert a.status == "expired" and a.decision is not None and a.decision["approved"] is True
    assert [e["data"] for e in await kit.effects("act")] == [{"worker": "w1"}]


# ---- retention ------------------------------------------------------------------------------


async def test_purge_removes_old_settled_runs_and_never_live_ones(kit: Kit) -> None:
    done = await kit.start("refund", REFUND)
    await kit.app.decide(done.approvals[0], "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    waiting = await kit.start("refund", {**REFUND, "order_id": "o-2"})
    kit.clock.advance(31 * DAY)

    assert await kit.app.purge(30 * DAY) == 1
    assert await kit.app.run_info(done.thread_id) is None
    assert await kit.approvals(done.thread_id) == []
    state = await kit.app.graph("refund").aget_state(
        {"configurable": {"thread_id": done.thread_id}}
    )
    assert state.values == {}
    (purged,) = await kit.audit("purged")
    assert purged["data"] == {"approvals": [done.approvals[0]]}

    assert (await kit.run(waiting.thread_id))["status"] == "paused"
    assert (await kit.app.get(waiting.approvals[0])).status == "pending"
    assert await kit.app.purge(0) == 0
    # The refund it issued is still on record, and the audit log still verifies.
    assert len(await kit.effects("refund")) == 1
    async with kit.db.read() as conn:
        assert (await kit.app.audit.verify(conn)).ok
