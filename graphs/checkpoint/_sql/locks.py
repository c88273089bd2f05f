"""One run per thread (`SQLSaver.lock_thread`): the locks, in this process and across processes.

PostgreSQL takes a session-level advisory lock on a connection held for the run, from a pool
of such connections only (`SQLSaver._locks_engine`); SQLite takes a byte-range `fcntl` lock in
`<file>.locks`. Either is released by the operating system or the server when the holding
process dies, even by SIGKILL, so a crashed run can be resumed at once by another process.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import select
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from sqlalchemy.engine import Engine
from sqlalchemy.util import await_only

from ...errors import ThreadBusyError, ThreadLockLostError
from ..base import ERROR, INTERRUPT, RESUME
from .engine import _Dropped, _handle_drop
from .wire import wire_of

# ---- process-wide lock registry ---------------------------------------------------------
# POSIX record locks belong to the process, and closing *any* descriptor of a file drops all of
# the process's locks on it, so each lock file is opened once per process and never closed.

_proc_guard = threading.Lock()
_proc_held: set[tuple[str, str, str]] = set()
_lock_fds: dict[str, int] = {}


def _after_fork_in_child() -> None:
    """The runs this process held threads for are the parent's (its locks stay the parent's:
    the child asks for them as another process would)."""
    global _proc_guard
    _proc_guard = threading.Lock()
    _proc_held.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _lock_fd(path: str) -> int:
    with _proc_guard:
        fd = _lock_fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            _lock_fds[path] = fd
        return fd


def _key_digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode()).digest()


def _busy(thread_id: str, where: str) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is being run by {where}; wait for that run to pause or finish",
        thread_id,
    )


@contextlib.contextmanager
def _proc_hold(key: tuple[str, str, str]) -> Iterator[None]:
    """Hold `key` (scope, thread id, namespace) in this process; refuse if a run holds it."""
    with _proc_guard:
        if key in _proc_held:
            raise _busy(key[1], "another run in this process")
        _proc_held.add(key)
    try:
        yield
    finally:
        with _proc_guard:
            _proc_held.discard(key)


def _advisory_key(scope: str | None, thread_id: str, ns: str) -> int:
    digest = _key_digest("thread", scope or "", thread_id, ns)
    return int.from_bytes(digest[:8], "big", signed=True)


def _give_back(raw: Any, stale: bool = False) -> None:
    """Return a held connection to its pool; `stale` (the saver was closed while a run held
    it, and its pool let go of): close it instead, or it would stay open in that pool until
    the garbage collector found it."""
    if stale and raw.dbapi_connection is not None:
        raw.invalidate()
    raw.close()


def _raw_unlock(raw: Any, key: int, close: bool = True, stale: bool = False) -> None:
    try:
        cursor = raw.cursor()
        cursor.execute("SELECT pg_advisory_unlock(%(k)s)", {"k": key})
        cursor.close()
        raw.dbapi_connection.autocommit = False
    except Exception:  # noqa: BLE001 (the session, and with it the lock, is gone)
        if raw.dbapi_connection is not None:  # None: invalidated already, when it dropped
            raw.invalidate()
    finally:
        if close:
            _give_back(raw, stale)


def _raw_close(raw: Any, stale: bool = False, close: bool = True) -> None:
    """Give back a lock connection whose lock was let go of already (`close`; else leave it
    to its caller, out of autocommit mode)."""
    try:
        raw.dbapi_connection.autocommit = False
    except Exception:  # noqa: BLE001 (the session is gone)
        if raw.dbapi_connection is not None:
            raw.invalidate()
    finally:
        if close:
            _give_back(raw, stale)


@contextlib.contextmanager
def _file_lock(lock_path: str | None, thread_id: str, ns: str) -> Iterator[None]:
    assert lock_path is not None
    fd = _lock_fd(lock_path)
    offset = int.from_bytes(_key_digest("thread", thread_id, ns)[:8], "big") >> 2
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EAGAIN):
            raise _busy(thread_id, "another process") from None
        raise
    try:
        yield
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)


class _AdvisoryLock:
    """A thread's PostgreSQL advisory lock, taken on a pooled connection that holds it for the run.

    The lock's key is scoped to the database and schema (`scope`, asked of the server once), so
    two schemas of one server, like two test runs, do not lock each other's threads.
    """

    def __init__(self, engine: Callable[[], Engine]) -> None:
        self._engine = engine
        """The saver's sync engine, whose dialect tells a dropped connection apart."""
        self.scope: str | None = None
        """`database.schema` of the server, once known."""

    def retry(
        self, thread_id: str, ns: str, checkout: Callable[[], Any], read: Any = None
    ) -> tuple[Any, int, list[Any] | None]:
        """A connection from `checkout` holding the thread's lock, the lock's key, and the rows
        of `read` (see `try_lock`); a connection found dropped is replaced once."""
        for attempt in (0, 1):
            raw = checkout()
            try:
                got: list[Any] = []
                key = self.try_lock(raw, thread_id, ns, read, got)
                return raw, key, (got[0] if got else None)
            except _Dropped as dropped:
                raw.close()
                if attempt:
                    raise dropped.error from None
            except BaseException:
                raw.close()
                raise
        raise AssertionError("unreachable")

    def try_lock(
        self, raw: Any, thread_id: str, ns: str, read: Any = None, out: list[Any] | None = None
    ) -> int:
        """Take the thread's advisory lock on `raw` (in autocommit mode while held).

        With `read` (a statement and its parameters), the statement goes in the same round
        trip, right after the lock (psycopg's pipeline; two statements, so the read sees what
        was committed before the lock was taken), and its rows are appended to `out` (as one
        list) if the lock was taken. A read that fails is dropped: the lock is
        then taken alone, and the caller reads as it would have.
        """
        cursor = None
        try:
            raw.dbapi_connection.autocommit = True
            cursor = raw.cursor()
            if self.scope is None:
                cursor.execute("SELECT current_database() || '.' || current_schema()")
                self.scope = str(cursor.fetchone()[0])
            key = _advisory_key(self.scope, thread_id, ns)
            got = None
            if read is not None and out is not None:
                got = self._lock_and_read(raw, cursor, key, read, out)
            if got is None:
                cursor.execute("SELECT pg_try_advisory_lock(%(k)s)", {"k": key})
                got = cursor.fetchone()[0]
        except BaseException as e:
            _handle_drop(self._engine().dialect, raw, e, cursor)
            with contextlib.suppress(Exception):
                raw.dbapi_connection.autocommit = False
            raise
        finally:
            if cursor is not None:
                with contextlib.suppress(Exception):
                    cursor.close()
        if not got:
            raw.dbapi_connection.autocommit = False
            raise _busy(thread_id, "another process")
        return key

    def _lock_and_read(self, raw: Any, cursor: Any, key: int, read: Any, out: list[Any]) -> Any:
        """`try_lock`'s lock and read in one round trip: whether the lock was taken, or None
        when the read failed (the lock let go of, if it was taken)."""
        conn = raw.driver_connection
        lock = ("SELECT pg_try_advisory_lock(%(k)s)", {"k": key})
        wire = wire_of(conn)
        pipelined = wire is not None or isinstance(conn, psycopg.AsyncConnection)
        reader: Any = None if pipelined else conn.cursor()
        try:
            if wire is not None:
                taken, rows = wire.pipeline([lock, read])
                got = taken[0][0]
            elif pipelined:  # the async engine's, awaited from SQLAlchemy's greenlet
                got, rows = await_only(_apipelined(conn, lock, read))
            else:
                with conn.pipeline():
                    cursor.execute(*lock)
                    reader.execute(*read)
                got = cursor.fetchone()[0]
                rows = reader.fetchall()
            if got:
                out.append(rows)
            return got
        except Exception as e:  # noqa: BLE001 (a drop is raised; any other failure, below)
            _handle_drop(self._engine().dialect, raw, e, reader)
            # Not a dropped connection: the read itself failed (the lock, a session lock, was
            # taken or not whatever became of the read's implicit transaction).
            cursor.execute("SELECT pg_advisory_unlock_all()")
            return None
        finally:
            if reader is not None:
                with contextlib.suppress(Exception):
                    reader.close()


