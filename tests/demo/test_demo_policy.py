"""`signoff demo --policy FILE`: the demo says what it runs, and suggests what that policy has.

A real `signoff demo` subprocess on a workflow written by `signoff new workflow` (the path a
newcomer takes in "Your own workflow").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.demo.conftest import DemoProcess


def test_a_demo_on_your_own_policy_does_not_tell_you_to_start_a_refund(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "bot.cli", "new", "workflow", "expense"],
        cwd=tmp_path, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    demo = DemoProcess(tmp_path, "--policy", "expense.toml", "--db", str(tmp_path / "d.db"))
    try:
        demo.wait_ready()
        said = demo.output()
    finally:
        demo.stop()
    assert "(policy expense.toml); pick who you are, start one of its workflows" in said
    assert "start a refund" not in said
