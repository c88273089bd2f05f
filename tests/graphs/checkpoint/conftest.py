"""Databases for the SQL saver tests: a SQLite file per test, a PostgreSQL schema per test.

PostgreSQL is the local server (`postgresql://postgres@127.0.0.1:5432/test`, or
`SIGNOFF_TEST_PG_URL`). Each test gets a fresh schema, put first on the search path through the
URL (`?options=-c search_path=...`), and dropped afterwards. Outside CI an unreachable server
skips the PostgreSQL cases; in CI (`CI=true`) it fails them loudly.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

PG_URL = os.environ.get("SIGNOFF_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
QUICK = os.environ.get("SIGNOFF_TEST_QUICK", "") not in ("", "0")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The base PostgreSQL URL, once the server answers."""
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as e:
        message = f"PostgreSQL at {PG_URL} is unreachable: {e}"
        if _in_ci():
            pytest.fail(message + " (CI must run the PostgreSQL tests)", pytrace=False)
        pytest.skip(message)
    return PG_URL


def with_schema(base_url: str, schema: str) -> str:
    sep = "&" if "?" in base_url else "?"
    return f"{base_url}{sep}options={quote(f'-c search_path={schema}')}"


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    import psycopg

    schema = f"signoff_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_schema(pg_server, schema)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'checkpoints.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def saver(db_url: str) -> Iterator[object]:
    """A set-up `SQLSaver` on a fresh database."""
    from graphs.checkpoint.sql import SQLSaver

    s = SQLSaver(db_url)
    s.setup()
    try:
        yield s
    finally:
        s.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "restarts_postgres: restarts the local PostgreSQL server (run after all else)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that restart PostgreSQL run at the very end of the session, after every other."""
    last = [item for item in items if item.get_closest_marker("restarts_postgres")]
    if last:
        items[:] = [item for item in items if item not in last] + last
