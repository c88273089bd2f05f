"""Failed runs are not stuck: `signoff retry` goes on from the last checkpoint exactly once (two
operators at once), `signoff cancel` cancels a run and its pending approval, who may do either
from Slack, and `purge` removes failed runs. SQLite and PostgreSQL, the CLI in processes of its
own."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest

from bot.approvals.effects import services
from bot.approvals.errors import (
    AlreadyDecidedError,
    RunControlRefused,
    RunStateError,
    UnknownRunError,
)
from bot.approvals.request import request_approval
from graphs import END, START, StateGraph, once
from tests.approvals.test_cli import together
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

FLAKY_POLICY = (
    POLICY
    + """
[workflows.flaky]
path = "tests.approvals.test_run_control:build_flaky"
starters = ["@support"]

[workflows.hang]
path = "tests.approvals.test_run_control:build_hang"
starters = ["@support"]
"""
)


class Flaky(TypedDict, total=False):
    marker: str
    amount: float
    decision: dict[str, Any]
    outcome: str


def _ask(state: Flaky) -> dict[str, Any]:
    d = request_approval("send_refund", {"customer_id": "c9", "amount": state["amount"]})
    return {"decision": {**d.to_json(), "args": d.args}}


def _pay(state: Flaky, config: Any) -> dict[str, Any]:
    """Fails while the marker file exists (the payment service is down), then pays once."""
    if Path(state["marker"]).exists():
        raise RuntimeError("the payment service is down")
    svc, d = services(config), state["decision"]
    once("pay", svc.effects.record, "act", d["idempotency_key"], d["args"], thread_id=svc.thread_id)
    return {"outcome": f"paid {d['args']['amount']}"}


def build_flaky() -> StateGraph:
    """Ask for a refund, then pay it (failing while a marker file exists)."""
    g = StateGraph(Flaky)
    g.add_node("ask", _ask)
    g.add_node("pay", _pay)
    g.add_edge(START, "ask")
    g.add_edge("ask", "pay")
    g.add_edge("pay", END)
    return g


@pytest.fixture
def flaky(kit: Kit) -> Kit:
    kit.policy_path.write_text(FLAKY_POLICY, encoding="utf-8")
    kit.app = kit.new_app(sink=kit.sink, share_db=True)
    return kit


async def failed_run(kit: Kit) -> tuple[str, str, Path]:
    """A refund approved by Alice whose payment failed: (thread, approval, marker file)."""
    marker = kit.tmp_path / f"down-{len(kit.sink.events)}"
    marker.touch()
    report = await kit.start("flaky", {"marker": str(marker), "amount": 40.0})
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", True)
    await kit.app.run_jobs(("resume",))
    run = await kit.run(report.thread_id)
    assert (run["status"], run["error"]) == ("failed", "RuntimeError: the payment service is down")
    return report.thread_id, approval_id, marker


async def test_two_operators_retry_at_once_and_the_run_goes_on_once(flaky: Kit) -> None:
    thread_id, _, marker = await failed_run(flaky)
    marker.unlink()  # the payment service is back
    a, b = await asyncio.to_thread(
        together,
        flaky,
        ["retry", thread_id, "--as", "ops-1"],
        ["retry", thread_id, "--as", "ops-2"],
    )
    ok = [r for r in (a, b) if r.returncode == 0]
    refused = [r for r in (a, b) if r.returncode != 0]
    assert len(ok) == 1 and len(refused) == 1, (a.stdout, a.stderr, b.stdout, b.stderr)
    assert ok[0].stdout.splitlines() == [
        f"thread {thread_id}: retrying from its last checkpoint",
        f"thread {thread_id}: completed: paid 40.0",
    ]
    # Refused while the winner runs, or after it completed: either way nothing ran twice.
    running = (
        f"signoff: run {thread_id!r} is running: it was retried already, or is being worked "
        "on; `signoff show` says where it is\n"
    )
    assert refused[0].stderr in (
        running,
        f"signoff: run {thread_id!r} is completed; only a run that is failed can be retried\n",
    )
    assert len(await flaky.effects("act", thread_id)) == 1
    (retried,) = await flaky.audit("run_retried")
    assert retried["actor"] in ("ops-1", "ops-2")
    assert retried["data"] == {
        "workflow": "flaky",
        "error": "RuntimeError: the payment service is down",
        "via": "cli",
    }
    # The approval was not asked again: its decision was kept in the checkpoint.
    assert len(await flaky.approvals(thread_id)) == 1


async def test_a_retry_that_fails_again_says_so_and_can_be_retried(flaky: Kit) -> None:
    thread_id, _, marker = await failed_run(flaky)
    again = await asyncio.to_thread(flaky.cli, "retry", thread_id)
    assert again.returncode == 1
    assert again.stdout.splitlines()[-1] == (
        f"thread {thread_id}: failed: RuntimeError: the payment service is down"
    )
    marker.unlink()
    await flaky.app.retry(thread_id, actor="U_BOB")
    await flaky.app.run_jobs(("resume",))
    assert (await flaky.run(thread_id))["status"] == "completed"
    assert [e["data"]["amount"] for e in await flaky.effects("act", thread_id)] == [40.0]


async def test_cancel_cancels_the_pending_approval_and_tells_the_thread(flaky: Kit) -> None:
    report = await flaky.start("flaky", {"marker": str(flaky.tmp_path / "no"), "amount": 40.0})
    (approval_id,) = report.approvals
    done = await asyncio.to_thread(
        flaky.cli, "cancel", report.thread_id, "--as", "U_BOB", "--note", "duplicate order"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"thread {report.thread_id}: cancelled",
        f"  approval {approval_id}: cancelled",
    ]
    approval = await flaky.app.get(approval_id)
    assert (approval.status, approval.reason) == (
        "cancelled",
        "cancelled by U_BOB: duplicate order",
    )
    with pytest.raises(AlreadyDecidedError):
        await flaky.app.decide(approval_id, "U_ALICE", True)
    await flaky.app.run_jobs(("resume",))
    assert (await flaky.run(report.thread_id))["status"] == "cancelled"
    assert await flaky.effects(thread_id=report.thread_id) == []
    (cancelled,) = await flaky.audit("run_cancelled")
    assert (cancelled["actor"], cancelled["data"]) == (
        "U_BOB",
        {"workflow": "flaky", "note": "duplicate order", "approvals": [approval_id], "via": "cli"},
    )
    # The bot's sink hears it: the card is updated (decided) and the run's thread told.
    flaky.clock.advance(60)  # the kit's clock is behind the CLI process's
    await flaky.app.run_jobs(("event",))
    kinds = [(e.kind, e.approval_id) for e in flaky.sink.events if e.thread_id == report.thread_id]
    assert kinds[-2:] == [("decided", approval_id), ("run_cancelled", None)]
    assert flaky.sink.events[-1].data == {
        "workflow": "flaky",
        "by": "U_BOB",
        "note": "duplicate order",
    }
    # A cancelled run stays cancelled.
    with pytest.raises(RunStateError, match="is cancelled; only a run that is failed can be"):
        await flaky.app.retry(report.thread_id, actor="cli")
    with pytest.raises(
        RunStateError,
        match="is cancelled; only a run that is failed, paused or outcome_unknown can be cancelled",
    ):
        await flaky.app.cancel(report.thread_id, actor="cli")


async def test_a_decided_but_unresumed_run_cancelled_does_not_run(flaky: Kit) -> None:
    report = await flaky.start("flaky", {"marker": str(flaky.tmp_path / "no"), "amount": 40.0})
    (approval_id,) = report.approvals
    await flaky.app.decide(approval_id, "U_ALICE", True)  # the resume is queued, not done
    run = await flaky.run(report.thread_id)
    assert run["status"] == "paused"
    assert await flaky.app.cancel(report.thread_id, actor="cli") == []
    assert await flaky.app.run_jobs(("resume",)) == 0
    assert await flaky.effects(thread_id=report.thread_id) == []


async def test_only_approvers_and_starters_may_retry_or_cancel_from_slack(flaky: Kit) -> None:
    thread_id, _, marker = await failed_run(flaky)
    # Dave is in ops: he neither approves refunds nor starts this workflow.
    with pytest.raises(RunControlRefused) as refused:
        await flaky.app.cancel(thread_id, actor="U_DAVE", check_control=True)
    assert str(refused.value) == (
        f"U_DAVE may not cancel run {thread_id!r}: only approvers of its actions and starters "
        "of 'flaky' may"
    )
    (entry,) = await flaky.audit("run_control_refused")
    assert (entry["actor"], entry["data"]) == ("U_DAVE", {"what": "cancel", "workflow": "flaky"})
    assert (await flaky.run(thread_id))["status"] == "failed"
    marker.unlink()
    await flaky.app.retry(thread_id, actor="U_BOB", check_control=True)  # a finance approver
    await flaky.app.run_jobs(("resume",))
    assert (await flaky.run(thread_id))["status"] == "completed"
    with pytest.raises(UnknownRunError, match="no run has thread id 'nope'"):
        await flaky.app.retry("nope", actor="U_CAROL", check_control=True)


async def test_purge_removes_old_failed_runs_and_says_so(flaky: Kit) -> None:
    thread_id, _, _ = await failed_run(flaky)
    assert await flaky.app.purge(3600) == 0  # not old yet
    flaky.clock.advance(7200)
    assert await flaky.app.purge(3600) == 1
    assert await flaky.app.run_info(thread_id) is None
    assert await flaky.approvals(thread_id) == []
    (purged,) = await flaky.audit("purged")
    assert purged["thread_id"] == thread_id
    help_text = (await asyncio.to_thread(flaky.cli, "purge", "--help")).stdout
    assert "completed, were cancelled or failed" in " ".join(help_text.split())


def test_retry_and_cancel_are_in_help_with_what_they_do() -> None:
    from bot.cli import build_parser

    text = build_parser().format_help()
    assert "retry     go on with a failed run from its last checkpoint" in text
    assert "cancel    cancel a failed, paused or stuck run and its pending approvals" in text


# ---- a run whose process died -------------------------------------------------------------------


class Hang(TypedDict, total=False):
    started: str
    hold: str
    outcome: str


def _work(state: Hang, config: Any) -> dict[str, Any]:
    """Says it started, waits while the hold file exists (a slow call), then does its effect."""
    Path(state["started"]).touch()
    while Path(state["hold"]).exists():
        time.sleep(0.05)
    svc = services(config)
    once("pay", svc.effects.record, "act", f"k-{svc.thread_id}", {}, thread_id=svc.thread_id)
    return {"outcome": "worked"}


def build_hang() -> StateGraph:
    """One node that can be held mid-run."""
    g = StateGraph(Hang)
    g.add_node("work", _work)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g


def started_and_held(kit: Kit, name: str) -> tuple[subprocess.Popen[str], Path]:
    """`signoff start hang` in a process of its own, held inside its node: (it, the hold file)."""
    started, hold = kit.tmp_path / f"{name}.started", kit.tmp_path / f"{name}.hold"
    hold.touch()
    inputs = f'{{"started": "{started}", "hold": "{hold}"}}'
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "start", "hang", "--thread-id", name, "--input", inputs],
        env=kit.env(), cwd=kit.tmp_path, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not started.exists():
        if proc.poll() is not None:
            raise AssertionError(f"signoff start stopped: {proc.communicate()}")
        assert time.monotonic() < deadline, "the run never reached its node"
        time.sleep(0.05)
    return proc, hold


def killed(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)  # reaped, and its pipes closed
    assert proc.returncode == -signal.SIGKILL


async def test_a_run_whose_process_was_killed_can_be_cancelled_not_while_it_lives(
    flaky: Kit,
) -> None:
    proc, hold = await asyncio.to_thread(started_and_held, flaky, "hang-cancel")
    try:
        live = await asyncio.to_thread(flaky.cli, "cancel", "hang-cancel")
        assert live.returncode != 0
        assert live.stderr == (
            f"signoff: run 'hang-cancel' is running in process {proc.pid} of this host, which "
            "is alive: wait for it to pause or stop (if it hangs, stop that process, then cancel "
            "or retry)\n"
        )
        assert (await flaky.run("hang-cancel"))["status"] == "running"
    finally:
        await asyncio.to_thread(killed, proc)
    assert (await flaky.run("hang-cancel"))["status"] == "running"  # stuck: nobody runs it
    gone = await asyncio.to_thread(flaky.cli, "cancel", "hang-cancel", "--as", "ops-1")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout == "thread hang-cancel: cancelled\n"
    assert (await flaky.run("hang-cancel"))["status"] == "cancelled"
    (entry,) = await flaky.audit("run_cancelled")
    assert (entry["thread_id"], entry["actor"]) == ("hang-cancel", "ops-1")
    hold.unlink()
    assert await flaky.effects("act", "hang-cancel") == []  # and it never runs again


async def test_a_run_whose_process_was_killed_can_be_retried_once(flaky: Kit) -> None:
    proc, hold = await asyncio.to_thread(started_and_held, flaky, "hang-retry")
    try:
        live = await asyncio.to_thread(flaky.cli, "retry", "hang-retry")
        assert live.returncode != 0
        assert "is running: it was retried already, or is being worked on" in live.stderr
    finally:
        await asyncio.to_thread(killed, proc)
    hold.unlink()  # the slow call would answer now
    retried = await asyncio.to_thread(flaky.cli, "retry", "hang-retry", "--as", "ops-1")
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.splitlines() == [
        "thread hang-retry: retrying from its last checkpoint",
        "thread hang-retry: completed: worked",
    ]
    assert len(await flaky.effects("act", "hang-retry")) == 1
    (entry,) = await flaky.audit("run_retried")
    host = socket.gethostname()
    assert entry["data"]["error"].startswith(f"its process ({host}:{proc.pid}:")
    again = await asyncio.to_thread(flaky.cli, "retry", "hang-retry")
    assert again.stderr == (
        "signoff: run 'hang-retry' is completed; only a run that is failed can be retried\n"
    )
