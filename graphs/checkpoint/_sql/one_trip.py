"""SQLAlchemy's aiosqlite driver with one trip to aiosqlite's thread per statement.

aiosqlite runs every call on a SQLite connection in a thread of its own, and each call is a
round trip: the event loop hands the call to the thread, and the thread hands the answer back
through the loop. SQLAlchemy's adapter makes four such calls for one statement (open a cursor,
execute, fetch the rows, close the cursor). On a busy machine each hand-over waits for the
operating system to run the other thread and for the event loop to come round, so a statement
costs four of those waits where the work itself is microseconds; under a burst of clicks a vote
is seven statements, run while it holds SQLite's one write lock.

Here the cursor does all four in one call on the thread, with the same `sqlite3` calls in the
same order, on the same connection, under the adapter's lock: the database sees exactly what it
saw before, and the transaction, its commit and its fsync are untouched. Server-side cursors
(`stream_results`) keep SQLAlchemy's own.

Used by `SQLSaver`'s async engine on SQLite (`async_engine_options`). It subclasses SQLAlchemy
2.1's adapter and calls two private members of aiosqlite's connection (`_execute`, `_conn`):
with another SQLAlchemy (2.0's adapter is built otherwise, and this module does not import
there) or an aiosqlite without those members, SQLAlchemy's adapter is used as it is.
"""

from __future__ import annotations

import collections
import sqlite3
from typing import Any

import aiosqlite
import sqlalchemy
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

__all__ = ["async_engine_options"]


class _OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A client-side cursor: each `execute` is one call on aiosqlite's thread, returning the
    rows, description, rowcount and lastrowid together (the `sqlite3` cursor is opened and
    closed inside that call)."""

    __slots__ = ("_description", "_lastrowid", "_rowcount", "_size")

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection) -> None:
        # No cursor is opened here (that would be a trip of its own): `execute` opens one.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: Any = None
        self._size = 1

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return self._size

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._size = value

    async def _async_soft_close(self) -> None:
        return None  # nothing is open between calls

    def close(self) -> None:
        self._rows.clear()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        try:
            return await_(self._run(operation, parameters, many=False))
        except Exception as error:  # noqa: BLE001 - translated as SQLAlchemy's adapter does
            self._adapt_connection._handle_exception(error)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        try:
            return await_(self._run(operation, seq_of_parameters, many=True))
        except Exception as error:  # noqa: BLE001 - translated as SQLAlchemy's adapter does
            self._adapt_connection._handle_exception(error)

    async def _run(self, operation: Any, parameters: Any, *, many: bool) -> None:
        conn = self._connection  # the aiosqlite connection
        raw = conn._conn  # its sqlite3 connection, used only on its thread (below)

        def on_thread() -> tuple[Any, list[Any], int, Any]:
            cursor = raw.cursor()
            try:
                if many:
                    cursor.executemany(operation, parameters)
                elif parameters is None:
                    cursor.execute(operation)
                else:
                    cursor.execute(operation, parameters)
                description = cursor.description
                rows = cursor.fetchall() if description else []
                return description, rows, cursor.rowcount, cursor.lastrowid
            finally:
                cursor.close()

        async with self._adapt_connection._execute_mutex:
            description, rows, rowcount, lastrowid = await conn._execute(on_thread)
        self._description = description
        self._rows = collections.deque(rows)
        self._rowcount = rowcount
        self._lastrowid = lastrowid


class _OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = _OneTripCursor  # type: ignore[assignment]  # a subclass of it


class _OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        adapted = super().connect(*arg, **kw)  # SQLAlchemy's, for how it opens aiosqlite
        return _OneTripConnection(self, adapted._connection)


def _supported() -> bool:
    if sqlalchemy.__version__.split(".")[:2] != ["2", "1"]:  # the adapter subclassed here
        return False
    return callable(getattr(aiosqlite.Connection, "_execute", None)) and isinstance(
        getattr(aiosqlite.Connection, "_conn", None), property
    )


def async_engine_options() -> dict[str, Any]:
    """`create_async_engine` options for a `sqlite+aiosqlite` URL: this module's driver, or
    nothing (SQLAlchemy's) when the installed aiosqlite does not have what it needs."""
    if not _supported():
        return {}
    return {"module": _OneTripDBAPI(aiosqlite, sqlite3)}
