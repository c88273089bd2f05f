"""`Database`: the bot's one handle on its database (SQLite file or PostgreSQL).

```python
db = Database(os.environ.get("SIGNOFF_DATABASE_URL", "sqlite:///signoff.db"))
await db.upgrade()                      # checkpoint + governance tables; idempotent
async with db.transaction() as conn:    # one write transaction
    ...
async with db.read() as conn:           # reads
    ...
graph = builder.compile(checkpointer=db.saver)   # the same pool, the same settings
```

The engines are the checkpointer's own (`graphs.checkpoint.sql.SQLSaver`), so the bot and the
graphs it runs share one connection pool and one set of settings: on SQLite WAL, a busy
timeout, `synchronous=FULL` and `BEGIN IMMEDIATE` for writes; on PostgreSQL psycopg 3, a pool
and a ping before each checkout.

Errors: a database that cannot be reached (server down, wrong host or port, a SQLite file that
cannot be opened) raises `DatabaseUnavailable`, which says which database and what to check. A
connection that drops mid-transaction raises it too. No connection of the pool free within
its timeout (every one in use) raises `DatabaseBusy`: nothing was recorded, try again. Other
driver errors (a constraint, a serialization failure, "database is locked" after the busy
timeout) pass through unchanged.
A schema newer than this code raises `graphs.errors.SchemaVersionError`.

Beside it: `_group_commit` (SQLite's grouped writers), `_db_errors` (how driver errors are
told and said) and `_migrate` (the governance tables' migrations).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from graphs.checkpoint._sql.gate import WriteGate
from graphs.checkpoint.sql import SQLSaver
from graphs.errors import SchemaVersionError

from ._db_errors import database_down, pool_busy, timed_out, unavailable, what_to_check
from ._group_commit import Batch, Member, RunAgain
from ._group_commit import answer as _answer
from ._group_commit import finished as _finished
from ._migrate import MIGRATIONS_DIR, SCHEMA, at_head, check_not_newer, migrate
from .errors import DatabaseBusy, DatabaseUnavailable

__all__ = [
    "MIGRATIONS_DIR",
    "Database",
    "DatabaseBusy",
    "DatabaseUnavailable",
    "SchemaVersionError",
    "database_down",
]


T = TypeVar("T")


class Database:
    """The bot's database: engines, transactions, migrations and a health check.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db` (the driver is chosen
            for you: aiosqlite or psycopg for async, pysqlite or psycopg for sync).
        group_commit: on SQLite, urgent transactions (votes) that queue while another holds the
            write gate join its transaction, each in a savepoint, and commit with it
            (`_group_commit.py`). On by default; False gives each its own commit.
        **options: passed to `SQLSaver` (`busy_timeout`, `sqlite_synchronous`, `pool_size`,
            `max_overflow`, and engine options).

    Raises:
        ValueError: the URL is not SQLite or PostgreSQL, or is an in-memory SQLite database
            (the bot needs one database that every connection and process sees).
    """

    def __init__(self, url: str | URL, *, group_commit: bool = True, **options: Any) -> None:
        self.saver = SQLSaver(url, **options)
        """The checkpointer on this database; compile graphs with it to share the pool."""
        if self.saver._memory:
            raise ValueError(
                "an in-memory SQLite database cannot hold the bot's state (each connection "
                "would see its own); use a file, e.g. sqlite:///signoff.db"
            )
        self.url: URL = self.saver.url
        """The URL as given, normalized (no driver name)."""
        self.group_commit = group_commit
        """Whether urgent SQLite transactions are committed in groups (see `transaction`)."""
        self._batches: dict[asyncio.AbstractEventLoop, Batch] = {}

    def __repr__(self) -> str:
        return f"Database({self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The URL with its password hidden, for messages and logs."""
        return self.url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        """`"sqlite"` or `"postgresql"`."""
        return str(self.url.drivername)

    @property
    def engine(self) -> AsyncEngine:
        """The async engine. Its transactions write (`BEGIN IMMEDIATE` on SQLite)."""
        return self.saver._async_engine()

    @property
    def sync_engine(self) -> Engine:
        """The sync engine (created on first use), for sync callers and migrations."""
        return self.saver._sync_engine()

    # ---- lifecycle ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every pooled connection (the database can still be used: it reconnects)."""
        await self.saver.aclose()

    def close(self) -> None:
        """Sync form of `aclose`."""
        self.saver.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- transactions -------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(
        self, *, urgent: bool = False, wait: float | None = None, deadline: float | None = None
    ) -> AsyncIterator[AsyncConnection]:
        """`async with db.transaction() as conn:` one write transaction, committed on exit.

        On SQLite it starts with `BEGIN IMMEDIATE`: it holds the file's write lock from the
        start, so writers queue (up to the busy timeout) instead of failing half way, and
        everything read inside is current. On PostgreSQL it is an ordinary READ COMMITTED
        transaction; lock rows (`FOR UPDATE`) or take advisory locks where it matters.
        An exception inside rolls it back. On SQLite, this process's writers take turns
        (`SQLSaver.write_gate`); `urgent` ones, where a person waits on the answer (a click),
        go before background work.

        `wait` (seconds from now) or `deadline` (a `time.monotonic()` instant) bounds the whole
        transaction, for a person waiting on the answer: its turn to write, SQLite's wait for
        another process's write lock (the busy timeout, for this transaction only), and on
        PostgreSQL every lock and statement (`lock_timeout`, `statement_timeout`). The deadline
        is checked again right before the commit: a transaction that would commit after it
        rolls back instead. Either way `DatabaseBusy`, and nothing was written.

        Group commit (SQLite, `urgent`, unless `group_commit=False`): urgent transactions that
        queue while another urgent one holds the gate run inside its transaction, one after
        another, each in a savepoint of its own, and are committed with it: one commit and one
        fsync for the group. Each caller's block still runs whole or not at all: an exception
        in it rolls back its savepoint only (the others go on) and reaches that caller alone;
        one past its deadline before the commit is rolled back and answered `DatabaseBusy`;
        and nobody returns before the commit. Its block sees what the earlier ones in the
        group wrote, as it would have once they had committed. A block cannot be run twice:
        one that came after a late one in its group is rolled back with it and answered
        `DatabaseBusy` too; give `transact` a function instead, and it is run again.

        Raises:
            DatabaseUnavailable: the database cannot be reached or the connection dropped.
            DatabaseBusy: it could not be done by the deadline; nothing was written.
        """
        if deadline is None and wait is not None:
            deadline = time.monotonic() + wait
        if urgent and self.group_commit and self.saver._gate is not None:
            async with self._grouped(self.saver._gate, deadline, wait) as conn:
                yield conn
            return
        async with contextlib.AsyncExitStack() as stack:
            gate_wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            gate = self.saver.write_gate(urgent=urgent, timeout=gate_wait)
            try:
                await gate.__aenter__()
            except sqlite3.OperationalError as e:
                if gate_wait is None:
                    raise
                raise DatabaseBusy(
                    f"{self.display_url} is busy: no turn to write within {wait or gate_wait:.2g}s; "
                    "nothing was written",
                    self.display_url,
                ) from e
            released = False

            async def let_go() -> None:
                nonlocal released
                if not released:
                    released = True
                    await gate.__aexit__(None, None, None)

            # The gate passes to the next writer once this transaction has committed or rolled
            # back: the busy timeout set back and the connection returned to the pool (a
            # round trip each to SQLite's thread) do not hold it up. Under a burst of clicks
            # the gate is what every vote waits for.
            stack.push_async_callback(let_go)  # if the connection could not even be had
            conn = await stack.enter_async_context(self._connection(self.saver._async_engine()))
            if deadline is not None and self.dialect == "sqlite":
                await self._sqlite_busy_timeout(conn, self._left_ms(deadline))
                stack.push_async_callback(self._sqlite_busy_timeout_back, conn)
            try:
                async with self._translated(), self._busy_past(deadline), conn.begin():
                    if deadline is not None and self.dialect == "postgresql":
                        left = str(self._left_ms(deadline))
                        await conn.execute(_PG_TIMEOUTS, {"ms": left})
                    yield conn
                    if deadline is not None and time.monotonic() >= deadline:
                        raise self._busy("it took too long to be committed in time")
            finally:
                await let_go()

    async def transact(
        self,
        work: Callable[[AsyncConnection], Awaitable[T]],
        *,
        urgent: bool = False,
        wait: float | None = None,
        deadline: float | None = None,
    ) -> T:
        """`await db.transact(work, urgent=True, wait=2.5)`: `work(conn)` in one write
        transaction, as `transaction` runs a block, and its result once committed.

        The difference is in a group commit (SQLite, `urgent`): when a writer before this one
        in its group is past its deadline at the commit, it is rolled back, and with it every
        writer after it (savepoints nest). A block would be refused with it; `work` is run
        again instead, first in the next group, and commits there if there is still time. So
        `work` may run more than once, each time on the database as it then is: it must do
        nothing but its statements on `conn` and compute its result (no effects outside the
        database, nothing it cannot do again). Its refusals (an exception it raises) reach the
        caller only once the group's fate is known: one made on writes rolled back before it
        is made again.

        Raises:
            DatabaseUnavailable: the database cannot be reached or the connection dropped.
            DatabaseBusy: it could not be done by the deadline; nothing was written.
        """
        if deadline is None and wait is not None:
            deadline = time.monotonic() + wait
        gate = self.saver._gate
        if not (urgent and self.group_commit and gate is not None):
            async with self.transaction(urgent=urgent, deadline=deadline) as conn:
                return await work(conn)
        again: RunAgain | None = None
        while True:
            try:
                async with self._grouped(gate, deadline, wait, redo=True, again=again) as conn:
                    result = await work(conn)
                return result
            except RunAgain as told:
                again = told

    # ---- group commit (SQLite; `_group_commit.py`) -----------------------------------------

    @asynccontextmanager
    async def _grouped(
        self,
        gate: WriteGate,
        deadline: float | None,
        wait: float | None,
        *,
        redo: bool = False,
        again: RunAgain | None = None,
    ) -> AsyncIterator[AsyncConnection]:
        """An urgent transaction: the leader of a group, or one of its members. `redo`: its
        work can be run again (`transact`); `again`: it is a writer rolled back with a late
        one, queued again by that group's leader."""
        loop = asyncio.get_running_loop()
        if again is not None:
            me, batch = again.member, again.batch
            role = await self._turn(me, batch, gate, wait)
        else:
            me = Member(loop, deadline, again=redo)
            current = self._batches.get(loop)
            if current is None:
                batch = self._batches[loop] = Batch(loop)
                role = "acquire"
            else:
                batch = current
                batch.queue.append(me)
                role = await self._turn(me, batch, gate, wait)
        if role == "run":
            async with self._member(me, batch) as conn:
                yield conn
            return
        if role == "acquire":
            try:
                await self._take_gate(gate, deadline, wait)
            except BaseException:
                self._pass_on(batch, "acquire", gate=None)
                raise
        async with self._lead(me, batch, gate) as conn:
            yield conn

    async def _take_gate(self, gate: WriteGate, deadline: float | None, wait: float | None) -> None:
        gate_wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            await gate.aacquire(urgent=True, timeout=gate_wait)
        except sqlite3.OperationalError as e:
            if gate_wait is None:
                raise
            raise self._no_turn(wait or gate_wait) from e

    def _no_turn(self, wait: float) -> DatabaseBusy:
        return DatabaseBusy(
            f"{self.display_url} is busy: no turn to write within {wait:.2g}s; nothing was written",
            self.display_url,
        )

    async def _turn(self, me: Member, batch: Batch, gate: WriteGate, wait: float | None) -> str:
        """Wait in `batch`'s queue for `me`'s turn (until its deadline, or the busy timeout)."""
        timeout = gate.timeout if me.deadline is None else max(me.deadline - time.monotonic(), 0)
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(me.turn)
        except (TimeoutError, asyncio.CancelledError) as e:
            if not me.turn.done():
                me.turn.cancel()  # given up: the leader passes over it
            elif me.turn.result() == "run":
                me.finished.set_result(False)  # the turn came as we gave up: nothing done
            else:
                self._pass_on(batch, me.turn.result(), gate=gate)
            if isinstance(e, asyncio.CancelledError):
                raise
            if me.deadline is None:
                raise gate._locked() from None
            raise self._no_turn(wait or timeout) from None

    def _pass_on(self, batch: Batch, role: str, *, gate: WriteGate | None) -> None:
        """Hand what this writer had (`lead`: the gate; `acquire`: the task of taking it) to the
        first writer still waiting; with nobody waiting, the batch ends (and the gate is free)."""
        nxt = batch.next_up()
        if nxt is not None:
            nxt.turn.set_result(role)  # type: ignore[arg-type]
            return
        if self._batches.get(batch.loop) is batch:
            del self._batches[batch.loop]
        if role == "lead" and gate is not None:
            gate.release()

    @asynccontextmanager
    async def _member(self, me: Member, batch: Batch) -> AsyncIterator[AsyncConnection]:
        """`me`'s work inside the leader's transaction, in a savepoint; answered after the
        group's commit."""
        conn = batch.conn
        assert conn is not None  # the leader gives turns only while its transaction is open
        try:
            async with self._translated():
                await conn.exec_driver_sql(f"SAVEPOINT {me.savepoint}")
        except BaseException as e:
            me.finished.set_exception(e)
            raise
        try:
            async with self._translated(), self._busy_past(me.deadline):
                yield conn
                if me.deadline is not None and time.monotonic() >= me.deadline:
                    raise self._busy("it took too long to be committed in time")
        except BaseException:
            try:
                async with self._translated():
                    await conn.exec_driver_sql(f"ROLLBACK TO {me.savepoint}")
            except BaseException as e:
                me.finished.set_exception(e)
                raise
            me.finished.set_result(False)
            if me.again:
                # Its refusal stands once the writes it saw are committed (None), or it is
                # made again (`RunAgain`); when the commit failed, nothing it saw was recorded.
                await me.committed
            raise
        me.finished.set_result(True)
        await me.committed

    @asynccontextmanager
    async def _lead(
        self, me: Member, batch: Batch, gate: WriteGate
    ) -> AsyncIterator[AsyncConnection]:
        """Hold the gate: open the transaction, run `me`'s work, then the queued writers' (each
        in a savepoint), commit them together, and hand the gate on."""
        deadline = me.deadline
        handed = False

        def hand_on() -> None:
            nonlocal handed
            if not handed:
                handed = True
                self._pass_on(batch, "lead", gate=gate)

        kept: list[Member] = []
        ran: list[Member] = [me]  # every writer whose work ran in this transaction, in order
        own: BaseException | None = None
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(hand_on)  # if the connection or the transaction could not be had
            conn = await stack.enter_async_context(self._connection(self.saver._async_engine()))
            if deadline is not None:
                await self._sqlite_busy_timeout(conn, self._left_ms(deadline))
                stack.push_async_callback(self._sqlite_busy_timeout_back, conn)
            async with self._translated(), self._busy_past(deadline):
                tx = await conn.begin()
            try:
                started = time.monotonic()
                async with self._translated():
                    await conn.exec_driver_sql(f"SAVEPOINT {me.savepoint}")
                batch.conn = conn
                try:
                    async with self._translated(), self._busy_past(deadline):
                        yield conn
                        if deadline is not None and time.monotonic() >= deadline:
                            raise self._busy("it took too long to be committed in time")
                except BaseException as e:  # noqa: BLE001 - its caller hears it after the commit
                    own = e
                    async with self._translated():
                        await conn.exec_driver_sql(f"ROLLBACK TO {me.savepoint}")
                else:
                    kept.append(me)
                while batch.take_more(kept, started):
                    member = batch.next_up()
                    if member is None:
                        break
                    member.turn.set_result("run")
                    ran.append(member)
                    if await _finished(member):
                        kept.append(member)
                batch.conn = None  # no more writers join this transaction
                now = time.monotonic()
                late = next((i for i, m in enumerate(ran) if m in kept and m.late(now)), None)
                redo: list[Member] = []
                if late is not None:
                    # Rolled back before the commit, with those after it (their savepoints sit
                    # inside its own): the group ends here. Those after it that can be run again
                    # and are still on time head the queue; the others are busy with it.
                    async with self._translated():
                        await conn.exec_driver_sql(f"ROLLBACK TO {ran[late].savepoint}")
                    for m in ran[late:]:
                        if m is not ran[late] and m.again and not m.late(now):
                            redo.append(m)
                        elif m in kept or m.again:
                            _answer(m, self._busy("it took too long to be committed in time"))
                    kept = [m for m in ran[:late] if m in kept]
                async with self._translated():
                    if kept:
                        await tx.commit()
                    else:
                        await tx.rollback()
            except BaseException as e:
                batch.conn = None
                with contextlib.suppress(Exception):
                    await tx.rollback()
                hand_on()
                for m in ran:
                    if m in kept or m.again:
                        _answer(m, self._grouped_failed(e))
                raise
            waiting = [m.run_again() for m in redo]  # before the gate is handed on: to them
            batch.queue.extendleft(reversed(redo))
            hand_on()
            for m in ran:
                if m not in redo and (m in kept or m.again):
                    _answer(m, None)  # committed; or a refusal made on committed writes
            for m, answer in zip(redo, waiting, strict=True):
                if not answer.done():
                    answer.set_exception(RunAgain(m, batch))
        if own is not None:
            raise own
        if me not in kept:
            raise self._busy("it took too long to be committed in time")

    def _grouped_failed(self, error: BaseException) -> BaseException:
        """What a member hears when the transaction of its group failed: nothing was written."""
        if isinstance(error, DatabaseUnavailable | DatabaseBusy):
            return type(error)(str(error), self.display_url)
        return self._busy(f"the write it was committed with failed ({error!r})")

    def _left_ms(self, deadline: float) -> int:
        """Milliseconds left until `deadline`; `DatabaseBusy` when none are."""
        left = int((deadline - time.monotonic()) * 1000)
        if left < 1:
            raise self._busy("the time to do it was used up before it began")
        return left

    def _busy(self, why: str) -> DatabaseBusy:
        return DatabaseBusy(
            f"{self.display_url} is busy: {why}; nothing was recorded, try again",
            self.display_url,
        )

    async def _sqlite_busy_timeout(self, conn: AsyncConnection, ms: int) -> None:
        """Set how long this SQLite connection waits for another process's write lock (before
        the transaction begins: a statement through SQLAlchemy would begin it)."""
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None  # a connection just checked out of the pool
        try:
            await driver.execute(f"PRAGMA busy_timeout = {int(ms)}")
        except BaseException:
            await conn.invalidate()  # not back to the pool with a timeout it was not given
            raise

    async def _sqlite_busy_timeout_back(self, conn: AsyncConnection) -> None:
        """The pool's usual busy timeout again, once the bounded transaction is over."""
        with contextlib.suppress(Exception):  # invalidated then: the pool drops it
            await self._sqlite_busy_timeout(conn, self.saver._busy_ms)

    @asynccontextmanager
    async def _busy_past(self, deadline: float | None) -> AsyncIterator[None]:
        """The database's own "took too long" (SQLite's locked file, PostgreSQL's lock and
        statement timeouts) as `DatabaseBusy`, for a transaction with a deadline."""
        try:
            yield
        except sa.exc.DBAPIError as e:
            if deadline is None or e.connection_invalidated or not timed_out(e.orig):
                raise
            said = (str(e.orig).strip().splitlines() or [type(e.orig).__name__])[0]
            raise self._busy(f"another writer held what this needs ({said})") from e

    async def write(self, statement: sa.Executable, params: Mapping[str, Any] | None = None) -> int:
        """Run one write statement (with `params`, its bound parameters' values) in a
        transaction of its own; return how many rows it changed.

        Raises:
            DatabaseUnavailable: the database cannot be reached or the connection dropped.
        """
        async with self.transaction() as conn:
            return int((await conn.execute(statement, params)).rowcount)

    @asynccontextmanager
    async def read(self, *, deadline: float | None = None) -> AsyncIterator[AsyncConnection]:
        """`async with db.read() as conn:` a transaction for reads only, rolled back on exit.

        On SQLite it is a deferred `BEGIN`: it does not take the write lock, and sees one
        snapshot from its first read. Do not write through it (SQLite would have to upgrade
        the lock, which fails at once when another writer holds it); use `transaction()`.

        `deadline` (a `time.monotonic()` instant: a click's) bounds it as it does a
        transaction: on PostgreSQL every lock and statement; past it, `DatabaseBusy`.

        Raises:
            DatabaseUnavailable: the database cannot be reached or the connection dropped.
            DatabaseBusy: with `deadline`, it could not be read by then.
        """
        if deadline is not None:
            self._left_ms(deadline)
        async with (
            self._connection(self.saver._async_engine(read=True)) as conn,
            self._translated(),
            self._busy_past(deadline),
        ):
            tx = await conn.begin()
            try:
                if deadline is not None and self.dialect == "postgresql":
                    await conn.execute(_PG_TIMEOUTS, {"ms": str(self._left_ms(deadline))})
                yield conn
            finally:
                await tx.rollback()

    @asynccontextmanager
    async def _connection(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        """A connection from `engine`; failing to connect is `DatabaseUnavailable`."""
        try:
            conn = await engine.connect()
        except sa.exc.TimeoutError as e:
            raise pool_busy(self.display_url, engine.sync_engine) from e
        except (sa.exc.DBAPIError, OSError) as e:
            if self.dialect == "sqlite":
                # aiosqlite (0.22) stops its worker thread after a failed connect without
                # waiting; the thread then reports to this loop. If the loop had closed by
                # then (a CLI exiting on this very error), it would print a traceback.
                await asyncio.sleep(0.05)
            raise unavailable(self.url, e) from e
        try:
            yield conn
        finally:
            await conn.close()

    @contextmanager
    def _sync_connection(self, engine: Engine) -> Iterator[Connection]:
        try:
            conn = engine.connect()
        except sa.exc.TimeoutError as e:
            raise pool_busy(self.display_url, engine) from e
        except (sa.exc.DBAPIError, OSError) as e:
            raise unavailable(self.url, e) from e
        with conn, self._translated_sync():
            yield conn

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        with self._translated_sync():
            yield

    @contextmanager
    def _translated_sync(self) -> Iterator[None]:
        """A connection that dropped mid-use is `DatabaseUnavailable`; other errors pass."""
        try:
            yield
        except sa.exc.DBAPIError as e:
            if e.connection_invalidated:
                raise unavailable(self.url, e) from e
            raise

    # ---- health -------------------------------------------------------------------------

    async def ping(self, timeout: float = 5.0) -> None:
        """Check that the database answers (`SELECT 1` on a fresh or pooled connection).

        Args:
            timeout: seconds to wait for an answer.

        Raises:
            DatabaseUnavailable: it cannot be reached, or did not answer within `timeout`.
        """
        try:
            async with asyncio.timeout(timeout):
                async with self.read() as conn:
                    await conn.exec_driver_sql("SELECT 1")
        except TimeoutError as e:
            raise DatabaseUnavailable(
                f"the database {self.display_url} did not answer within {timeout:g} s; "
                f"{what_to_check(self.url)}",
                self.display_url,
            ) from e

    # ---- migrations ---------------------------------------------------------------------

    async def upgrade(self) -> None:
        """Create or upgrade every table: the checkpoints (`SQLSaver.asetup`), then governance.

        Idempotent, and safe from several processes at once: each set of tables is migrated in
        one transaction that holds a lock (a PostgreSQL advisory lock; SQLite's write lock).
        A database whose governance schema is newer than this code is refused before anything
        changes (`SQLSaver` refuses a newer checkpoint schema the same way). When both sets are
        at this code's revisions already, as at every start but the first after an upgrade of
        signoff, that is seen in one read, and nothing else is done (Alembic is not loaded).

        Raises:
            SchemaVersionError: the database was migrated by a newer signoff.
            DatabaseUnavailable: the database cannot be reached.
        """
        async with self.read() as conn:  # also: reachable, or DatabaseUnavailable
            if await conn.run_sync(at_head):
                return
        async with self.read() as conn:  # a new transaction: PostgreSQL ends one that failed
            await conn.run_sync(check_not_newer, self.display_url)
        async with self._translated():
            await self.saver.asetup()
        async with self.transaction() as conn:
            await conn.run_sync(migrate, self.display_url)

    async def schema_revision(self) -> str | None:
        """The governance schema's revision in the database (None: its tables are not there);
        `SCHEMA_REVISION` is this code's. Reads only.

        Raises:
            DatabaseUnavailable: the database cannot be reached.
        """
        async with self.read() as conn:
            return await conn.run_sync(SCHEMA.current)

    def upgrade_sync(self) -> None:
        """Sync form of `upgrade` (for the CLI and other sync callers)."""
        with self._sync_connection(self.saver._sync_engine(read=True)) as conn, conn.begin():
            if at_head(conn):
                return
        with self._sync_connection(self.saver._sync_engine(read=True)) as conn, conn.begin():
            check_not_newer(conn, self.display_url)
        with self._translated_sync():
            self.saver.setup()
        with self._migration_connection() as conn:
            migrate(conn, self.display_url)

    @contextmanager
    def _migration_connection(self) -> Iterator[Connection]:
        """A sync connection in a write transaction that holds the governance migration lock
        (for `upgrade_sync` and the Alembic command line)."""
        with self._sync_connection(self.sync_engine) as conn, conn.begin():
            SCHEMA.lock(conn)
            yield conn


_PG_TIMEOUTS = sa.text(
    "SELECT set_config('lock_timeout', :ms, true), set_config('statement_timeout', :ms, true)"
)
"""Bound this transaction's lock waits and statements (PostgreSQL; local to the transaction)."""
