"""`signoff demo --walkthrough`: the terminal walk-through still runs, step by step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_the_walkthrough_runs_to_a_verified_audit_log(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo", "--walkthrough"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Carol tries to approve her own request: refused" in out
    assert "refunded 40.00 to cust_9" in out
    assert "audit log intact" in out
    assert (tmp_path / "signoff-demo.db").exists()
