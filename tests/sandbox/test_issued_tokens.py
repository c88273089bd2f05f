"""The stand-in takes only the tokens its workspace issued, as Slack does: any other, however
well formed, is `invalid_auth`. So a bad token can be rehearsed: `signoff demo --bot-token` runs
the bot with one the sandbox did not issue, and it stops at start saying what Slack would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import FakeSlack
from bot.sandbox.client import start_fake_slack


async def _error(client: AsyncWebClient) -> str | None:
    try:
        await client.auth_test()
    except SlackApiError as e:
        return str(e.response["error"])
    return None


async def test_a_token_the_workspace_did_not_issue_is_invalid_auth() -> None:
    async with FakeSlack.running() as slack:
        assert slack.bot_token.startswith("xoxb-") and slack.app_token.startswith("xapp-")
        for stranger in ("xoxb-sandbox-demo", "xoxb-anything", "xoxp-1-2-3"):
            assert await _error(AsyncWebClient(token=stranger, base_url=slack.url)) == (
                "invalid_auth"
            )
        assert await _error(AsyncWebClient(token=slack.bot_token, base_url=slack.url)) is None
        opened = await AsyncWebClient(base_url=slack.url).apps_connections_open(
            app_token=slack.app_token
        )
        assert opened["ok"]
        with pytest.raises(SlackApiError) as refused:
            await AsyncWebClient(base_url=slack.url).apps_connections_open(app_token="xapp-1-x")
        assert refused.value.response["error"] == "invalid_auth"
        # An install issues another token, which is then taken; a bot token is not an app one.
        installed = slack.issue_token("xoxb-second-install")
        assert await _error(AsyncWebClient(token=installed, base_url=slack.url)) is None
        with pytest.raises(ValueError, match="starts with xapp-"):
            slack.issue_token("xoxb-1", app_level=True)


async def test_the_stand_in_process_issues_tokens_over_its_control_api() -> None:
    async with start_fake_slack() as remote:
        mine = "xoxb-installed-over-http"
        assert await _error(AsyncWebClient(token=mine, base_url=remote.url)) == "invalid_auth"
        assert await remote.issue_token(mine) == mine
        assert await _error(AsyncWebClient(token=mine, base_url=remote.url)) is None
        made_up = await remote.issue_token()
        assert made_up.startswith("xoxb-") and made_up != mine
        assert await _error(AsyncWebClient(token=made_up, base_url=remote.url)) is None


def test_the_demo_rehearses_a_bad_bot_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo", "--port", "0", "--bot-token", "xoxb-mistyped"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "Slack refused SLACK_BOT_TOKEN: auth.test answered invalid_auth" in said
    assert "signoff demo is running" not in said
