"""One writer at a time per SQLite file in this process, handed over in order.

SQLite lets one connection write at a time. A connection that finds the file locked waits in
SQLite's busy handler, which *sleeps* between tries (1, 2, 5, 10, ... up to 100 ms): under a burst
of writes from one process (clicks deciding approvals while workers resume runs), most of a
write's latency went to sleeping while the lock was already free. The gate queues this process's
writers in front of SQLite instead and hands the gate straight to the next one when a writer
commits. Writers in other processes still meet in SQLite's busy handler, as before.

One queue serves threads (sync writers block on an event) and event loops (async writers await a
future, woken through their loop), so an event loop never blocks. `urgent` writers, where a
person waits on the answer, go before the others; each kind in arrival order. A writer waits at
most the busy timeout, then fails as SQLite would ("database is locked").
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator

__all__ = ["WriteGate", "write_gate"]

_registry_guard = threading.Lock()
_gates: dict[str, WriteGate] = {}


def _after_fork_in_child() -> None:
    global _registry_guard
    _registry_guard = threading.Lock()
    for gate in _gates.values():
        gate.forget_writers()


os.register_at_fork(after_in_child=_after_fork_in_child)


def write_gate(path: str, timeout: float) -> WriteGate:
    """The gate of the SQLite file at `path` (absolute), shared by every saver in the process."""
    with _registry_guard:
        gate = _gates.get(path)
        if gate is None:
            gate = _gates[path] = WriteGate(path, timeout)
        return gate


class _Ticket:
    """A writer waiting for the gate: its place (urgency, then arrival) and how to wake it."""

    __slots__ = ("granted", "rank", "wake")

    def __init__(self, rank: tuple[int, int], wake: Callable[[], None]) -> None:
        self.rank = rank
        self.wake = wake
        self.granted = False

    def __lt__(self, other: _Ticket) -> bool:
        return self.rank < other.rank


class WriteGate:
    """A process-wide write lock for one SQLite file, handed over in order (module docstring)."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._mutex = threading.Lock()
        self._held = False
        self._queue: list[_Ticket] = []
        self._arrivals = itertools.count()

    def forget_writers(self) -> None:
        """In a forked child: the writers that held or waited for the gate were the parent's
        threads, and none of them is here."""
        self._mutex = threading.Lock()
        self._held = False
        self._queue = []

    def _locked(self) -> sqlite3.OperationalError:
        return sqlite3.OperationalError(
            f"database is locked: another writer in this process held {self.path} for "
            f"{self.timeout:g}s (the busy timeout)"
        )

    def _take(self) -> bool:
        """Take the gate if it is free and nobody waits: the uncontended path, which builds
        nothing (no event, no future, no ticket)."""
        with self._mutex:
            if not self._held and not self._queue:
                self._held = True
                return True
            return False

    def _take_or_queue(self, urgent: bool, wake: Callable[[], None]) -> _Ticket | None:
        """Take the gate if it is free and nobody waits (None), else join the queue."""
        with self._mutex:
            if not self._held and not self._queue:
                self._held = True
                return None
            ticket = _Ticket((0 if urgent else 1, next(self._arrivals)), wake)
            heapq.heappush(self._queue, ticket)
            return ticket

    def _give_up(self, ticket: _Ticket) -> bool:
        """Leave the queue; True when the gate was handed to `ticket` meanwhile (so it is ours)."""
        with self._mutex:
            if ticket.granted:
                return True
            self._queue.remove(ticket)
            heapq.heapify(self._queue)
            return False

    def release(self) -> None:
        """Hand the gate to the first writer waiting, or leave it free."""
        with self._mutex:
            if not self._queue:
                self._held = False
                return
            ticket = heapq.heappop(self._queue)
            ticket.granted = True  # still held: it passes to `ticket`
        ticket.wake()

    # ---- sync ---------------------------------------------------------------------------

    def acquire(self, *, urgent: bool = False) -> None:
        """Block this thread until the gate is ours (at most the busy timeout)."""
        if self._take():
            return
        woken = threading.Event()
        ticket = self._take_or_queue(urgent, woken.set)
        if ticket is None or woken.wait(self.timeout):
            return
        if self._give_up(ticket):
            return
        raise self._locked()

    @contextlib.contextmanager
    def hold(self, *, urgent: bool = False) -> Iterator[None]:
        self.acquire(urgent=urgent)
        try:
            yield
        finally:
            self.release()

    # ---- async --------------------------------------------------------------------------

    async def aacquire(self, *, urgent: bool = False, timeout: float | None = None) -> None:
        """Wait, without blocking the event loop, until the gate is ours (at most `timeout`
        seconds, default the busy timeout)."""
        if self._take():
            return
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()

        def wake() -> None:  # called by whichever thread releases the gate
            try:
                loop.call_soon_threadsafe(_resolve, turn)
            except RuntimeError:  # that loop has closed: nobody will take it there
                self.release()

        ticket = self._take_or_queue(urgent, wake)
        if ticket is None:
            return
        try:
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                await turn
        except (asyncio.CancelledError, TimeoutError) as e:
            if self._give_up(ticket):
                self.release()  # handed to us just as we gave up: pass it on
            if isinstance(e, TimeoutError):
                raise self._locked() from None
            raise

    @contextlib.asynccontextmanager
    async def ahold(
        self, *, urgent: bool = False, timeout: float | None = None
    ) -> AsyncIterator[None]:
        await self.aacquire(urgent=urgent, timeout=timeout)
        try:
            yield
        finally:
            self.release()


def _resolve(turn: asyncio.Future[None]) -> None:
    if not turn.done():
        turn.set_result(None)
