"""`signoff run` checks at start, with Slack, that its policy can reach someone: an `@group` that
neither `[groups]` nor Slack defines (a typo) stops it in one line naming the file, the key and
Slack's groups; an action that fewer people may approve than it needs, and a missing
`SIGNOFF_DEFAULT_CHANNEL`, are warned about. Real processes, against the Slack stand-in."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from bot.sandbox.processes import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    BotProcess,
    free_port,
    sqlite_url,
    write_policy,
)
from tests.kit.e2e import FakeSlackProcess
from tests.kit.scenario import POLICY

START_TIMEOUT = 60.0
"""Seconds `signoff run` may take to refuse (it exits at once; the machine may be busy)."""

MISSPELT = POLICY.replace('approvers = ["@approvers"]', 'approvers = ["@aprovers"]', 1)
SHORT = (
    POLICY
    + """
[actions.two_keys]
approvers = ["U0ALICE", "@approvers"]
required = 3
[actions.two_keys.args]
amount = { type = "number" }
"""
)


def test_an_at_group_neither_the_policy_nor_slack_defines_stops_signoff_run(
    tmp_path: Path, fake_slack: FakeSlackProcess
) -> None:
    assert MISSPELT != POLICY
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SIGNOFF_SLACK_API_URL": fake_slack.url,
        "SIGNOFF_DATABASE_URL": sqlite_url(tmp_path),
        "SIGNOFF_POLICY": str(write_policy(tmp_path, MISSPELT)),
        "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
    }
    env.pop("SLACK_APP_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "run", "--host", "127.0.0.1", "--port", str(free_port())],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("signoff:")]
    said = (
        f"signoff: {tmp_path / 'policy.toml'}: action send_refund names @aprovers in approvers, "
        "and neither [groups] nor Slack defines it (Slack's user groups: @approvers): correct "
        "it, or define it under [groups]"
    )
    assert lines == [said], done.stderr
    assert "Traceback" not in done.stderr
    assert "signoff running" not in done.stdout + done.stderr


def test_an_action_that_can_reach_no_one_is_warned_about_at_start(
    tmp_path: Path, fake_slack: FakeSlackProcess
) -> None:
    policy = write_policy(tmp_path, SHORT)
    bot = BotProcess(tmp_path, sqlite_url(tmp_path), fake_slack.url, policy)
    try:
        printed = bot.log.read_text()
    finally:
        bot.stop()
    assert (
        "action two_keys can reach no one: only U0ALICE, U0BOB may approve two_keys, and it "
        "needs 3; its approvers are U0ALICE, @approvers: add people to [actions.two_keys] "
        "approvers (or escalate_to), or members to its groups"
    ) in printed, printed
    assert "action send_refund can reach no one" not in printed
    assert printed.count("signoff running (HTTP on 127.0.0.1:") == 1, printed


def test_signoff_start_refuses_a_misspelt_group_slack_does_not_define(
    tmp_path: Path, fake_slack: FakeSlackProcess
) -> None:
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SIGNOFF_SLACK_API_URL": fake_slack.url,
        "SIGNOFF_DATABASE_URL": sqlite_url(tmp_path),
        "SIGNOFF_POLICY": str(write_policy(tmp_path, MISSPELT)),
    }
    refund = '{"customer_id": "cust_1", "amount": 12}'
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "start", "refund", "--as", "U0CAROL", "--input", refund],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"signoff: {tmp_path / 'policy.toml'}: action send_refund names @aprovers in approvers, "
        "and neither [groups] nor Slack defines it (Slack's user groups: @approvers): correct "
        "it, or define it under [groups]; nothing was started"
    )
    assert done.stdout == ""
    with sqlite3.connect(tmp_path / "signoff.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    # Spelt right, it starts.
    env["SIGNOFF_POLICY"] = str(write_policy(tmp_path, POLICY))
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "start", "refund", "--as", "U0CAROL", "--input", refund],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "started refund" in done.stdout
