"""`signoff new workflow NAME`: the files it writes work as they are. Their test passes under
pytest, the `signoff` script finds the module in the current directory, and the demo offers it
with `--policy`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.demo import demo_workflows

SIGNOFF = Path(sys.executable).with_name("signoff")
"""The installed script, as a user runs it (not `python -m`, which puts `.` on the path)."""


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    return {**clean, **extra}


def signoff(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SIGNOFF), *args], cwd=cwd, env=env(**extra),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def scaffolded(tmp_path: Path) -> Path:
    done = signoff(tmp_path, "new", "workflow", "expense")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "wrote expense.py (the workflow), expense.toml (its policy) and test_expense.py (its test)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "expense.py",
        "expense.toml",
        "test_expense.py",
    ]
    return tmp_path


def test_the_scaffolded_test_passes_under_pytest(scaffolded: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_expense.py"],
        cwd=scaffolded, env=env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_the_scaffolded_test_runs_where_pytest_is_not_installed(tmp_path: Path) -> None:
    """`signoff new`'s first hint works after the README's first command, which installs no
    pytest: the test file runs as a script (here with pytest made unimportable)."""
    done = signoff(tmp_path, "new", "workflow", "expense")
    hint = next(line for line in done.stdout.splitlines() if line.startswith("  python "))
    assert hint.split("#")[0].split() == ["python", "test_expense.py"]
    no_pytest = (
        "import runpy, sys; sys.modules['pytest'] = None; "
        "runpy.run_path('test_expense.py', run_name='__main__')"
    )
    ran = subprocess.run(
        [sys.executable, "-c", no_pytest],
        cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines() == [
        "passed  test_approved_it_is_done",
        "passed  test_approved_with_an_edit_it_is_done_with_the_edit",
        "passed  test_rejected_it_is_not_done",
    ]


def test_the_signoff_script_finds_the_workflow_here(scaffolded: Path) -> None:
    settings = {
        "SIGNOFF_POLICY": "expense.toml",
        "SIGNOFF_DATABASE_URL": f"sqlite:///{scaffolded / 'x.db'}",
    }
    started = signoff(
        scaffolded,
        *("start", "expense", "--as", "U_CAROL", "--json"),
        *("--input", json.dumps({"item": "train ticket", "amount": 42.5})),
        **settings,
    )
    assert started.returncode == 0, started.stderr
    report = json.loads(started.stdout)
    assert report["status"] == "paused"
    (approval_id,) = report["approvals"]
    approved = signoff(scaffolded, "approve", approval_id, "--as", "U_ALICE", **settings)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.splitlines()[-1] == (
        f"thread {report['thread_id']}: completed: done: train ticket for 42.50"
    )
    listed = signoff(scaffolded, "start", "--help", **settings)
    assert "expense          Expense: ask a person before the irreversible part" in listed.stdout


def test_the_demo_offers_the_policys_workflows(
    scaffolded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(scaffolded))
    (form,) = demo_workflows(scaffolded / "expense.toml")
    assert (form["name"], form["starters"]) == ("expense", ["@support"])
    assert [field["name"] for field in form["inputs"]] == ["item", "amount"]
    # Its INPUTS schema types the amount, so the demo's form sends a number (text is refused).
    assert [field["type"] for field in form["inputs"]] == ["text", "number"]


def test_nothing_is_overwritten_and_a_bad_name_is_refused(scaffolded: Path) -> None:
    before = (scaffolded / "expense.py").read_text()
    again = signoff(scaffolded, "new", "workflow", "expense")
    assert (again.returncode, again.stdout) == (1, "")
    assert again.stderr.strip() == (
        "signoff: expense.py, expense.toml, test_expense.py exist already; nothing was written"
    )
    assert (scaffolded / "expense.py").read_text() == before
    for name, said in [
        ("Expense-Claim", "cannot name a workflow module"),
        ("refund", "is a workflow signoff ships with"),
        ("json", "is the name of a module Python finds already"),
        ("test_x", "would be taken for a test"),
    ]:
        done = signoff(scaffolded, "new", "workflow", name)
        assert done.returncode == 1 and said in done.stderr, (name, done.stderr)
