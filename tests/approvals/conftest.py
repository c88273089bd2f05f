"""Database fixtures for the governance tests: a SQLite file and the real PostgreSQL.

PostgreSQL is `postgresql://postgres@127.0.0.1:5432/test` unless `SIGNOFF_TEST_PG_URL` says
otherwise. Each test gets a fresh schema of its own (named after this session), dropped after
it; the URL given to the code under test selects it with `search_path`. When the server cannot
be reached the PostgreSQL tests are skipped, except under `CI=true`, where they fail loudly.
"""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from _signoff_kit import Kit
from sqlalchemy.engine import make_url

from bot.approvals.db import Database

PG_URL = os.environ.get("SIGNOFF_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")

_session_tag = f"t{os.getpid()}_{secrets.token_hex(3)}"
_schema_numbers = itertools.count(1)


def _admin_conninfo() -> str:
    return make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The PostgreSQL server's URL, once it answered; skip (fail under CI) when it does not."""
    try:
        with psycopg.connect(_admin_conninfo(), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        message = f"PostgreSQL at {make_url(PG_URL).render_as_string()} is unreachable: {e}"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: PostgreSQL tests must run, not skip)")
        pytest.skip(f"{message}; set SIGNOFF_TEST_PG_URL to run these tests")
    return PG_URL


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL on a new, empty schema of its own (dropped afterwards)."""
    schema = f"signoff_{_session_tag}_{next(_schema_numbers)}"
    with psycopg.connect(_admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(pg_server).update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False)
    with psycopg.connect(_admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of a fresh, empty database: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{quote(str(tmp_path / 'signoff.db'))}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    """A `Database` on `db_url`, upgraded."""
    database = Database(db_url)
    await database.upgrade()
    yield database
    await database.aclose()


def run_together(
    script: str, argvs: Sequence[Sequence[str]], *, timeout: float = 120
) -> list[subprocess.CompletedProcess[str]]:
    """Run `python -c script ARGV...` once per `argvs` entry, released at the same moment.

    Each process must print `ready` and then wait until the file named by its environment's
    `SIGNOFF_TEST_GO` exists (use `wait_for_go()` from the script's preamble, `GO`).
    """
    go = Path(tempfile.gettempdir()) / f"signoff-go-{secrets.token_hex(8)}"
    env = {**os.environ, "SIGNOFF_TEST_GO": str(go)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GO + script, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for argv in argvs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.strip() != "ready":
                proc.wait(timeout)
                stderr = proc.stderr.read() if proc.stderr else ""
                raise AssertionError(f"a subprocess did not start: {line}{stderr}")
        go.touch()
        results = []
        deadline = time.monotonic() + timeout
        for proc, argv in zip(procs, argvs):
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append(subprocess.CompletedProcess(list(argv), proc.returncode, out, err))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        go.unlink(missing_ok=True)


GO = """\
import os as _os, sys as _sys, time as _time
def wait_for_go():
    print("ready", flush=True)
    while not _os.path.exists(_os.environ["SIGNOFF_TEST_GO"]):
        _time.sleep(0.005)
"""


# ---- the governance core on `db_url` (test_decisions, test_workflows, test_sweep, test_cli) ----


@pytest.fixture
async def kit(db_url: str, tmp_path: Path) -> AsyncIterator[Kit]:
    """`Signoff` on a fresh, upgraded database with the test policy (`_signoff_flows.POLICY`),
    a clock the test moves (`kit.clock`) and a `RecordingSink` (`kit.sink`)."""
    bench = Kit(db_url, tmp_path)
    await bench.db.upgrade()
    yield bench
    await bench.aclose()
