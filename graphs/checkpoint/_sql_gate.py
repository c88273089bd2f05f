"""One writer at a time per SQLite file in this process, handed over in order.

SQLite lets one connection write at a time. A connection that finds the file locked waits in
SQLite's busy handler, which *sleeps* between tries (1, 2, 5, 10, ... up to 100 ms): under a burst
of writes from one process (clicks deciding approvals while workers resume runs), most of a
write's latency went to sleeping while the lock was already free. The gate queues this process's
writers in front of SQLite instead, so the next one starts the moment the last one commits.
Writers in other processes still meet in SQLite's busy handler, as before.

Sync writers (threads) block on a `threading.Lock`. Async writers queue in a line of their event
loop (urgent ones, where a person waits on the answer, first); the one at the head of the line
waits for the threading lock in a helper thread, so an event loop never blocks. Either waits at most the busy timeout, then fails as
SQLite would ("database is locked").
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["WriteGate", "write_gate"]

_registry_guard = threading.Lock()
_gates: dict[str, WriteGate] = {}
_waiters = ThreadPoolExecutor(max_workers=4, thread_name_prefix="graphs-sqlite-gate")
"""Threads in which an event loop's head writer waits for the gate (at most one per loop)."""


def write_gate(path: str, timeout: float) -> WriteGate:
    """The gate of the SQLite file at `path` (absolute), shared by every saver in the process."""
    with _registry_guard:
        gate = _gates.get(path)
        if gate is None:
            gate = _gates[path] = WriteGate(path, timeout)
        return gate


class WriteGate:
    """A process-wide, FIFO-ish write lock for one SQLite file (see the module docstring)."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._lines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Line] = weakref.WeakKeyDictionary()
        self._lines_guard = threading.Lock()

    def _locked(self) -> sqlite3.OperationalError:
        return sqlite3.OperationalError(
            f"database is locked: another writer in this process held {self.path} for "
            f"{self.timeout:g}s (the busy timeout)"
        )

    # ---- sync ---------------------------------------------------------------------------

    def acquire(self) -> None:
        """Block this thread until the gate is ours (at most the busy timeout)."""
        if not self._lock.acquire(timeout=self.timeout):
            raise self._locked()

    def release(self) -> None:
        self._lock.release()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self._lock.release()

    # ---- async --------------------------------------------------------------------------

    def _line(self, loop: asyncio.AbstractEventLoop) -> _Line:
        with self._lines_guard:
            line = self._lines.get(loop)
            if line is None:
                line = self._lines[loop] = _Line()
            return line

    async def aacquire(self, *, urgent: bool = False) -> None:
        """Wait, without blocking the event loop, until the gate is ours.

        `urgent` writers (a person waiting on the answer) go before the others of this loop
        that have not reached the head of the line yet.
        """
        loop = asyncio.get_running_loop()
        line = self._line(loop)
        # Nobody of this loop waiting: take it at once if it is free. Otherwise join the line,
        # so that a newcomer never overtakes a task that has been waiting.
        if not line.busy and not line.waiting() and self._lock.acquire(blocking=False):
            return
        await line.enter(loop, urgent)
        try:
            if self._lock.acquire(blocking=False):
                return
            attempt = _waiters.submit(self._lock.acquire, True, self.timeout)
            try:
                got = await asyncio.shield(asyncio.wrap_future(attempt))
            except asyncio.CancelledError:
                # The helper thread may still get the lock: it gives it back when it does
                # (in that thread, so even if this loop is gone by then).
                attempt.add_done_callback(self._release_if_got)
                raise
            if not got:
                raise self._locked()
        finally:
            line.leave()

    def _release_if_got(self, future: Future[bool]) -> None:
        if not future.cancelled() and future.exception() is None and future.result():
            self._lock.release()

    @contextlib.asynccontextmanager
    async def ahold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        await self.aacquire(urgent=urgent)
        try:
            yield
        finally:
            self._lock.release()


class _Line:
    """The writers of one event loop waiting for the gate: one at the head (waiting for the
    threading lock), the others queued, urgent ones first, each kind in arrival order."""

    def __init__(self) -> None:
        self.busy = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()

    def waiting(self) -> bool:
        return bool(self._urgent or self._normal)

    async def enter(self, loop: asyncio.AbstractEventLoop, urgent: bool) -> None:
        """Return once this task is at the head of the line."""
        if not self.busy:
            self.busy = True
            return
        turn: asyncio.Future[None] = loop.create_future()
        (self._urgent if urgent else self._normal).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.leave()  # it was our turn already: hand it on
            else:
                with contextlib.suppress(ValueError):
                    (self._urgent if urgent else self._normal).remove(turn)
            raise

    def leave(self) -> None:
        """The head got the lock (or gave up): the next in line becomes the head."""
        for queue in (self._urgent, self._normal):
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)
                    return
        self.busy = False
