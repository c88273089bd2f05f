"""LangGraph's SQLite and PostgreSQL savers at their paths: `savers_program.py`, written once
against LangGraph's, is run on LangGraph's classes and on `graphs`' with only the imports
switched, each phase in a fresh interpreter; what it prints is compared whole.

It shows, on both: `SqliteSaver.from_conn_string(path)` needs no `setup()` (the tables come on
first use) and `SqliteSaver(sqlite3.connect(path))` reads the thread back; `PostgresSaver`
refuses to run before `setup()` and works after it; the async savers do the same; and values
of the classes the state schema names (a dataclass, a pydantic model, an enum), registered
nowhere, come back as those classes in the second process.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import pg

PROGRAM = Path(__file__).with_name("savers_program.py")
PHASES = ("write", "read", "async")


def run_phase(dialect: str, backend: str, phase: str, where: str) -> dict[str, Any]:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import savers_program; "
        "savers_program.main(sys.argv[2:])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(PROGRAM.parent), dialect, backend, phase, where],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def run_all(dialect: str, backend: str, where: str) -> dict[str, Any]:
    return {phase: run_phase(dialect, backend, phase, where) for phase in PHASES}


def check_restored(seen: dict[str, Any]) -> None:
    """Ours, read back in another process: the classes themselves, not dicts."""
    assert seen["read"]["before"]["types"] == ["Ticket", "Ticket", "Review", "Ticket"]
    assert (
        "Ticket(title='disk full', priority=<Priority.HIGH: 'high'>"
        in seen["read"]["before"]["values"]
    )
    assert seen["read"]["after"]["checkpoints"] > seen["read"]["before"]["checkpoints"]


def test_sqlite_savers_do_what_langgraphs_do(tmp_path: Path) -> None:
    seen = {}
    for dialect in ("langgraph", "graphs"):
        path = tmp_path / f"{dialect}.sqlite"
        seen[dialect] = run_all(dialect, "sqlite", str(path))
    assert seen["graphs"] == seen["langgraph"]
    check_restored(seen["graphs"])
    # graphs' tables, created on first use, are SQLSaver's: it reads the same thread, once the
    # program's graph is compiled here (its schema names the classes stored)
    from graphs.checkpoint.sql import SQLSaver

    sys.path.insert(0, str(PROGRAM.parent))
    try:
        import savers_program
    finally:
        sys.path.remove(str(PROGRAM.parent))
    with SQLSaver.from_conn_string(f"sqlite:///{tmp_path / 'graphs.sqlite'}") as saver:
        app = savers_program.build("graphs", saver)
        values = app.get_state({"configurable": {"thread_id": "t1"}}).values
    assert [type(t) for t in values["tickets"]] == [savers_program.Ticket] * 4


@pytest.fixture
def two_schemas(pg_server: str) -> Iterator[tuple[str, str]]:
    schemas = (pg.new_schema(), pg.new_schema())
    try:
        yield pg.url_on(schemas[0]), pg.url_on(schemas[1])
    finally:
        for schema in schemas:
            pg.drop_schema(schema)


@pytest.mark.postgres
def test_postgres_savers_do_what_langgraphs_do(two_schemas: tuple[str, str]) -> None:
    seen = {
        dialect: run_all(dialect, "postgres", url)
        for dialect, url in zip(("langgraph", "graphs"), two_schemas, strict=True)
    }
    assert seen["graphs"] == seen["langgraph"]
    assert seen["graphs"]["write"]["refused before setup"] is True
    check_restored(seen["graphs"])


def test_sqlite_saver_takes_a_connection_and_creates_tables_on_first_use(tmp_path: Path) -> None:
    from graphs.checkpoint.sqlite import SqliteSaver
    from graphs.graph import END, START, StateGraph

    path = tmp_path / "fresh.sqlite"
    conn = sqlite3.connect(path)
    saver = SqliteSaver(conn)
    g = StateGraph(dict)  # type: ignore[type-var]
    g.add_node("n", lambda s: {"n": 1})
    g.add_edge(START, "n")
    g.add_edge("n", END)
    config = {"configurable": {"thread_id": "t"}}
    assert saver.get_tuple(config) is None  # a read on the empty file: no "run setup()" error
    g.compile(checkpointer=saver).invoke({"n": 0}, config)
    saver.close()
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert {"checkpoint_threads", "checkpoints", "checkpoint_blobs", "checkpoint_writes"} <= tables


def test_the_savers_take_no_serializer() -> None:
    from graphs.checkpoint.postgres import PostgresSaver
    from graphs.checkpoint.sqlite import SqliteSaver

    for cls, where in ((SqliteSaver, ":memory:"), (PostgresSaver, pg.PG_URL)):
        with pytest.raises(TypeError) as info:
            cls(where, serde=object())
        assert "takes no serializer" in str(info.value)


@pytest.mark.postgres
def test_postgres_saver_takes_a_psycopg_connection(pg_url: str) -> None:
    import psycopg

    from graphs.checkpoint.postgres import PostgresSaver

    conn_string = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conn_string) as conn:
        saver = PostgresSaver(conn)
        try:
            saver.setup()
            conn.execute("SELECT 1")
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            }
        finally:
            saver.close()
    assert {
        "checkpoint_threads",
        "checkpoints",
        "checkpoint_blobs",
        "checkpoint_writes",
    } <= names  # in the connection's schema
