"""Issue 34: what callers' text costs the bot. A real `signoff run` (HTTP mode, SQLite) against
the fake Slack, both processes of `bot.sandbox.processes`; a service asks for approvals over
`POST /api/approvals`:

1. `--count` approvals, each with the largest title and arguments the running code accepts
   (a 500-character title, text arguments of 3,999 characters up to about 32 KiB a request):
   the bot's resident memory (VmRSS) before and after, and one `GET /api/approvals` listing them
   (its size and time);
2. `--hostile` approvals whose 26-character title asks for gigabytes through a format spec
   (`"Refund {amount:>99999999}"`), when the code takes them (else the refusal is printed):
   the same listing and memory again.

    .venv/bin/python bench/hostile_input.py [--count 1000] [--hostile 3]

Run it from a checkout of each version (a worktree of the older one) to compare; it uses only
what both have.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.sandbox.processes import BotProcess, FakeSlackProcess, sqlite_url

TOKEN = "bench-service-token-0123456789abcdef"
POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]

[services.bench]
token_env = "BENCH_SERVICE_TOKEN"
actions = ["send_refund"]
"""
TITLE = ("Refund {amount} to {customer_id} " * 20)[:500]
HOSTILE = "Refund {amount:>99999999}"


def call(url: str, body: Any = None) -> tuple[int, bytes, float]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("Authorization", f"Bearer {TOKEN}")
    req.add_header("Content-Type", "application/json")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as res:
            return res.status, res.read(), time.perf_counter() - started
    except urllib.error.HTTPError as e:
        return e.code, e.read(), time.perf_counter() - started


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def args_of(n: int) -> dict[str, Any]:
    text = "x" * 3999
    return {"customer_id": f"c{n}", "amount": 42.5, "reason": text, "notes": [text] * 6}


def listing(bot: BotProcess) -> str:
    status, body, took = call(f"{bot.url}/api/approvals?status=pending")
    return f"list {status}: {len(body) / 1e6:.1f} MB in {took * 1000:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--hostile", type=int, default=3)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as where:
        d = Path(where)
        (d / "policy.toml").write_text(POLICY)
        fake = FakeSlackProcess(d)
        bot = BotProcess(d, sqlite_url(d), fake.url, d / "policy.toml", BENCH_SERVICE_TOKEN=TOKEN)
        try:
            pid = bot.proc.pid
            print(f"bot at start: {rss_mb(pid):.0f} MB")
            refused: dict[int, int] = {}
            for n in range(opts.count):
                status, body, _ = call(
                    f"{bot.url}/api/approvals",
                    {
                        "action": "send_refund",
                        "args": args_of(n),
                        "title": TITLE,
                        "requester": "bench",
                    },
                )
                if status >= 300:
                    refused[status] = refused.get(status, 0) + 1
                    if sum(refused.values()) == 1:
                        print(f"refused {status}: {body[:300]!r}")
            print(
                f"{opts.count} maximal requests ({refused or 'all taken'}): bot {rss_mb(pid):.0f} MB"
            )
            print(listing(bot) + f"; bot {rss_mb(pid):.0f} MB")
            for n in range(opts.hostile):
                status, body, _ = call(
                    f"{bot.url}/api/approvals",
                    {"action": "send_refund", "args": {"amount": 1, "customer_id": f"h{n}"},
                     "title": HOSTILE, "requester": "bench"},
                )  # fmt: skip
                print(f"hostile title {n + 1}: {status} {body[:160]!r}")
            print(listing(bot) + f"; bot {rss_mb(pid):.0f} MB")
        finally:
            bot.stop()
            fake.stop()


if __name__ == "__main__":
    main()
