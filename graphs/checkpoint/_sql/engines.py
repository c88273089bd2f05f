"""`SQLEngines`, the base of `SQLSaver` (`graphs.checkpoint.sql`): the saver's state and its
engines.

It holds what `SQLSaver(url, ...)` was given (see its docstring for the arguments) and makes
the engines on first use: a sync and an async one for the operations (each with a `read` form,
for statements that take no write lock), on PostgreSQL the pools of the connections that hold
runs' thread locks, and on a SQLite file the threads an async run's operations go to
(`_in_sqlite_thread`); `close`/`aclose` let go of them all. The hooks the engines get (SQLite
pragmas, the PostgreSQL ping) are `engine.py`'s.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from ..._types import RunConfig
from .. import _delta
from ..base import BaseCheckpointSaver, config_ns, config_thread_id
from .engine import _install_pg_ping, _install_sqlite_hooks, _is_memory, _parse, async_url, sync_url
from .gate import WriteGate, write_gate
from .locks import _AdvisoryLock, _Hold
from .statements import _DIALECTS

__all__ = ["SQLEngines"]

_T = TypeVar("_T")
_READ_THREADS = 4
"""Threads for an async run's reads on a SQLite file (`_in_sqlite_thread`); with the one for
its writes, within the default pool's five connections."""


def _one_trip_options() -> dict[str, Any]:
    """`create_async_engine` options for SQLite: `_sql.one_trip`'s driver where the installed
    SQLAlchemy and aiosqlite are the ones it is written against, else none (SQLAlchemy's own
    adapter, four trips to aiosqlite's thread a statement: slower under load, the same
    results)."""
    # Lazy: SQLAlchemy's aiosqlite adapter (and aiosqlite) is loaded only by an async SQLite
    # engine, and only SQLAlchemy 2.1 has the one `one_trip` subclasses.
    try:
        from . import one_trip
    except ImportError:  # SQLAlchemy 2.0 builds its adapter otherwise (no `await_` to import)
        return {}
    return one_trip.async_engine_options()


_SAVERS: weakref.WeakSet[SQLEngines] = weakref.WeakSet()
"""The savers of this process, for a forked child to let go of what is the parent's."""


def _after_fork_in_child() -> None:
    for saver in list(_SAVERS):
        saver._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


