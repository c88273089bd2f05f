"""Helpers of the tests of the SQL store and cache: SQL run on the database directly (as
another client would), and a Python child process run from the repository root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from graphs.checkpoint.sql import sync_url

ROOT = Path(__file__).resolve().parents[2]


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Run `sql` in a transaction of its own, committed; the rows it returned, if any."""
    engine = sa.create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            result = conn.exec_driver_sql(sql)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()


def run(*args: str) -> str:
    """The output of `python *args` from the repository root; it must exit 0."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def python(code: str, *args: str) -> str:
    """The output of `python -c code *args`; it must exit 0."""
    return run("-c", code, *args)
