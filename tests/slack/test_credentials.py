"""Bad credentials fail fast: `signoff run` asks Slack about its tokens before it serves, and a
token Slack refuses stops it with one line saying which token, what Slack answered and where
to get the right one, instead of a bot that answers /healthz 200 and fails on every message.
A port it cannot listen on stops it the same way, with what it had opened closed.

The bot is a real `signoff run` process against the stand-in process, whose control API
revokes the token each test uses (`token_revoked`, `invalid_auth`, `account_inactive`)."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import (
    APP_TOKEN,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    free_port,
    sqlite_url,
    write_policy,
)
from bot.slack.credentials import (
    CredentialsRefused,
    SlackUnreachable,
    check_credentials,
)
from tests.kit.e2e import BotProcess, FakeSlackProcess
from tests.kit.scenario import POLICY

START_TIMEOUT = 60.0
"""Seconds `signoff run` may take to refuse (it exits at once; the machine may be busy)."""


def run_bot(
    tmp_path: Path,
    slack_url: str,
    bot_token: str,
    app_token: str | None = None,
    *,
    port: int | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": bot_token,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SIGNOFF_SLACK_API_URL": slack_url,
        "SIGNOFF_DATABASE_URL": sqlite_url(tmp_path),
        "SIGNOFF_POLICY": str(write_policy(tmp_path, POLICY)),
        "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
    }
    env.pop("SLACK_APP_TOKEN", None)
    if app_token is not None:
        env["SLACK_APP_TOKEN"] = app_token
    port = free_port() if port is None else port
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "run", "--host", "127.0.0.1", "--port", str(port)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("error", "meaning"),
    [
        ("token_revoked", "the token was revoked or the app uninstalled"),
        ("invalid_auth", "the token is wrong, mistyped or from another workspace"),
        ("account_inactive", "the bot user or the workspace was deactivated"),
    ],
)
async def test_signoff_run_with_a_bot_token_slack_refuses_exits_saying_which_and_where(
    tmp_path: Path, fake_slack: FakeSlackProcess, error: str, meaning: str
) -> None:
    token = f"xoxb-refused-{error}"
    async with SandboxClient(fake_slack.url) as slack:
        await slack.revoke_token(token, error)
        before = len(await slack.calls("auth.test"))
        done = run_bot(tmp_path, fake_slack.url, token)
        refused = (await slack.calls("auth.test"))[before:]

    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("signoff:")]
    assert lines == [
        (
            f"signoff: Slack refused SLACK_BOT_TOKEN: auth.test answered {error} ({meaning}); "
            "copy the Bot User OAuth Token (xoxb-...) from your app's page at "
            "https://api.slack.com/apps, under OAuth & Permissions (reinstall the app to the "
            "workspace if it was uninstalled), into SLACK_BOT_TOKEN and start signoff again"
        )
    ], done.stderr
    assert "Traceback" not in done.stderr
    assert "signoff running" not in done.stdout  # it never said it was serving
    assert [c["response"] for c in refused] == [{"ok": False, "error": error}]


async def test_signoff_run_with_a_revoked_app_token_exits_before_socket_mode_starts(
    tmp_path: Path, fake_slack: FakeSlackProcess
) -> None:
    app_token = "xapp-1-revoked-at-start"
    async with SandboxClient(fake_slack.url) as slack:
        await slack.revoke_token(app_token, "token_revoked")
        done = run_bot(tmp_path, fake_slack.url, BOT_TOKEN, app_token)

    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "signoff: Slack refused SLACK_APP_TOKEN: apps.connections.open answered token_revoked "
        "(the token was revoked or the app uninstalled); create or copy an app-level token "
        "(xapp-...) with the connections:write scope" in done.stderr
    ), done.stderr
    assert "Basic Information > App-Level Tokens" in done.stderr
    assert "Traceback" not in done.stderr
    assert "signoff running" not in done.stdout


@pytest.mark.parametrize("app_token", [None, APP_TOKEN], ids=["http", "socket-mode"])
async def test_signoff_run_on_a_port_in_use_says_so_in_one_line_and_closes_what_it_opened(
    tmp_path: Path, fake_slack: FakeSlackProcess, app_token: str | None
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:  # the demo, or a first `signoff run`
        port = taken.getsockname()[1]
        done = run_bot(tmp_path, fake_slack.url, BOT_TOKEN, app_token, port=port)

    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("signoff:")]
    assert lines == [
        (
            f"signoff: cannot listen on 127.0.0.1:{port}: the port is in use (another signoff "
            "run or signoff demo?): stop that one, or pass --port with a free one"
        )
    ], done.stderr
    assert "Traceback" not in done.stderr
    # the Slack session, the database and the Socket Mode connection were closed, not dropped
    assert "Unclosed" not in done.stderr, done.stderr
    assert "signoff running" not in done.stdout + done.stderr


async def test_the_check_says_who_the_bot_is_when_slack_accepts_both_tokens(
    fake_slack: FakeSlackProcess,
) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    who = await check_credentials(client, APP_TOKEN, wait=5.0)
    assert who.user_id.startswith("U") and who.bot_id.startswith("B") and who.team


async def test_a_bot_token_given_as_the_app_token_is_refused_as_the_wrong_kind(
    fake_slack: FakeSlackProcess,
) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    with pytest.raises(CredentialsRefused) as refused:
        await check_credentials(client, BOT_TOKEN, wait=5.0)  # the bot token, pasted
    assert refused.value.message.startswith(
        "Slack refused SLACK_APP_TOKEN: apps.connections.open answered not_allowed_token_type "
        "(it is the wrong kind of token for this setting)"
    )


async def test_a_slack_that_cannot_be_reached_is_asked_again_then_start_up_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "signoff.slack")
    nobody = f"http://127.0.0.1:{free_port()}/api/"
    client = AsyncWebClient(token="xoxb-anything", base_url=nobody, timeout=2)
    with pytest.raises(SlackUnreachable) as unreachable:
        await check_credentials(client, wait=1.0)
    assert unreachable.value.message.startswith(f"could not reach Slack at {nobody}")
    assert "check the network or proxy (or SIGNOFF_SLACK_API_URL)" in unreachable.value.message
    asked_again = [r for r in caplog.records if "asking again" in r.getMessage()]
    assert asked_again, unreachable.value.message


async def test_socket_mode_connects_with_the_url_its_check_was_given(tmp_path: Path) -> None:
    # apps.connections.open is Tier 1 (about one a minute): the check's URL is the one used,
    # or the connection would wait out the rate limit. The stand-in's limits are on.
    fake = FakeSlackProcess(tmp_path)
    bot = None
    try:
        async with SandboxClient(fake.url) as slack:
            await slack.set_rate_limits(True)
            policy = write_policy(tmp_path, POLICY)
            bot = BotProcess(tmp_path, sqlite_url(tmp_path), fake.url, policy, app_token=APP_TOKEN)
            await slack.use_socket_mode()
            answer = await slack.command("carol", CHANNEL, "help")
            opened = await slack.calls("apps.connections.open")
        assert answer["status"] == 200 and not answer.get("late"), answer
        assert [c["status"] for c in opened] == [200]
    finally:
        if bot is not None:
            bot.stop()
        fake.stop()
