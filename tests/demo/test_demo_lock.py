"""A second `signoff demo` never touches the database a running one uses: it refuses, saying
which process holds it, and the first goes on. Real processes, as a user would start them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from bot.demo import DemoBusy, DemoLock
from tests.demo.conftest import DemoProcess


def demo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def start_refund(url: str, customer: str) -> tuple[int, dict[str, Any]]:
    run = {
        "user": "U_CAROL",
        "workflow": "refund",
        "input": {"customer_id": customer, "order_id": f"o-{customer}", "amount": 42.5},
    }
    request = urllib.request.Request(
        url + "_demo/runs", data=json.dumps(run).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as res:
        return res.status, json.loads(res.read())


def test_a_second_demo_refuses_and_the_first_goes_on(tmp_path: Path) -> None:
    first = DemoProcess(tmp_path)
    try:
        url = first.wait_ready()
        assert start_refund(url, "cust_before")[1]["status"] == "paused"

        second = demo(tmp_path, "--port", "0")
        assert (second.returncode, second.stdout) == (1, ""), second.stderr
        assert second.stderr.strip() == (
            f"signoff demo: another signoff demo is using signoff-sandbox.db "
            f"(pid {first.proc.pid}); stop it or use --db"
        )
        same_port = demo(tmp_path, "--port", url.rstrip("/").rpartition(":")[2])
        assert same_port.returncode == 1
        assert "cannot listen on 127.0.0.1:" in same_port.stderr
        assert "try --port" in same_port.stderr

        # The first demo's database is whole: a run starts and pauses for its approval.
        status, answer = start_refund(url, "cust_after")
        assert (status, answer["status"]) == (201, "paused"), answer
        assert "no such table" not in first.output()
    finally:
        assert first.stop() == 0, first.output()
    # Its lock went with it: the next demo may have the file.
    lock = DemoLock(tmp_path / "signoff-sandbox.db")
    lock.acquire()
    lock.release()


def test_the_lock_names_its_holder_and_another_file_is_free(tmp_path: Path) -> None:
    held = DemoLock(tmp_path / "signoff-sandbox.db")
    held.acquire()
    try:
        # flock locks belong to the open file: a second open in this process is refused too.
        try:
            DemoLock(tmp_path / "signoff-sandbox.db").acquire()
        except DemoBusy as e:
            assert str(e) == (
                f"another signoff demo is using signoff-sandbox.db (pid {os.getpid()}); "
                "stop it or use --db"
            )
        else:
            raise AssertionError("a held lock was taken twice")
        other = DemoLock(tmp_path / "other.db")
        other.acquire()
        other.release()
    finally:
        held.release()


def test_a_busy_bot_port_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    import socket

    db = tmp_path / "signoff-sandbox.db"
    db.write_text("someone's data")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = demo(tmp_path, "--port", "0", "--bot-port", str(port))
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "try --bot-port" in done.stderr
    assert db.read_text() == "someone's data"
