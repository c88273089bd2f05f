"""`SQLSaver`: durable checkpoints in SQLite (a file, the default) or PostgreSQL (production).

```python
with SQLSaver.from_conn_string("sqlite:///signoff.db") as saver:
    saver.setup()                       # create or upgrade the tables (idempotent)
    graph = builder.compile(checkpointer=saver)
```

What it stores (tables in `_sql/tables.py`, migrations in `migrations/`):

- one row per checkpoint (versions, frontier, metadata), and one row per *channel version*: a
  channel that did not change in a step is not written again;
- a list channel that grew by concatenation (`checkpoint["appended"]`) stores only the new items,
  chained to the version before it, so a 200-turn chat costs what was appended, not O(n^2); a
  value is rebuilt with one query (the full row and the append rows after it);
- one row per thread: its head (every `put` is a compare-and-set on it, so history never forks
  by accident; LangGraph's time travel branches from a past checkpoint over the head it read,
  `_sql/branch.py`) and its status, so "what is paused, since when, waiting on what" is one indexed query
  (`list_paused`).

Thread status, derived from what the runtime writes, in the same transaction:

- `running`: the thread has a pending frontier and is not waiting on anyone (a run is under
  way, or stopped without pausing, e.g. by a crash or the recursion limit);
- `paused`: a static pause (`put` of a checkpoint with `paused` nodes), or an `interrupt()`
  (`put_writes` with an `__interrupt__` write) that has no `__resume__` answer yet;
- `done`: the last checkpoint has no pending tasks;
- `failed`: a task wrote `__error__` since the last checkpoint.

Durability: each `put`/`put_writes` is one transaction, committed before the call returns (the
runtime hands a new run's input checkpoint, its `__start__` writes and step 0 over as one).
SQLite runs in WAL mode with `synchronous=FULL` (the WAL is fsynced at every commit, so a
committed step survives power loss, not only a process crash; pass `sqlite_synchronous="NORMAL"`
to trade that for speed), a busy timeout, and `BEGIN IMMEDIATE` for writes, so that several
processes on one file wait for each other instead of failing with "database is locked".
PostgreSQL connections are pooled and pinged before use when they sat idle (`ping_after`), so a
server restart between two invocations costs nothing; a read, `put` or delete whose connection
drops mid-use is retried once (a `put` is a compare-and-set, so its retry cannot apply twice).

The implementation is in the private package `_sql/`, one idea per module (see its docstring).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from .._types import RunConfig
from ._sql.alembic import AlembicSchema
from ._sql.branch import _branch_tx
from ._sql.engine import (
    _Dropped,
    _transact,
    async_url,
    sync_url,
)
from ._sql.prune import _delete_tx, _prune_finished_tx, _prune_tx, _thread_keys_tx
from ._sql.read import PausedThread, _get_pg, _get_rows, _get_tx, _list_tx, _paused_tx
from ._sql.running import SQLOperations
from ._sql.schema import MIGRATIONS_DIR as MIGRATIONS_DIR  # noqa: PLC0414 (public)
from ._sql.schema import _migrate
from ._sql.write import (
    _batch_tx,
    _head_tx,
    _is_broken_chain,
    _is_outcome,
    _put_args,
    _put_last_pg,
    _put_pg,
    _put_tx,
    _stored_lists,
    _writes_args,
    _writes_last_pg,
    _writes_tx,
)
from .base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    branch_head,
    checkpoint_config,
    config_checkpoint_id,
    config_list_ns,
)

__all__ = ["AlembicSchema", "PausedThread", "SQLSaver", "async_url", "sync_url"]

PausedThread.__module__ = __name__  # defined in `_sql/read.py`; this is its public home


class SQLSaver(SQLOperations):
    """Checkpoints in SQLite or PostgreSQL through SQLAlchemy Core; see the module docstring.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db` (a driver named in
            the URL must be the one the saver uses: pysqlite/aiosqlite, psycopg).
        sqlite_synchronous: SQLite's `PRAGMA synchronous`: `"FULL"` (default: a committed step
            survives power loss) or `"NORMAL"` (survives a process crash only; faster).
        busy_timeout: seconds a SQLite writer waits for another one (default 30).
        pool_size: connections kept open per engine (default 5). A run holds one, from a pool
            of its own (as large): on PostgreSQL for its lock and its own reads and writes, on
            SQLite (a sync run) for its transactions.
        max_overflow: connections opened beyond `pool_size` under load (default 10).
        ping_after: PostgreSQL: a pooled connection idle this many seconds is pinged before
            use, and replaced if the server dropped it (default 1.0; 0 pings at every use).
        **engine_options: passed to `sqlalchemy.create_engine` / `create_async_engine`.
    """

    def __repr__(self) -> str:
        return f"SQLSaver({self.url.render_as_string(hide_password=True)!r})"

    # ---- construction -------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, url: str | URL, **options: Any) -> Iterator[SQLSaver]:
        """`with SQLSaver.from_conn_string(url) as saver:`; the engines are closed on exit."""
        saver = cls(url, **options)
        try:
            yield saver
        finally:
            saver.close()

    @classmethod
    @contextlib.asynccontextmanager
    async def afrom_conn_string(cls, url: str | URL, **options: Any) -> AsyncIterator[SQLSaver]:
        """`async with SQLSaver.afrom_conn_string(url) as saver:`; closed on exit."""
        saver = cls(url, **options)
        try:
            yield saver
        finally:
            await saver.aclose()

    # ---- schema -------------------------------------------------------------------------

    def setup(self) -> None:
        """Create or upgrade the checkpoint tables (Alembic migrations). Idempotent.

        Safe to run from several processes at once: PostgreSQL serializes migrations on an
        advisory lock, SQLite on its write lock (`BEGIN IMMEDIATE`).

        Raises:
            SchemaVersionError: the database was migrated by newer code than this.
        """
        for attempt in (0, 1):
            try:
                with self._sync_engine().begin() as conn:
                    _migrate(conn, self)
                break
            except sa.exc.DBAPIError as e:
                if attempt or not e.connection_invalidated:
                    raise
        self._schema_ok = True

    async def asetup(self) -> None:
        """Async form of `setup`."""
        if self._memory:
            await asyncio.to_thread(self.setup)
            return
        async with self.write_gate(), self._async_engine().begin() as conn:
            await conn.run_sync(_migrate, self)
        self._schema_ok = True

    # ---- reads --------------------------------------------------------------------------

    def _list_key(self, config: RunConfig | None) -> tuple[str, str | None] | None:
        """What `list` lists: every thread (None), or a thread's namespace (None: every one)."""
        if config is None:
            return None
        thread_id, ns = self._key(config)
        return thread_id, (None if config_list_ns(config) is None else ns)

    def get_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        thread_id, ns = self._key(config)
        if self._d.pg:
            checkpoint_id = config_checkpoint_id(config)
            hold = self._lock_conns.get((threading.get_ident(), thread_id, ns))
            if hold is not None and hold.head is not None and checkpoint_id is None:
                # The head, read in the round trip that took the thread's lock (`lock_thread`)
                rows, hold.head = hold.head, None
                tup = self._run_thread(
                    (thread_id, ns), _get_rows, self._d, thread_id, ns, None, rows
                )
            else:
                tup = self._run_thread(
                    (thread_id, ns), _get_pg, self._d, thread_id, ns, checkpoint_id
                )
            self._note_read(thread_id, ns, checkpoint_id, tup)
            return tup
        checkpoint_id = config_checkpoint_id(config)
        return self._run_thread(
            (thread_id, ns), _get_tx, self._d, thread_id, ns, checkpoint_id, read=True
        )

    async def aget_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        thread_id, ns = self._key(config)
        key = (thread_id, ns)
        checkpoint_id = config_checkpoint_id(config)
        hold = self._holds.get(key) if self._holds else None
        rows = None
        if hold is not None and hold.aguard is not None and checkpoint_id is None:
            rows = hold.head  # read in the round trip that took the thread's lock (`alock_thread`)
        if rows is not None:  # (`_arun_thread` lets go of them: they are read once)
            tup = await self._arun_thread(
                key, _get_rows, self._d, thread_id, ns, None, rows, read=True
            )
        else:
            get = _get_pg if self._d.pg else _get_tx
            tup = await self._arun_thread(
                key, get, self._d, thread_id, ns, checkpoint_id, read=True
            )
        self._note_read(thread_id, ns, checkpoint_id, tup)
        return tup

    def _note_read(
        self, thread_id: str, ns: str, checkpoint_id: str | None, tup: CheckpointTuple | None
    ) -> None:
        """A held thread's head was read: what its run knows of the thread now."""
        hold = self._hold_of(thread_id, ns) if self._holds else None
        if hold is None or checkpoint_id is not None:
            return
        if tup is None:
            hold.note_read(ns, None, 0)
        else:
            hold.note_read(ns, tup.checkpoint["id"], len(tup.pending_writes))
            hold.note_tasks(ns, tup.checkpoint["id"], tup.checkpoint["next_tasks"])

    def list(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._run(_list_tx, self._d, self._list_key(config), before, limit, read=True)

    async def alist(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        key = self._list_key(config)
        for item in await self._arun(_list_tx, self._d, key, before, limit, read=True):
            yield item

    # ---- writes -------------------------------------------------------------------------

    def put(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        key = self._key(config)
        args = _put_args(key, config, checkpoint, metadata, new_versions, self._heads)
        fn, fargs = self._put_fn(config, args)
        if self._d.pg:
            hold = self._hold_of(*key)
            if hold is not None:
                self._keep_hold(hold)
            # A finished or paused checkpoint ends the run: the lock goes with it.
            last = fn is _put_pg and args[4] in ("done", "paused")
            if not (last and self._write_and_release(key, _put_last_pg, fargs, _put_pg)):
                self._run_thread(key, fn, self._d, *fargs)
            if hold is not None:
                hold.note_put(key[1], checkpoint["id"], checkpoint["next_tasks"])
        else:
            self._run_thread(key, fn, self._d, *fargs)
        _stored_lists(self._heads, key, config, checkpoint, new_versions)
        return checkpoint_config(args[0], args[1], checkpoint["id"])

    def _write_and_release(
        self, key: tuple[str, str], fn: Callable[..., bool], args: tuple[Any, ...], alone: Any
    ) -> bool:
        """The run's last write (`fn`: `_put_last_pg`, `_writes_last_pg`) on the lock's
        connection of the run holding the thread on this OS thread (sync, PostgreSQL), the
        lock let go of in its round trip. A write after it takes the lock back first, as after
        a lost session (`_keep_hold`). False when there is no such hold. A dropped connection:
        the write is retried through the pool as `alone` (a put), or not (writes: None)."""
        hold = self._lock_conns.get((threading.get_ident(), *key)) if self._lock_conns else None
        if hold is None or hold.lost or hold.ns != key[1]:
            return False
        if not self._schema_ok:
            self._check_schema()
        with hold.guard:
            hold.head = None
            try:
                released = _transact(
                    hold.raw, fn, (self._d, hold.key, *args), False, True, self._sync_engine
                )
            except _Dropped as dropped:
                hold.lost = True  # and the lock with the session: taken back before a write
                if alone is None:
                    raise dropped.error from None
                self._run(alone, self._d, *args)
                return True
            finally:
                conn = hold.raw.dbapi_connection  # None once invalidated
                if conn is not None and not conn.autocommit:
                    with contextlib.suppress(Exception):
                        conn.autocommit = True  # as `try_lock` left it
            if released:
                hold.released = hold.lost = True
            return True

    async def _awrite_and_release(
        self, key: tuple[str, str], fn: Callable[..., bool], args: tuple[Any, ...], alone: Any
    ) -> bool:
        """`_write_and_release` for an async run (`alock_thread`): the run's last write on its
        lock's session, the lock let go of in its round trip."""
        hold = self._holds.get(key) if self._holds else None
        if hold is None or hold.aguard is None or hold.lost or not self._schema_ok:
            return False
        async with hold.aguard:
            conn = None if hold.lost else hold.conn
            if conn is None:
                return False
            hold.head = None
            lock_args = (self._d, hold.key, *args)
            try:
                released = await conn.run_sync(
                    lambda c: _transact(c.connection, fn, lock_args, False, True, self._sync_engine)
                )
            except _Dropped as dropped:
                hold.lost = True  # and the lock with the session: taken back before a write
                if alone is None:
                    raise dropped.error from None
                await self._arun(alone, self._d, *args)
                return True
            if released:
                hold.released = hold.lost = True
            return True

    def _put_fn(
        self, config: RunConfig, args: tuple[Any, ...]
    ) -> tuple[Callable[..., None], tuple[Any, ...]]:
        """The transaction of a `put` and its arguments: a compare-and-set of the head on the
        parent, or, for LangGraph's time travel (`branch_head`), a branch from a past
        checkpoint over the head the runtime read (`_sql/branch.py`)."""
        head = branch_head(config)
        if head is not None:
            return _branch_tx, (head, *args)
        return (_put_pg if self._d.pg else _put_tx), args

    async def aput(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        key = self._key(config)
        args = _put_args(key, config, checkpoint, metadata, new_versions, self._heads)
        hold = self._hold_of(*key)
        if hold is not None:
            await self._akeep_hold(hold)
        fn, fargs = self._put_fn(config, args)
        # A finished or paused checkpoint ends the run: the lock goes with it.
        last = fn is _put_pg and args[4] in ("done", "paused")
        if not (last and await self._awrite_and_release(key, _put_last_pg, fargs, _put_pg)):
            await self._arun_thread(key, fn, self._d, *fargs)
        if hold is not None:
            hold.note_put(key[1], checkpoint["id"], checkpoint["next_tasks"])
        _stored_lists(self._heads, key, config, checkpoint, new_versions)
        return checkpoint_config(args[0], args[1], checkpoint["id"])

    def put_writes(
        self,
        config: RunConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        args = _writes_args(self._key(config), config, writes, task_id)
        if args is None:
            return
        hold = self._hold_of(args[0], args[1])
        if hold is not None and not _is_outcome(writes):
            self._keep_hold(hold)
        key = (args[0], args[1])
        # An interrupt of the step's only task ends the run: the lock goes with it.
        if not (
            hold is not None
            and hold.pauses(args[1], args[2], task_id, args[3])
            and self._write_and_release(key, _writes_last_pg, args, None)
        ):
            self._run_thread(key, _writes_tx, self._d, *args, retry=False)
        if hold is not None:
            hold.note_writes(args[1], args[2], len(args[3]))

    async def aput_writes(
        self,
        config: RunConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        args = _writes_args(self._key(config), config, writes, task_id)
        if args is None:
            return
        hold = self._hold_of(args[0], args[1])
        if hold is not None and not _is_outcome(writes):
            await self._akeep_hold(hold)
        key = (args[0], args[1])
        # An interrupt of the step's only task ends the run: the lock goes with it.
        if not (
            hold is not None
            and hold.pauses(args[1], args[2], task_id, args[3])
            and await self._awrite_and_release(key, _writes_last_pg, args, None)
        ):
            await self._arun_thread(key, _writes_tx, self._d, *args, retry=False)
        if hold is not None:
            hold.note_writes(args[1], args[2], len(args[3]))

    # The runtime's driver (`graphs._drive`) hands a run's input checkpoint, its `__start__`
    # task's writes and the first step's checkpoint over together (no node code runs between
    # them): one commit instead of three. `ops`: `(True, put's arguments)` or `(False,
    # put_writes's)`, in order, all on one thread.

    def _batch_of(
        self, ops: Sequence[tuple[bool, tuple[Any, ...]]]
    ) -> tuple[tuple[str, str], builtins.list[tuple[bool, tuple[Any, ...]]]]:
        key = self._key(ops[0][1][0])
        batch: builtins.list[tuple[bool, tuple[Any, ...]]] = []
        for is_put, op in ops:
            if is_put:
                config, checkpoint, metadata, new_versions = op
                batch.append(
                    (True, _put_args(key, config, checkpoint, metadata, new_versions, self._heads))
                )
                # The next put of the batch is stored as an edit of this one (forgotten below
                # if the transaction fails).
                _stored_lists(self._heads, key, config, checkpoint, new_versions)
            elif (args := _writes_args(key, op[0], op[1], op[2])) is not None:
                batch.append((False, args))
        return key, batch

    def _batch_saved(self, key: tuple[str, str], batch: Any, hold: Any, ops: Any) -> None:
        if hold is None:
            return
        checkpoints = iter(op[1] for is_put, op in ops if is_put)
        for is_put, args in batch:
            if is_put:
                hold.note_put(key[1], args[2], next(checkpoints)["next_tasks"])
            else:
                hold.note_writes(key[1], args[2], len(args[3]))

    def _takes_batch(self) -> bool:
        """Whether the driver may batch: not for a subclass that overrides a write (it expects
        each call, as its own transaction)."""
        cls = type(self)
        return (
            cls.put is SQLSaver.put
            and cls.put_writes is SQLSaver.put_writes
            and cls.aput is SQLSaver.aput
            and cls.aput_writes is SQLSaver.aput_writes
        )

    def _retried_one_by_one(self, e: Exception, key: tuple[str, str]) -> bool:
        """Whether a batch that failed with `e` is to be written one by one, as `put` and
        `put_writes` alone would: its append chain broke (they store the lists whole), or the
        PostgreSQL connection failed (they retry once, each a compare-and-set), unless the
        head shows that the batch committed after all (`_stored`)."""
        self._heads.forget(key[0])
        if _is_broken_chain(e):
            return True
        dbapi = self._sync_engine().dialect.loaded_dbapi
        return self._d.pg and isinstance(e, dbapi.OperationalError)

    @staticmethod
    def _stored(head: Any, batch: Any) -> bool:
        last = [args for is_put, args in batch if is_put][-1]
        return head is not None and head[0] == last[2]

    def _put_batch(self, ops: Sequence[tuple[bool, tuple[Any, ...]]]) -> None:
        key, batch = self._batch_of(ops)
        hold = self._hold_of(*key)
        if hold is not None:
            self._keep_hold(hold)
        try:
            self._run_thread(key, _batch_tx, self._d, batch, retry=False)
        except Exception as e:
            if not self._retried_one_by_one(e, key):
                raise
            if self._stored(self._run(_head_tx, self._d, *key, read=True), batch):
                return  # the connection dropped during COMMIT, which went through
            for is_put, op in ops:
                if is_put:
                    self.put(*op)
                else:
                    self.put_writes(*op)
            return
        self._batch_saved(key, batch, hold, ops)

    async def _aput_batch(self, ops: Sequence[tuple[bool, tuple[Any, ...]]]) -> None:
        key, batch = self._batch_of(ops)
        hold = self._hold_of(*key)
        if hold is not None:
            await self._akeep_hold(hold)
        try:
            await self._arun_thread(key, _batch_tx, self._d, batch, retry=False)
        except Exception as e:
            if not self._retried_one_by_one(e, key):
                raise
            if self._stored(await self._arun(_head_tx, self._d, *key, read=True), batch):
                return
            for is_put, op in ops:
                if is_put:
                    await self.aput(*op)
                else:
                    await self.aput_writes(*op)
            return
        self._batch_saved(key, batch, hold, ops)

    def delete_thread(self, thread_id: str) -> None:
        self._heads.forget(thread_id)
        self._run(_delete_tx, self._d, thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self._heads.forget(thread_id)
        await self._arun(_delete_tx, self._d, thread_id)

    # ---- status -------------------------------------------------------------------------

    def list_paused(
        self, *, paused_before: datetime | None = None, limit: int | None = None
    ) -> builtins.list[PausedThread]:
        """Every paused thread, longest-waiting first: one query on an index of the status.

        A pause inside a subgraph is listed once, as its parent thread's (the parent's task
        records the subgraph's interrupts, and is answered by their ids); the subgraphs' own
        namespaces (`node:task_id`, with a ':') are not listed.

        Args:
            paused_before: only pauses that began before this time (for an expiry sweep).
            limit: at most this many.
        """
        return self._run(_paused_tx, self._d, paused_before, limit, read=True)

    async def alist_paused(
        self, *, paused_before: datetime | None = None, limit: int | None = None
    ) -> builtins.list[PausedThread]:
        """Async form of `list_paused`."""
        return await self._arun(_paused_tx, self._d, paused_before, limit, read=True)

    def get_status(self, config: RunConfig) -> str | None:
        """The thread's status (`running`, `paused`, `done`, `failed`), or None if unknown."""
        thread_id, ns = self._key(config)
        row = self._run(
            lambda tx: tx.one(self._d.sql["thread_status"], {"t": thread_id, "ns": ns}), read=True
        )
        return row[0] if row else None

    # ---- pruning ------------------------------------------------------------------------

    def prune(self, thread_id: str | None = None, *, keep_last: int = 1) -> int:
        """Keep the last `keep_last` checkpoints of a thread (of every thread: `None`).

        Whatever a kept checkpoint needs stays: its pending writes and every stored channel
        version it refers to, however old, with the whole chain of an appended list. The head
        is always kept, so a paused, running or failed thread resumes as before.

        Returns:
            The number of checkpoints removed.
        """
        if keep_last < 1:
            raise ValueError("keep_last must be at least 1: the head is what a thread resumes from")
        keys = self._run(_thread_keys_tx, self._d, thread_id, read=True)
        return sum(self._run(_prune_tx, self._d, t, ns, keep_last) for t, ns in keys)

    async def aprune(self, thread_id: str | None = None, *, keep_last: int = 1) -> int:
        """Async form of `prune`."""
        if keep_last < 1:
            raise ValueError("keep_last must be at least 1: the head is what a thread resumes from")
        keys = await self._arun(_thread_keys_tx, self._d, thread_id, read=True)
        removed = 0
        for t, ns in keys:
            removed += await self._arun(_prune_tx, self._d, t, ns, keep_last)
        return removed

    def prune_finished(self, older_than: timedelta) -> int:
        """Delete threads that finished (`done`) and have not changed for `older_than`.

        Paused, running and failed threads are never touched, whatever their age.

        Returns:
            The number of threads (thread and namespace pairs) deleted.
        """
        return self._run(_prune_finished_tx, self._d, older_than)

    async def aprune_finished(self, older_than: timedelta) -> int:
        """Async form of `prune_finished`."""
        return await self._arun(_prune_finished_tx, self._d, older_than)
