"""Connecting: database URLs and drivers, the engines' hooks, and raw-cursor transactions.

Drivers: `sqlite:///path` uses the standard library's `sqlite3` (sync) and `aiosqlite` (async) on
the same file (the saver's own async operations run whole in a thread of its own on `sqlite3`,
`SQLEngines._in_sqlite_thread`; the bot's tables use the async engine). `postgresql://` uses
psycopg 3 for both: it is the one PostgreSQL driver with a sync and an asyncio interface over
the same code, so sync `invoke` and the async bot see the same type adaptation, server-side
prepared statements and error classes. (A sync run's statements skip psycopg's cursor for its
libpq connection, `wire.py`, with psycopg's parameter types and error classes; an async run's
batches and last write go in one pipeline of psycopg's async connection, `_Tx.send`.)
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Dialect, Engine, make_url
from sqlalchemy.util import await_only

from .gate import WriteGate
from .wire import Statement, Wire, wire_of

_T = TypeVar("_T")

# ---- URLs -------------------------------------------------------------------------------


def _parse(url: str | URL) -> URL:
    u = make_url(url)
    backend, _, driver = u.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if backend == "sqlite" and driver in ("", "pysqlite", "aiosqlite"):
        return u.set(drivername="sqlite")
    if backend == "postgresql" and driver in ("", "psycopg", "psycopg_async"):
        return u.set(drivername="postgresql")
    raise ValueError(
        f"unsupported database URL {u.render_as_string(hide_password=True)!r}: SQLSaver takes "
        "sqlite:///path/to/file.db or postgresql://user@host/db (it picks the driver itself)"
    )


def sync_url(url: str | URL) -> URL:
    """The URL with the driver `SQLSaver` uses for sync calls (pysqlite or psycopg)."""
    u = _parse(url)
    return u.set(drivername="sqlite+pysqlite" if u.drivername == "sqlite" else "postgresql+psycopg")


def async_url(url: str | URL) -> URL:
    """The URL with the driver `SQLSaver` uses for async calls (aiosqlite or psycopg)."""
    u = _parse(url)
    return u.set(
        drivername="sqlite+aiosqlite" if u.drivername == "sqlite" else "postgresql+psycopg"
    )


def _is_memory(u: URL) -> bool:
    return u.database in (None, "", ":memory:") or u.query.get("mode") == "memory"


# ---- engine hooks -----------------------------------------------------------------------


def _install_pg_ping(engine: Engine, ping_after: float) -> None:
    """Ping a pooled connection before use if it sat idle for `ping_after` seconds.

    This is SQLAlchemy's `pool_pre_ping` (a connection the server dropped, say in a
    restart, is replaced before anyone sees it) without its round trip on every checkout:
    connections used moments ago, as between the steps of a run, are trusted, and a rare
    drop in that window is met by the retry in `SQLSaver._run`.
    """

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        now = time.monotonic()
        last = record.info.get("signoff_used")
        record.info["signoff_used"] = now
        if last is None or now - last < ping_after:
            return
        try:
            was = dbapi_conn.autocommit
            dbapi_conn.autocommit = True
            cursor = dbapi_conn.cursor()
            cursor.execute("SELECT 1")
            cursor.close()
            dbapi_conn.autocommit = was
        except Exception as e:
            # The pool replaces the connection and checks out a fresh one.
            raise sa.exc.DisconnectionError(f"stale pooled connection: {e}") from e

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info["signoff_used"] = time.monotonic()


def _enable_wal(cursor: Any, timeout: float) -> None:
    """`PRAGMA journal_mode = WAL`, retried while the file is locked, up to `timeout` seconds.

    Switching a new file to WAL takes an exclusive lock. When two connections try it at once,
    each holding the shared lock the other must wait out, SQLite answers one of them "database
    is locked" at once instead of calling the busy handler (waiting would deadlock). The failed
    statement lets go of its lock, so trying again after a moment gets in: a bot and a worker
    started together on a new file, or a pool opening several connections, no longer fail.
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _install_sqlite_hooks(
    engine: Engine, busy_ms: int, synchronous: str, gate: WriteGate | None = None
) -> None:
    """Set each new connection's pragmas, and begin writes with `BEGIN IMMEDIATE`.

    With `gate` (the sync engine), a write transaction first takes the process's write gate
    (`gate.py`) and gives it back at commit or rollback. The async engine's callers take
    the gate themselves, before they start: an event loop must not block in this hook.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (below); the driver must not (SQLAlchemy's SQLite
        # docs, "Enabling Non-Legacy SQLite Transactional Modes").
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
        _enable_wal(cursor, busy_ms / 1000)
        cursor.execute(f"PRAGMA synchronous = {synchronous}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the write lock up front, so a transaction never has to upgrade
        # from reader to writer (which fails at once with "database is locked").
        if conn.get_execution_options().get("signoff_read"):
            conn.exec_driver_sql("BEGIN")
            return
        if gate is None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            return
        gate.acquire()
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            gate.release()
            raise
        conn.info[_GATE_HELD] = True

    if gate is not None:

        @event.listens_for(engine, "commit")
        @event.listens_for(engine, "rollback")
        def _on_end(conn: Connection) -> None:
            if conn.info.pop(_GATE_HELD, False):
                gate.release()

        @event.listens_for(engine.pool, "reset")
        def _on_reset(dbapi_connection: Any, connection_record: Any, reset_state: Any) -> None:
            # A connection returned with its transaction open (not through Connection's own
            # rollback): the pool rolls it back; the gate must not stay taken.
            if connection_record is not None and connection_record.info.pop(_GATE_HELD, False):
                gate.release()


_GATE_HELD = "graphs_sqlite_gate_held"


# ---- raw-cursor transactions ------------------------------------------------------------


class _Tx:
    """One transaction's connection, with the few shapes of call the saver makes: on its
    cursor (`cur`, opened on first use), or on PostgreSQL's wire (`wire`, a sync psycopg
    connection's libpq connection: `wire.py`), which needs no cursor."""

    __slots__ = ("_cur", "_raw", "wire")

    def __init__(self, raw: Any, wire: Wire | None = None) -> None:
        self._raw = raw
        self._cur: Any = None
        self.wire = wire

    @property
    def cur(self) -> Any:
        if self._cur is None:
            self._cur = self._raw.cursor()
        return self._cur

    def run(self, sql: str, params: Any = ()) -> Any:
        self.cur.execute(sql, params)
        return self.cur

    def many(self, sql: str, rows: list[dict[str, Any]]) -> None:
        if len(rows) == 1:
            self.cur.execute(sql, rows[0])
        else:
            self.cur.executemany(sql, rows)

    def one(self, sql: str, params: Any = ()) -> Any:
        self.cur.execute(sql, params)
        return self.cur.fetchone()

    def all(self, sql: str, params: Any = ()) -> list[Any]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall())

    def rollback(self) -> None:
        self._raw.rollback()

    @property
    def pipelines(self) -> bool:
        """Whether `send` sends its statements in one round trip (PostgreSQL, psycopg)."""
        return self.wire is not None or isinstance(
            self._raw.driver_connection, psycopg.AsyncConnection
        )

    def send(self, statements: Sequence[Statement]) -> list[Any]:
        """The statements in one round trip, and the rows of the last: on the wire (sync), or
        in one pipeline of psycopg's async connection, awaited from SQLAlchemy's greenlet (the
        async engine's). The first error is raised, and nothing after it ran."""
        if self.wire is not None:
            return self.wire.pipeline(statements)[-1]
        return await_only(_apipeline(self._raw.driver_connection, statements))

    def rows(self, sql: str, params: dict[str, Any]) -> list[Any]:
        """`all`, on the wire where there is one (PostgreSQL, sync)."""
        if self.wire is not None:
            return self.wire.pipeline([(sql, params)])[0]
        return self.all(sql, params)

    def value(self, sql: str, params: dict[str, Any]) -> Any:
        """The first value of the statement's first row (None if it has none), on the wire
        where there is one."""
        if self.wire is not None:
            return self.wire.one(sql, params)
        row = self.one(sql, params)
        return row[0] if row else None

    def count(self, sql: str, params: Any = ()) -> int:
        self.cur.execute(sql, params)
        return int(self.cur.rowcount)


