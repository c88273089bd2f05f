"""N concurrent votes on a real SQLite file: where a click's time goes.

Requests `--approvals` refunds, then approves each one (as a click does: `vote(wait=2.5)`) with
`--inflight` votes in flight at a time, and prints the votes' latency (p50/p99), how long they
waited for SQLite's write gate and how long they held it, how many commits the file saw, and
the process's CPU time per vote (all its threads: the event loop and aiosqlite's).

    python bench/vote_burst.py --approvals 200 --inflight 16 [--no-group]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from bot.approvals import _group_commit
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kit = Kit(f"sqlite:///{Path(tmp) / 'burst.db'}", Path(tmp))
        kit.db.group_commit = not args.no_group
        if args.max_group:
            _group_commit.MAX_GROUP = args.max_group
        await kit.db.upgrade()
        try:
            ids = [
                (await kit.start("refund", {**REFUND, "order_id": f"o-{n}"})).approvals[0]
                for n in range(args.approvals)
            ]
            gate = kit.db.saver._gate
            assert gate is not None
            waits: list[float] = []
            holds: list[float] = []
            taken: dict[int, float] = {}
            aacquire, release = gate.aacquire, gate.release

            async def timed_acquire(**kw: Any) -> None:
                t0 = time.perf_counter()
                await aacquire(**kw)
                waits.append(time.perf_counter() - t0)
                taken[0] = time.perf_counter()

            def timed_release() -> None:
                if 0 in taken:
                    holds.append(time.perf_counter() - taken.pop(0))
                release()

            gate.aacquire = timed_acquire  # type: ignore[method-assign]
            gate.release = timed_release  # type: ignore[method-assign]
            commits = _count_commits(kit)
            latencies: list[float] = []
            busy = 0
            slots = asyncio.Semaphore(args.inflight)

            async def click(approval_id: str) -> None:
                nonlocal busy
                async with slots:
                    t0 = time.perf_counter()
                    try:
                        # As a click does: read what the button is on, then vote on it.
                        a = await kit.app.get(approval_id, wait=2.5)
                        await kit.app.vote(
                            a.id, "U_ALICE", True, wait=2.5, revision=a.revision, seen=a
                        )
                    except Exception as e:  # noqa: BLE001
                        busy += 1
                        print("refused:", e, file=sys.stderr)
                    latencies.append(time.perf_counter() - t0)

            start, cpu_start = time.perf_counter(), time.process_time()
            await asyncio.gather(*(click(i) for i in ids))
            took = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            print(
                f"{'no group commit' if args.no_group else f'group commit (<= {_group_commit.MAX_GROUP})'}: "
                f"{len(ids)} votes, {args.inflight} in flight, {took:.2f}s, load "
                f"{os.getloadavg()[0]:.2f}: latency p50/p99 {pct(latencies, 0.5):.0f}/"
                f"{pct(latencies, 0.99):.0f} ms; gate wait p50/p99 {pct(waits, 0.5):.1f}/"
                f"{pct(waits, 0.99):.1f} ms; hold mean {statistics.mean(holds) * 1000:.1f} ms "
                f"over {len(holds)} holds; {commits[0]} commits; {busy} refused; "
                f"CPU {cpu * 1000 / len(ids):.2f} ms a vote (all threads)"
            )
        finally:
            await kit.aclose()


def _count_commits(kit: Kit) -> list[int]:
    """Commits the async engine's connections make (SQLAlchemy's commit event), counted."""
    count = [0]

    def on_commit(_conn: Any) -> None:
        count[0] += 1

    sa.event.listen(kit.db.engine.sync_engine, "commit", on_commit)
    return count


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--approvals", type=int, default=200)
    parser.add_argument("--inflight", type=int, default=16)
    parser.add_argument("--no-group", action="store_true", help="each vote commits on its own")
    parser.add_argument("--max-group", type=int, help="the most votes one commit takes")
    parser.add_argument("--rounds", type=int, default=1, help="repeat, alternating with --no-group")
    options = parser.parse_args()
    for n in range(options.rounds):
        # Alternating, when repeated: the machine's load changes under both the same way.
        flip = options.rounds > 1 and n % 2 == 1
        asyncio.run(
            main(argparse.Namespace(**{**vars(options), "no_group": options.no_group ^ flip}))
        )