async def _apipelined(conn: psycopg.AsyncConnection[Any], lock: Any, read: Any) -> Any:
    """`_lock_and_read`'s two statements in one pipeline of psycopg's async connection."""
    locking, reading = conn.cursor(), conn.cursor()
    try:
        async with conn.pipeline():
            await locking.execute(*lock)
            await reading.execute(*read)
        taken = await locking.fetchone()
        return (taken[0] if taken else False), await reading.fetchall()
    finally:
        await locking.close()
        await reading.close()


class _Hold:
    """A run's hold on a thread's advisory lock (PostgreSQL), kept while the run goes on.

    The lock goes with its session: a restart, a failover or `pg_terminate_backend` ends it
    while the run lives, and another process may take the thread meanwhile. So before each
    write of the thread the saver asks whether the session ended (`ended`, a look at its socket
    that costs no round trip); if it did, it takes the lock again on a new session, and goes on
    only if the thread is as this run left it (`seen`); else `ThreadLockLostError`.
    """

    __slots__ = (
        "aguard",
        "conn",
        "forked",
        "guard",
        "head",
        "key",
        "lost",
        "ns",
        "raw",
        "released",
        "seen",
        "tasks",
        "thread_id",
    )

    def __init__(self, thread_id: str, ns: str, key: int, raw: Any, conn: Any = None) -> None:
        self.thread_id = thread_id
        self.ns = ns
        self.key = key
        self.raw = raw
        """The pooled connection holding the lock (a `PoolProxiedConnection`)."""
        self.conn = conn
        """Async holds: the `AsyncConnection` of `raw`."""
        self.lost = False
        """Its session was found ended, and the lock not taken back yet."""
        self.seen: dict[str, tuple[str | None, int]] = {}
        """Per namespace written under the hold: the head this run last read or wrote, and how
        many pending writes it knows of on it. The thread is "as this run left it" when the
        database agrees for every one."""
        self.guard = threading.Lock()
        """Held while the lock's connection is used (a sync run's own operations run on it)."""
        self.aguard: Any = None
        """Async holds: an `asyncio.Lock`, held while the lock's connection is used (an async
        run's own operations run on it, `SQLSaver._arun_thread`) or the lock is checked or
        taken back."""
        self.head: list[Any] | None = None
        """The rows of the head, read in the lock's round trip, until the run's first operation
        (`SQLSaver.get_tuple` or `aget_tuple` of the head takes them)."""
        self.tasks: tuple[str, list[str]] | None = None
        """The run's head in its own namespace and the ids of its step's tasks, once known."""
        self.released = False
        """The lock was let go of with the run's last write (a finished checkpoint); a write
        after it takes the lock back as after a lost session (`lost` is set too)."""
        self.forked = False
        """This process is a child forked from the one that made the hold, mid-run
        (`SQLEngines._forked`): the lock, its connection and the run are that process's.
        Nothing of it is used here: a write under it is refused (`_forked_away`), a read goes
        to the pool, and the run's end lets go of nothing."""

    def note_read(self, ns: str, head_id: str | None, writes: int) -> None:
        self.seen[ns] = (head_id, writes)

    def note_put(self, ns: str, checkpoint_id: str, next_tasks: Any = None) -> None:
        self.seen[ns] = (checkpoint_id, 0)
        self.note_tasks(ns, checkpoint_id, next_tasks)

    def note_tasks(self, ns: str, checkpoint_id: str, next_tasks: Any) -> None:
        """The tasks of the run's checkpoint `checkpoint_id` (its `next_tasks`, pairs of node
        and task id), when it is the run's own namespace's."""
        if ns == self.ns:
            self.tasks = (checkpoint_id, [t[1] for t in next_tasks or ()])

    def pauses(self, ns: str, checkpoint_id: str, task_id: str, rows: list[Any]) -> bool:
        """Whether writes of `task_id` on `checkpoint_id` (`rows`, as `_writes_args` makes
        them) end the run: an `interrupt()` of the only task of the run's step, in the run's
        own namespace, with no answer among them. The run pauses on it and writes nothing
        more (if it does, the write takes the lock back first)."""
        if ns != self.ns or self.lost or self.tasks != (checkpoint_id, [task_id]):
            return False
        return any(r["c"] == INTERRUPT for r in rows) and not any(
            r["c"] in (RESUME, ERROR) for r in rows
        )

    def note_writes(self, ns: str, checkpoint_id: str, n: int) -> None:
        known = self.seen.get(ns)
        if known is not None and known[0] == checkpoint_id:
            self.seen[ns] = (checkpoint_id, known[1] + n)
        else:
            self.seen.pop(ns, None)  # writes on another checkpoint: not followed

    def ended(self) -> bool:
        """True when the lock's session has ended, as far as can be told without a round trip:
        the connection was invalidated or closed, or its socket has something to read (an idle
        session in autocommit mode is sent nothing, except the server's last word as it ends
        the session, or a notice: `probe` tells them apart)."""
        if self.lost:
            return True
        driver = getattr(self.raw, "driver_connection", None)
        if driver is None or getattr(driver, "closed", True) or getattr(driver, "broken", False):
            return True
        try:
            fd = driver.pgconn.socket
            return bool(select.select([fd], [], [], 0)[0])
        except Exception:  # noqa: BLE001 (no socket to look at: the connection is gone)
            return True


