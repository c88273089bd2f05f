"""`ThreadHolds`: one run per thread for `SQLSaver` (`graphs.checkpoint.sql`), between its
engines (`engines.py`) and the running of its operations (`running.py`).

`lock_thread`/`alock_thread` hold a thread for one run, across processes: in memory, the base
class's lock; on SQLite, this process's hold and a file lock (`locks.py`), and for a sync run a
connection of the lock pool its transactions go on; on PostgreSQL, an advisory lock on a
connection of the lock pool, held through the run, which reads and writes on it
(`running.py`). A run whose lock connection dropped takes the lock again before it writes
(`_keep_hold`), unless another run holds the thread or wrote to it meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..._types import RunConfig
from ...errors import ThreadBusyError
from .engine import _Dropped
from .engines import SQLEngines
from .locks import (
    _AdvisoryLock,
    _file_lock,
    _forked_away,
    _give_back,
    _Hold,
    _lost,
    _moved,
    _probe,
    _proc_hold,
    _raw_close,
    _raw_unlock,
)

__all__ = ["ThreadHolds"]


def _probe_sync(conn: Any) -> bool:
    return _probe(conn.connection)


def _try_lock(conn: Any, advisory: _AdvisoryLock, *args: Any) -> int:
    return advisory.try_lock(conn.connection, *args)


class ThreadHolds(SQLEngines):
    """`SQLEngines` with one run per thread; `SQLSaver` adds the checkpoint operations."""

    def _proc_key(self, thread_id: str, ns: str) -> tuple[str, str, str]:
        return (self._scope, thread_id, ns)

    def _head_read(self, thread_id: str, ns: str) -> tuple[str, dict[str, Any]] | None:
        """The read of the thread's head, sent in the round trip that takes its lock: a run's
        first request is the head (PostgreSQL, once the tables are known to be there)."""
        if not self._schema_ok:
            return None
        return self._d.get_statement(False), {"t": thread_id, "ns": ns, "id": None}

    @contextlib.contextmanager
    def lock_thread(self, config: RunConfig) -> Iterator[None]:
        """Hold the thread for one run, across processes; refuse at once if it is held.

        Raises:
            ThreadBusyError: another run, in this process or another, holds the thread.
        """
        thread_id, ns = self._key(config)
        if self._memory:
            with super().lock_thread(config):
                yield
            return
        if not self._d.pg:
            with self._file_hold(thread_id, ns, keep_connection=True):
                yield
            return
        with _proc_hold(self._proc_key(thread_id, ns)):
            closes = self._closes
            raw, key, head = self._advisory.retry(
                thread_id, ns, self._locks_engine().raw_connection, self._head_read(thread_id, ns)
            )
            hold = _Hold(thread_id, ns, key, raw)
            hold.head = head
            me = (threading.get_ident(), thread_id, ns)
            self._lock_conns[me] = self._holds[(thread_id, ns)] = hold
            try:
                yield
            finally:
                self._lock_conns.pop(me, None)
                self._holds.pop((thread_id, ns), None)
                if not hold.forked:  # (else the parent's lock, on the parent's connection)
                    self._let_go(hold, stale=self._closes != closes)

    @staticmethod
    def _let_go(hold: _Hold, *, stale: bool) -> None:
        """The end of a sync run on PostgreSQL: let go of its lock, unless its last write did
        (`SQLSaver.put`), and give its connection back (`stale`: the saver was closed
        meanwhile)."""
        with hold.guard:
            if hold.released:
                _raw_close(hold.raw, stale)
            else:
                _raw_unlock(hold.raw, hold.key, stale=stale)

    @contextlib.contextmanager
    def _file_hold(self, thread_id: str, ns: str, *, keep_connection: bool) -> Iterator[None]:
        """SQLite: hold the thread (this process's hold and the file lock) for one run; with
        `keep_connection` (a sync run), also a connection its transactions on this OS thread
        go on (`_run_thread`), if the lock pool has one free at once."""
        with _proc_hold(self._proc_key(thread_id, ns)), _file_lock(self._lock_path, thread_id, ns):
            closes = self._closes
            raw = self._held_sqlite() if keep_connection else None
            if raw is None:
                yield
                return
            hold = _Hold(thread_id, ns, 0, raw)
            me = (threading.get_ident(), thread_id, ns)
            self._lock_conns[me] = hold
            try:
                yield
            finally:
                self._lock_conns.pop(me, None)
                if not hold.forked:  # (else the parent's SQLite handle)
                    with hold.guard:
                        _give_back(raw, self._closes != closes)

    @contextlib.asynccontextmanager
    async def alock_thread(self, config: RunConfig) -> AsyncIterator[None]:
        """Async form of `lock_thread`."""
        thread_id, ns = self._key(config)
        if self._memory:
            with self.lock_thread(config):
                yield
            return
        if not self._d.pg:
            # No I/O wait: fcntl is asked not to block. No connection held: an async run's
            # operations go to the saver's thread (`_in_sqlite_thread`), each on a pooled one.
            with self._file_hold(thread_id, ns, keep_connection=False):
                yield
            return
        with _proc_hold(self._proc_key(thread_id, ns)):
            conn, key, head = await self._atake(thread_id, ns, self._head_read(thread_id, ns))
            hold = _Hold(thread_id, ns, key, await conn.get_raw_connection(), conn)
            hold.head = head
            hold.aguard = asyncio.Lock()
            self._holds[(thread_id, ns)] = hold
            try:
                yield
            finally:
                self._holds.pop((thread_id, ns), None)
                if not hold.forked:  # (else the parent's lock, on the parent's connection)
                    await self._alet_go(hold)

    async def _alet_go(self, hold: _Hold) -> None:
        """`_let_go` for an async run."""
        if hold.conn is not None:
            await self._arelease(hold.conn, hold.key, hold.released)
        else:  # taken back by a sync write of the run (a sync node's once())
            await asyncio.to_thread(_raw_unlock, hold.raw, hold.key)

    # ---- keeping the thread's lock --------------------------------------------------------

    def _hold_of(self, thread_id: str, ns: str) -> _Hold | None:
        """The hold this process has on the thread (a subgraph's namespace writes under its
        top graph's), if it has one."""
        holds = self._holds
        if not holds:
            return None
        return holds.get((thread_id, ns)) or holds.get((thread_id, ""))

    def _keep_hold(self, hold: _Hold) -> None:
        """Make sure `hold` still holds its thread's lock before the run writes again: if its
        session ended, take the lock again on a new one, if no other run holds the thread and
        none wrote to it meanwhile (`_Hold.seen`).

        Raises:
            ThreadLockLostError: another run holds the thread, or wrote to it meanwhile; or
                this process was forked from inside the run (`_Hold.forked`).
        """
        if hold.forked:
            raise _forked_away(hold.thread_id)
        with hold.guard:
            if not hold.ended():
                return
            if not hold.lost and hold.conn is None and _probe(hold.raw):
                return  # something else was sent on the session: it is alive
            hold.lost = True
            try:
                raw, _, _ = self._advisory.retry(
                    hold.thread_id, hold.ns, self._locks_engine().raw_connection
                )
            except ThreadBusyError:
                raise _lost(hold.thread_id, "another run holds the thread now") from None
            try:
                why = _moved(raw, hold)
            except BaseException:
                _raw_unlock(raw, hold.key)
                raise
            if why is not None:
                _raw_unlock(raw, hold.key)
                raise _lost(hold.thread_id, f"another run wrote to it meanwhile ({why})")
            old, old_conn, released = hold.raw, hold.conn, hold.released
            hold.raw, hold.conn, hold.lost, hold.released = raw, None, False, False
            if old_conn is None and released:
                _raw_close(old)  # its lock was let go of with a write
            elif old_conn is None:
                _raw_unlock(old, hold.key)  # the session is gone: this lets go of the connection

    async def _akeep_hold(self, hold: _Hold) -> None:
        """Async form of `_keep_hold`."""
        if hold.forked:
            raise _forked_away(hold.thread_id)
        if hold.aguard is None:  # a sync `lock_thread`'s hold
            await asyncio.to_thread(self._keep_hold, hold)
            return
        async with hold.aguard:
            if not hold.ended():
                return
            conn = hold.conn
            if not hold.lost and conn is not None and await conn.run_sync(_probe_sync):
                return  # something else was sent on the session: it is alive
            hold.lost = True
            try:
                conn, _, _ = await self._atake(hold.thread_id, hold.ns)
            except ThreadBusyError:
                raise _lost(hold.thread_id, "another run holds the thread now") from None
            try:
                why = await conn.run_sync(lambda c: _moved(c.connection, hold))
            except BaseException:
                await self._arelease(conn, hold.key)
                raise
            if why is not None:
                await self._arelease(conn, hold.key)
                raise _lost(hold.thread_id, f"another run wrote to it meanwhile ({why})")
            old, released = hold.conn, hold.released
            hold.conn, hold.raw = conn, await conn.get_raw_connection()
            hold.lost = hold.released = False
            if old is not None and released:  # its lock was let go of with a write
                await self._arelease(old, hold.key, released=True)
            elif old is not None:
                with contextlib.suppress(Exception):
                    await old.invalidate()
                await old.close()

    async def _atake(
        self, thread_id: str, ns: str, read: Any = None
    ) -> tuple[Any, int, list[Any] | None]:
        """A connection of the async lock pool holding the thread's lock, the lock's key, and
        the rows of `read` (see `_AdvisoryLock.try_lock`); a connection found dropped is
        replaced once."""
        for attempt in (0, 1):
            conn = await self._alocks_engine().connect()
            got: list[Any] = []
            try:
                key = await conn.run_sync(_try_lock, self._advisory, thread_id, ns, read, got)
                return conn, key, (got[0] if got else None)
            except _Dropped as dropped:
                await conn.close()
                if attempt:
                    raise dropped.error from None
            except BaseException:
                await conn.close()
                raise
        raise AssertionError("unreachable")

    async def _arelease(self, conn: Any, key: int, released: bool = False) -> None:
        """Let go of the lock `conn` holds (unless it was `released` with the run's last write,
        `SQLSaver.aput`) and give `conn` back to its pool."""
        try:
            if released:
                await conn.run_sync(lambda c: _raw_close(c.connection, close=False))
            else:
                await conn.run_sync(lambda c: _raw_unlock(c.connection, key, close=False))
        finally:
            await conn.close()
