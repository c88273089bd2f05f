"""The end-to-end fixtures, shared by `tests/slack` and `tests/fuzz` (their conftests import
them): one fake Slack process per session, the module's bot's database, and `e2e`, a test's
hands on both processes.

Each end-to-end module defines a module-scoped `bot` fixture (a `BotProcess`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from bot.sandbox.client import SandboxClient
from tests.kit.e2e import E2E, BotDatabase, BotProcess, FakeSlackProcess

__all__ = ["bot_db", "e2e", "fake_slack", "http"]


@pytest.fixture(scope="session")
def fake_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeSlackProcess]:
    fake = FakeSlackProcess(tmp_path_factory.mktemp("fake-slack"))
    yield fake
    fake.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


@pytest.fixture(scope="module")
def bot_db(bot: BotProcess) -> Iterator[BotDatabase]:
    """The module's bot's database (each test module defines its `bot`)."""
    db = BotDatabase(bot.read_url)
    yield db
    db.close()


@pytest.fixture
async def e2e(
    fake_slack: FakeSlackProcess, bot: BotProcess, bot_db: BotDatabase, http: aiohttp.ClientSession
) -> AsyncIterator[E2E]:
    """The fake Slack connected to the module's bot."""
    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, bot.events_url)
        yield E2E(slack, bot, bot_db, http)
