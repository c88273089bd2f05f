"""Fixtures for the Slack stand-in's tests: a fake Slack serving on a free local port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.sandbox import FakeSlack

TOKEN = "xoxb-sandbox-test"
APP_TOKEN = "xapp-1-sandbox-test"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    """A fake Slack with the demo workspace, serving while the test runs; it issued `TOKEN`
    and `APP_TOKEN` (the ones the tests' clients use), and takes no other."""
    async with FakeSlack.running(tokens={TOKEN}, app_tokens={APP_TOKEN}) as fake:
        yield fake
