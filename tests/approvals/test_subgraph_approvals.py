"""A `request_approval()` inside a subgraph: the run pauses, the approval is asked and decided
through the real `Signoff`, the resume goes through the parent thread, and the action inside the
subgraph runs once. SQLite and PostgreSQL."""

from __future__ import annotations

import json

from tests.kit.signoff import Kit

ARGS = {"service": "billing"}


async def test_an_approval_asked_inside_a_subgraph_resumes_it_and_acts_once(kit: Kit) -> None:
    report = await kit.start("nested", {"action": "deploy", "args": ARGS})
    assert report.status == "paused"
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert (a.action, a.status, a.payload, a.thread_id) == (
        "deploy",
        "pending",
        ARGS,
        report.thread_id,
    )
    # The saver's "what is paused" lists the run's own thread, waiting on that approval.
    (paused,) = kit.app.saver.list_paused()
    assert (paused.thread_id, paused.checkpoint_ns) == (report.thread_id, "")
    assert [i.id for i in paused.interrupts] == [a.interrupt_id]
    assert await kit.effects() == []

    await kit.app.decide(approval_id, "U_ALICE", True)
    await kit.app.decide(approval_id, "U_BOB", True)  # deploy needs two
    assert await kit.app.run_jobs(("resume",)) == 1
    assert await kit.app.run_jobs(("resume",)) == 0

    run = await kit.run(report.thread_id)
    assert run["status"] == "completed", run
    result = json.loads(run["result"])
    assert result["outcome"] == "did deploy"
    assert result["steps"] == ["prepare", "wrap: did deploy"]
    (effect,) = await kit.effects()
    assert (effect["kind"], effect["data"]) == ("act", ARGS)
    assert kit.app.saver.list_paused() == []
