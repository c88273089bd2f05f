"""Issue 16: the approvals API's costs, in one process over real HTTP (aiohttp on a local port):
ms per `POST /api/approvals` (a run started up to its pause, the approval and its card job
recorded), per `GET /api/approvals/{id}`, and from a decision to the answer of a read waiting
on it (`?wait=60`: the poll interval bounds it).

    .venv/bin/python bench/api.py [--count 200]

On SQLite (a temporary file). Absolute figures drift with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.approvals import store
from bot.approvals.audit import AuditLog
from bot.approvals.db import Database
from bot.approvals.policy import parse_policy
from bot.approvals.service import Signoff
from bot.config import Settings
from bot.http import Metrics, build_web_app

POLICY = """
[actions.send_refund]
approvers = ["U_ALICE"]
[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }
[services.bench]
token_env = "BENCH_TOKEN"
actions = ["send_refund"]
"""
TOKEN = "bench-token-0123456789abcdef"


class _Runner:
    def kick(self) -> None:
        pass


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1] if len(ordered) >= 20 else ordered[-1]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


async def main(count: int, url: str) -> None:
    policy = parse_policy(POLICY, "bench.toml")
    db = Database(url)
    await db.upgrade()
    app = Signoff(db, policy, {}, audit=AuditLog())
    app.external.load_tokens({"BENCH_TOKEN": TOKEN})
    web_app = build_web_app(
        app,
        Settings(database_url=url, default_channel="C0BENCH"),  # where the cards would go
        bolt_app=None,
        runner=_Runner(),  # type: ignore[arg-type]
        metrics=Metrics(),
    )
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    posts, gets, wakes = [], [], []
    async with aiohttp.ClientSession(headers=headers) as http:
        ids = []
        for i in range(count):
            body = {
                "action": "send_refund",
                "args": {"customer_id": f"c{i}", "amount": 10 + i},
                "requester": "U_CAROL",
            }
            start = time.perf_counter()
            async with http.post(f"{base}/api/approvals", json=body) as resp:
                ids.append((await resp.json())["approval_id"])
            posts.append(time.perf_counter() - start)
        for approval_id in ids:
            start = time.perf_counter()
            async with http.get(f"{base}/api/approvals/{approval_id}") as resp:
                await resp.read()
            gets.append(time.perf_counter() - start)
        for approval_id in ids[: min(20, count)]:
            waiting = asyncio.ensure_future(http.get(f"{base}/api/approvals/{approval_id}?wait=60"))
            while app.external.waiting < 1:
                await asyncio.sleep(0.01)
            async with app.db.read() as conn:
                run_approvals = await store.list_approvals(conn, thread_id=approval_id)
            await app.vote(run_approvals[0].id, "U_ALICE", True)
            decided = time.perf_counter()
            async with await waiting as resp:
                await resp.read()
            wakes.append(time.perf_counter() - decided)
    print(f"database: {db.display_url}")
    print(f"POST /api/approvals ({count}): {_ms(posts)}")
    print(f"GET /api/approvals/ID ({count}): {_ms(gets)}")
    print(f"decision -> waiting read answered ({len(wakes)}): {_ms(wakes)}")
    await runner.cleanup()
    await db.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(args.count, f"sqlite:///{tmp}/bench.db"))
