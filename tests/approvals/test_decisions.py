"""Who may decide, and that a decision resumes its run exactly once: refusals, quorum, denial of
unlisted actions, concurrent clicks from two processes, a process killed between the decision
and the resume, and durable delivery of events. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from bot.approvals.errors import (
    AlreadyDecidedError,
    AlreadyVotedError,
    InvalidEditError,
    NotAuthorizedError,
    SelfApprovalError,
    UnknownApprovalError,
)
from bot.approvals.events import Event
from bot.approvals.policy import StaticGroups
from tests.kit.signoff import Kit
from tests.kit.together import run_together

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def nothing_changed(kit: Kit, approval_id: str) -> None:
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    kinds = [e["kind"] for e in await kit.audit(approval_id=approval_id)]
    assert kinds[0] == "requested" and set(kinds[1:]) <= {"vote_refused"}, kinds  # refusals only
    assert await kit.pending_jobs("resume") == 0


# ---- refusals ---------------------------------------------------------------------------


async def test_self_approval_is_refused(kit: Kit) -> None:
    # Alice is in finance, so she may approve refunds: but not the one she asked for.
    report = await kit.start("refund", REFUND, requester="U_ALICE")
    (approval_id,) = report.approvals
    with pytest.raises(
        SelfApprovalError, match="does not allow approving your own request"
    ) as info:
        await kit.app.decide(approval_id, "U_ALICE", True)
    assert info.value.approval_id == approval_id
    await nothing_changed(kit, approval_id)
    assert (await kit.app.decide(approval_id, "U_BOB", True)).settled


async def test_a_user_not_in_the_policy_is_refused(kit: Kit) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    for outsider in ("U_DAVE", "U_MALLORY", "@finance"):
        with pytest.raises(NotAuthorizedError, match="not an approver of Send a refund"):
            await kit.app.decide(approval_id, outsider, True)
        with pytest.raises(NotAuthorizedError):
            await kit.app.decide(approval_id, outsider, False, note="no")
    await nothing_changed(kit, approval_id)


class OnCall:
    """Group members from elsewhere (as the Slack app resolves Slack user groups)."""

    async def members(self, group: str) -> frozenset[str]:
        return frozenset({"U_ZED"}) if group == "oncall" else frozenset()


async def test_groups_the_policy_does_not_define_are_asked_of_the_resolver(kit: Kit) -> None:
    text = (
        kit.policy_path.read_text()
        + '\n[actions.page_someone]\ntier = "low"\napprovers = ["@oncall"]\n'
    )
    app = kit.new_app(policy_text=text)
    app.groups = StaticGroups(app.policy.groups, fallback=OnCall())
    report = await app.start(
        "ask", {"action": "page_someone", "args": {"who": "db team"}}, requester="U_CAROL"
    )
    with pytest.raises(NotAuthorizedError):
        await app.decide(report.approvals[0], "U_ALICE", True)
    assert (await app.decide(report.approvals[0], "U_ZED", True)).settled
    await app.run_jobs(("resume",))
    assert [e["data"] for e in await kit.effects("act")] == [{"who": "db team"}]


async def test_an_unknown_approval_is_refused(kit: Kit) -> None:
    with pytest.raises(UnknownApprovalError, match="no approval has id 'apr_nope'"):
        await kit.app.decide("apr_nope", "U_ALICE", True)


async def test_a_rejection_needs_a_reason(kit: Kit) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    with pytest.raises(InvalidEditError, match="a rejection needs a reason"):
        await kit.app.decide(approval_id, "U_ALICE", False, note="   ")
    await nothing_changed(kit, approval_id)


async def test_an_unlisted_action_is_denied_and_the_graph_takes_its_rejection_branch(
    kit: Kit,
) -> None:
    report = await kit.ask("launch_rockets", {"count": 3})
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert a.status == "rejected"
    assert a.reason and "'launch_rockets' is not in the policy" in a.reason
    (denied,) = await kit.audit("denied")
    assert (denied["approval_id"], denied["actor"]) == (approval_id, "policy")
    assert "not in the policy" in denied["data"]["reason"]
    with pytest.raises(AlreadyDecidedError):  # nobody can approve it afterwards
        await kit.app.decide(approval_id, "U_ALICE", True)

    assert await kit.app.run_jobs(("resume",)) == 1
    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    assert json.loads(run["result"])["outcome"].startswith(
        "declined (denied): action 'launch_rockets'"
    )
    assert await kit.effects("act") == []
    (declined,) = await kit.effects("declined")
    assert declined["data"]["status"] == "denied"


async def test_an_action_removed_from_the_policy_while_pending_can_be_rejected_not_approved(
    kit: Kit,
) -> None:
    before = kit.new_app(
        policy_text=kit.policy_path.read_text()
        + '\n[actions.rotate_keys]\napprovers = ["U_ALICE", "U_BOB"]\n'
    )
    report = await before.start(
        "ask", {"action": "rotate_keys", "args": {"env": "prod"}}, requester="U_CAROL"
    )
    (approval_id,) = report.approvals
    # The policy is edited and the processes restart: rotate_keys is gone.
    with pytest.raises(NotAuthorizedError, match="'rotate_keys' is no longer in the policy"):
        await kit.app.decide(approval_id, "U_ALICE", True)
    with pytest.raises(NotAuthorizedError):
        await kit.app.decide(approval_id, "U_DAVE", False, note="not mine to say")
    assert (await kit.app.decide(approval_id, "U_BOB", False, note="no longer allowed")).settled
    await kit.app.run_jobs(("resume",))
    assert await kit.effects("act") == []
    assert [e["data"]["status"] for e in await kit.effects("declined")] == ["rejected"]


# ---- quorum -------------------------------------------------------------------------------


async def test_a_vote_says_whether_it_settled_the_approval(kit: Kit) -> None:
    """What a click uses: the vote alone, committed, and whether it decided the approval."""
    report = await kit.ask("deploy", {"service": "api", "version": "1.3"})
    (approval_id,) = report.approvals
    assert await kit.app.vote(approval_id, "U_ALICE", True) is False
    assert (await kit.app.get(approval_id)).approvals_count == 1
    with pytest.raises(AlreadyVotedError):
        await kit.app.vote(approval_id, "U_ALICE", True)
    assert await kit.app.vote(approval_id, "U_BOB", True) is True
    assert (await kit.app.get(approval_id)).status == "approved"


async def test_two_of_three_needs_two_distinct_people(kit: Kit) -> None:
    report = await kit.ask("deploy", {"service": "api", "version": "1.2"})
    (approval_id,) = report.approvals

    first = await kit.app.decide(approval_id, "U_ALICE", True, note="looks fine")
    assert not first.settled
    assert (first.approval.status, first.approval.approvals_count) == ("pending", 1)
    with pytest.raises(AlreadyVotedError, match="U_ALICE has voted on approval"):
        await kit.app.decide(approval_id, "U_ALICE", True)
    with pytest.raises(AlreadyVotedError):  # changing her mind is not a second vote either
        await kit.app.decide(approval_id, "U_ALICE", False, note="wait")
    assert await kit.app.run_jobs(("resume",)) == 0
    assert (await kit.run(report.thread_id))["status"] == "paused"
    assert await kit.effects() == []

    second = await kit.app.decide(approval_id, "U_BOB", True)
    assert second.settled
    assert second.approval.status == "approved"
    assert second.approval.decided_by == ["U_ALICE", "U_BOB"]
    assert await kit.app.run_jobs(("resume",)) == 1
    (act,) = await kit.effects("act")
    assert act["data"] == {"service": "api", "version": "1.2"}
    assert [e["actor"] for e in await kit.audit("vote")] == ["U_ALICE", "U_BOB"]
    with pytest.raises(AlreadyDecidedError, match="approved already by U_ALICE, U_BOB"):
        await kit.app.decide(approval_id, "U_DAVE", True)


async def test_a_rejection_ends_it(kit: Kit) -> None:
    report = await kit.ask("deploy", {"service": "api", "version": "1.3"})
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", True)
    result = await kit.app.decide(approval_id, "U_BOB", False, note="not on a Friday")
    assert result.settled
    assert (result.approval.status, result.approval.decided_by) == ("rejected", ["U_BOB"])
    with pytest.raises(AlreadyDecidedError, match="rejected already by U_BOB") as info:
        await kit.app.decide(approval_id, "U_DAVE", True)
    assert (info.value.status, info.value.decided_by) == ("rejected", ["U_BOB"])
    assert info.value.decided_at is not None

    assert await kit.app.run_jobs(("resume",)) == 1
    assert await kit.effects("act") == []
    (declined,) = await kit.effects("declined")
    assert declined["data"] == {"status": "rejected", "note": "not on a Friday"}
    assert (await kit.run(report.thread_id))["status"] == "completed"


# ---- exactly once across processes -------------------------------------------------------

CONCURRENT_DECIDES = """
import asyncio, json, sys
from bot.approvals.errors import AlreadyDecidedError
from bot.config import Settings, build_signoff

