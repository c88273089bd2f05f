"""The bot's job runner: several workers perform jobs side by side, and what must stay in order
(a thread's events, one resume per thread) stays in order; `SIGNOFF_WORKERS` sets how many."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from bot.approvals.events import Event
from bot.config import Settings, SettingsError
from bot.scheduler import JobRunner
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


class SlowSink:
    """Records deliveries, each taking a moment as a Slack call does, and what overlapped."""

    def __init__(self) -> None:
        self.active: set[str | None] = set()
        self.most_at_once = 0
        self.same_thread_overlap = False
        self.kinds: dict[str | None, list[str]] = defaultdict(list)

    async def deliver(self, event: Event) -> None:
        if event.thread_id in self.active:
            self.same_thread_overlap = True
        self.active.add(event.thread_id)
        self.most_at_once = max(self.most_at_once, len(self.active))
        try:
            await asyncio.sleep(0.05)
            self.kinds[event.thread_id].append(event.kind)
        finally:
            self.active.discard(event.thread_id)


async def _drain(kit: Kit, runner: JobRunner, timeout: float = 60) -> None:
    runner.start()
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while await kit.pending_jobs("resume") or await kit.pending_jobs("event"):
            assert asyncio.get_running_loop().time() < deadline, "jobs still pending"
            runner.kick()
            await asyncio.sleep(0.05)
    finally:
        await runner.stop()


async def test_workers_deliver_side_by_side_and_each_thread_in_order(kit: Kit) -> None:
    sink = SlowSink()
    app = kit.new_app(sink=sink, share_db=True)
    threads = []
    for i in range(6):
        refund = {**REFUND, "order_id": f"o-{i}", "customer_id": f"cust_{i}"}  # each its own facts
        report = await app.start("refund", refund, requester="U_CAROL")
        await app.decide(report.approvals[0], "U_ALICE", True)
        threads.append(report.thread_id)

    await _drain(kit, JobRunner(app, concurrency=4, every=0.2))

    assert sink.most_at_once > 1, "the four workers never delivered two events at once"
    assert not sink.same_thread_overlap, "two events of one thread were delivered at once"
    for thread_id in threads:
        assert sink.kinds[thread_id] == ["approval_requested", "decided", "run_completed"]
    assert len(await kit.effects("refund")) == 6  # each run resumed once


async def test_one_worker_delivers_one_event_at_a_time(kit: Kit) -> None:
    sink = SlowSink()
    app = kit.new_app(sink=sink, share_db=True)
    for i in range(3):
        refund = {**REFUND, "order_id": f"o-{i}", "customer_id": f"cust_{i}"}  # each its own facts
        report = await app.start("refund", refund, requester="U_CAROL")
        await app.decide(report.approvals[0], "U_ALICE", True)

    await _drain(kit, JobRunner(app, concurrency=1, every=0.2))

    assert sink.most_at_once == 1
    assert len(await kit.effects("refund")) == 3


async def test_the_runner_stops_when_a_kick_comes_as_it_is_stopped(kit: Kit) -> None:
    """A kick in the moment the runner is stopped (a click as the bot shuts down) does not keep
    its workers going: `stop()` returns. (`asyncio.wait_for` on Python 3.11 drops a
    cancellation that comes as what it waits for is done: the worker looped on, and `stop()`
    waited for it for ever.)"""
    for _ in range(10):
        runner = JobRunner(kit.app, concurrency=2, every=0.2)
        runner.start()
        await asyncio.sleep(0.1)  # the workers found nothing to do and wait for a kick
        runner.kick()
        stopping = asyncio.ensure_future(runner.stop())
        done, _ = await asyncio.wait({stopping}, timeout=5)
        assert done, "stop() did not return: a worker went on after it was cancelled"


def test_the_number_of_workers_comes_from_the_environment() -> None:
    assert Settings.from_env({}).workers == 2
    assert Settings.from_env({"SIGNOFF_WORKERS": "8"}).workers == 8
    for bad in ("0", "-1", "two", "65", "1.5"):
        with pytest.raises(
            SettingsError, match="SIGNOFF_WORKERS must be a whole number from 1 to 64"
        ):
            Settings.from_env({"SIGNOFF_WORKERS": bad})


def test_webhooks_and_refusals_have_their_settings() -> None:
    default = Settings.from_env({})
    assert (default.webhook_workers, default.webhook_timeout, default.refusal_window) == (
        2,
        10.0,
        60.0,
    )
    found = Settings.from_env(
        {
            "SIGNOFF_WEBHOOK_WORKERS": "4",
            "SIGNOFF_WEBHOOK_TIMEOUT": "2.5",
            "SIGNOFF_REFUSAL_WINDOW": "300",
        }
    )
    assert (found.webhook_workers, found.webhook_timeout, found.refusal_window) == (4, 2.5, 300)
    with pytest.raises(SettingsError, match="SIGNOFF_WEBHOOK_TIMEOUT must be a positive number"):
        Settings.from_env({"SIGNOFF_WEBHOOK_TIMEOUT": "0"})
    with pytest.raises(SettingsError, match="SIGNOFF_WEBHOOK_WORKERS must be a whole number"):
        Settings.from_env({"SIGNOFF_WEBHOOK_WORKERS": "none"})
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        JobRunner(object(), concurrency=0)  # type: ignore[arg-type]


async def test_the_runner_links_the_audit_log_and_says_once_while_it_cannot(
    kit: Kit, caplog: pytest.LogCaptureFixture
) -> None:
    """What a run records is in the hash chain a moment later without anyone asking; a linker
    that cannot reach the database logs it once (not four times a second) and recovers."""
    import sqlalchemy as sa

    from bot.approvals import tables as t
    from bot.approvals.db import DatabaseUnavailable

    caplog.set_level("INFO", logger="signoff.scheduler")

    async def linked() -> int:
        return len(await kit.rows(sa.select(t.audit_events)))

    async def unlinked() -> int:
        return len(await kit.rows(sa.select(t.audit_inbox)))

    await kit.start("refund", REFUND)
    waiting = await unlinked()
    assert waiting >= 2 and await linked() == 0  # run_started, requested
    app = kit.new_app(share_db=True)
    runner = JobRunner(app, kinds=("resume",), link_every=0.02)
    real_link, failures = app.link_audit, 0

    async def link_while_down() -> int:
        nonlocal failures
        if failures < 5:
            failures += 1
            raise DatabaseUnavailable("the database is down (test)", "db")
        return await real_link()

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "signoff.scheduler"]

    app.link_audit = link_while_down  # type: ignore[method-assign]
    runner.start()
    try:
        # The inbox empties when the link commits, a moment before the runner says it works.
        async with asyncio.timeout(30):
            while await unlinked() or len(said()) < 2:
                await asyncio.sleep(0.02)
    finally:
        await runner.stop()
    assert failures == 5 and await linked() == waiting
    assert said() == [
        "linking the audit log failed (the database is down (test)); retrying until it works",
        "linking the audit log works again",
    ]
    report = await app.audit.verify(kit.db.engine)
    assert (report.ok, report.checked, report.unlinked) == (True, waiting, 0)


async def test_workers_give_way_to_the_clicks_being_served_and_catch_up_after(kit: Kit) -> None:
    """While a click is being decided and answered (`Foreground.serving`) no job starts: the
    decided run resumes (its refund goes out) once the click is answered; and under clicks
    that never stop, each worker still takes a job every `longest` seconds."""
    from bot.scheduler import Foreground

    app = kit.new_app(share_db=True)
    report = await app.start("refund", REFUND, requester="U_CAROL")
    foreground = Foreground(longest=30.0)
    runner = JobRunner(app, kinds=("resume",), every=0.05, foreground=foreground)
    runner.start()
    try:
        with foreground.serving():
            await app.decide(report.approvals[0], "U_ALICE", True)
            runner.kick()
            # Until every worker waits for the lull: then none can take the job while the
            # click is served (one that took it already fails the assertion below).
            deadline = asyncio.get_running_loop().time() + 10
            while runner.giving_way < runner.concurrency and await kit.pending_jobs("resume"):
                assert asyncio.get_running_loop().time() < deadline, "workers not giving way"
                await asyncio.sleep(0.01)
            assert await kit.pending_jobs("resume") == 1, "a job started while a click was served"
            assert await kit.effects("refund") == []
        deadline = asyncio.get_running_loop().time() + 10
        while await kit.pending_jobs("resume"):
            assert asyncio.get_running_loop().time() < deadline, "the resume never ran"
            await asyncio.sleep(0.02)
        assert len(await kit.effects("refund")) == 1
    finally:
        await runner.stop()

    # clicks all the time: the jobs still move, one per `longest` seconds per worker
    other = await app.start("refund", {**REFUND, "order_id": "o-2"}, requester="U_CAROL")
    foreground = Foreground(longest=0.3)
    runner = JobRunner(app, kinds=("resume",), every=0.05, foreground=foreground)
    with foreground.serving():
        runner.start()
        try:
            await app.decide(other.approvals[0], "U_ALICE", True)
            runner.kick()
            deadline = asyncio.get_running_loop().time() + 10
            while await kit.pending_jobs("resume"):
                assert asyncio.get_running_loop().time() < deadline, "jobs starved by clicks"
                await asyncio.sleep(0.02)
            assert foreground.serving_now == 1
        finally:
            await runner.stop()
    assert len(await kit.effects("refund")) == 2


async def test_the_sweep_waits_for_a_lull_in_the_clicks(kit: Kit) -> None:
    """The periodic sweep (expiries, reminders, escalations) does not start while a click is
    being decided and answered: an approval past its deadline stays pending through sweep
    periods that pass meanwhile, and is expired (once) when the clicks stop."""
    from bot.scheduler import Foreground, start_scheduler

    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    kit.clock.advance(3 * 86400.0 + 3600.0)  # past its deadline (the demo policy: 3 days)
    foreground = Foreground()
    scheduler = None
    try:
        with foreground.serving():
            scheduler = start_scheduler(
                kit.app, sweep_every=0.05, jobs_every=None, foreground=foreground
            )
            await asyncio.sleep(0.5)  # ten sweep periods, a click served all the while
            assert (await kit.app.get(approval_id)).status == "pending"
        deadline = asyncio.get_running_loop().time() + 10
        while (await kit.app.get(approval_id)).status == "pending":
            assert asyncio.get_running_loop().time() < deadline, "the sweep never ran"
            await asyncio.sleep(0.02)
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
    assert (await kit.app.get(approval_id)).status == "expired"
    assert len(await kit.audit("expired")) == 1
