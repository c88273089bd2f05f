"""A thread paused in one process and resumed in another, in LangGraph's dialect, on a SQLite
file and on PostgreSQL: the same program (`resume_worker.py`) on LangGraph, with its SQLite and
PostgreSQL savers, and on `graphs`' LangGraph module paths, with `SQLSaver`.

The first process runs until a review node's `interrupt()` and exits; the second builds the
graph again, finds the thread waiting, answers with an edited booking and runs to the end. What
each process printed (its result, the thread's next nodes, pending interrupts and history) and
what the booking tool did in which process are compared whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kit import pg

WORKER = str(Path(__file__).with_name("resume_worker.py"))
ROOT = Path(__file__).parents[2]


def phase(dialect: str, backend: str, target: str, log: Path, name: str) -> Any:
    done = subprocess.run(
        [sys.executable, WORKER, dialect, backend, target, "trip-1", str(log), name],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def two_processes(dialect: str, backend: str, target: str, log: Path) -> dict[str, Any]:
    paused = phase(dialect, backend, target, log, "pause")
    booked_before = log.read_text().splitlines() if log.exists() else []
    resumed = phase(dialect, backend, target, log, "resume")
    return {
        "first process": paused,
        "booked before the answer": booked_before,
        "second process": resumed,
        "booked": [json.loads(line) for line in log.read_text().splitlines()],
    }


def test_a_thread_paused_in_one_process_resumes_in_another_on_sqlite(tmp_path: Path) -> None:
    seen = {
        dialect: two_processes(
            dialect, "sqlite", str(tmp_path / f"{dialect}.db"), tmp_path / f"{dialect}.log"
        )
        for dialect in ("langgraph", "graphs")
    }
    assert seen["graphs"] == seen["langgraph"]
    assert seen["graphs"]["booked"] == [{"hotel": "Ritz", "nights": 1}]
    assert seen["graphs"]["first process"]["next"] == ["review"]


@pytest.mark.postgres
def test_a_thread_paused_in_one_process_resumes_in_another_on_postgres(
    pg_server: str, tmp_path: Path
) -> None:
    seen = {}
    for dialect in ("langgraph", "graphs"):
        schema, drop = pg.schema_with_drop(f"resume_{dialect}")
        try:
            url = pg.url_on(schema)
            seen[dialect] = two_processes(dialect, "postgres", url, tmp_path / f"{dialect}.log")
        finally:
            drop()
    assert seen["graphs"] == seen["langgraph"]
    assert seen["graphs"]["booked"] == [{"hotel": "Ritz", "nights": 1}]
