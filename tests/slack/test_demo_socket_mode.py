"""`signoff demo --socket-mode`: the demo with the bot in Socket Mode, as a real subprocess. The
bot opens the sandbox's WebSocket with its `xapp-` token, and a refund started with `/agent run`
and approved on its card goes over that socket, start to finish."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.client import SandboxClient
from bot.slack.payloads import APPROVE
from tests.kit.e2e import messages_of, replies_of, text_of

URL_LINE = re.compile(r"signoff demo is running: open (http://127\.0\.0\.1:\d+/)")
CHANNEL, CAROL, ALICE = "C_APPROVALS", "U_CAROL", "U_ALICE"


class Demo:
    def __init__(self, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "demo", "--port", "0", "--socket-mode",
             "--db", str(cwd / "demo.db")],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.url: str | None = None
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if found := URL_LINE.search(line):
                self.url = found.group(1)
                self.ready.set()
        self.ready.set()

    def output(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    running = Demo(tmp_path)
    running.ready.wait(60)
    if running.url is None:
        running.proc.kill()
        running.proc.wait()
        raise RuntimeError("signoff demo did not print its URL:\n" + running.output())
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.proc.send_signal(signal.SIGTERM)
        status = running.proc.wait(20)
        running.reader.join(5)
        assert running.proc.stdout is not None
        running.proc.stdout.close()
    assert status == 0, running.output()


async def test_the_demo_in_socket_mode_approves_a_refund_over_the_socket(demo: Demo) -> None:
    assert "the bot runs in Socket Mode" in demo.output()
    assert demo.url is not None
    async with SandboxClient(demo.url) as slack:
        assert [c["status"] for c in await slack.calls("apps.connections.open")] == [200]
        answer = await slack.command(
            CAROL, CHANNEL, "run refund customer_id=c-socket order_id=o-1 amount=12 reason=damaged"
        )
        assert answer["status"] == 200, answer

        def the_card(state: dict[str, object]) -> dict[str, object] | None:
            return next(
                (
                    m
                    for m in messages_of(state, CHANNEL)
                    if "c-socket" in text_of(m.get("blocks") or [])
                ),
                None,
            )

        card = the_card(await slack.wait_for(the_card, timeout=30))
        assert card is not None
        clicked = await slack.click(ALICE, CHANNEL, str(card["ts"]), APPROVE)
        assert clicked["status"] == 200 and not clicked.get("late"), clicked

        state = await slack.wait_for(
            lambda s: any("refunded 12.00" in r for r in replies_of(s, the_card(s) or card)),
            timeout=30,
        )
        decided = the_card(state)
        assert decided is not None and "*Approved* by <@U_ALICE>" in text_of(decided), demo.output()
