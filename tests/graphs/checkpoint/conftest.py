"""Databases for the SQL saver tests: a SQLite file per test, or a PostgreSQL schema per test
(`pg_url` of the root conftest: the local server, never skipped under `CI=true`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
