"""Database fixtures for the governance tests: a SQLite file and the real PostgreSQL (a schema
per test, `pg_url` of the root conftest), and `kit`, the governance core on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from bot.approvals.db import Database
from tests.kit.signoff import Kit


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of a fresh, empty database: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{quote(str(tmp_path / 'signoff.db'))}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    """A `Database` on `db_url`, upgraded."""
    database = Database(db_url)
    await database.upgrade()
    yield database
    await database.aclose()


# ---- the governance core on `db_url` (test_decisions, test_workflows, test_sweep, test_cli) ----


@pytest.fixture
async def kit(db_url: str, tmp_path: Path) -> AsyncIterator[Kit]:
    """`Signoff` on a fresh, upgraded database with the test policy (`tests.kit.flows.POLICY`),
    a clock the test moves (`kit.clock`) and a `RecordingSink` (`kit.sink`)."""
    bench = Kit(db_url, tmp_path)
    await bench.db.upgrade()
    yield bench
    await bench.aclose()