approval_id, users = sys.argv[1], sys.argv[2].split(",")

async def main():
    app = build_signoff(Settings.from_env())
    outcomes = []
    async def one(user):
        try:
            await app.decide(approval_id, user, True, note="ok")
            outcomes.append("decided")
        except AlreadyDecidedError:
            outcomes.append("already")
    await app.db.ping()  # connect before the start line
    wait_for_go()
    await asyncio.gather(*(one(u) for u in users))
    resumed = await app.run_jobs(("resume",))
    await app.db.aclose()
    print(json.dumps({"outcomes": outcomes, "resumed": resumed}))

asyncio.run(main())
"""


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_twenty_concurrent_decides_from_two_processes(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = await kit.ask("crowd", {"what": "ship it"})
    (approval_id,) = report.approvals
    users = [f"U_P{i:02d}" for i in range(20)]
    for key, value in kit.env().items():
        monkeypatch.setenv(key, value)
    results = await asyncio.to_thread(
        run_together,
        CONCURRENT_DECIDES,
        [[approval_id, ",".join(users[:10])], [approval_id, ",".join(users[10:])]],
    )
    outs = []
    for r in results:
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout.splitlines()[-1]))
    outcomes = [o for out in outs for o in out["outcomes"]]
    assert sorted(outcomes) == ["already"] * 19 + ["decided"]
    assert sum(out["resumed"] for out in outs) == 1

    a = await kit.app.get(approval_id)
    assert a.status == "approved" and len(a.votes) == 1 and len(a.decided_by) == 1
    assert len(await kit.audit("vote")) == 1
    assert len(await kit.audit("approved")) == 1
    assert len(await kit.audit("resumed")) == 1
    assert len(await kit.effects("act")) == 1
    assert (await kit.run(report.thread_id))["status"] == "completed"


DECIDE_THEN_DIE = """
import asyncio, os, signal, sys
from bot.config import Settings, build_signoff

