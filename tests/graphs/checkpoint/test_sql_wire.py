"""A sync run's PostgreSQL statements on libpq itself (`_sql/wire.py`), against the server.

What the saver sends this way must come back as psycopg would have given it: the same values,
the same errors with the same SQLSTATE, a failed pipeline that runs nothing after its error,
and a connection that is dropped, not reused, when the exchange was cut off.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from sqlalchemy.engine import make_url

from graphs import END, START, SQLSaver, StateGraph
from graphs.checkpoint._sql.wire import wire_of
from tests.kit import pg

pytestmark = pytest.mark.postgres


@pytest.fixture
def conn(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute("CREATE TABLE t (id text PRIMARY KEY, b bytea, n bigint, f float8, ok boolean)")
        yield c


def test_values_come_back_as_sent(conn: psycopg.Connection[Any]) -> None:
    wire = wire_of(conn)
    assert wire is not None
    row = {
        "id": "ünïcode ✓ 'quoted' $1 %s",
        "b": bytes(range(256)),
        "n": -(2**62),
        "f": 1e-300,
        "ok": False,
    }
    insert = "INSERT INTO t VALUES (%(id)s, %(b)s, %(n)s, %(f)s, %(ok)s)"
    assert wire.pipeline([("BEGIN", None), (insert, row), ("COMMIT", None)]) == [[], [], []]
    empty = {"id": "empty", "b": b"", "n": None, "f": None, "ok": None}
    wire.one(insert, empty)
    got = wire.pipeline([("SELECT * FROM t ORDER BY id = 'empty'", {})])[0]
    assert got == [tuple(row.values()), tuple(empty.values())]
    assert conn.execute("SELECT * FROM t WHERE id = %s", (row["id"],)).fetchone() == tuple(
        row.values()
    )  # psycopg reads what the wire wrote
    assert wire.one("SELECT count(*) FROM t WHERE id LIKE %(p)s || '%%'", {"p": "ü"}) == 1


def test_an_error_is_psycopgs_and_stops_the_pipeline(conn: psycopg.Connection[Any]) -> None:
    wire = wire_of(conn)
    assert wire is not None
    insert = "INSERT INTO t (id) VALUES (%(id)s)"
    wire.one(insert, {"id": "a"})
    with pytest.raises(psycopg.errors.UniqueViolation) as caught:
        wire.pipeline(
            [("BEGIN", None), (insert, {"id": "b"}), (insert, {"id": "a"}), (insert, {"id": "c"})]
        )
    assert caught.value.sqlstate == "23505"
    assert caught.value.diag.constraint_name == "t_pkey"
    # The transaction the pipeline opened is failed, not committed: rolled back, nothing of it
    # stays, and the connection goes on.
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
    conn.rollback()
    assert wire.pipeline([("SELECT id FROM t ORDER BY id", {})]) == [[("a",)]]
    with pytest.raises(psycopg.errors.DivisionByZero):
        wire.one("SELECT 1 / count(*) FROM t WHERE false")
    assert wire.one("SELECT count(*) FROM t") == 1


def test_a_statement_is_prepared_once_per_types(conn: psycopg.Connection[Any]) -> None:
    wire = wire_of(conn)
    assert wire is not None and wire_of(conn) is wire
    for i in range(20):
        wire.one("INSERT INTO t (id, n) VALUES (%(id)s, %(n)s)", {"id": str(i), "n": i})
    wire.one("INSERT INTO t (id, n) VALUES (%(id)s, %(n)s)", {"id": "x", "n": None})
    names = conn.execute(
        "SELECT name FROM pg_prepared_statements WHERE name LIKE 'graphs_w%%'"
    ).fetchall()
    assert len(names) == 2  # one for an int, one for a NULL: their parameter types differ


def test_an_interrupted_exchange_closes_the_connection(conn: psycopg.Connection[Any]) -> None:
    """Cut off while waiting on the server, what the server did is unknown: the connection is
    closed (the pool drops it), never handed out again mid-exchange."""
    wire = wire_of(conn)
    assert wire is not None

    def interrupt(*_: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            wire.pipeline([("BEGIN", None), ("SELECT pg_sleep(5)", {}), ("COMMIT", None)])
        assert time.monotonic() - started < 4
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert conn.closed
    with pytest.raises(psycopg.OperationalError, match="closed"):
        wire.one("SELECT 1")


def test_a_lost_connection_is_closed_for_the_pool(conn: psycopg.Connection[Any]) -> None:
    wire = wire_of(conn)
    assert wire is not None
    pid = wire.one("SELECT pg_backend_pid()")
    with psycopg.connect(pg.admin_conninfo(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(psycopg.OperationalError):
        wire.one("SELECT 1")
    assert conn.closed  # what SQLAlchemy's psycopg dialect reads as a disconnect


def test_a_connection_told_not_to_prepare_is_left_to_psycopg(pg_url: str) -> None:
    """`prepare_threshold=None` (PgBouncer in transaction mode, say) means no named prepared
    statements: the wire, which prepares every statement, stays off it."""
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True, prepare_threshold=None) as c:
        assert wire_of(c) is None


class _State(TypedDict, total=False):
    log: Annotated[list[str], lambda a, b: a + b]
    blob: bytes


def test_a_run_on_the_wire_reads_back_what_it_wrote(pg_url: str) -> None:
    """A durable run whose steps went on the wire is read back whole, by a saver of another
    process's making (a fresh one) and by psycopg's own cursor path (the async API)."""

    def step(name: str) -> Any:
        return lambda s: {"log": [name], "blob": bytes(range(256)) + name.encode()}

    g = StateGraph(_State)
    for name in ("a", "b", "c"):
        g.add_node(name, step(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    saver = SQLSaver(pg_url)
    saver.setup()
    try:
        out = g.compile(checkpointer=saver).invoke(
            {"log": []}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        saver.close()
    assert out == {"log": ["a", "b", "c"], "blob": bytes(range(256)) + b"c"}
    fresh = SQLSaver(pg_url)
    try:
        got = fresh.get_tuple({"configurable": {"thread_id": "t"}})
        assert got is not None
        assert got.checkpoint["channel_values"] == out
        assert [c.metadata["step"] for c in fresh.list({"configurable": {"thread_id": "t"}})] == [
            3,
            2,
            1,
            0,
            -1,
        ]
    finally:
        fresh.close()


def test_statements_deallocated_behind_its_back_are_prepared_again(
    conn: psycopg.Connection[Any],
) -> None:
    """psycopg sends DEALLOCATE ALL after a DROP (or a rollback) once it prepared statements of
    its own: the wire's go too. A statement refused for it, with nothing run before it, is
    prepared afresh and sent again; after a refusal further in, the next call prepares afresh."""
    wire = wire_of(conn)
    assert wire is not None
    count = "SELECT count(*) FROM t"
    insert = "INSERT INTO t (id) VALUES (%(id)s)"
    assert wire.one(count) == 0
    wire.one(insert, {"id": "a"})
    for _ in range(6):
        conn.execute("SELECT 1")  # psycopg prepares it from the fifth use
    conn.execute("CREATE TABLE scratch (x int)")
    conn.execute("DROP TABLE scratch")  # psycopg's DEALLOCATE ALL
    assert wire.pipeline([("BEGIN", None), (insert, {"id": "b"}), ("COMMIT", None)])
    assert wire.one(count) == 2  # inserted once, not twice
    conn.execute("DEALLOCATE ALL")
    with pytest.raises(psycopg.errors.InvalidSqlStatementName):
        wire.pipeline([("SELECT 1 + %(n)s", {"n": 1}), (count, {})])  # the first one ran
    assert wire.one(count) == 2


def test_the_least_recently_used_statements_are_deallocated(
    conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived connection keeps a bounded number of statements on the server."""
    from graphs.checkpoint._sql import wire as wire_module

    monkeypatch.setattr(wire_module, "_MAX_PREPARED", 3)
    wire = wire_of(conn)
    assert wire is not None
    hot = "SELECT count(*) FROM t"
    for i in range(6):
        assert wire.one(hot) == 0  # used between the others: never the least recent
        assert wire.one(f"SELECT {i} + %(n)s", {"n": 1}) == i + 1
    prepared = conn.execute(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'graphs_w%%'"
    ).fetchall()
    assert len(prepared) == 3
    assert any("count(*)" in row[0] for row in prepared)
    assert wire.one("SELECT 0 + %(n)s", {"n": 1}) == 1  # evicted, prepared again
