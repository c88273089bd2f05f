"""What every test folder shares: the PostgreSQL fixtures, the "in CI" rule, and the order of
the tests that restart PostgreSQL.

- `pg_server` (session): the server's URL once it answered (`tests.kit.pg.require_server`).
- `pg_url`: a URL on a new, empty schema of the test's own, dropped afterwards.
- Under `CI=true` a test marked `postgres` never skips: a skip is reported as a failure.
- Tests marked `restarts_postgres` run at the very end of the session, after every other.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from tests.kit import pg


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The PostgreSQL server's URL, once it answered; skip (fail under CI) when it does not."""
    return pg.require_server()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL on a new, empty schema of its own (dropped afterwards)."""
    schema = pg.new_schema()
    try:
        yield pg.url_on(schema)
    finally:
        pg.drop_schema(schema)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if pg.IN_CI and report.skipped and item.get_closest_marker("postgres") is not None:
        skip = report.longrepr  # (path, line, "Skipped: reason") for a skip
        reason = skip[2] if isinstance(skip, tuple) else str(skip)
        report.outcome = "failed"
        report.longrepr = f"{reason} (CI=true: PostgreSQL tests must run, not skip)"
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that restart PostgreSQL run at the very end of the session, after every other."""
    last = [item for item in items if item.get_closest_marker("restarts_postgres")]
    if last:
        items[:] = [item for item in items if item not in last] + last
