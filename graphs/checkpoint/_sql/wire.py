"""PostgreSQL statements sent on libpq itself, through psycopg's `pq` layer.

A run's durable step is one statement (`write.py`) in one round trip, and on this kind of
machine psycopg's cursor spends about 50 µs of Python on it beyond libpq's own 10: it adapts
each parameter through its adapters map, converts the query, keeps its prepared-statement
cache and drives the exchange through a chain of generators. A pause is a dozen statements, so
that was most of the client's time on a run's path. The run's statements need none of it: each
is one of a few fixed statements, its parameters are `str`, `bytes`, `int`, `float`, `bool` or
None, and its columns are integers, text, `bytea`, booleans or doubles.

`Wire` sends such statements on a sync psycopg `Connection`'s own libpq connection (`pgconn`),
under the connection's lock, as psycopg would: each is prepared on the server once (a name of
its own per statement text and parameter types, as psycopg keys its own), sent in libpq's
extended protocol, several in one pipeline with one sync (one round trip), and read back
waiting on the socket with the GIL released. Parameter types are psycopg's (`str` and None
untyped, `bytes` as binary `bytea`, `bool`, `float8`; an `int` is `int8`), so the server reads
each statement as it reads psycopg's; rows come back in binary and are decoded by column type.
An error the server answers is raised as psycopg raises it (`psycopg.errors`, with its SQLSTATE
and diagnostics); a connection lost mid-exchange is left closed (`Connection.closed`), so the
pool drops it as it drops any other.

The wire sends no BEGIN of psycopg's, so only what runs in autocommit mode goes on it (a
pipeline may send its own BEGIN and COMMIT). A connection keeps at most `_MAX_PREPARED` of its
statements, the least recently used deallocated; those psycopg deallocates with its own (its
DEALLOCATE ALL after a rollback or a DROP) are prepared again when next refused.
"""

from __future__ import annotations

import functools
import itertools
import re
import select
import struct
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import pq

__all__ = ["Statement", "Wire", "wire_of"]

Statement = tuple[str, "dict[str, Any] | None"]
"""A statement in psycopg's `%(name)s` style, and its parameters (None: it has none)."""

_PARAM = re.compile(r"%\((\w+)\)s|%%")
_S = pq.ExecStatus
_OK = pq.ConnStatus.OK
_BINARY = pq.Format.BINARY


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True)


_DECODE: dict[int, Callable[[bytes], Any]] = {
    16: lambda raw: raw == b"\x01",  # boolean
    17: bytes,  # bytea
    19: bytes.decode,  # name
    20: _int,  # int8
    21: _int,  # int2
    23: _int,  # int4
    25: bytes.decode,  # text
    701: lambda raw: struct.unpack(">d", raw)[0],  # float8
    1043: bytes.decode,  # varchar
}


