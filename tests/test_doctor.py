"""`signoff doctor` against the Slack stand-in as a process of its own, a real SQLite file and
the demo's policy: a setup that works passes every check; a setup with each thing a first
install gets wrong fails, each finding saying what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.approvals.tables import SCHEMA_REVISION
from bot.sandbox.processes import APP_TOKEN, BOT_TOKEN, CHANNEL, SIGNING_SECRET, FakeSlackProcess
from bot.slack.scopes import BOT_SCOPES
from tests.kit.flows import DEMO_POLICY, ROOT


@pytest.fixture
def slack(tmp_path: Path) -> Iterator[FakeSlackProcess]:
    fake = FakeSlackProcess(tmp_path)
    try:
        yield fake
    finally:
        fake.stop()


def doctor(tmp_path: Path, **env: str) -> tuple[int, list[dict[str, str]]]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "doctor", "--json"],
        env={**clean, "PYTHONPATH": str(ROOT), **env}, cwd=tmp_path,
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def settings(tmp_path: Path, slack: FakeSlackProcess, **more: str) -> dict[str, str]:
    return {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_POLICY": str(DEMO_POLICY),
        "SIGNOFF_SLACK_API_URL": slack.url,
        "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        **more,
    }


def test_a_working_setup_passes_every_check(tmp_path: Path, slack: FakeSlackProcess) -> None:
    env = settings(tmp_path, slack)
    upgraded = subprocess.run(
        [sys.executable, "-m", "bot.cli", "db", "upgrade"],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env}, cwd=tmp_path,
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr
    status, findings = doctor(tmp_path, **env)
    assert status == 0, findings
    by_check = {f["check"]: f for f in findings}
    assert {f["status"] for f in findings} == {"ok"}, findings
    assert by_check["database"]["said"].endswith(f"schema revision {SCHEMA_REVISION}")
    assert by_check["scopes"]["said"] == f"all {len(BOT_SCOPES)} the manifest requests"
    assert by_check[f"channel {CHANNEL}"]["said"].endswith("the bot is in it")
    assert by_check["connection"]["said"].startswith("Socket Mode")
    assert by_check["clock"]["said"] == "within 30s of Slack's"


def test_what_a_first_install_gets_wrong_is_each_said_with_what_to_do(tmp_path: Path) -> None:
    scopes = tuple(s for s in BOT_SCOPES if s != "im:write")
    slack = FakeSlackProcess(tmp_path, scopes=(*scopes, "chat:write.public"))
    try:
        policy = tmp_path / "signoff.toml"
        policy.write_text(  # an approver group neither [groups] nor Slack defines
            DEMO_POLICY.read_text().replace('approvers = ["@finance"]', 'approvers = ["@finanse"]')
        )
        env = settings(tmp_path, slack, SIGNOFF_POLICY=str(policy),
                       SIGNOFF_DEFAULT_CHANNEL="C0NOWHERE", SLACK_APP_TOKEN="xapp-1-typo")  # fmt: skip
        status, findings = doctor(tmp_path, **env)
    finally:
        slack.stop()
    assert status == 1
    failed = {f["check"]: (f["said"], f["fix"]) for f in findings if f["status"] == "fail"}
    assert set(failed) == {
        "database",
        "scopes",
        "connection",
        "channel C0NOWHERE",
        "group @finanse",
    }
    said, fix = failed["database"]
    assert said.startswith("no database file at") and "signoff db upgrade" in fix
    said, fix = failed["scopes"]
    assert said.startswith("the token lacks im:write (conversations.open")
    assert "reinstall the app" in fix
    said, fix = failed["connection"]
    assert "invalid_auth" in said and "SLACK_APP_TOKEN" in fix
    said, fix = failed["channel C0NOWHERE"]
    assert "channel_not_found" in said and "SIGNOFF_DEFAULT_CHANNEL" in fix
    said, fix = failed["group @finanse"]
    assert "no Slack user group @finanse" in said and "[groups]" in fix
    (extra,) = [f for f in findings if f["status"] == "warn"]
    assert extra["said"] == "the token has scopes signoff does not use: chat:write.public"


def test_http_mode_without_a_signing_secret_and_a_missing_token(tmp_path: Path) -> None:
    status, findings = doctor(
        tmp_path,
        SIGNOFF_POLICY=str(DEMO_POLICY),
        SIGNOFF_DATABASE_URL=f"sqlite:///{tmp_path / 'none.db'}",
    )
    assert status == 1
    assert [(f["check"], f["status"]) for f in findings][-1] == ("bot token", "fail")
    assert findings[-1]["said"] == "SLACK_BOT_TOKEN is not set"
    fake = FakeSlackProcess(tmp_path)  # HTTP mode: no app token; the signing secret is needed
    try:
        env = settings(tmp_path, fake)
        del env["SLACK_APP_TOKEN"]
        _, without = doctor(tmp_path, **env)
        _, with_secret = doctor(tmp_path, **env, SLACK_SIGNING_SECRET=SIGNING_SECRET)
    finally:
        fake.stop()
    (connection,) = [f for f in without if f["check"] == "connection"]
    assert connection["status"] == "fail" and "SLACK_SIGNING_SECRET" in connection["fix"]
    (connection,) = [f for f in with_secret if f["check"] == "connection"]
    assert connection["status"] == "ok" and connection["said"].startswith("HTTP mode")
