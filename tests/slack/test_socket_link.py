"""A Socket Mode link that is gone for good shows: `signoff run` (a process) against the Slack
stand-in (a process), whose app-level token is revoked while the link is cut.

slack_sdk retries for ever; past `SIGNOFF_SOCKET_GRACE` `/healthz` answers 503 with Slack's
reason and what to do, the gauge reads 0, and one log line says so; when the token works again
the link comes back by itself and so do all three.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import BotProcess, FakeSlackProcess, sqlite_url
from tests.kit.flows import DEMO_POLICY

LINK_TOKEN = "xapp-1-link"
"""This test's own app-level token, which the stand-in issues at start (it takes no other)."""


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def until(what: str, check: Callable[[], Any], bot: BotProcess, timeout: float = 45.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise AssertionError(
        f"{what} did not happen within {timeout:g}s; the bot said:\n{bot.output()}"
    )


def connected_gauge(bot: BotProcess) -> float:
    _, text = get(f"{bot.url}/metrics")
    (line,) = [l for l in text.splitlines() if l.startswith("signoff_slack_socket_connected ")]
    return float(line.split()[1])


@pytest.fixture
def socket_bot(tmp_path: Path) -> Iterator[tuple[FakeSlackProcess, BotProcess]]:
    fake = FakeSlackProcess(tmp_path, app_tokens=(LINK_TOKEN,))
    try:
        bot = BotProcess(
            tmp_path, sqlite_url(tmp_path), fake.url, DEMO_POLICY,
            app_token=LINK_TOKEN, SIGNOFF_SOCKET_GRACE="1",
        )  # fmt: skip
        try:
            yield fake, bot
        finally:
            bot.stop()
    finally:
        fake.stop()


async def test_a_revoked_app_token_turns_healthz_503_and_a_new_one_heals_it(
    socket_bot: tuple[FakeSlackProcess, BotProcess],
) -> None:
    fake, bot = socket_bot
    assert get(f"{bot.url}/healthz")[0] == 200
    assert connected_gauge(bot) == 1.0
    async with SandboxClient(fake.url) as slack:
        await slack.revoke_token(LINK_TOKEN)
        assert await slack.socket_disconnect("link_disabled") >= 1

        _, body = until(
            "/healthz answering 503",
            lambda: (r := get(f"{bot.url}/healthz"))[0] == 503 and r,
            bot,
        )
        said = json.loads(body)
        assert said["slack"] == "socket_mode"
        assert "Slack refuses the app-level token (token_revoked)" in said["error"]
        assert "set SLACK_APP_TOKEN" in said["error"]
        assert connected_gauge(bot) == 0.0
        assert bot.output().count("no Socket Mode connection for") == 1  # one line, not a flood

        await slack.reset()  # the token works again
        await slack.use_socket_mode()
        until("/healthz answering 200 again", lambda: get(f"{bot.url}/healthz")[0] == 200, bot)
        assert connected_gauge(bot) == 1.0
        assert "Socket Mode connection is back" in bot.output()