@functools.lru_cache(maxsize=512)
def _shape(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """`sql` with `$n` placeholders for its `%(name)s` ones, and the names in order."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        name = m.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _PARAM.sub(number, sql).encode(), tuple(names)


def _encode(value: Any) -> tuple[bytes | None, int, int]:
    """A parameter as libpq sends it: its bytes, its format (1: binary) and its type."""
    kind = type(value)
    if value is None:
        return None, 0, 0
    if kind is str:
        return value.encode(), 0, 0
    if kind is bytes:
        return value, 1, 17
    if kind is bool:
        return (b"t" if value else b"f"), 0, 16
    if kind is int:
        return str(value).encode(), 0, 20
    if kind is float:
        return repr(value).encode(), 0, 701
    raise TypeError(f"a parameter of type {kind.__name__} is not sent on the wire: {value!r}")


def _encode_all(
    sql: str, params: dict[str, Any] | None
) -> tuple[tuple[bytes, tuple[int, ...]], list[bytes | None], list[int]]:
    """A statement's key (its text and parameter types), its values and their formats."""
    text, names = _shape(sql)
    values: list[bytes | None] = []
    formats: list[int] = []
    types: list[int] = []
    for name in names:
        raw, fmt, oid = _encode(params[name])  # type: ignore[index]
        values.append(raw)
        formats.append(fmt)
        types.append(oid)
    return (text, tuple(types)), values, formats


def _rows(result: Any) -> list[tuple[Any, ...]]:
    """A result's rows, each column decoded from binary by its type."""
    ntuples = result.ntuples
    if not ntuples:
        return []
    decoders = []
    for i in range(result.nfields):
        decode = _DECODE.get(oid := result.ftype(i))
        if decode is None:
            raise TypeError(f"a column of type oid {oid} is not read on the wire")
        decoders.append((i, decode))
    get = result.get_value
    rows = []
    for r in range(ntuples):
        row = []
        for i, decode in decoders:
            raw = get(r, i)
            row.append(None if raw is None else decode(raw))
        rows.append(tuple(row))
    return rows


class Wire:
    """Statements on one psycopg connection's libpq connection (see the module)."""

    __slots__ = ("__weakref__", "_conn", "_names", "_pg")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._pg = conn.pgconn
        self._names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}

    def one(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """Send one statement; return the first value of its first row (None if none)."""
        rows = self.pipeline([(sql, params)])[0]
        return rows[0][0] if rows else None

    def pipeline(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """Send `statements` in one round trip and return each one's rows.

        The first that fails raises its error once all are read; the server skips the rest
        (libpq's pipeline mode: from an error to the sync, nothing runs). A transaction the
        statements opened (BEGIN) is then left failed, for the caller to roll back.
        """
        encoded = [_encode_all(sql, params) for sql, params in statements]  # sends nothing
        for attempt in (0, 1):
            answers = self._locked_exchange(encoded)
            error = next((a for a in answers if isinstance(a, psycopg.Error)), None)
            if error is None:
                return answers
            if isinstance(error, psycopg.errors.InvalidSqlStatementName):
                # Deallocated behind our back: psycopg sends DEALLOCATE ALL when it rolls back
                # a transaction (or runs a DROP) after preparing statements of its own. They
                # are prepared afresh, and sent again if nothing but a BEGIN ran before the
                # refused one (that BEGIN rolled back first: the wire runs in autocommit mode).
                self._names.clear()
                refused = answers.index(error)
                if attempt == 0 and all(key[0] == b"BEGIN" for key, _, _ in encoded[:refused]):
                    if refused:
                        self._locked_exchange([_encode_all("ROLLBACK", None)])
                    continue
            raise error
        raise AssertionError("unreachable")

    def _locked_exchange(self, encoded: list[Any]) -> list[Any]:
        pg = self._pg
        with self._conn.lock:
            if pg.status != _OK:
                raise psycopg.OperationalError("the connection is closed")
            try:
                return self._exchange(encoded)
            except BaseException:
                if not self._idle():
                    # Cut off mid-exchange (KeyboardInterrupt, say): what the server did is
                    # unknown, so the connection is closed, and the pool replaces it.
                    pg.finish()
                raise

    def _idle(self) -> bool:
        """libpq waits for nothing: every answer was read, and it is out of pipeline mode."""
        pg = self._pg
        return (
            pg.status == _OK
            and pg.pipeline_status == pq.PipelineStatus.OFF
            and pg.transaction_status != pq.TransactionStatus.ACTIVE
        )

    def _exchange(self, encoded: list[Any]) -> list[Any]:
        """Each statement's rows or error (a refused prepare raises, leaving libpq idle)."""
        pg = self._pg
        sends = [(self._name(key), values, formats) for key, values, formats in encoded]
        if len(sends) == 1:  # one statement is one round trip without a pipeline
            pg.send_query_prepared(*sends[0], result_format=_BINARY)
            self._flush()
            return [self._answer()]
        pg.enter_pipeline_mode()
        for name, values, formats in sends:
            pg.send_query_prepared(name, values, formats, result_format=_BINARY)
        pg.pipeline_sync()
        self._flush()
        answers = [self._answer() for _ in sends]
        sync = self._result()
        if sync is None or sync.status != _S.PIPELINE_SYNC:  # pragma: no cover - libpq's
            raise self._error(sync)
        pg.exit_pipeline_mode()
        return answers

    def _name(self, key: tuple[bytes, tuple[int, ...]]) -> bytes:
        """The statement's prepared name on this connection, preparing it on first use; the
        least recently used is deallocated past `_MAX_PREPARED` (as psycopg's `prepared_max`)."""
        names = self._names
        name = names.pop(key, None)
        if name is None:
            if len(names) >= _MAX_PREPARED:
                oldest = names.pop(next(iter(names)))
                self._pg.send_query_params(b"DEALLOCATE " + oldest, None)
                self._settle(gone_is_ok=True)
            name = b"graphs_w%d" % next(_NUMBERS)
            self._pg.send_prepare(name, key[0], key[1] or None)
            self._settle()
        names[key] = name  # (the most recently used last)
        return name

    def _settle(self, *, gone_is_ok: bool = False) -> None:
        """Flush and read the one answer of a statement outside any pipeline; raise its error
        (with `gone_is_ok`, not that the statement it names does not exist)."""
        self._flush()
        result = self._result()
        self._result()  # None: the end of its results
        if result is not None and result.status == _S.COMMAND_OK:
            return
        error = self._error(result)
        if not (gone_is_ok and isinstance(error, psycopg.errors.InvalidSqlStatementName)):
            raise error

    def _answer(self) -> list[tuple[Any, ...]] | psycopg.Error:
        """The next statement's rows, or its error (a skipped statement's: no rows), after
        reading the end of its results."""
        result = self._result()
        self._result()  # None: the end of this statement's results
        if result is not None and result.status == _S.TUPLES_OK:
            return _rows(result)
        if result is not None and result.status in (_S.COMMAND_OK, _S.PIPELINE_ABORTED):
            return []
        return self._error(result)

    def _error(self, result: Any) -> psycopg.Error:
        if result is not None and result.status == _S.FATAL_ERROR:
            return psycopg.errors.error_from_result(result, self._conn.info.encoding)
        return psycopg.OperationalError(f"unexpected answer from the server: {result!r}")

    def _flush(self) -> None:
        """Send what libpq holds (psycopg keeps the connection non-blocking)."""
        pg = self._pg
        while pg.flush():
            _wait(pg.socket, select.POLLOUT)

    def _result(self) -> Any:
        """The next result, waiting for the server with the GIL released."""
        pg = self._pg
        while pg.is_busy():
            _wait(pg.socket, select.POLLIN)
            pg.consume_input()
        return pg.get_result()


def _wait(fd: int, event: int) -> None:
    poll = select.poll()
    poll.register(fd, event)
    poll.poll()


_NUMBERS = itertools.count()
_MAX_PREPARED = 200
_WIRES: weakref.WeakKeyDictionary[Any, Wire] = weakref.WeakKeyDictionary()


def wire_of(conn: Any) -> Wire | None:
    """The `Wire` of a sync psycopg connection (a pooled connection's `driver_connection`), or
    None (another driver, the async engine's connection, a libpq without pipeline mode, or a
    connection told not to prepare statements): the caller uses a cursor."""
    if not isinstance(conn, psycopg.Connection) or pq.version() < 140000:
        return None
    if conn.prepare_threshold is None:  # told not to prepare (PgBouncer, say): psycopg's way
        return None
    wire = _WIRES.get(conn)
    if wire is None:
        wire = _WIRES[conn] = Wire(conn)
    return wire