async def main():
    app = build_signoff(Settings.from_env())
    await app.decide(sys.argv[1], "U_ALICE", True, note="approved, then the power went out")
    print("decided", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # before run_jobs: the resume is only a queued job

asyncio.run(main())
"""


async def test_a_process_killed_after_deciding_is_resumed_by_the_next_one(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals

    killed = await asyncio.to_thread(kit.python, DECIDE_THEN_DIE, approval_id)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout.split() == ["decided"]
    assert (await kit.app.get(approval_id)).status == "approved"
    assert (await kit.run(report.thread_id))["status"] == "paused"
    assert await kit.effects("refund") == []
    assert await kit.pending_jobs("resume") == 1

    worker = await asyncio.to_thread(kit.cli, "worker", "--once")
    assert worker.returncode == 0, worker.stderr
    assert worker.stdout.startswith("1 job(s) done")
    (refund,) = await kit.effects("refund")
    assert refund["data"]["amount"] == 42.5
    assert (await kit.run(report.thread_id))["status"] == "completed"

    assert await kit.new_app().run_jobs(("resume",)) == 0
    assert len(await kit.effects("refund")) == 1

    # The events the dead process committed are delivered too, in order.
    kit.clock.advance(60)  # to when the other processes (on the real clock) queued them
    await kit.app.run_jobs(("event",))
    assert [e.kind for e in kit.sink.events] == ["approval_requested", "decided", "run_completed"]


RESUME_THEN_DIE = """
import asyncio, os, signal, sys
from bot.approvals.runs import Runs
from bot.config import Settings, build_signoff

async def die(self, *args, **kwargs):  # the graph has run to its end; the process dies before recording it
    os.kill(os.getpid(), signal.SIGKILL)

Runs.after_run = die

async def main():
    app = build_signoff(Settings.from_env())
    await app.decide(sys.argv[1], "U_ALICE", True)
    await app.run_jobs(("resume",))

asyncio.run(main())
"""


async def test_a_process_killed_after_resuming_is_recorded_by_the_next_one(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    killed = await asyncio.to_thread(kit.python, RESUME_THEN_DIE, report.approvals[0])
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(await kit.effects("refund")) == 1

    kit.clock.advance(120)  # the dead worker's lease on the resume job runs out
    assert await kit.new_app().run_jobs(("resume",)) == 1
    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    assert json.loads(run["result"])["outcome"] == "refunded 42.50 to cust_1"
    assert len(await kit.audit("run_completed")) == 1
    assert len(await kit.effects("refund")) == 1
    assert await kit.new_app().run_jobs(("resume",)) == 0


async def test_a_run_finished_by_another_worker_while_starting_is_not_left_paused(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small refund is approved by the rule as the run starts. Another replica's worker may
    # resume and finish the run before the starting process has recorded the pause.
    other = kit.new_app()
    register = kit.app.pauses.register

    async def register_then_another_worker_runs(*args: Any) -> str:
        approval_id = await register(*args)
        assert await other.run_jobs(("resume",)) == 1
        return approval_id

    monkeypatch.setattr(kit.app.pauses, "register", register_then_another_worker_runs)
    report = await kit.start("refund", {**REFUND, "amount": 3})
    assert len(await kit.effects("refund")) == 1
    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    assert json.loads(run["result"])["outcome"] == "refunded 3.00 to cust_1"


# ---- events ---------------------------------------------------------------------------------


class FlakySink:
    """Fails each event's first `failures` deliveries, then records it."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: dict[int, int] = {}
        self.events: list[Event] = []

    async def deliver(self, event: Event) -> None:
        self.attempts[event.id] = self.attempts.get(event.id, 0) + 1
        if self.attempts[event.id] <= self.failures:
            raise ConnectionError("slack is down")
        self.events.append(event)


def by_thread(events: list[Event]) -> dict[str | None, list[tuple[int, str]]]:
    out: dict[str | None, list[tuple[int, str]]] = {}
    for e in events:
        out.setdefault(e.thread_id, []).append((e.id, e.kind))
    return out


async def test_events_are_delivered_in_order_per_thread(kit: Kit) -> None:
    one = await kit.ask("deploy", {"service": "a"})
    two = await kit.ask("deploy", {"service": "b"})
    await kit.app.decide(one.approvals[0], "U_ALICE", True)
    await kit.app.decide(two.approvals[0], "U_ALICE", False, note="no")
    await kit.app.decide(one.approvals[0], "U_BOB", True)
    await kit.app.run_jobs()
    await kit.app.run_jobs()  # the runs' own events, enqueued by the resumes
    seen = by_thread(kit.sink.events)
    assert [k for _, k in seen[one.thread_id]] == [
        "approval_requested",
        "vote_recorded",
        "decided",
        "run_completed",
    ]
    assert [k for _, k in seen[two.thread_id]] == ["approval_requested", "decided", "run_completed"]
    for events in seen.values():
        assert [i for i, _ in events] == sorted(i for i, _ in events)
    assert len({e.id for e in kit.sink.events}) == len(kit.sink.events)
    assert await kit.pending_jobs("event") == 0


async def test_events_survive_a_sink_that_fails_twice(kit: Kit) -> None:
    sink = FlakySink(failures=2)
    app = kit.new_app(sink=sink)
    one = await app.start(
        "ask", {"action": "deploy", "args": {"service": "a"}}, requester="U_CAROL"
    )
    await app.decide(one.approvals[0], "U_ALICE", True)
    await app.decide(one.approvals[0], "U_BOB", True)
    await app.run_jobs(("resume",))
    expected = ["approval_requested", "vote_recorded", "decided", "run_completed"]

    delivered_at: list[int] = []
    for _ in range(40):  # each failure backs off; move the clock past it instead of sleeping
        await app.run_jobs(("event",))
        delivered_at.append(len(sink.events))
        if len(sink.events) == len(expected):
            break
        kit.clock.advance(30)
    assert [e.kind for e in sink.events] == expected
    assert all(n == 3 for n in sink.attempts.values())  # failed twice, delivered once
    assert [e.id for e in sink.events] == sorted(e.id for e in sink.events)
    assert await kit.pending_jobs("event") == 0
    assert delivered_at[0] == 0  # nothing went out while the first event kept failing


CLAIM_THEN_DIE = """
import asyncio, os, signal, sys
from bot.approvals.runs import Runs
from bot.config import Settings, build_signoff

async def die(self, job):  # the resume job is leased to this process, which dies with it
    os.kill(os.getpid(), signal.SIGKILL)

Runs.resume = die

async def main():
    app = build_signoff(Settings.from_env())
    await app.decide(sys.argv[1], "U_ALICE", True)
    await app.run_jobs(("resume",))

asyncio.run(main())
"""


async def test_jobs_of_a_process_that_died_on_this_host_are_taken_back_at_once(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    killed = await asyncio.to_thread(kit.python, CLAIM_THEN_DIE, report.approvals[0])
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # To the real clock, which the other process queued the job by (starting it can take seconds).
    kit.clock.now = max(kit.clock.now, time.time())
    assert await kit.app.run_jobs(("resume",)) == 0  # leased to the dead process for a minute

    held = await kit.app.jobs.claim(("event",))  # a live process's lease (this one's) stays
    assert held is not None
    assert await kit.app.release_dead_leases() == 1
    assert await kit.app.release_dead_leases() == 0
    assert await kit.app.run_jobs(("resume",)) == 1
    assert [e["kind"] for e in await kit.effects()] == ["refund"]
    assert (await kit.run(report.thread_id))["status"] == "completed"


async def test_a_vote_that_cannot_get_its_turn_in_time_is_refused_and_records_nothing(
    tmp_path: Path,
) -> None:
    """SQLite (its write gate): a click must be answered within Slack's 3 s; when the process's
    writers are queued too long, the vote is refused (DatabaseBusy) rather than recorded late."""
    from bot.approvals.db import DatabaseBusy

    kit = Kit(f"sqlite:///{tmp_path / 'busy.db'}", tmp_path)
    await kit.db.upgrade()
    try:
        await _busy_vote(kit, DatabaseBusy)
    finally:
        await kit.aclose()


async def _busy_vote(kit: Kit, DatabaseBusy: type[Exception]) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    gate = kit.db.saver._gate
    assert gate is not None
    await asyncio.to_thread(gate.acquire)  # a long write of another thread
    try:
        with pytest.raises(
            DatabaseBusy, match=r"busy: no turn to write within 0\.[0-9]+s; nothing was written"
        ):
            await kit.app.decide(approval_id, "U_ALICE", True, wait=0.2)
    finally:
        gate.release()
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    assert [e["kind"] for e in await kit.audit(approval_id=approval_id)] == ["requested"]
    await kit.app.decide(approval_id, "U_ALICE", True, wait=0.2)  # and once the way is clear
    assert (await kit.app.get(approval_id)).status == "approved"
