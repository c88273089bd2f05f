"""Scale of pauses (issue 7): `/agent status`, a sweep pass and the bot's memory with 100,000
pending approvals.

    .venv/bin/python bench/scale.py [--pending 100000] [--db sqlite|postgres]

1. Starts the fake Slack and a real bot (`signoff run`, HTTP mode; the processes of
   `bot.sandbox.processes`) on a fresh SQLite file (or PostgreSQL schema, dropped afterwards).
2. Opens `--seed` pending refund approvals the real way (`POST /api/runs`: a graph run to its
   pause, an approval, a card in the fake Slack).
3. Measures, at that size: the reply time of a signed `/agent status` slash command from an
   approver, until its list arrives through the response_url (the ack is empty; `--asks`
   times, the list checked: it must count every pending approval), of Home
   (`app_home_opened` until `views.publish` arrives), one sweep pass with nothing due (the same
   `Signoff.sweep` the bot runs, in this process), and the bot's resident memory (VmRSS).
4. Grows the database to `--pending` approvals by copying the seeded runs and approvals (new ids,
   older creation times; checkpoints are not copied: status, Home and the sweep read only the
   governance tables), and measures again. Last, it makes `--due` of them due for a reminder and
   times the sweep pass that sends them (and the bot then posts them to the fake Slack).

Prints a markdown table; one JSON line per size to bench/results/scale-<UTC time>.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aiohttp
import sqlalchemy as sa
from load import BOB, create_runs, index_cards, machine, processes, record

from bot.approvals import tables as t
from bot.config import Settings, build_signoff
from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import CHANNEL, SIGNING_SECRET, BotProcess
from bot.sandbox.signing import SlackSigner, app_home_opened, slash_command

BATCH = 5000


def rss_kib(pid: int) -> dict[str, int]:
    """The process's resident memory now and at its peak (KiB), from /proc."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def ms(values: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
    }


async def calls_so_far(slack: SandboxClient) -> int:
    """How many calls the fake has recorded (counted by the fake, not read)."""
    return sum(n for by_status in (await slack.call_counts()).values() for n in by_status.values())


