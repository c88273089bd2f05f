"""Interaction load (issue 7): signed Approve clicks at a fixed rate against a real bot process.

    .venv/bin/python bench/load.py [--rates 10,50,100] [--seconds 30] [--db sqlite|postgres] [--replicas N] [--starve]

Starts the fake Slack (`python -m bot.sandbox.slack_api`) and `signoff run` in HTTP mode (the
processes of `bot.sandbox.processes`), on a fresh SQLite file (or a fresh PostgreSQL schema,
dropped afterwards); with `--replicas 2` (PostgreSQL), two bots on the one database, the clicks
and run starts dealt to them in turn as a load balancer would. For each rate it first creates rate x seconds pending refund approvals
through `POST /api/runs` (one approver suffices), waits for their cards, then sends one signed
Approve click per approval straight to the bot's /slack/events, open loop: click i is sent at
t0 + i/rate whatever the earlier ones are doing. It reports per rate:

- ack: the bot's HTTP answer to the click (median, p99, max ms);
- card: click sent -> the fake recorded the chat.update of that card (the time it arrived);
- done: click sent -> the fake recorded the thread reply "... completed.";
- errors: non-200 answers, timeouts (no ack within 10 s, or no card/completion within the wait);
- integrity (read from the database once it settled): decisions recorded, doubled decisions
  (an approval with more than one vote, or a run with more than one refund; goal 0), and late
  commits: clicks not answered 200 within Slack's 3 s (Slack showed an error) whose vote was
  nevertheless committed (goal 0).

`--starve` runs one busy loop per core (`os.cpu_count()` processes, each ending by itself after
the click phase and 10 s more) while the clicks are sent: CPU starvation, as on a crowded host.

A markdown table goes to stdout, JSON lines to bench/results/load-<UTC time>.jsonl.
All traffic is on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp
import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import (
    API_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    BotProcess,
    FakeSlackProcess,
    sqlite_url,
    write_policy,
)
from bot.sandbox.signing import SlackSigner
from bot.slack import messages
from bot.slack.payloads import APPROVE

BOB, CAROL = "U0BOB", "U0CAROL"
"""An approver (of `@approvers` in the fake's demo workspace) and the requester."""
PG_URL = os.environ.get("SIGNOFF_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
"""The PostgreSQL server of `--db postgres` (a fresh schema of its own per run)."""

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "24h"
"""
"""One of @approvers (alice, bob) approves alone."""

ACK_TIMEOUT = 10.0
SLACK_DEADLINE = 3.0
"""Seconds Slack waits for the answer to a click; a later one is an error to the person."""
SETTLE = 60.0
"""Seconds to wait, after the last click, for every card update and completion."""


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(q * len(s))))  # one rank above nearest-rank: errs high
    return s[k]


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values) * 1000, 2) if values else None,
        "p95_ms": round(pct(values, 0.95) * 1000, 2) if values else None,  # type: ignore[operator]
        "p99_ms": round(pct(values, 0.99) * 1000, 2) if values else None,  # type: ignore[operator]
        "max_ms": round(max(values) * 1000, 2) if values else None,
    }


def pg_schema(name: str) -> tuple[str, Callable[[], None]]:
    """A new, empty schema on `PG_URL`, and a function that drops it."""
    schema = f"signoff_bench_{name}_{os.getpid()}_{secrets.token_hex(3)}"
    admin = make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return schema, drop


def pg_url(schema: str) -> str:
    """`PG_URL` on `schema` (first on `search_path`)."""
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def texts(node: Any) -> str:
    """Every text of a message's blocks (not its earlier versions), joined."""
    if isinstance(node, dict):
        return "\n".join(
            value if key == "text" and isinstance(value, str) else texts(value)
            for key, value in node.items()
            if key != "edits"
        )
    if isinstance(node, list):
        return "\n".join(texts(item) for item in node)
    return ""


def index_cards(state: dict[str, Any], wanted: set[str]) -> dict[str, Any]:
    """approval id -> its card (a top-level message whose blocks name it), in one pass."""
    found: dict[str, Any] = {}
    channel = next((ch for ch in state["channels"] if ch["id"] == CHANNEL), {"messages": []})
    for m in channel["messages"]:
        if m.get("thread_ts") not in (None, m["ts"]):
            continue
        for aid in re.findall(r"`([^`\s]+)`", texts(m.get("blocks") or [])):
            if aid in wanted and aid not in found:
                found[aid] = m
    return found


async def create_runs(
    http: aiohttp.ClientSession, bots: list[BotProcess], n: int, tag: str
) -> list[dict[str, Any]]:
    sem = asyncio.Semaphore(8)
    runs: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        body = {
            "workflow": "refund",
            "input": {
                "customer_id": f"cust-{tag}-{i}",
                "order_id": f"order-{tag}-{i}",
                "amount": 10.0,
                "reason": "load test",
            },
            "requester": CAROL,
        }
        bot = bots[i % len(bots)]
        headers = {"Authorization": f"Bearer {API_TOKEN}"}
        async with sem, http.post(f"{bot.url}/api/runs", json=body, headers=headers) as res:
            data = await res.json()
            if res.status != 201 or data.get("status") != "paused":
                raise RuntimeError(f"POST /api/runs answered {res.status}: {data}")
        runs.append({"thread_id": data["thread_id"], "approval_id": data["approvals"][0]})

    await asyncio.gather(*(one(i) for i in range(n)))
    return runs


async def run_rate(
    rate: int,
    seconds: float,
    bots: list[BotProcess],
    slack: SandboxClient,
    http: aiohttp.ClientSession,
    *,
    starve: bool = False,
) -> dict[str, Any]:
    n = int(rate * seconds)
    tag = f"r{rate}-{int(time.time())}"
    t_prep = time.monotonic()
    runs = await create_runs(http, bots, n, tag)
    # wait for every card, then build each click (trigger_id and response_url from the fake)
    deadline = time.monotonic() + 120
    while True:
        cards = index_cards(await slack.state(), {r["approval_id"] for r in runs})
        cards = {r["approval_id"]: cards.get(r["approval_id"]) for r in runs}
        if all(cards.values()):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{sum(1 for c in cards.values() if not c)} of {n} cards not posted within 120 s"
            )
        await asyncio.sleep(0.5)
    requests = []
    for r in runs:
        card = cards[r["approval_id"]]
        assert card is not None
        r["ts"] = card["ts"]
        requests.append(await slack.click_request(BOB, card, APPROVE))
    calls_before = len(await slack.calls())
    prep_s = time.monotonic() - t_prep

    signer = SlackSigner(SIGNING_SECRET)
    sent_at: list[float] = [0.0] * n
    acks: list[float | None] = [None] * n
    errors: list[str] = []
    lateness: list[float] = []
    refused: list[float] = []
    in_time = [False] * n
    """Whether click i was answered 200 within Slack's deadline."""
    hogs = busy_loops(seconds + 10) if starve else []
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(
        connector=conn, timeout=aiohttp.ClientTimeout(total=ACK_TIMEOUT)
    ) as clicks:

        async def click(i: int) -> None:
            req = requests[i]
            headers = signer.headers(req)
            sent_at[i] = time.time()
            t = time.perf_counter()
            try:
                async with clicks.post(
                    bots[i % len(bots)].events_url, data=req.body.encode(), headers=headers
                ) as res:
                    await res.read()
                    elapsed = time.perf_counter() - t
                    if res.status == 200:
                        acks[i] = elapsed
                        in_time[i] = elapsed <= SLACK_DEADLINE
                    else:
                        errors.append(f"HTTP {res.status}")
                        refused.append(elapsed)
            except TimeoutError:
                errors.append("ack timeout")
            except aiohttp.ClientError as e:
                errors.append(f"{type(e).__name__}: {e}")

        tasks = []
        t0 = time.perf_counter() + 0.2
        for i in range(n):
            target = t0 + i / rate
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            lateness.append(time.perf_counter() - target)
            tasks.append(asyncio.create_task(click(i)))
        await asyncio.gather(*tasks)
    send_span = time.perf_counter() - t0
    for hog in hogs:
        hog.kill()
        hog.wait()

    # wait for the updates and completions, then read the fake's recorded calls
    by_ts = {r["ts"]: i for i, r in enumerate(runs)}
    card_at: dict[int, float] = {}
    done_at: dict[int, float] = {}
    busy = 0
    deadline = time.monotonic() + SETTLE
    since = calls_before
    while True:
        for call in await slack.calls(since=since):
            since += 1
            p = call["params"]
            if call["method"] == "chat.update" and p.get("ts") in by_ts:
                i = by_ts[p["ts"]]
                if i not in card_at and call["time"] >= sent_at[i]:
                    card_at[i] = call["time"]
            elif call["method"] == "chat.postEphemeral" and p.get("text") == messages.busy():
                busy += 1
            elif call["method"] == "chat.postMessage" and p.get("thread_ts") in by_ts:
                i = by_ts[p["thread_ts"]]
                if (
                    i not in done_at
                    and "completed." in (p.get("text") or "")
                    and call["time"] >= sent_at[i]
                ):
                    done_at[i] = call["time"]
        if (len(card_at) >= n and len(done_at) >= n) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)

    ack_vals = [a for a in acks if a is not None]
    card_vals = [card_at[i] - sent_at[i] for i in card_at]
    done_vals = [done_at[i] - sent_at[i] for i in done_at]
    return {
        "workload": "interaction_load",
        "replicas": len(bots),
        "rate": rate,
        "seconds": seconds,
        "clicks": n,
        "prep_s": round(prep_s, 1),
        "send_span_s": round(send_span, 2),
        "max_send_lateness_ms": round(max(lateness) * 1000, 2) if lateness else None,
        "ack": summary(ack_vals),
        "non_200_answer": summary(refused),
        "card": summary(card_vals),
        "done": summary(done_vals),
        "errors": {
            "non_200_or_failed": len(errors),
            "kinds": sorted(set(errors))[:5],
            "refused_busy": busy,
            "no_card_update": n - len(card_at),
            "no_completion": n - len(done_at),
            "ack_over_3s": sum(1 for a in ack_vals if a > SLACK_DEADLINE),
        },
        "starved": starve,
        "_runs": [(r["approval_id"], r["thread_id"], in_time[i]) for i, r in enumerate(runs)],
    }