def _probe(raw: Any) -> bool:
    """True when the session of `raw` still answers (so it holds its locks)."""
    try:
        cursor = raw.cursor()
        try:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        finally:
            cursor.close()
    except Exception:  # noqa: BLE001 (it does not: the session ended)
        return False
    return True


def _moved(raw: Any, hold: _Hold) -> str | None:
    """What another run changed of the thread while `hold` had lost its lock, read on `raw`
    (holding the lock again), or None when it is as the hold's run left it."""
    cursor = raw.cursor()
    try:
        for ns, (head_id, writes) in hold.seen.items():
            params = {"t": hold.thread_id, "ns": ns}
            cursor.execute(
                "SELECT head_id FROM checkpoint_threads"
                " WHERE thread_id = %(t)s AND checkpoint_ns = %(ns)s",
                params,
            )
            row = cursor.fetchone()
            current = row[0] if row else None
            if current != head_id:
                return f"its head is {current!r}, not {head_id!r}"
            if head_id is None:
                continue
            cursor.execute(
                "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %(t)s"
                " AND checkpoint_ns = %(ns)s AND checkpoint_id = %(id)s",
                {**params, "id": head_id},
            )
            count = int(cursor.fetchone()[0])
            if count != writes:
                return f"checkpoint {head_id!r} has {count} pending writes, not {writes}"
    finally:
        cursor.close()
    return None


def _forked_away(thread_id: str) -> ThreadLockLostError:
    return ThreadLockLostError(
        f"thread {thread_id!r}: this process was forked from inside a run of the thread, and "
        "the run's lock is the parent process's, which goes on with the run; its copy here "
        "stopped and wrote nothing. Fork between runs, or end a child forked inside a node "
        "with os._exit() (as multiprocessing does) instead of returning into the run.",
        thread_id,
    )


def _lost(thread_id: str, why: str) -> ThreadLockLostError:
    return ThreadLockLostError(
        f"thread {thread_id!r}: this run's lock on it ended with its database session (a "
        f"restart, a failover or an ended session), and {why}; this run stopped and wrote "
        "nothing more (an effect's outcome it recorded stays). Resume the thread to go on.",
        thread_id,
    )
