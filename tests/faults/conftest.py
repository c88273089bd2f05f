"""Fixtures of the fault tests: the end-to-end kit of `tests/slack` (real processes: the fake
Slack and `signoff run`), a fake Slack of this folder's own, and the order of the tests that
restart PostgreSQL (at the very end of the session, after every other test)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "slack"))

from _e2e_kit import FakeSlackProcess


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "restarts_postgres: restarts the local PostgreSQL server (run after all else)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that restart PostgreSQL run at the very end of the session, after every other."""
    last = [item for item in items if item.get_closest_marker("restarts_postgres")]
    if last:
        items[:] = [item for item in items if item not in last] + last


@pytest.fixture(scope="module")
def fake_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeSlackProcess]:
    """A fake Slack per module: a module's faults (paused, failing calls) stay its own."""
    fake = FakeSlackProcess(tmp_path_factory.mktemp("fake-slack"))
    yield fake
    fake.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session