def busy_loops(seconds: float) -> list[subprocess.Popen[bytes]]:
    """One busy loop per core, each ending by itself after `seconds`."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(os.cpu_count() or 1)]


def integrity(db_url: str, runs: list[tuple[str, str, bool]]) -> dict[str, int]:
    """Decisions recorded, doubled and committed late, from the database (see the module doc)."""
    from bot.approvals import tables as t
    from bot.approvals.db import Database

    db = Database(db_url)
    try:
        with db.sync_engine.connect() as conn:
            votes: dict[str, int] = {}
            for approval_id, count in conn.execute(
                sa.select(t.votes.c.approval_id, sa.func.count()).group_by(t.votes.c.approval_id)
            ):
                votes[approval_id] = int(count)
            refunds: dict[str, int] = {}
            for thread_id, count in conn.execute(
                sa.select(t.effects.c.thread_id, sa.func.count())
                .where(t.effects.c.kind == "refund")
                .group_by(t.effects.c.thread_id)
            ):
                refunds[thread_id] = int(count)
    finally:
        db.close()
    return {
        "decisions_recorded": sum(1 for a, _, _ in runs if votes.get(a)),
        "doubled": sum(1 for a, th, _ in runs if votes.get(a, 0) > 1 or refunds.get(th, 0) > 1),
        "committed_after_deadline": sum(1 for a, _, ok in runs if not ok and votes.get(a)),
    }


@contextlib.contextmanager
def processes(
    directory: Path, db: str, *, replicas: int = 1, name: str = "load", **env: str
) -> Iterator[tuple[FakeSlackProcess, list[BotProcess], str, Path]]:
    """The fake Slack and `replicas` bots (`POLICY`) on a fresh database: a SQLite file in
    `directory`, or a PostgreSQL schema dropped afterwards. Yields (fake, bots, database URL,
    policy file); everything is stopped on the way out."""
    drop = None
    fake = FakeSlackProcess(directory)
    bots: list[BotProcess] = []
    try:
        if db == "sqlite":
            db_url = sqlite_url(directory)
        else:
            schema, drop = pg_schema(name)
            db_url = pg_url(schema)
        policy = write_policy(directory, POLICY)
        bots = [BotProcess(directory, db_url, fake.url, policy, **env) for _ in range(replicas)]
        yield fake, bots, db_url, policy
    finally:
        for bot in bots:
            bot.stop()
        fake.stop()
        if drop is not None:
            drop()


def fmt(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "-"
    return f"{s['median_ms']:.1f} / {s['p99_ms']:.1f} / {s['max_ms']:.1f}"


def record(out: Path, row: dict[str, Any]) -> None:
    """Print one result row and append it to the results file (JSON lines)."""
    line = json.dumps(row)
    print(line, flush=True)
    with out.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def machine() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        commit = "?"
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, nproc {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()}, commit {commit}"


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="10,50,100")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="bot processes on the one database (PostgreSQL for more than one)",
    )
    ap.add_argument("--starve", action="store_true", help="a busy loop per core during the clicks")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.replicas < 1 or (args.replicas > 1 and args.db != "postgres"):
        ap.error(
            "--replicas takes 1, or more with --db postgres (replicas share a PostgreSQL database)"
        )
    rates = [int(r) for r in args.rates.split(",") if r.strip()]
    info = machine()
    print(f"machine: {info}; db {args.db}, {args.replicas} bot process(es)", flush=True)

    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    out = (
        Path(args.out)
        if args.out
        else results_dir / f"load-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.jsonl"
    )

    rows = []
    with tempfile.TemporaryDirectory(prefix="signoff-load-") as tmp:
        directory = Path(tmp)
        with processes(directory, args.db, replicas=args.replicas) as (fake, bots, db_url, _):
            async with (
                SandboxClient(fake.url) as slack,
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
            ):
                await fake.connect(slack, bots[0].events_url)
                for rate in rates:
                    print(
                        f"rate {rate}/s for {args.seconds:g}s: creating {int(rate * args.seconds)} pending approvals ...",
                        flush=True,
                    )
                    row = await run_rate(rate, args.seconds, bots, slack, http, starve=args.starve)
                    row.update({"db": args.db, "machine": info})
                    row["integrity"] = integrity(db_url, row.pop("_runs"))
                    rows.append(row)
                    record(out, row)

    print()
    print(
        "| db (bots) | clicks/s | clicks | ack ms median / p99 / max | click -> card update ms | click -> completed ms | errors (non-200, refused busy, no update, no completion) | ack p99 < 100 ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = r["errors"]
        ok = "yes" if r["ack"]["n"] and r["ack"]["p99_ms"] < 100 else "NO"
        print(
            f"| {r['db']} ({r['replicas']}) | {r['rate']} | {r['clicks']} | {fmt(r['ack'])} | {fmt(r['card'])} | {fmt(r['done'])} | "
            f"{e['non_200_or_failed']}, {e['refused_busy']}, {e['no_card_update']}, {e['no_completion']} | {ok} |"
        )
    print(
        "\n| db (bots) | clicks/s | starved | clicks | ack ms p50 / p95 | decisions recorded | "
        "doubled | committed after the answer's deadline |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        g, a = r["integrity"], r["ack"]
        p50_p95 = f"{a['median_ms']:.1f} / {a['p95_ms']:.1f}" if a["n"] else "-"
        print(
            f"| {r['db']} ({r['replicas']}) | {r['rate']} | {'yes' if r['starved'] else 'no'} | "
            f"{r['clicks']} | {p50_p95} | {g['decisions_recorded']} | {g['doubled']} | "
            f"{g['committed_after_deadline']} |"
        )
    print(f"\nrecords: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    broken = any(
        r["integrity"]["doubled"] or r["integrity"]["committed_after_deadline"] for r in rows
    )
    return (
        1
        if broken or any(r["errors"]["non_200_or_failed"] and not r["starved"] for r in rows)
        else 0
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
