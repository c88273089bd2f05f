"""`signoff demo --walkthrough`: a refund that pauses for approval, walked through in separate
processes, in the terminal.

Each step is a fresh `signoff` process that shares nothing with the others but a SQLite file:
the run pauses in one, is refused and then approved (with an edited amount) in others, and the
refund is issued exactly once. The commands are printed, so they can be tried by hand after.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

__all__ = ["walkthrough"]

DEMO_DB = "signoff-demo.db"
DEMO_POLICY = Path(__file__).with_name("policies") / "demo.toml"


def _step(
    title: str,
    args: list[str],
    env: dict[str, str],
    *,
    capture_json: bool = False,
    refused: bool = False,
) -> str:
    print(f"\n== {title}\n$ signoff {shlex.join(args)}", flush=True)
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )
    out = proc.stdout.strip()
    if not capture_json:
        for line in (out + "\n" + proc.stderr.strip()).strip().splitlines():
            print(f"  {line}")
    if (proc.returncode != 0) != refused:
        raise SystemExit(f"demo step went wrong (exit {proc.returncode}): {proc.stderr.strip()}")
    return out


def walkthrough() -> int:
    """The terminal walk-through (`signoff demo --walkthrough`); the process's exit status."""
    for suffix in ("", "-wal", "-shm", ".locks"):
        Path(DEMO_DB + suffix).unlink(missing_ok=True)
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": f"sqlite:///{DEMO_DB}",
        "SIGNOFF_POLICY": str(DEMO_POLICY),
    }
    print("signoff demo: a refund that waits for a person, on", DEMO_DB)
    print(
        "policy:", DEMO_POLICY.name, "(finance approves refunds; amounts up to 5 are auto-approved)"
    )

    started = _step(
        "Carol (support) starts a refund of 42.50; the workflow pauses before paying",
        [
            "start",
            "refund",
            "--as",
            "U_CAROL",
            "--json",
            "--input",
            json.dumps(
                {
                    "customer_id": "cust_9",
                    "order_id": "o-1001",
                    "amount": 42.5,
                    "reason": "damaged item",
                }
            ),
        ],
        env,
        capture_json=True,
    )
    report = json.loads(started)
    thread_id, approval_id = report["thread_id"], report["approvals"][0]
    print(f"  thread {thread_id} is {report['status']}; approval {approval_id}")

    _step("What is waiting, and on whom", ["pending"], env)
    _step(
        "Carol tries to approve her own request: refused",
        ["approve", approval_id, "--as", "U_CAROL"],
        env,
        refused=True,
    )
    _step(
        "Dave is not in finance: refused",
        ["approve", approval_id, "--as", "U_DAVE"],
        env,
        refused=True,
    )
    _step(
        "Alice (finance) approves 40.00 instead, in another process; the run resumes",
        [
            "approve",
            approval_id,
            "--as",
            "U_ALICE",
            "--edit",
            "amount=40",
            "--note",
            "partial refund",
        ],
        env,
    )
    _step(
        "A second click changes nothing: the refund ran once",
        ["approve", approval_id, "--as", "U_BOB"],
        env,
        refused=True,
    )
    _step("The run, its state and its approval", ["show", thread_id], env)
    _step("The audit log's hash chain", ["audit", "verify"], env)
    print(
        "\nTry it yourself with the same settings:\n"
        f"  export SIGNOFF_DATABASE_URL=sqlite:///{DEMO_DB} SIGNOFF_POLICY={DEMO_POLICY}\n"
        '  signoff start delete_row --as U_CAROL --input \'{"table": "users", "row_id": "7"}\'\n'
        "  signoff pending"
    )
    return 0
