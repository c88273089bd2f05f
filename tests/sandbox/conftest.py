"""Fixtures for the Slack stand-in's tests: a fake Slack serving on a free local port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.sandbox import FakeSlack

TOKEN = "xoxb-sandbox-test"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    """A fake Slack with the demo workspace, serving while the test runs."""
    async with FakeSlack.running() as fake:
        yield fake
