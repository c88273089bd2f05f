"""PostgreSQL restarts between two invocations, and the saver carries on without user action.

This restarts the local server, so it lives in its own module named to run after the other
SQL saver tests; it waits until the server accepts connections again before and after.
"""

from __future__ import annotations

import glob
import os
import subprocess
import time

import pytest

from graphs import Command, GraphInterrupt, SQLSaver
from tests.kit import sql_worker as worker

pytestmark = [pytest.mark.postgres, pytest.mark.restarts_postgres]


def wait_until_up(url: str, timeout: float = 60.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "PostgreSQL did not come back"
            time.sleep(0.2)


def restart_postgres(url: str) -> None:
    versions = sorted(os.path.basename(p) for p in glob.glob("/etc/postgresql/*"))
    if not versions or not os.path.exists("/usr/bin/pg_ctlcluster"):
        pytest.skip("no local PostgreSQL cluster to restart")
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "restart"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    wait_until_up(url)


def test_a_server_restart_between_invocations_is_survived(pg_url: str) -> None:
    wait_until_up(pg_url)
    # `pinged` checks idle connections before use; `trusting` never does, so the dropped
    # connection surfaces mid-use and is met by the retry.
    with (
        SQLSaver.from_conn_string(pg_url) as pinged,
        SQLSaver.from_conn_string(pg_url, ping_after=1e9) as trusting,
    ):
        pinged.setup()
        graphs = {
            "pinged": worker.approval_graph(pinged),
            "trusting": worker.approval_graph(trusting),
        }
        for name, graph in graphs.items():
            with pytest.raises(GraphInterrupt):
                graph.invoke({"log": []}, worker.config(name))
        assert (
            trusting.get_tuple(worker.config("pinged")) is not None
        )  # both pools hold connections

        restart_postgres(pg_url)

        for name, graph in graphs.items():
            state = graph.invoke(Command(resume={"approved": True}), worker.config(name))
            assert state["log"] == ["draft", "approve", "act"], name
        assert pinged.list_paused() == []
