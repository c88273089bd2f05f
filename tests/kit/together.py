"""Several `python -c` processes released at the same moment: races across processes."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["GO", "run_together"]


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
