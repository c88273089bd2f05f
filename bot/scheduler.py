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

from .approvals.service import Signoff

__all__ = ["JobRunner", "start_scheduler"]

log = logging.getLogger("signoff.scheduler")


class JobRunner:
    """Drains due jobs every `every` seconds, and right away when `kick()`ed."""

    def __init__(self, signoff: Signoff, *, every: float = 1.0, kinds: tuple[str, ...] = ("resume", "event")) -> None:
        self.signoff = signoff
        self.every = every
        self.kinds = kinds
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def kick(self) -> None:
        """Run a pass as soon as the current one (if any) ends."""
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="signoff-jobs")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.signoff.run_jobs(self.kinds)
            except Exception:
                log.exception("job worker failed; it runs again in %ss", self.every)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.every)


def start_scheduler(
    app: Signoff,
    *,
    sweep_every: float = 30.0,
    jobs_every: float | None = 1.0,
    kinds: tuple[str, ...] = ("resume", "event"),
) -> AsyncIOScheduler:
    """Start the sweep (and, unless `jobs_every` is None, the job worker) on the running loop.

    `shutdown()` the result to stop. `kinds` are the job kinds this process performs (the CLI
    resumes but leaves Slack events to the bot).
    """

    async def sweep() -> None:
        try:
            counts = await app.sweep()
            if any(counts.values()):
                log.info("sweep: %s", counts)
        except Exception:
            log.exception("sweep failed; it runs again in %ss", sweep_every)

    async def work() -> None:
        try:
            await app.run_jobs(kinds)
        except Exception:
            log.exception("job worker failed; it runs again in %ss", jobs_every)

    scheduler = AsyncIOScheduler()
    # coalesce + max_instances=1: a slow pass is never overlapped by the next one.
    scheduler.add_job(sweep, "interval", seconds=sweep_every, coalesce=True, max_instances=1, id="sweep")
    if jobs_every is not None:
        scheduler.add_job(work, "interval", seconds=jobs_every, coalesce=True, max_instances=1, id="jobs")
    scheduler.start()
    return scheduler
