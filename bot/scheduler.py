"""The periodic work of a signoff process, on APScheduler: the sweep (remind, escalate, expire)
and the job worker (resume decided approvals, deliver events).

Both jobs are safe with several processes running them at once: the database decides who does
each piece of work (compare-and-set, `FOR UPDATE SKIP LOCKED`), not the scheduler.
"""

from __future__ import annotations

import logging

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from .approvals.service import Signoff

__all__ = ["start_scheduler"]

log = logging.getLogger("signoff.scheduler")


def start_scheduler(
    app: Signoff,
    *,
    sweep_every: float = 30.0,
    jobs_every: float = 1.0,
    kinds: tuple[str, ...] = ("resume", "event"),
) -> AsyncIOScheduler:
    """Start the sweep and the worker on the running event loop; `shutdown()` the result to stop.

    Args:
        sweep_every: seconds between sweeps of pending approvals.
        jobs_every: seconds between passes of the job worker (a pass drains what is due).
        kinds: the job kinds this process performs (the CLI resumes but leaves Slack events
            to the bot).
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
    scheduler.add_job(work, "interval", seconds=jobs_every, coalesce=True, max_instances=1, id="jobs")
    scheduler.start()
    return scheduler
