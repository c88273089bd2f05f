"""The periodic work of a signoff process: the sweep (remind, escalate, expire) on APScheduler,
and the job worker (resume decided approvals, deliver events), which also runs at once when
kicked (after a click, so the card and the run move within a moment rather than a tick).

Both are safe with several processes running them at once: the database decides who does each
piece of work (compare-and-set, `FOR UPDATE SKIP LOCKED`), not the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from .approvals.errors import DatabaseUnavailable
from .approvals.jobs import JobKind
from .approvals.service import Signoff

__all__ = ["JobRunner", "start_scheduler"]

log = logging.getLogger("signoff.scheduler")

LINK_BACKOFF_MAX = 5.0
"""The longest pause between tries of a failing audit linker (seconds)."""


class JobRunner:
    """`concurrency` workers that drain due jobs every `every` seconds, and at once when kicked;
    and the audit linker (`Signoff.link_audit`, every `link_every` seconds).

    Jobs of different threads run side by side (a resume waits on the database, a card update
    on Slack); the queue keeps what must stay in order in order (one resume per thread at a
    time, a thread's events one after another). Workers take turns preferring each kind, so
    under a burst the card updates keep up with the clicks while the resumes catch up. Each
    `kick()` wakes one idle worker; when all are busy it is remembered, so a worker that
    finishes its pass looks again at once.
    """

    def __init__(
        self,
        signoff: Signoff,
        *,
        every: float = 1.0,
        kinds: tuple[JobKind, ...] = ("resume", "event"),
        concurrency: int = 2,
        link_every: float = 0.25,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.signoff = signoff
        self.every = every
        self.kinds = kinds
        self.concurrency = concurrency
        self.link_every = link_every
        self._kicks: asyncio.Queue[None] = asyncio.Queue(maxsize=concurrency)
        self._tasks: list[asyncio.Task[None]] = []

    def kick(self) -> None:
        """Have a worker look for due jobs now (or as soon as one is free)."""
        with contextlib.suppress(asyncio.QueueFull):
            self._kicks.put_nowait(None)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._loop(self.kinds[i % len(self.kinds)]), name=f"signoff-jobs-{i}")
            for i in range(self.concurrency)
        ]
        self._tasks.append(loop.create_task(self._link_loop(), name="signoff-audit-linker"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _loop(self, prefer: JobKind) -> None:
        while True:
            try:
                await self.signoff.run_jobs(self.kinds, prefer=prefer)
            except Exception:
                log.exception("job worker failed; it runs again in %ss", self.every)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._kicks.get(), self.every)

    async def _link_loop(self) -> None:
        """Link committed audit entries into the chain (`Signoff.link_audit`), a few times a
        second: writers never wait on the chain, and one linker per process keeps it short.
        While it fails (the database is down) it says so once and tries less often."""
        pause, failing = self.link_every, False
        while True:
            try:
                await self.signoff.link_audit()
            except Exception as e:
                if not failing:
                    log.warning(
                        "linking the audit log failed (%s); retrying until it works",
                        e,
                        exc_info=not isinstance(e, DatabaseUnavailable),
                    )
                failing, pause = True, min(pause * 2, LINK_BACKOFF_MAX)
            else:
                if failing:
                    log.info("linking the audit log works again")
                failing, pause = False, self.link_every
            await asyncio.sleep(pause)


def start_scheduler(
    app: Signoff,
    *,
    sweep_every: float = 30.0,
    jobs_every: float | None = 1.0,
    kinds: tuple[JobKind, ...] = ("resume", "event"),
) -> AsyncIOScheduler:
    """Start the sweep (and, unless `jobs_every` is None, the job worker) on the running loop.

    `shutdown()` the result to stop. `kinds` are the job kinds this process performs (the CLI
    resumes but leaves Slack events to the bot).
    """

    async def sweep() -> None:
        try:
            await app.release_dead_leases()
            counts = await app.sweep()
            await app.link_audit()
            if any(counts.values()):
                log.info("sweep: %s", counts)
        except Exception:
            log.exception("sweep failed; it runs again in %ss", sweep_every)

    async def work() -> None:
        try:
            await app.run_jobs(kinds)
            await app.link_audit()
        except Exception:
            log.exception("job worker failed; it runs again in %ss", jobs_every)

    scheduler = AsyncIOScheduler()
    # coalesce + max_instances=1: a slow pass is never overlapped by the next one.
    scheduler.add_job(
        sweep, "interval", seconds=sweep_every, coalesce=True, max_instances=1, id="sweep"
    )
    if jobs_every is not None:
        scheduler.add_job(
            work, "interval", seconds=jobs_every, coalesce=True, max_instances=1, id="jobs"
        )
    scheduler.start()
    return scheduler
