"""Shared plumbing for bench/engine.py and bench/checkpointer.py.

Both scripts run the shared workloads (`../shared/bench/workloads.py`, relative to the project
root) in subprocesses: LangGraph with the throwaway venv's python (see `bench/langgraph-venv.sh`),
our `graphs` with the project's python. Every subprocess appends its JSON lines to one results
file under `bench/results/`; this module parses them back and formats markdown tables.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = "../shared/bench/workloads.py"  # relative to ROOT; it sits beside the project
DEFAULT_LG_VENV = "/tmp/signoff-lg-venv"
ENGINES = ("graphs", "langgraph")
NOT_RUN = "-"
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"  # workloads.py's default
PG_RETRIES = 3
PG_DOWN = (  # psycopg messages when the server restarts under a run
    "the database system is shutting down",
    "the database system is starting up",
    "terminating connection due to administrator command",
    "Connection refused",
)


def show(path: str | Path) -> str:
    """A path as printed in commands: relative to the project root when it is inside it."""
    p = Path(path)
    try:
        return str(p.relative_to(ROOT)) if p.is_absolute() else str(p)
    except ValueError:
        return str(p)


def cmdline(cmd: list[str]) -> str:
    """A command as one would type it from the project root."""
    return " ".join(show(c) for c in cmd)


def engine_env(engine: str) -> dict[str, str]:
    """The environment of an engine's subprocess: ours imports `graphs` from this checkout.

    The project's venv may be shared by several checkouts (its editable install points at one
    of them), and a script run from bench/ or ../shared/bench/ does not have the project root on
    `sys.path`; without this, a bench run from one checkout could time another one's code.
    """
    env = dict(os.environ)
    if engine == "graphs":
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    return env


def add_common_args(ap: argparse.ArgumentParser) -> None:
    venv = os.environ.get("LANGGRAPH_VENV", DEFAULT_LG_VENV)
    ours = ROOT / ".venv" / "bin" / "python"
    ap.add_argument(
        "--lg-python",
        default=str(Path(venv) / "bin" / "python"),
        help="python of the throwaway LangGraph venv (default: $LANGGRAPH_VENV or "
        f"{DEFAULT_LG_VENV}, see bench/langgraph-venv.sh)",
    )
    ap.add_argument(
        "--python",
        default=str(ours) if ours.exists() else sys.executable,
        help="python that imports our graphs (default: the project's .venv)",
    )
    ap.add_argument(
        "--pg-url",
        default=os.environ.get("BENCH_PG_URL"),
        help="PostgreSQL URL (default: workloads.py's, or $BENCH_PG_URL)",
    )
    ap.add_argument("--engines", default="graphs,langgraph", help="which engines to run")
    ap.add_argument(
        "--out", default=None, help="results file (default: bench/results/<name>-<UTC>.jsonl)"
    )


@dataclass
class Run:
    """One workloads.py subprocess."""

    engine: str
    cmd: list[str]
    records: list[dict[str, Any]]
    error: str | None  # stderr (the traceback) when the subprocess failed

    def command(self) -> str:
        return cmdline(self.cmd)


@dataclass
class Session:
    """The engines of one benchmark run and everything they emitted."""

    name: str
    args: argparse.Namespace
    out: Path = field(init=False)
    pythons: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # engine -> why it cannot run
    runs: list[Run] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)  # commands re-run after a PostgreSQL restart

    def __post_init__(self) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        self.out = (
            Path(self.args.out)
            if self.args.out
            else ROOT / "bench" / "results" / f"{self.name}-{stamp}.jsonl"
        )
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.pythons = {"graphs": self.args.python, "langgraph": self.args.lg_python}
        wanted = [e.strip() for e in self.args.engines.split(",") if e.strip()]
        for engine in ENGINES:
            if engine not in wanted:
                self.unavailable[engine] = "not requested (--engines)"

    def probe(self, engine: str, code: str) -> None:
        """Mark `engine` unavailable when `code` fails under its python."""
        if engine in self.unavailable:
            return
        py = self.pythons[engine]
        if not Path(py).exists():
            self.unavailable[engine] = f"no python at {py} (run bench/langgraph-venv.sh)"
            return
        # From the workloads' directory, so the import sees the sys.path workloads.py will see.
        p = subprocess.run(
            [py, "-c", code],
            check=False,
            capture_output=True,
            text=True,
            cwd=(ROOT / WORKLOADS).parent,
            env=engine_env(engine),
        )
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            self.unavailable[engine] = f"not importable ({lines[-1] if lines else p.returncode})"

    def workloads(self, engine: str, *args: str) -> Run | None:
        """Run workloads.py for one engine; None when the engine is unavailable."""
        if engine in self.unavailable:
            return None
        extra = ["--pg-url", self.args.pg_url] if self.args.pg_url else []
        return self.subprocess(
            engine, [self.pythons[engine], WORKLOADS, "--engine", engine, *args, *extra]
        )

    def subprocess(self, engine: str, cmd: list[str]) -> Run:
        """Run `cmd --out FILE`; its records reach the results file only once it has finished.

        A run that failed because PostgreSQL was restarting (other test suites on a shared
        machine restart it) is retried once the server accepts connections again; the retry is
        reported, and the failed attempt's partial records are dropped.
        """
        shown = [*cmd, "--out", show(self.out)]
        attempt = self.out.with_name(f".{self.out.stem}.attempt.jsonl")
        for tries in range(PG_RETRIES + 1):
            print(f"... {engine}: {cmdline(shown)}", file=sys.stderr, flush=True)
            attempt.unlink(missing_ok=True)
            p = subprocess.run(
                [*cmd, "--out", str(attempt)],
                check=False,
                capture_output=True,
                text=True,
                cwd=ROOT,
                env=engine_env(engine),
            )
            error = None if p.returncode == 0 else (p.stderr.strip() or f"exit {p.returncode}")
            if error and tries < PG_RETRIES and any(m in error for m in PG_DOWN):
                self.retried.append(cmdline(shown))
                print(
                    f"!!! PostgreSQL went away, retrying: {error.splitlines()[-1]}", file=sys.stderr
                )
                wait_for_postgres(self.args.pg_url or DEFAULT_PG_URL)
                continue
            break
        if attempt.exists():
            with open(self.out, "a") as f:
                f.write(attempt.read_text())
            attempt.unlink()
        records = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        run = Run(engine, shown, records, error)
        if run.error:
            print(f"!!! {engine} failed: {run.command()}\n{run.error}", file=sys.stderr, flush=True)
        self.runs.append(run)
        return run

    def records(self, engine: str) -> Iterable[dict[str, Any]]:
        for run in self.runs:
            if run.engine == engine:
                yield from run.records

    def find(
        self,
        engine: str,
        workload: str,
        saver: str,
        durability: str | None = "default",
        **figures: Any,
    ) -> dict[str, Any] | None:
        """The last record matching; `figures` are required key/values inside record['figures']."""
        hit = None
        for r in self.records(engine):
            if r["workload"] != workload or r["saver"] != saver:
                continue
            if durability is not None and r.get("durability", "default") != durability:
                continue
            if all(r["figures"].get(k) == v for k, v in figures.items()):
                hit = r
        return hit

    def median(
        self, engine: str, workload: str, saver: str, key: str, durability: str = "default"
    ) -> float | None:
        """Median of figures[key] over every matching record (one per round)."""
        values = [
            float(r["figures"][key])
            for r in self.records(engine)
            if r["workload"] == workload
            and r["saver"] == saver
            and r.get("durability", "default") == durability
        ]
        return statistics.median(values) if values else None

    def emit(self, rec: dict[str, Any]) -> None:
        """Append one of our own records (comparisons, extra measurements) to the results file."""
        rec = {**rec, "ts": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        with open(self.out, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def header(self) -> str:
        """Machine, versions and date, from the runs' own records."""
        parts = [f"{dt.date.today().isoformat()}", f"nproc {os.cpu_count()}", f"CPU {cpu_model()}"]
        for engine in ENGINES:
            rec = next(iter(self.records(engine)), None)
            if rec:
                parts.append(f"{engine} {rec['engine_version']} on Python {rec['host']['python']}")
        return "machine: " + ", ".join(parts)

    def report_unavailable(self) -> list[str]:
        lines = [
            f"{e}: {why}"
            for e, why in self.unavailable.items()
            if not why.startswith("not requested")
        ]
        lines += [f"retried after a PostgreSQL restart: {cmd}" for cmd in self.retried]
        lines += [
            f"{r.engine}: FAILED: {r.command()}\n{indent(r.error)}" for r in self.runs if r.error
        ]
        return lines


def wait_for_postgres(url: str, timeout_s: float = 120.0) -> None:
    """Block until PostgreSQL accepts a connection (psycopg is a project dependency)."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(url, connect_timeout=5):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                "unknown",
            )
    except OSError:
        return "unknown"


def indent(text: str | None, pad: str = "    ") -> str:
    return "\n".join(pad + line for line in (text or "").splitlines())


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs


def fmt(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return NOT_RUN if x is None else f"{x:.{digits}f}{suffix}"


def verdict(value: float | None, limit: float) -> str:
    if value is None:
        return NOT_RUN
    return "yes" if value <= limit else "NO"


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
