"""Fixtures for the Slack stand-in's tests: a fake Slack serving on a free local port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.sandbox import FakeSlack

TOKEN = "xoxb-sandbox-test"
APP_TOKEN = "xapp-1-sandbox-test"


MORE_SCOPES = ("channels:read", "groups:read", "im:read", "reactions:read", "reactions:write",
               "users:read")  # fmt: skip


def widened(fake: FakeSlack) -> FakeSlack:
    """`fake`, its bot token given `MORE_SCOPES`: these tests call methods beyond the ones
    signoff's manifest asks scopes for."""
    team = fake.workspace.team
    team.scopes = (*team.scopes, *MORE_SCOPES)
    return fake


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    """A fake Slack with the demo workspace, serving while the test runs; it issued `TOKEN`
    and `APP_TOKEN` (the ones the tests' clients use), and takes no other."""
    async with FakeSlack.running(tokens={TOKEN}, app_tokens={APP_TOKEN}) as fake:
        yield widened(fake)
