"""Issue 34: card delivery while one webhook receiver never answers.

A real `signoff run` (HTTP mode, SQLite) and the fake Slack; a service's receiver that accepts
each webhook's connection and never answers. First `--stuck` requests with that receiver as
their `callback_url` are approved (their webhooks now hang on it), then `--cards` more requests
are sent one after another, each timed from `POST /api/approvals` to its card in the fake's
channel. Prints p50, p99 and the largest per code tree.

Each `--code NAME=PATH` is a checkout of signoff (the branch, main in a worktree) run with this
interpreter; the trees are run in turn, `--rounds` times, alternating, so they see the same
machine load. A tree that has no `callback_urls` in its policy reader (before issue 34) gets a
policy without it.

    .venv/bin/python bench/webhook_stall.py --code branch=. --code main=../main --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp

from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import (
    API_TOKEN,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    FakeSlackProcess,
    free_port,
    sqlite_url,
)
from bot.slack.payloads import APPROVE

TOKEN = "bench-billing-token-0123456789abcdef"
POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }

[services.billing]
token_env = "BENCH_BILLING_TOKEN"
actions = ["send_refund"]
"""
ALLOW_LOOPBACK = 'callback_urls = ["http://127.0.0.1:*"]\ncallback_private = true\n'


class Silent:
    """Takes each webhook's connection and request, and never answers."""

    def __init__(self) -> None:
        self.arrived = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        if await reader.read(1):
            self.arrived += 1
        while await reader.read(65536):
            pass


def start_bot(code: Path, directory: Path, slack_url: str) -> tuple[subprocess.Popen[bytes], str]:
    knows_allow_list = (code / "bot" / "approvals" / "policy" / "_callbacks.py").exists()
    policy = directory / "policy.toml"
    policy.write_text(POLICY + (ALLOW_LOOPBACK if knows_allow_list else ""))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SIGNOFF_SLACK_API_URL": slack_url,
        "SIGNOFF_DATABASE_URL": sqlite_url(directory),
        "SIGNOFF_POLICY": str(policy),
        "SIGNOFF_API_TOKEN": API_TOKEN,
        "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
        "BENCH_BILLING_TOKEN": TOKEN,
    }
    env.pop("SLACK_APP_TOKEN", None)
    with open(directory / "bot.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=directory,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((directory / "bot.log").read_text())
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the bot did not answer /healthz within 60 s")


def cards(state: dict[str, Any]) -> list[dict[str, Any]]:
    for channel in state["channels"]:
        if channel["id"] == CHANNEL:
            return [m for m in channel["messages"] if m.get("thread_ts") in (None, m["ts"])]
    return []


async def one_run(code: Path, n_cards: int, stuck: int) -> list[float]:
    """Seconds from each request to its card, with `stuck` webhooks hanging."""
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as tmp:
        directory = Path(tmp)
        fake = FakeSlackProcess(directory)
        silent = Silent()
        port = free_port()
        server = await asyncio.start_server(silent.handle, "127.0.0.1", port)
        proc, url = start_bot(code, directory, fake.url)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        try:
            async with SandboxClient(fake.url) as slack, aiohttp.ClientSession() as http:
                await fake.connect(slack, url + "/slack/events")

                async def ask(i: int, callback: str | None) -> float:
                    body: dict[str, Any] = {
                        "action": "send_refund",
                        "args": {"customer_id": f"c{i}", "amount": 5},
                        "requester": "U0CAROL",
                    }
                    if callback:
                        body["callback_url"] = callback
                    before = len(cards(await slack.state()))
                    started = time.perf_counter()
                    async with http.post(url + "/api/approvals", json=body, headers=headers) as r:
                        assert r.status == 202, await r.text()
                    await slack.wait_for(lambda s: len(cards(s)) > before, timeout=120)
                    return time.perf_counter() - started

                hook = f"http://127.0.0.1:{port}/hook"
                for i in range(stuck):
                    await ask(-1 - i, hook)
                    card = cards(await slack.state())[-1]
                    answer = await slack.click("U0ALICE", CHANNEL, card["ts"], APPROVE)
                    assert answer["status"] == 200, answer
                deadline = time.monotonic() + 60
                while silent.arrived < stuck and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                return [await ask(i, None) for i in range(n_cards)]
        finally:
            proc.terminate()
            proc.wait(20)
            server.close()
            for writer in silent.writers:
                writer.close()
            await asyncio.sleep(0.2)  # the handlers see their connections closed and end
            fake.stop()


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--code", action="append", default=[], help="NAME=PATH of a signoff tree (repeatable)"
    )
    parser.add_argument("--cards", type=int, default=40, help="timed cards per run")
    parser.add_argument("--stuck", type=int, default=2, help="webhooks hanging on the receiver")
    parser.add_argument("--rounds", type=int, default=2, help="runs per tree, alternating")
    args = parser.parse_args()
    trees = [tuple(c.split("=", 1)) for c in args.code] or [("this", str(ROOT))]
    seen: dict[str, list[float]] = {name: [] for name, _ in trees}
    for round_ in range(args.rounds):
        for name, path in trees:
            took = asyncio.run(one_run(Path(path).resolve(), args.cards, args.stuck))
            seen[name] += took
            print(
                f"round {round_ + 1} {name}: p50 {statistics.median(took) * 1000:.0f} ms, "
                f"p99 {p(took, 0.99) * 1000:.0f} ms, max {max(took) * 1000:.0f} ms",
                flush=True,
            )
    print(f"\ncard delivery, {args.stuck} webhook(s) hanging on a receiver that never answers:")
    for name, took in seen.items():
        print(
            f"  {name:>8}: {len(took)} cards, p50 {statistics.median(took) * 1000:.0f} ms, "
            f"p99 {p(took, 0.99) * 1000:.0f} ms, max {max(took) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