async def ask_status(
    bot: BotProcess, slack: SandboxClient, signer: SlackSigner, clicks: aiohttp.ClientSession
) -> tuple[float, float, str]:
    """`/agent status`: seconds to its (empty) ack, seconds until its list arrives through the
    response_url (what the person waits for), and that list."""
    response_url = await slack.response_url(CHANNEL, BOB)
    req = slash_command(
        text="status", user_id=BOB, channel_id=CHANNEL,
        trigger_id=await slack.trigger_id(BOB), response_url=response_url,
    )  # fmt: skip
    since = await calls_so_far(slack)
    sent = time.time()
    t0 = time.perf_counter()
    async with clicks.post(
        bot.events_url, data=req.body.encode(), headers=signer.headers(req)
    ) as res:
        body = await res.text()
        acked = time.perf_counter() - t0
    if res.status != 200:
        raise RuntimeError(f"/agent status answered {res.status}: {body[:300]}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for call in await slack.calls("response_url", since=since):
            return acked, float(call["time"]) - sent, json.dumps(call["params"])
        await asyncio.sleep(0.02)
    raise RuntimeError("/agent status posted nothing to its response_url within 30 s")


async def open_home(
    bot: BotProcess, slack: SandboxClient, signer: SlackSigner, clicks: aiohttp.ClientSession
) -> float:
    """Seconds from `app_home_opened` sent to the fake recording the bot's `views.publish`."""
    since = await calls_so_far(slack)
    req = app_home_opened(user_id=BOB, channel_id="D0BOB")
    sent = time.time()
    async with clicks.post(
        bot.events_url, data=req.body.encode(), headers=signer.headers(req)
    ) as res:
        await res.read()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for call in await slack.calls(since=since):
            if call["method"] == "views.publish" and call["params"].get("user_id") == BOB:
                return float(call["time"]) - sent
        await asyncio.sleep(0.02)
    raise RuntimeError("Home was not published within 30 s")


async def measure(
    label: str, n_pending: int, bot: BotProcess, slack: SandboxClient, settings: Settings, asks: int
) -> dict[str, Any]:
    signer = SlackSigner(SIGNING_SECRET)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as clicks:
        status_times, ack_times = [], []
        for _ in range(asks):
            acked, elapsed, body = await ask_status(bot, slack, signer, clicks)
            ack_times.append(acked)
            status_times.append(elapsed)
        counted = sum(int(n) for n in re.findall(r"Waiting on (?:you|others)\* \((\d+)\)", body))
        if counted != n_pending:
            raise RuntimeError(
                f"/agent status counted {counted} pending approvals, the database holds {n_pending}"
            )
        home_times = [await open_home(bot, slack, signer, clicks) for _ in range(max(3, asks // 4))]
    app = build_signoff(settings)
    try:
        sweeps = []
        for _ in range(3):
            t0 = time.perf_counter()
            counts = await app.sweep()
            sweeps.append(time.perf_counter() - t0)
            if any(counts.values()):
                raise RuntimeError(f"the idle sweep found work: {counts}")
    finally:
        await app.db.aclose()
    return {
        "workload": "pause_scale",
        "label": label,
        "pending": n_pending,
        "status_reply": ms(status_times),
        "status_ack": ms(ack_times),
        "status_reply_bytes": len(body),
        "home_publish": ms(home_times),
        "sweep_idle": ms(sweeps),
        "bot_memory_kib": rss_kib(bot.proc.pid),
    }


def grow(db_url: str, target: int) -> int:
    """Copy the pending approvals (and their runs) until there are `target`; return how many."""
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            seeds = [
                dict(r)
                for r in conn.execute(
                    sa.select(t.approvals).where(t.approvals.c.status == "pending")
                ).mappings()
            ]
            runs = {r["thread_id"]: dict(r) for r in conn.execute(sa.select(t.runs)).mappings()}
        have = len(seeds)
        copy = 0
        while have < target:
            approvals, new_runs = [], []
            for _ in range(min(BATCH, target - have)):
                seed = seeds[copy % len(seeds)]
                k = copy // len(seeds) + 1
                suffix = f"-c{k}"
                created = seed["created_at"] - k * 0.5  # older than the seeds: listed first
                approvals.append({
                    **seed, "id": seed["id"] + suffix, "thread_id": seed["thread_id"] + suffix,
                    "interrupt_id": seed["interrupt_id"] + suffix, "created_at": created, "updated_at": created,
                })  # fmt: skip
                run = runs[seed["thread_id"]]
                new_runs.append(
                    {
                        **run,
                        "thread_id": run["thread_id"] + suffix,
                        "created_at": created,
                        "updated_at": created,
                    }
                )
                copy += 1
                have += 1
            with engine.begin() as conn:
                conn.execute(sa.insert(t.runs), new_runs)
                conn.execute(sa.insert(t.approvals), approvals)
        if engine.dialect.name == "sqlite":
            with engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE")
        else:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE")
        return have
    finally:
        engine.dispose()


def make_due(db_url: str, n: int) -> None:
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            ids = (
                conn.execute(
                    sa.select(t.approvals.c.id)
                    .where(t.approvals.c.status == "pending")
                    .order_by(t.approvals.c.created_at.desc())
                    .limit(n)
                )
                .scalars()
                .all()
            )
            conn.execute(
                sa.update(t.approvals)
                .where(t.approvals.c.id.in_(ids))
                .values(remind_at=time.time() - 1)
            )
    finally:
        engine.dispose()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pending", type=int, default=100_000)
    ap.add_argument(
        "--seed", type=int, default=200, help="approvals opened the real way before copying"
    )
    ap.add_argument("--asks", type=int, default=20, help="/agent status requests per size")
    ap.add_argument(
        "--due", type=int, default=500, help="reminders made due for the last sweep pass"
    )
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    info = machine()
    print(f"machine: {info}; db {args.db}", flush=True)
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    out = (
        Path(args.out)
        if args.out
        else results_dir / f"scale-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.jsonl"
    )

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="signoff-scale-") as tmp:
        directory = Path(tmp)
        # the bot's own sweep stays out of the way: this script times the passes itself
        with processes(directory, args.db, name="scale", SIGNOFF_SWEEP_INTERVAL="36000") as (
            fake,
            (bot,),
            db_url,
            policy,
        ):
            settings = Settings(database_url=db_url, policy_path=policy)
            async with (
                SandboxClient(fake.url) as slack,
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
            ):
                await fake.connect(slack, bot.events_url)
                print(f"opening {args.seed} approvals through POST /api/runs ...", flush=True)
                runs = await create_runs(http, [bot], args.seed, "scale")
                deadline = time.monotonic() + 120
                while len(index_cards(await slack.state(), {r["approval_id"] for r in runs})) < len(
                    runs
                ):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the seeded cards were not posted within 120 s")
                    await asyncio.sleep(0.5)

                for label, size in (("seeded", args.seed), ("grown", args.pending)):
                    if size > args.seed:
                        t0 = time.perf_counter()
                        size = grow(db_url, size)
                        print(
                            f"copied up to {size} pending approvals in {time.perf_counter() - t0:.1f} s",
                            flush=True,
                        )
                    row = await measure(label, size, bot, slack, settings, args.asks)
                    row.update({"db": args.db, "machine": info})
                    rows.append(row)
                    record(out, row)

                make_due(db_url, args.due)
                app = build_signoff(settings)
                try:
                    t0 = time.perf_counter()
                    counts = await app.sweep()
                    due_pass = time.perf_counter() - t0
                finally:
                    await app.db.aclose()
                if counts["reminded"] != args.due:
                    raise RuntimeError(
                        f"the sweep reminded {counts['reminded']}, expected {args.due}"
                    )
                rows[-1]["sweep_with_due"] = {
                    "reminded": counts["reminded"],
                    "seconds": round(due_pass, 2),
                }
                sweep_row = {
                    "workload": "pause_scale_sweep",
                    "pending": rows[-1]["pending"],
                    **rows[-1]["sweep_with_due"],
                }
                record(out, {**sweep_row, "db": args.db, "machine": info})

    print()
    print(
        "| db | pending | /agent status reply ms, median / max | Home published ms, median / max | sweep pass, nothing due, ms median / max | bot VmRSS / peak MiB |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        mem = r["bot_memory_kib"]
        print(
            f"| {r['db']} | {r['pending']:,} | {r['status_reply']['median_ms']} / {r['status_reply']['max_ms']} | "
            f"{r['home_publish']['median_ms']} / {r['home_publish']['max_ms']} | {r['sweep_idle']['median_ms']} / {r['sweep_idle']['max_ms']} | "
            f"{mem['VmRSS'] / 1024:.0f} / {mem['VmHWM'] / 1024:.0f} |"
        )
    due = rows[-1].get("sweep_with_due")
    if due:
        print(
            f"\nsweep pass with {due['reminded']} reminders due among {rows[-1]['pending']:,} pending: {due['seconds']} s"
        )
    print(f"records: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