class SQLEngines(BaseCheckpointSaver):
    """A SQL saver's state and engines; `SQLSaver` is this with the checkpoint operations and
    one run per thread (`holds.py`). Made with `SQLSaver`'s arguments."""

    def __init__(
        self,
        url: str | URL,
        *,
        sqlite_synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        pool_size: int = 5,
        max_overflow: int = 10,
        ping_after: float = 1.0,
        **engine_options: Any,
    ) -> None:
        super().__init__()
        if sqlite_synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(
                f"sqlite_synchronous must be FULL, NORMAL or EXTRA, not {sqlite_synchronous!r}"
            )
        self.url = _parse(url)
        self._d = _DIALECTS[self.url.drivername]
        self._memory = self._d.name == "sqlite" and _is_memory(self.url)
        self._synchronous = sqlite_synchronous.upper()
        self._busy_ms = int(busy_timeout * 1000)
        self._pool = {"pool_size": pool_size, "max_overflow": max_overflow}
        self._ping_after = ping_after
        self._engine_options = engine_options
        self._init_guard = threading.Lock()
        self._memory_guard = threading.RLock()
        self._engine: Engine | None = None
        self._read_engine: Engine | None = None
        self._aengine: AsyncEngine | None = None
        self._aread_engine: AsyncEngine | None = None
        # PostgreSQL: the pools of the connections that hold runs' thread locks (`lock_thread`)
        self._lock_engine: Engine | None = None
        self._alock_engine: AsyncEngine | None = None
        # SQLite file: the threads of async runs' writes and reads (`_in_sqlite_thread`)
        self._sqlite_threads: dict[bool, ThreadPoolExecutor] = {}
        self._schema_ok = False
        self._closes = 0
        """How many times `close`/`aclose` ran: a run holding a connection from before the last
        closes it when it ends, instead of giving it back to a pool that was let go of."""
        self._advisory = _AdvisoryLock(self._sync_engine)
        # The list channels last stored per thread: an update by id is stored as an edit.
        self._heads = _delta.Heads()
        # (OS thread, thread id, ns) -> the hold of the thread's advisory lock, while a sync
        # `lock_thread` on PostgreSQL holds it (its operations run on the lock's connection, see
        # `_run_thread`). Not the base class's `_threads_held`: the in-memory database locks
        # threads with that one.
        self._lock_conns: dict[tuple[int, str, str], _Hold] = {}
        # (thread id, ns) -> the hold of each thread `lock_thread`/`alock_thread` holds on
        # PostgreSQL: its writes first make sure the lock is still held (`_keep_hold`).
        self._holds: dict[tuple[str, str], _Hold] = {}
        self.lock_may_be_lost = self._d.pg
        if self._d.name == "sqlite" and not self._memory:
            path = os.path.abspath(self.url.database or "")
            self._lock_path: str | None = path + ".locks"
            self._gate: WriteGate | None = write_gate(path, busy_timeout)
        else:
            self._lock_path = None
            self._gate = None
        # What this process's holds of a thread are keyed by, beside the thread (`_proc_hold`):
        # the database, named once here rather than on every run.
        self._scope = self._lock_path or self.url.render_as_string(hide_password=True)
        _SAVERS.add(self)

    def _forked(self) -> None:
        """In a child this process forked: what the saver had is the parent's. The pooled
        connections (a socket or a SQLite handle both processes now have) stay open for the
        parent, dropped from this process's pools, which start empty (`dispose(close=False)`,
        SQLAlchemy's way for a fork); the saver's threads did not come along (an operation
        starts new ones); a guard another thread held at the fork is held for ever here, so
        the guards are new. The runs that held threads are the parent's, on its connections:
        this process holds none. A run the forking thread was in (a node that forked), or its
        event loop was running, would go on here: its hold stays, marked (`_Hold.forked`), so
        its next write is refused, its reads go to the pool and its end lets go of nothing.
        An in-memory database is this process's own copy, and is kept."""
        self._init_guard = threading.Lock()
        self._memory_guard = threading.RLock()
        self._locks_guard = threading.Lock()
        self._heads = _delta.Heads()  # (a cache: the next put of a list stores it whole)
        self._sqlite_threads = {}
        me = threading.get_ident()  # the one thread a child has: the forking one
        self._lock_conns = {k: hold for k, hold in self._lock_conns.items() if k[0] == me}
        mine = {id(hold) for hold in self._lock_conns.values()}
        self._holds = {  # (an async run's: the forking thread may have run its event loop)
            k: hold
            for k, hold in self._holds.items()
            if id(hold) in mine or hold.aguard is not None
        }
        for hold in (*self._lock_conns.values(), *self._holds.values()):
            hold.forked = True
        if self._memory:
            return
        # (as `close`: the `read` engines are views of these, sharing their pools)
        for engine in (self._engine, self._lock_engine):
            if engine is not None:
                engine.dispose(close=False)
        for aengine in (self._aengine, self._alock_engine):
            if aengine is not None:
                aengine.sync_engine.dispose(close=False)

    def close(self) -> None:
        """Close every pooled connection (the saver can still be used: it reconnects).

        From async code prefer `await aclose()`: connections of the async engine can only be
        closed on an event loop, so inside a running loop `close` just lets go of them.
        """
        self._closes += 1
        self._let_go_of_threads()
        for engine in (self._engine, self._lock_engine):
            if engine is not None:
                engine.dispose()
        for aengine in (self._aengine, self._alock_engine):
            if aengine is None:
                continue
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                try:
                    asyncio.run(aengine.dispose())
                except Exception:  # noqa: BLE001 (closing is best effort; drop them)
                    aengine.sync_engine.dispose(close=False)
            else:
                aengine.sync_engine.dispose(close=False)

    async def aclose(self) -> None:
        self._closes += 1
        self._let_go_of_threads()
        for aengine in (self._aengine, self._alock_engine):
            if aengine is not None:
                await aengine.dispose()
        for engine in (self._engine, self._lock_engine):
            if engine is not None:
                engine.dispose()

    def _in_sqlite_thread(self, read: bool, call: Callable[[], _T]) -> asyncio.Future[_T]:
        """SQLite file: `call()` run in the saver's own thread, for an async run's operation,
        whole, on the sync engine (`_arun`): one hand-over from the event loop and one back,
        where the async engine made one per statement (aiosqlite's thread), four or more an
        operation. A call cancelled before its thread takes it up never runs; one taken up
        (running, or waiting there for the write gate) runs to its end after its caller has
        gone, as `asyncio.to_thread`'s would: one transaction, committed whole or not at all,
        and a put the thread's head has moved past since is refused by its compare-and-set.

        Writes take the write gate in their thread, not on the event loop: the thread is the
        saver's own, so waiting there keeps no thread of the loop's default executor from the
        sync nodes (which may be waiting for the gate themselves), and the holder of the gate
        never waits for a thread. Reads have threads of their own (`_READ_THREADS`, as SQLite
        lets readers read at once): a write waiting for its turn holds up no read, and a long
        read (every paused thread, listed) no other."""
        with self._init_guard:  # (`_let_go_of_threads` stops none between these two lines)
            thread = self._sqlite_threads.get(read)
            if thread is None:
                name = "graphs-sqlite-" + ("reads" if read else "writes")
                size = _READ_THREADS if read else 1
                thread = self._sqlite_threads[read] = ThreadPoolExecutor(size, name)
            return asyncio.wrap_future(thread.submit(call))

    def _let_go_of_threads(self) -> None:
        """Stop the threads of `_in_sqlite_thread` once they finish what they were given (a
        later operation starts new ones)."""
        with self._init_guard:
            threads = list(self._sqlite_threads.values())
            self._sqlite_threads.clear()
        for thread in threads:
            thread.shutdown(wait=False)

    def _engine_kwargs(self) -> dict[str, Any]:
        if self._d.name == "sqlite":
            if self._memory:
                return {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
            return {**self._engine_options}
        return {**self._pool, **self._engine_options}

    def _sync_engine(self, read: bool = False) -> Engine:
        engine = self._read_engine if read else self._engine
        if engine is not None:
            return engine
        with self._init_guard:
            if self._engine is None:
                engine = sa.create_engine(sync_url(self.url), **self._engine_kwargs())
                if self._d.name == "sqlite":
                    _install_sqlite_hooks(engine, self._busy_ms, self._synchronous, self._gate)
                else:
                    _install_pg_ping(engine, self._ping_after)
                self._read_engine = engine.execution_options(signoff_read=True)
                self._engine = engine
        return self._read_engine if read else self._engine  # type: ignore[return-value]

    def _async_engine(self, read: bool = False) -> AsyncEngine:
        engine = self._aread_engine if read else self._aengine
        if engine is not None:
            return engine
        with self._init_guard:
            if self._aengine is None:
                options = self._engine_kwargs()
                if self._d.name == "sqlite":  # one trip to aiosqlite's thread a statement
                    options = {**_one_trip_options(), **options}
                engine = create_async_engine(async_url(self.url), **options)
                if self._d.name == "sqlite":
                    _install_sqlite_hooks(engine.sync_engine, self._busy_ms, self._synchronous)
                else:
                    _install_pg_ping(engine.sync_engine, self._ping_after)
                self._aread_engine = engine.execution_options(signoff_read=True)
                self._aengine = engine
        return self._aread_engine if read else self._aengine  # type: ignore[return-value]

    def _locks_engine(self) -> Engine:
        """The pool of the connections that runs hold (`lock_thread`), apart from the one the
        operations use. PostgreSQL: each holds a run's thread lock, and the run's own reads and
        writes go on it (`running.py`); what does not (a transaction that is not one statement,
        a write after the session dropped) checks out another. From one pool,
        `pool_size + max_overflow` runs at once held every connection, each waited for one
        more, and none got it (every request of the process failed after the pool timeout).
        Apart, a run waits for a lock connection holding nothing, and the operations' pool
        only ever serves transactions. SQLite (a file): a sync run's transactions go on one
        connection instead of a checkout and a checkin each; a run finding none free at once
        (`pool_timeout` 0) goes through the operations' pool as before (`_held_sqlite`)."""
        if self._lock_engine is None:
            with self._init_guard:
                if self._lock_engine is None:
                    if self._d.pg:
                        engine = sa.create_engine(sync_url(self.url), **self._engine_kwargs())
                        _install_pg_ping(engine, self._ping_after)
                    else:
                        options = self._engine_kwargs()
                        if "poolclass" not in options:  # a queue pool: never wait in it
                            options = {**self._pool, **options, "pool_timeout": 0}
                        engine = sa.create_engine(sync_url(self.url), **options)
                        _install_sqlite_hooks(engine, self._busy_ms, self._synchronous)
                    self._lock_engine = engine
        return self._lock_engine

    def _held_sqlite(self) -> Any:
        """SQLite: a connection of the lock pool for a sync run to hold, or None when every
        one is held (the run then checks one out of the operations' pool per transaction)."""
        try:
            return self._locks_engine().raw_connection()
        except sa.exc.TimeoutError:
            return None

    def _alocks_engine(self) -> AsyncEngine:
        """Async form of `_locks_engine`."""
        if self._alock_engine is None:
            with self._init_guard:
                if self._alock_engine is None:
                    engine = create_async_engine(async_url(self.url), **self._engine_kwargs())
                    _install_pg_ping(engine.sync_engine, self._ping_after)
                    self._alock_engine = engine
        return self._alock_engine

    def _key(self, config: RunConfig) -> tuple[str, str]:
        thread_id = config_thread_id(config)
        if not thread_id:
            raise ValueError('config needs {"configurable": {"thread_id": ...}}')
        return thread_id, config_ns(config)
