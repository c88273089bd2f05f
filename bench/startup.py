"""Issue 37: how soon the `signoff` command answers. Three figures, each the median of `--runs`
timed runs after one untimed warm-up, wall time of a whole process:

- `help`: `signoff --help`.
- `pending`: `signoff pending` on a SQLite file whose tables are made and empty.
- `run`: `signoff run` (HTTP mode, SQLite with the tables made, the fake Slack of
  `bot.sandbox` in its own process) from the process's start until `GET /healthz` answers 200
  (asked every 5 ms).

Each figure is printed with the 1-minute load average over its runs (median), since the machine
is shared. The runs read their bytecode from `__pycache__` as an installed signoff does
(`PYTHONDONTWRITEBYTECODE` is dropped: the warm-up writes it). With `--base PATH` (a second checkout of signoff, e.g. an export of main) the two
trees are run in turn, A B A B ..., each with its own `PYTHONPATH` and working directory, so they
see the same machine load; the ratio is this tree's median over the base's.

    .venv/bin/python bench/startup.py [--runs 9] [--base PATH] [--python PY] [--base-python PY]
        [--figures help,pending,run]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.sandbox.processes import (
    API_TOKEN,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    FakeSlackProcess,
    free_port,
    sqlite_url,
)

POLICY = """
[actions.send_refund]
title = "Send a refund"
approvers = ["U0ALICE", "U0BOB"]

[actions.send_refund.args]
amount = { type = "number", required = true }
"""
FIGURES = ("help", "pending", "run")
GOALS = {"help": 0.3, "pending": 0.6, "run": 1.5}
"""Issue 37's goal for each figure, in seconds."""


@dataclass
class Tree:
    """A checkout of signoff and the interpreter it runs with, in a directory of its own
    (its policy, its SQLite file)."""

    name: str
    code: Path
    python: str
    directory: Path
    seconds: dict[str, list[float]] = field(default_factory=dict)
    load: dict[str, list[float]] = field(default_factory=dict)

    def env(self, **more: str) -> dict[str, str]:
        # bytecode written and read, as an installed signoff has it: the warm-up compiles
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SIGNOFF_", "SLACK_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env |= {
            "PYTHONPATH": str(self.code),
            "SIGNOFF_DATABASE_URL": sqlite_url(self.directory),
            "SIGNOFF_POLICY": str(self.directory / "policy.toml"),
            **more,
        }
        return env

    def command(self, *args: str) -> list[str]:
        return [self.python, "-m", "bot.cli", *args]

    def prepare(self) -> None:
        (self.directory / "policy.toml").write_text(POLICY)
        self.check("db", "upgrade")

    def check(self, *args: str) -> float:
        """Run `signoff ARGS` to its end: the seconds it took (an exit status other than 0
        stops the benchmark, with what it printed)."""
        started = time.perf_counter()
        done = subprocess.run(
            self.command(*args),
            env=self.env(),
            cwd=self.directory,
            capture_output=True,
            check=False,
        )
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(
                f"{self.name}: signoff {' '.join(args)} exited with {done.returncode}:\n"
                f"{done.stdout.decode()}{done.stderr.decode()}"
            )
        return took

    def until_healthy(self, slack_url: str) -> float:
        """Start `signoff run`: the seconds until `/healthz` is 200; then stop it."""
        port = free_port()
        env = self.env(
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_SIGNING_SECRET=SIGNING_SECRET,
            SIGNOFF_SLACK_API_URL=slack_url,
            SIGNOFF_API_TOKEN=API_TOKEN,
            SIGNOFF_DEFAULT_CHANNEL=CHANNEL,
        )
        log = self.directory / "bot.log"
        with open(log, "ab") as out:
            started = time.perf_counter()
            proc = subprocess.Popen(
                self.command("run", "--host", "127.0.0.1", "--port", str(port)),
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.directory,
            )  # fmt: skip
        try:
            while time.perf_counter() - started < 60:
                if proc.poll() is not None:
                    raise SystemExit(f"{self.name}: signoff run exited:\n{log.read_text()}")
                if _healthy(port):
                    return time.perf_counter() - started
                time.sleep(0.005)
            raise SystemExit(f"{self.name}: no /healthz 200 within 60 s:\n{log.read_text()}")
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _default_python(code: Path) -> str:
    venv = code / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def measure(trees: list[Tree], figures: list[str], runs: int) -> None:
    fake = None
    with tempfile.TemporaryDirectory(prefix="signoff-bench-slack-") as slack_dir:
        try:
            if "run" in figures:
                fake = FakeSlackProcess(Path(slack_dir))
            timed: dict[str, Callable[[Tree], float]] = {
                "help": lambda t: t.check("--help"),
                "pending": lambda t: t.check("pending"),
                "run": lambda t: t.until_healthy(fake.url if fake else ""),
            }
            for figure in figures:
                for tree in trees:  # warm-up: bytecode written, the file cache filled
                    timed[figure](tree)
                for _ in range(runs):
                    for tree in trees:
                        tree.seconds.setdefault(figure, []).append(timed[figure](tree))
                        tree.load.setdefault(figure, []).append(os.getloadavg()[0])
                report_figure(trees, figure)
        finally:
            if fake is not None:
                fake.stop()


def report_figure(trees: list[Tree], figure: str) -> None:
    line = [f"{figure:<8}"]
    for tree in trees:
        s = tree.seconds[figure]
        line.append(
            f"{tree.name} {statistics.median(s):.3f} s (min {min(s):.3f}, max {max(s):.3f}; "
            f"load {statistics.median(tree.load[figure]):.2f})"
        )
    if len(trees) == 2:
        a, b = (statistics.median(t.seconds[figure]) for t in trees)
        line.append(f"ratio {a / b:.2f}")
    line.append(f"goal <= {GOALS[figure]:g} s")
    print("  ".join(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per figure and tree")
    parser.add_argument(
        "--python", help="the interpreter of this tree (default: its .venv, else this one)"
    )
    parser.add_argument("--base", type=Path, help="a second checkout of signoff, alternated")
    parser.add_argument(
        "--base-python", help="the base's interpreter (default: its .venv, else --python's)"
    )
    parser.add_argument(
        "--figures", default=",".join(FIGURES), help=f"a subset of {','.join(FIGURES)}"
    )
    args = parser.parse_args()
    figures = [f for f in args.figures.split(",") if f]
    if unknown := sorted(set(figures) - set(FIGURES)):
        parser.error(f"unknown figure(s) {', '.join(unknown)}: choose from {', '.join(FIGURES)}")
    python = args.python or _default_python(ROOT)
    with tempfile.TemporaryDirectory(prefix="signoff-bench-startup-") as tmp:
        trees = [Tree("this", ROOT, python, Path(tmp) / "this")]
        if args.base is not None:
            base = args.base.resolve()
            base_python = args.base_python or (
                _default_python(base) if (base / ".venv").exists() else python
            )
            trees.append(Tree("base", base, base_python, Path(tmp) / "base"))
        print(
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, nproc {os.cpu_count()}, "
            f"{args.runs} runs per figure, "
            + "; ".join(f"{t.name}: {t.code} with {t.python}" for t in trees),
            flush=True,
        )
        for tree in trees:
            tree.directory.mkdir()
            tree.prepare()
        measure(trees, figures, args.runs)


if __name__ == "__main__":
    main()
