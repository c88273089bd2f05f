"""`SQLOperations`: how each operation of `SQLSaver` (`graphs.checkpoint.sql`) runs, between
the thread holds (`holds.py`) and the saver's operations.

Each operation is one transaction (`read.py`, `write.py`, `prune.py`) on a raw DBAPI cursor:
from SQLAlchemy's pool, which brings the idle ping, the SQLite pragmas and invalidation, or,
while a run holds the operation's thread, on the connection the run holds (on PostgreSQL, its
lock's session). SQLAlchemy's execution layer would cost more than the database does for these
few fixed statements. The checkpoint tables' revision is checked before the first one.

An async operation on PostgreSQL runs on the async engine (psycopg's async connection); on a
SQLite file it runs whole, as a sync one, in the saver's own thread (`_in_sqlite_thread`): one
hand-over each way, where aiosqlite's thread took one per statement.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .engine import _Dropped, _transact
from .holds import ThreadHolds
from .locks import _forked_away, _Hold
from .schema import _check_revision, _schema_revision

__all__ = ["SQLOperations"]

_T = TypeVar("_T")
_NO_GATE = contextlib.nullcontext()  # (reusable: it holds nothing)


def _usable(hold: _Hold | None, read: bool) -> _Hold | None:
    """`hold`, for an operation to run on its connection; None for a read under a hold made
    by the process this one was forked from (the pool serves it).

    Raises:
        ThreadLockLostError: a write under such a hold (`_Hold.forked`).
    """
    if hold is None or not hold.forked:
        return hold
    if not read:
        raise _forked_away(hold.thread_id)
    return None


class SQLOperations(ThreadHolds):
    """`ThreadHolds` that run operations; `SQLSaver` adds the operations themselves."""

    def _run(
        self,
        fn: Callable[..., _T],
        *args: Any,
        read: bool = False,
        retry: bool = True,
        schema: bool = True,
    ) -> _T:
        """Run `fn(tx, *args)` in one transaction; `schema=False` skips the check of the
        checkpoint tables (for tables of another set on these engines, such as `SQLStore`'s)."""
        if self._memory:
            with self._memory_guard:
                return self._run_once(fn, args, read, schema)
        try:
            return self._run_once(fn, args, read, schema)
        except _Dropped as dropped:
            if not retry:
                raise dropped.error from None
        try:
            return self._run_once(fn, args, read, schema)  # the connection dropped: once more
        except _Dropped as dropped:
            raise dropped.error from None

    def _run_once(
        self, fn: Callable[..., _T], args: tuple[Any, ...], read: bool, schema: bool = True
    ) -> _T:
        if schema and not self._schema_ok:
            self._check_schema()
        with self._gate.hold() if self._gate is not None and not read else contextlib.nullcontext():
            raw = self._sync_engine().raw_connection()
            try:
                return _transact(raw, fn, args, read, self._d.pg, self._sync_engine)
            finally:
                raw.close()

    async def _arun(
        self,
        fn: Callable[..., _T],
        *args: Any,
        read: bool = False,
        retry: bool = True,
        schema: bool = True,
    ) -> _T:
        if self._memory:  # one in-memory database, reached through the sync engine only
            return await asyncio.to_thread(
                self._run, fn, *args, read=read, retry=retry, schema=schema
            )
        if self._gate is not None:  # a SQLite file: the whole operation in the saver's thread
            return await self._in_sqlite_thread(
                read,
                functools.partial(self._run, fn, *args, read=read, retry=retry, schema=schema),
            )
        try:
            return await self._arun_once(fn, args, read, schema)
        except _Dropped as dropped:
            if not retry:
                raise dropped.error from None
        try:
            return await self._arun_once(fn, args, read, schema)
        except _Dropped as dropped:
            raise dropped.error from None

    async def _arun_once(
        self, fn: Callable[..., _T], args: tuple[Any, ...], read: bool, schema: bool = True
    ) -> _T:
        """An operation on the async engine: on PostgreSQL only (a SQLite file's run in the
        saver's threads, `_in_sqlite_thread`, which take the write gate there)."""
        if schema and not self._schema_ok:
            async with self._async_engine(read=True).connect() as conn:
                revision = await conn.run_sync(_schema_revision)
            self._accept_revision(revision)
        async with self._async_engine().connect() as conn:
            return await conn.run_sync(
                lambda sync_conn: _transact(
                    sync_conn.connection, fn, args, read, self._d.pg, self._sync_engine
                )
            )

    def write_gate(
        self, read: bool = False, *, urgent: bool = False, timeout: float | None = None
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """`async with saver.write_gate():` around an async write transaction on this database
        that does not go through the saver (the bot's own tables share its engines): on a
        SQLite file, this process's writers then take turns without SQLite's sleeping busy
        wait, `urgent` ones (a person waits on the answer) first (`_sql/gate.py`). Waiting
        longer than `timeout` (default: the busy timeout) fails with "database is locked", and
        nothing was written. Nothing to wait for on PostgreSQL, in memory, or for a read."""
        if self._gate is None or read:
            return contextlib.nullcontext()
        return self._gate.ahold(urgent=urgent, timeout=timeout)

    def _run_thread(
        self,
        key: tuple[str, str],
        fn: Callable[..., _T],
        *args: Any,
        retry: bool = True,
        read: bool = False,
    ) -> _T:
        """`_run` for an operation on one thread (get_tuple, put, put_writes; one statement
        each on PostgreSQL), or a batch of them (`_put_batch`: one transaction).

        While this OS thread holds the thread (`lock_thread`, sync), the operation runs on the
        connection the run holds (on PostgreSQL, the lock's): no pool checkout and checkin a
        step, and one server process serves the whole run. If it drops, the operation goes to
        the pool (the lock went with the session, as when the lock connection drops mid-run).
        """
        me = (threading.get_ident(), *key)
        hold = _usable(self._lock_conns.get(me), read) if self._lock_conns else None
        if hold is None:
            return self._run(fn, *args, retry=retry, read=read)
        pg = self._d.pg
        hold.head = None  # the run asked something else first: the head may move
        # PostgreSQL: the lock's connection stays in autocommit mode, so only what runs in it
        # (one statement, or a batch that sends its own BEGIN and COMMIT) goes on it.
        if hold.lost or (pg and not getattr(fn, "_single_statement", False)):
            return self._run(fn, *args, retry=retry, read=read)
        if not self._schema_ok:
            self._check_schema()
        gate = self._gate.hold() if self._gate is not None and not read else _NO_GATE
        with gate, hold.guard:
            try:
                return _transact(hold.raw, fn, args, read, pg, self._sync_engine)
            except _Dropped as dropped:
                hold.lost = True  # and the lock with the session: taken back before a write
                if not retry:
                    raise dropped.error from None
        return self._run(fn, *args, retry=retry, read=read)

    async def _arun_thread(
        self,
        key: tuple[str, str],
        fn: Callable[..., _T],
        *args: Any,
        retry: bool = True,
        read: bool = False,
    ) -> _T:
        """`_run_thread` for an async run: while it holds the thread (`alock_thread`,
        PostgreSQL), an operation of one statement (or a batch sending its own BEGIN and
        COMMIT) runs on the lock's connection, one at a time: no pool checkout and checkin,
        and no switch to autocommit mode and back. A dropped one goes to the pool (`_arun`)."""
        hold = _usable(self._holds.get(key), read) if self._holds else None
        if hold is not None and hold.aguard is not None:
            hold.head = None  # the run asked something else first: the head may move
        if (
            hold is None
            or hold.aguard is None
            or not self._schema_ok
            or not getattr(fn, "_single_statement", False)
        ):
            return await self._arun(fn, *args, retry=retry, read=read)
        async with hold.aguard:
            conn = None if hold.lost else hold.conn
            if conn is not None:
                try:
                    result: _T = await conn.run_sync(
                        lambda c: _transact(c.connection, fn, args, read, True, self._sync_engine)
                    )
                    return result
                except _Dropped as dropped:
                    hold.lost = True  # and the lock with the session: taken back before a write
                    if not retry:
                        raise dropped.error from None
        return await self._arun(fn, *args, retry=retry, read=read)

    # ---- schema -------------------------------------------------------------------------

    def _check_schema(self) -> None:
        with self._sync_engine(read=True).connect() as conn:
            revision = _schema_revision(conn)
        self._accept_revision(revision)

    def _accept_revision(self, revision: str | None) -> None:
        _check_revision(self, revision)
        self._schema_ok = True