async def _apipeline(
    conn: psycopg.AsyncConnection[Any], statements: Sequence[Statement]
) -> list[Any]:
    cursor = conn.cursor()
    try:
        async with conn.pipeline():
            for sql, params in statements:
                await cursor.execute(sql, params)
        return await cursor.fetchall() if cursor.description is not None else []
    finally:
        await cursor.close()


class _Dropped(Exception):
    """The connection was lost mid-transaction (it has been invalidated)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _handle_drop(dialect: Dialect, raw: Any, error: BaseException, cursor: Any) -> None:
    """If `error` means the connection is lost: invalidate the pool, raise `_Dropped`."""
    if isinstance(error, dialect.loaded_dbapi.Error) and dialect.is_disconnect(
        error, raw.dbapi_connection, cursor
    ):
        # Like SQLAlchemy's own handling: every connection of the pool opened before now
        # is presumed dead too (a server restart drops them all).
        pool = getattr(raw, "_pool", None)
        if pool is not None and hasattr(pool, "_invalidate"):
            pool._invalidate(raw, error)
        else:
            raw.invalidate(error)
        raise _Dropped(error) from error


def _transact(
    raw: Any,
    fn: Callable[..., _T],
    args: tuple[Any, ...],
    read: bool,
    pg: bool,
    engine: Callable[[], Engine],
) -> _T:
    """Run `fn(tx, *args)` in one transaction on the pooled connection `raw`.

    On PostgreSQL (`pg`) a function marked `_single_statement` runs in autocommit mode: it sends
    one statement, which is its own transaction, and saves the BEGIN and COMMIT round trips.
    `engine` gives the saver's sync engine, whose dialect tells a dropped connection apart.
    """
    single = pg and getattr(fn, "_single_statement", False)
    # Switched only when it is not already (a run's lock connection is in autocommit mode
    # while held): psycopg's switch is a call through its wait loop, three of them a step.
    switch = single and not raw.dbapi_connection.autocommit
    # The wire sends no BEGIN: only what runs in autocommit mode goes on it.
    tx = _Tx(raw, wire_of(raw.driver_connection) if single else None)
    try:
        if switch:
            raw.dbapi_connection.autocommit = True
        if not pg:
            tx.cur.execute("BEGIN" if read else "BEGIN IMMEDIATE")
        result = fn(tx, *args)
        if not single:
            raw.commit()
        return result
    except BaseException as e:
        _handle_drop(engine().dialect, raw, e, tx._cur)
        with contextlib.suppress(Exception):
            raw.rollback()
        raise
    finally:
        if tx._cur is not None:
            with contextlib.suppress(Exception):
                tx._cur.close()
        if switch:
            with contextlib.suppress(Exception):
                raw.dbapi_connection.autocommit = False
