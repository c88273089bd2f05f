"""Fixtures of the fault tests (real processes, `tests.kit.e2e`: the fake Slack and `signoff
run`): a fake Slack of each module's own, and `http`. The tests that restart PostgreSQL run
last (root conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kit.e2e import FakeSlackProcess
from tests.kit.e2e_fixtures import http

__all__ = ["fake_slack", "http"]


@pytest.fixture(scope="module")
def fake_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeSlackProcess]:
    """A fake Slack per module: a module's faults (paused, failing calls) stay its own."""
    fake = FakeSlackProcess(tmp_path_factory.mktemp("fake-slack"))
    yield fake
    fake.stop()
