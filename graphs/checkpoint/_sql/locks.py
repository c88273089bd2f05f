"""One run per thread (`SQLSaver.lock_thread`): the locks, in this process and across processes.

PostgreSQL takes a session-level advisory lock on a pooled connection held for the run; SQLite
takes a byte-range `fcntl` lock in `<file>.locks`. Either is released by the operating system
or the server when the holding process dies, even by SIGKILL, so a crashed run can be resumed
at once by another process.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from ...errors import ThreadBusyError

# ---- process-wide lock registry ---------------------------------------------------------
# POSIX record locks belong to the process, and closing *any* descriptor of a file drops all of
# the process's locks on it, so each lock file is opened once per process and never closed.

_proc_guard = threading.Lock()
_proc_held: set[tuple[str, str, str]] = set()
_lock_fds: dict[str, int] = {}


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


def _raw_unlock(raw: Any, key: int, close: bool = True) -> None:
    try:
        cursor = raw.cursor()
        cursor.execute("SELECT pg_advisory_unlock(%(k)s)", {"k": key})
        cursor.close()
        raw.dbapi_connection.autocommit = False
    except Exception:  # noqa: BLE001 (the session, and with it the lock, is gone)
        raw.invalidate()
    finally:
        if close:
            raw.close()


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
