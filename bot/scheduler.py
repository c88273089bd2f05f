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
import math
import time
from collections.abc import Iterator

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from .approvals.errors import DatabaseUnavailable
from .approvals.jobs import JobKind
from .approvals.service import Signoff

__all__ = ["Foreground", "JobRunner", "start_scheduler"]

log = logging.getLogger("signoff.scheduler")

LINK_BACKOFF_MAX = 5.0
"""The longest pause between tries of a failing audit linker (seconds)."""
GIVE_WAY_MAX = 1.0
"""The longest a job worker waits for a lull in the clicks before it takes its next job
(seconds): under a steady stream of clicks the jobs still move, one per worker per wait."""
SWEEP_GIVE_WAY = 10.0
"""The longest the periodic sweep (expiries, reminders, escalations, every 30 s by default)
waits for a lull in the clicks before it runs: a pass reads up to a few hundred approvals, all
on the event loop the clicks' acks wait for, and a few seconds late changes nothing it does."""
LULL = 0.05
"""Seconds without a click being served that make a lull (`Foreground.lull`): the clicks of
a burst reach the bot a moment apart, and each gap is no time to start a job in."""


class Foreground:
    """The work a person is waiting on (a click being decided and acknowledged), which the
    job workers give way to.

    A click and the jobs share one event loop: a resume or a card update running beside a
    burst of clicks takes turns of the loop from them, and each click's ack waits for those
    turns. The listeners mark a click with `serving()` from its first read to its ack; a
    worker about to take a job awaits `lull()`, which returns once no click has been served
    for `quiet` seconds, or after `longest` seconds. Only when work starts is changed: what is due is done, in
    the order the queue keeps, exactly once (the queue's leases decide that, not this).
    """

    def __init__(self, *, longest: float = GIVE_WAY_MAX, quiet: float = LULL) -> None:
        self.longest = longest
        self.quiet = quiet
        self._serving = 0
        self._last = -math.inf
        """When the last click served was answered (`time.monotonic()`)."""

    @property
    def serving_now(self) -> int:
        """How many clicks are being served."""
        return self._serving

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """`with foreground.serving():` around the part of a click the person waits for."""
        self._serving += 1
        try:
            yield
        finally:
            self._serving -= 1
            self._last = time.monotonic()

    async def lull(self, longest: float | None = None) -> None:
        """Return once no click has been served for `quiet` seconds (clicks in a burst arrive
        a moment apart), or after `longest` seconds (the `longest` given here, else this
        object's)."""
        give_up = time.monotonic() + (self.longest if longest is None else longest)
        while (now := time.monotonic()) < give_up:
            if not self._serving and now - self._last >= self.quiet:
                return
            wait = self.quiet if self._serving else self.quiet - (now - self._last)
            await asyncio.sleep(min(max(wait, 0.001), give_up - now))


class JobRunner:
    """`concurrency` workers that drain due jobs every `every` seconds, and at once when kicked;
    and the audit linker (`Signoff.link_audit`, every `link_every` seconds).

    Jobs of different threads run side by side (a resume waits on the database, a card update
    on Slack); the queue keeps what must stay in order in order (one resume per thread at a
    time, a thread's events one after another). Workers take turns preferring each kind, so
    under a burst the card updates keep up with the clicks while the resumes catch up. Each
    `kick()` wakes one idle worker; when all are busy it is remembered, so a worker that
    finishes its pass looks again at once.

    With `webhook_workers`, webhook deliveries (when `kinds` has them) get workers of their own
    and the other workers never take one: a receiver that answers slowly, or never (each try
    ends at the sender's timeout), holds up only webhooks, never a card or a resume. A kick
    wakes a worker of each.
    """

    def __init__(
        self,
        signoff: Signoff,
        *,
        every: float = 1.0,
        kinds: tuple[JobKind, ...] = ("resume", "event"),
        concurrency: int = 2,
        link_every: float = 0.25,
        foreground: Foreground | None = None,
        webhook_workers: int = 0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if webhook_workers < 0:
            raise ValueError(f"webhook_workers must be 0 or more, not {webhook_workers}")
        self.signoff = signoff
        self.every = every
        self.kinds = kinds
        self.concurrency = concurrency
        self.link_every = link_every
        self.foreground = foreground or Foreground()
        """The clicks being served, which each job (and each pass of the audit linker) waits
        for a lull in (`Foreground.lull`)."""
        own = "webhook" in kinds and webhook_workers > 0 and len(kinds) > 1
        self.lanes: list[tuple[tuple[JobKind, ...], int]] = (
            [
                (tuple(k for k in kinds if k != "webhook"), concurrency),
                (("webhook",), webhook_workers),
            ]
            if own
            else [(kinds, concurrency)]
        )
        """Each pool of workers: the job kinds it takes, and how many workers it has."""
        self._kicks: list[asyncio.Queue[None]] = [asyncio.Queue(maxsize=n) for _, n in self.lanes]
        self._tasks: list[asyncio.Task[None]] = []
        self._giving_way = 0

    @property
    def giving_way(self) -> int:
        """How many workers are waiting for a lull in the clicks (`Foreground.lull`) before
        they take a job: none of them takes one meanwhile."""
        return self._giving_way

    def kick(self) -> None:
        """Have a worker (of each pool) look for due jobs now (or as soon as one is free)."""
        for kicks in self._kicks:
            with contextlib.suppress(asyncio.QueueFull):
                kicks.put_nowait(None)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(
                self._loop(kinds, kinds[i % len(kinds)], kicks),
                name=f"signoff-jobs-{'-'.join(kinds)}-{i}",
            )
            for (kinds, workers), kicks in zip(self.lanes, self._kicks, strict=True)
            for i in range(workers)
        ]
        self._tasks.append(loop.create_task(self._link_loop(), name="signoff-audit-linker"))

    async def stop(self) -> None:
        """Cancel the workers and the linker, and wait until each has ended; a cancellation of
        the caller's own goes on to the caller (it is not taken for a worker's)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(
        self, kinds: tuple[JobKind, ...], prefer: JobKind, kicks: asyncio.Queue[None]
    ) -> None:
        while True:
            try:
                await self.signoff.run_jobs(kinds, prefer=prefer, before_each=self._give_way)
            except Exception:
                log.exception("job worker failed; it runs again in %ss", self.every)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.every):
                    await kicks.get()

    async def _give_way(self) -> None:
        self._giving_way += 1
        try:
            await self.foreground.lull()
        finally:
            self._giving_way -= 1

    async def _link_loop(self) -> None:
        """Link committed audit entries into the chain (`Signoff.link_audit`), a few times a
        second: writers never wait on the chain, and one linker per process keeps it short.
        While it fails (the database is down) it says so once and tries less often."""
        pause, failing = self.link_every, False
        while True:
            try:
                await self.foreground.lull()
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
    foreground: Foreground | None = None,
) -> AsyncIOScheduler:
    """Start the sweep (and, unless `jobs_every` is None, the job worker) on the running loop.

    `shutdown()` the result to stop. `kinds` are the job kinds this process performs (the CLI
    resumes but leaves Slack events to the bot). With `foreground` (the bot's clicks being
    served), each sweep waits for a lull in the clicks, `SWEEP_GIVE_WAY` seconds at most.
    """

    async def sweep() -> None:
        try:
            if foreground is not None:
                await foreground.lull(SWEEP_GIVE_WAY)
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
