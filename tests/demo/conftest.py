"""`signoff demo` as a real subprocess, and Debian's Chromium driven by Playwright.

The demo runs once for the module (`demo_url`); each test gets a fresh browser page, starts its
own runs (with its own customer ids, so tests do not see each other's cards) and saves a
screenshot into `test-output/demo/`. Chromium is never downloaded: `.ci/run` installs Debian's
package when `/usr/bin/chromium` is missing, and these tests fail (never skip) without it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "demo"
"""Where the screenshots go (gitignored)."""
URL_LINE = re.compile(r"signoff demo is running: open (http://127\.0\.0\.1:\d+/)")


class DemoProcess:
    """`signoff demo --port 0 [ARGS]` in a subprocess, its output collected by a thread."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        """`env`: more environment for the demo, beside this one without its Slack and signoff
        settings."""
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))},
            **(env or {}),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "demo", "--port", "0", *args],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            found = URL_LINE.search(line)
            if found:
                self.url = found.group(1)
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = 60.0) -> str:
        self._ready.wait(timeout)
        if self.url is None:
            self.stop()
            raise RuntimeError("signoff demo did not print its URL:\n" + self.output())
        return self.url

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoProcess]:
    """The running demo; stopped with SIGTERM after the module, which must exit cleanly."""
    started = time.monotonic()
    process = DemoProcess(tmp_path_factory.mktemp("demo"))
    process.wait_ready()
    print(f"signoff demo ready in {time.monotonic() - started:.1f}s at {process.url}")
    yield process
    status = process.stop()
    assert status == 0, process.output()
    assert "signoff demo stopped" in process.output()


@pytest.fixture(scope="module")
def demo_url(demo: DemoProcess) -> str:
    assert demo.url is not None
    return demo.url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run does it in CI)"
    )
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Path:
    """The PNG path for this test's screenshot."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    return OUTPUT / f"{request.node.name}.png"
