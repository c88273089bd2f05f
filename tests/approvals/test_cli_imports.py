"""What a `signoff` command loads: `signoff --help`, and a command line written wrong, are
answered without SQLAlchemy, Alembic, the graph runtime, langchain_core or a database driver; a
database command on a current schema runs without Alembic, without the bundled support agent's
langchain_core, and without the Slack and HTTP libraries of `signoff run`; a bundled workflow's
module is imported when the workflow is looked up, not when the registry is made.

Checked on the modules the process holds at its exit, never by the clock: how fast it starts is
measured by `bench/startup.py`, not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOADED = """
import json, runpy, sys
try:
    runpy.run_module("bot.cli", run_name="__main__", alter_sys=True)
finally:
    print("LOADED " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""
"""`python -m bot.cli ARGS`, saying at its exit which top-level packages it loaded."""

HEAVY = {"sqlalchemy", "alembic", "langchain_core", "langsmith", "graphs"}
DRIVERS = {"sqlite3", "_sqlite3", "aiosqlite", "psycopg", "asyncpg"}
SERVING = {"aiohttp", "slack_bolt", "slack_sdk", "mcp"}


def signoff(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    said = [line for line in done.stderr.splitlines() if line.startswith("LOADED ")]
    assert said, done.stderr
    return done, set(json.loads(said[-1].removeprefix("LOADED ")))


@pytest.mark.parametrize(
    "args",
    [["--help"], [], ["pending", "--help"], ["report", "--help"]],
    ids=["--help", "bare", "pending --help", "report --help"],
)
def test_help_loads_no_database_graph_runtime_or_agent(tmp_path: Path, args: list[str]) -> None:
    done, loaded = signoff(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert "usage: signoff" in done.stdout
    assert loaded & (HEAVY | DRIVERS | SERVING) == set()


def test_a_command_line_written_wrong_is_refused_before_anything_loads(tmp_path: Path) -> None:
    done, loaded = signoff(tmp_path, "approve", "A1", "--as", "U_A", "--grant", "lots")
    assert done.returncode == 2
    assert "'lots': write it as USES/DURATION" in done.stderr
    assert loaded & (HEAVY | DRIVERS | SERVING) == set()


def test_a_database_command_on_a_current_schema_loads_what_it_uses(tmp_path: Path) -> None:
    (tmp_path / "signoff.toml").write_text('[actions.x]\ntier = "low"\napprovers = ["U_A"]\n')
    upgraded, _ = signoff(tmp_path, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    done, loaded = signoff(tmp_path, "pending")
    assert (done.returncode, done.stdout) == (0, "nothing is waiting for approval\n"), done.stderr
    assert {"sqlalchemy", "graphs", "aiosqlite"} <= loaded  # the database, as it should
    assert loaded & {"alembic", "langchain_core", "langsmith"} == set()
    assert loaded & SERVING == set()


LOOKUP = """
import json, sys
from bot.workflows import BUNDLED, load_workflows
workflows = load_workflows({})
seen = [list(workflows) == list(BUNDLED), "support_agent" in workflows, len(workflows)]
before = "langchain_core" in sys.modules
agent = workflows["support_agent"]
print(json.dumps([seen, before, "langchain_core" in sys.modules, agent.description]))
"""


def test_a_bundled_workflow_is_imported_when_it_is_looked_up(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOOKUP], cwd=tmp_path,
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen, before, after, description = json.loads(done.stdout)
    assert seen == [True, True, 4]  # names, membership and size import nothing
    assert (before, after) == (False, True)
    assert description.startswith("An AI support agent")
