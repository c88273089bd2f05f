"""What a new user meets first with the `signoff` command: a schema command without a policy,
read-only commands on an empty database, a file name given for a URL, help for everything, a
field edited twice, a closed pipe, and the audit log saying a vote came from the CLI."""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from bot.cli import build_parser
from tests.approvals.test_cli import CLI, REFUND_A, cli  # noqa: F401 -- the fixture
from tests.kit.signoff import Kit

CONFIG = Path(__file__).resolve().parents[2] / "bot" / "config.py"


def bare_env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    return {**clean, **extra}


def signoff(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], cwd=cwd, env=bare_env(**extra),
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip


def test_db_upgrade_needs_no_policy_and_says_what_it_did(tmp_path: Path) -> None:
    assert not (tmp_path / "signoff.toml").exists()
    first = signoff(tmp_path, "db", "upgrade")
    assert (first.returncode, first.stderr) == (0, ""), first.stderr
    assert first.stdout == "database sqlite:///signoff.db: created the signoff tables\n"
    again = signoff(tmp_path, "db", "upgrade")
    assert again.stdout == "database sqlite:///signoff.db is up to date\n"


def test_read_only_commands_on_an_empty_database_create_nothing(tmp_path: Path) -> None:
    (tmp_path / "signoff.toml").write_text('[actions.x]\ntier = "low"\napprovers = ["U_A"]\n')
    (tmp_path / "empty.db").touch()
    for url, path in [("sqlite:///signoff.db", "signoff.db"), ("sqlite:///empty.db", "empty.db")]:
        for argv in (["pending"], ["show", "t-1"], ["audit", "verify"], ["audit", "export"]):
            done = signoff(tmp_path, *argv, SIGNOFF_DATABASE_URL=url)
            assert (done.returncode, done.stdout) == (1, ""), (argv, done.stdout)
            assert done.stderr == (
                f"signoff: no signoff tables here ({url}); run `signoff db upgrade` "
                "(or check SIGNOFF_DATABASE_URL)\n"
            )
    assert not (tmp_path / "signoff.db").exists()
    with sqlite3.connect(tmp_path / "empty.db") as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


def test_a_file_name_for_a_database_url_says_what_a_url_looks_like(tmp_path: Path) -> None:
    for command in (["pending"], ["db", "upgrade"], ["run"]):
        done = signoff(tmp_path, *command, SIGNOFF_DATABASE_URL="signoff.db")
        assert (done.returncode, done.stdout) == (1, ""), command
        assert done.stderr == (
            "signoff: SIGNOFF_DATABASE_URL='signoff.db' is not a database URL; write "
            "sqlite:///signoff.db (a file in this directory: three slashes), "
            "sqlite:////var/lib/signoff.db (an absolute path: four) or "
            "postgresql://user@host/dbname\n"
        ), command


def test_bare_signoff_prints_the_commands_and_help_says_everything(tmp_path: Path) -> None:
    bare = signoff(tmp_path)
    assert bare.returncode == 0 and bare.stdout.startswith("usage: signoff ")
    for command in ("db", "start", "pending", "show", "approve", "demo", "new", "run"):
        assert re.search(rf"^    {command}\b", bare.stdout, re.MULTILINE), command
    # Every environment variable the settings read is listed.
    names = set(re.findall(r"\b((?:SIGNOFF|SLACK)_[A-Z_]+)\b", CONFIG.read_text()))
    assert names and all(f"  {name} " in bare.stdout for name in names), names
    assert "does not\ncheck the policy's starters" in bare.stdout

    # Every option of every command says what it is.
    def undescribed(parser: argparse.ArgumentParser, path: str) -> list[str]:
        out = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    out += undescribed(child, f"{path} {name}")
            elif not action.help:
                out.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return out

    assert undescribed(build_parser(), "signoff") == []
    started = signoff(tmp_path, "start", "--help")
    assert started.returncode == 0
    assert "the policy's starters are not checked" in started.stdout
    assert re.search(r"^  refund +Refund a customer", started.stdout, re.MULTILINE)
    assert "inputs: customer_id*, order_id, amount*, reason" in started.stdout
    run = build_parser().parse_args(["run"])
    assert (run.host, run.port) == ("127.0.0.1", 3000)


async def test_a_field_edited_twice_is_a_usage_error(kit: Kit, cli: CLI) -> None:  # noqa: F811
    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    code, out, err = await cli(
        "approve", approval_id, "--as", "U_ALICE", "--edit", "amount=1", "--edit", "amount=2"
    )
    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1] == (
        "signoff approve: error: argument --edit: 'amount' is edited twice "
        "(amount=1, amount=2); give it once"
    )
    assert (await kit.app.get(approval_id)).votes == ()


async def test_a_vote_from_the_cli_is_recorded_as_such(kit: Kit, cli: CLI) -> None:  # noqa: F811
    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    code, _, err = await cli("approve", approval_id, "--as", "U_ALICE")
    assert code == 0, err
    events = {e["kind"]: e for e in await kit.audit()}
    assert events["vote"]["actor"] == "U_ALICE"
    assert events["vote"]["data"]["via"] == "cli"
    assert events["approved"]["data"]["via"] == "cli"
    assert "via" not in events["requested"]["data"]  # the kit started it, not the CLI


def test_a_reader_that_goes_away_gets_no_traceback(kit: Kit) -> None:
    read, write = os.pipe()
    os.close(read)  # `| head -1`, gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bot.cli", "--help"], env=kit.env(), cwd=kit.tmp_path,
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )  # fmt: skip
        listed = subprocess.run(
            [sys.executable, "-m", "bot.cli", "pending", "--json"], env=kit.env(),
            cwd=kit.tmp_path, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    for proc in (done, listed):
        assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
