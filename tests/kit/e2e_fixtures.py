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

__all__ = ["bot_db", "e2e", "fake_slack", "http", "over", "socket_bot_db"]


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


@pytest.fixture(params=["http", "socket"])
async def over(
    request: pytest.FixtureRequest,
    fake_slack: FakeSlackProcess,
    http: aiohttp.ClientSession,
) -> AsyncIterator[E2E]:
    """`e2e` over each transport: the module's `bot` over signed HTTP, then its `socket_bot`
    (the same policy, `signoff run` with an `xapp-` token) over Socket Mode. A module that
    uses it defines both; the core flows take it, the rest `e2e`."""
    if request.param == "http":
        bot: BotProcess = request.getfixturevalue("bot")
        db: BotDatabase = request.getfixturevalue("bot_db")
    else:
        bot = request.getfixturevalue("socket_bot")
        db = request.getfixturevalue("socket_bot_db")
    async with SandboxClient(fake_slack.url) as slack:
        if request.param == "http":
            await fake_slack.connect(slack, bot.events_url)
        else:
            await fake_slack.connect_socket(slack)
        yield E2E(slack, bot, db, http)


@pytest.fixture(scope="module")
def socket_bot_db(socket_bot: BotProcess) -> Iterator[BotDatabase]:
    """The module's Socket Mode bot's database."""
    db = BotDatabase(socket_bot.read_url)
    yield db
    db.close()
