"""Slack at scale (issue 15): many approvals in one channel, then a burst of clicks, through the
real bot and the Slack stand-in with Slack's rate limits on, over HTTP and Socket Mode.

    .venv/bin/python bench/slack_scale.py [--approvals 300] [--transports http,socket] [--wait 1800]
        [--in-flight 16] [--clicks-only] [--no-rate-limits]

For each transport it starts the fake Slack (`python -m bot.sandbox.slack_api`, rate limits
switched on: chat.postMessage about 1 per second per channel, the other methods by tier) and
`signoff run` (HTTP, or Socket Mode with an `xapp-` token) on a fresh SQLite file. It requests
N refund approvals through `POST /api/runs` as fast as the bot takes them, waits until every
card is in #approvals, then has an approver click Approve on every card (16 clicks in flight at
a time, or `--in-flight`, as the fake sends them: signed HTTP or a Socket Mode envelope), and
waits until every card shows its decision. It prints, per transport:

- cards/s: N / (first request -> last card in the channel), and the floor Slack's
  chat.postMessage pacing allows for the posts it saw;
- clicks: acknowledged within Slack's 3 s (the fake reports a late ack), and the ack p50/p99
  measured by the client that asked the fake to click; a click the bot refused as busy
  ("nothing was recorded: click again") is clicked again and counted;
- decision -> card update: click sent -> the fake recorded that card's chat.update, p50/p95;
- 429s: answered by the fake, by method (each retried by the bot: see lost);
- lost: cards never posted plus decided cards never updated; doubled: approvals with more than
  one card (goal 0 for both).

And it states the issue's goals against what it measured:

- time / minimum (goal <= 1.10): the time until every card was posted, plus the time from the
  first click until the last message or update went out (the bot's queue drained), over the
  least Slack's limits allow for the calls the bot made: a channel's posts at the stand-in's
  pace (`POST_MESSAGE_BURST` in any `POST_MESSAGE_INTERVAL` x burst seconds), each other
  method at its tier (so many a minute), all in parallel (they are limited separately);
- 429s against the unavoidable ones (goal: no more): one per limited key (a channel's posts, a
  method) whose calls went past its limit; Slack says where its limit is only by answering one;
- ack p99 against 100 ms (the machine's load, from /proc/loadavg, is printed with it), and the
  burst's clicks/s: with a fixed number of clicks always waiting, each waits about that number
  over the rate, so the p99 is the bot's click throughput seen from the other side.

With `--clicks-only` it stops after the burst (and the clicks again of those refused busy):
the table's click columns and one line of clicks/s and ack p50/p99 with the load average, in
about a minute at 60 approvals, for comparing two checkouts turn about. The bot and the stand-in
run this checkout's code (its root goes first on `PYTHONPATH`).

Each run also prints the CPU time each process spent per click of the burst (the bot's, the
stand-in's, this driver's; all threads, from `/proc/<pid>/stat`): with a fixed number of clicks
in flight the bot's CPU per click sets the ack, and unlike the ack it hardly moves with the
machine's load. `--no-rate-limits` switches the stand-in's limits off so that many cards are
posted in seconds (a burst of 1,000 clicks in about a minute, to profile or to weigh a change by
its CPU per click); the goals' columns then mean nothing, so use it with `--clicks-only`.

JSON lines go to bench/results/slack_scale-<UTC time>.jsonl. All traffic is on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp

from bench.load import POLICY, create_runs, index_cards, machine, pct, texts
from bot.sandbox.client import SandboxClient
from bot.sandbox.limits import METHOD_TIERS, POST_MESSAGE_BURST, POST_MESSAGE_INTERVAL, TIER_3
from bot.sandbox.processes import (
    APP_TOKEN,
    CHANNEL,
    BotProcess,
    FakeSlackProcess,
    sqlite_url,
    write_policy,
)
from bot.slack.payloads import APPROVE

BOB = "U0BOB"
"""The approver who clicks (of `@approvers`)."""
CLICKS_IN_FLIGHT = 16
REFUSED_ROUNDS = 3
"""How many times a click refused busy is clicked again."""
QUIET = 15.0
"""Seconds without a new message or update after which the bot's queue is taken as drained."""
ACK_GOAL_S = 0.100
RATIO_GOAL = 1.10


def window_floor(calls: int, limit: int, period: float) -> float:
    """Seconds from the first to the last of `calls` calls when at most `limit` are accepted in
    any `period` seconds (the stand-in's sliding window): the first `limit` at once, then
    `limit` more each `period`."""
    return ((calls - 1) // limit) * period if calls > 0 else 0.0


def least_time(posts_by_channel: dict[str, int], others: dict[str, int]) -> float:
    """The least time Slack's limits allow for these successful calls, limited separately and so
    made in parallel: a channel's posts at its pace, each other method at its tier."""
    floors = [
        window_floor(n, POST_MESSAGE_BURST, POST_MESSAGE_BURST * POST_MESSAGE_INTERVAL)
        for n in posts_by_channel.values()
    ]
    floors += [window_floor(n, METHOD_TIERS.get(m, TIER_3), 60.0) for m, n in others.items()]
    return max(floors, default=0.0)


def over_limit(posts_by_channel: dict[str, int], others: dict[str, int]) -> int:
    """How many limited keys got more calls than their window holds: one 429 each is the
    least a client that learns the limit from Slack's answer can get."""
    over = sum(1 for n in posts_by_channel.values() if n > POST_MESSAGE_BURST)
    return over + sum(1 for m, n in others.items() if n > METHOD_TIERS.get(m, TIER_3))


def still_pending(directory: Path, ids: set[str]) -> set[str]:
    """Which of the approvals `ids` the bot's database still holds pending (their click was
    refused), read from its SQLite file."""
    with sqlite3.connect(directory / "signoff.db", timeout=30) as db:
        rows = db.execute("SELECT id FROM approvals WHERE status = 'pending'").fetchall()
    return {r[0] for r in rows} & ids


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, all threads) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


async def drained(slack: SandboxClient, deadline: float) -> None:
    """Wait until no message is posted or updated for `QUIET` seconds (or the deadline)."""
    last: tuple[int, int] | None = None
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        counts = await slack.call_counts()
        now = (
            counts.get("chat.postMessage", {}).get(200, 0),
            counts.get("chat.update", {}).get(200, 0),
        )
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET:
            return
        await asyncio.sleep(1.0)


def phase_calls(
    calls: list[dict[str, Any]], since: float, until: float | None = None
) -> dict[str, int]:
    """Successful calls made from `since` (to `until`), counted by channel."""
    out: collections.Counter[str] = collections.Counter()
    for c in calls:
        ok = c["status"] == 200 and c["response"].get("ok")
        if ok and since <= c["time"] and (until is None or c["time"] <= until):
            out[str(c["params"].get("channel"))] += 1
    return dict(out)


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


async def wait_cards(
    slack: SandboxClient, wanted: set[str], *, decided: bool, deadline: float
) -> dict[str, Any]:
    """approval id -> its card once every wanted card is there (and decided: no buttons), or
    what there is at the deadline."""
    found: dict[str, Any] = {}
    while time.monotonic() < deadline:
        found = index_cards(await slack.state(), wanted)
        if decided:
            found = {a: m for a, m in found.items() if APPROVE not in json.dumps(m.get("blocks"))}
        if len(found) == len(wanted):
            break
        await asyncio.sleep(1.0)
    return found


def card_counts(state: dict[str, Any], wanted: set[str]) -> collections.Counter[str]:
    """How many top-level messages are each approval's card (a double post shows as 2)."""
    seen: collections.Counter[str] = collections.Counter()
    channel = next((ch for ch in state["channels"] if ch["id"] == CHANNEL), {"messages": []})
    for m in channel["messages"]:
        if m.get("thread_ts") not in (None, m["ts"]):
            continue
        body = texts(m.get("blocks") or [])
        for aid in {a for a in wanted if f"`{a}`" in body}:
            seen[aid] += 1
    return seen


async def one_transport(
    transport: str,
    n: int,
    wait: float,
    directory: Path,
    in_flight: int = CLICKS_IN_FLIGHT,
    *,
    clicks_only: bool = False,
    rate_limits: bool = True,
) -> dict[str, Any]:
    load_before = load_average()
    fake = FakeSlackProcess(directory)
    bot: BotProcess | None = None
    try:
        async with SandboxClient(fake.url) as slack, aiohttp.ClientSession() as http:
            await slack.set_rate_limits(rate_limits)
            policy = write_policy(directory, POLICY)
            db = sqlite_url(directory)
            bot = BotProcess(
                directory, db, fake.url, policy, app_token=APP_TOKEN if transport == "socket" else None
            )  # fmt: skip
            if transport == "socket":
                await slack.use_socket_mode()
            else:
                await fake.connect(slack, bot.events_url)
            deadline = time.monotonic() + wait

            t0, t0_wall = time.monotonic(), time.time()
            runs = await create_runs(http, [bot], n, transport)
            requested = time.monotonic() - t0
            wanted = {r["approval_id"] for r in runs}
            cards = await wait_cards(slack, wanted, decided=False, deadline=deadline)
            cards_s = time.monotonic() - t0
            posts_before_clicks = sum(
                (await slack.call_counts()).get("chat.postMessage", {}).values()
            )
            counts_before_clicks = await slack.call_counts()
            first_click = time.time()

            sem = asyncio.Semaphore(in_flight)
            acks: list[float] = []
            late = failed = 0
            clicked_at: dict[str, float] = {}

            async def click(aid: str, card: dict[str, Any]) -> None:
                nonlocal late, failed
                async with sem:
                    clicked_at[aid] = time.time()
                    start = time.monotonic()
                    answer = await slack.click(BOB, CHANNEL, card["ts"], APPROVE)
                    acks.append(time.monotonic() - start)
                    late += bool(answer.get("late"))
                    failed += answer.get("status") != 200

            pids = {"bot": bot.proc.pid, "slack": fake.proc.pid}
            cpu_before = {k: cpu_seconds(p) for k, p in pids.items()}
            cpu_before["driver"] = own_cpu_seconds()
            burst_start = time.monotonic()
            await asyncio.gather(*(click(a, c) for a, c in cards.items()))
            burst_s = time.monotonic() - burst_start
            cpu = {k: cpu_seconds(p) - cpu_before[k] for k, p in pids.items()}
            cpu["driver"] = own_cpu_seconds() - cpu_before["driver"]
            # a click refused "busy, nothing was recorded: click again" is clicked again, as
            # the person is told to (counted: each is a click that failed them once)
            refused = 0
            for _ in range(REFUSED_ROUNDS):
                await asyncio.sleep(2.0)
                again = still_pending(directory, set(cards))
                if not again:
                    break
                refused += len(again)
                await asyncio.gather(*(click(a, cards[a]) for a in sorted(again)))
            clicked = {
                "transport": transport,
                "load_before": load_before,
                "approvals": n,
                "cards_posted": len(cards),
                "cards_s": round(cards_s, 2),
                "cards_per_s": round(len(cards) / cards_s, 2) if cards_s else None,
                "clicks": len(acks),
                "clicks_late": late,
                "clicks_refused_busy": refused,
                "clicks_failed": failed,
                "clicks_in_flight": in_flight,
                # clicks answered per second in the first burst: with `in_flight` clicks always
                # waiting, each waits for about in_flight / this rate (Little's law)
                "clicks_per_s": round(len(cards) / burst_s, 1) if burst_s > 0 else None,
                "ack_p50_ms": ms(pct(acks, 0.5)),
                "ack_p99_ms": ms(pct(acks, 0.99)),
                # CPU ms per click of the first burst, each process's threads together
                "cpu_ms_per_click": {
                    k: round(v * 1000 / max(1, len(cards)), 2) for k, v in cpu.items()
                },
                "rate_limits": rate_limits,
                "load_after": load_average(),
            }
            if clicks_only:
                return clicked
            decided = await wait_cards(slack, wanted, decided=True, deadline=deadline)
            await drained(slack, deadline)

            # the log holds tens of thousands of calls: counted by the stand-in, and only the
            # card updates read (in pages)
            counts = await slack.call_counts()
            updates: dict[str, float] = {}
            ts_to_aid = {c["ts"]: a for a, c in cards.items()}
            for c in await slack.calls("chat.update"):
                if c["status"] == 200 and c["response"].get("ok"):
                    aid = ts_to_aid.get(str(c["params"].get("ts")))
                    if aid and aid in clicked_at and c["time"] >= clicked_at[aid]:
                        updates.setdefault(aid, c["time"])
            lag = [updates[a] - clicked_at[a] for a in updates]
            rate_limited = {m: by[429] for m, by in counts.items() if by.get(429)}
            posts = counts.get("chat.postMessage", {}).get(200, 0)
            per_card = card_counts(await slack.state(), wanted)

            # the goals: measured time over the least Slack's limits allow for the same calls
            post_calls = await slack.calls("chat.postMessage")
            update_calls = await slack.calls("chat.update")
            delivered = [
                c["time"]
                for c in post_calls + update_calls
                if c["status"] == 200 and c["response"].get("ok")
            ]
            card_phase_posts = phase_calls(post_calls, t0_wall, first_click)
            decision_posts = phase_calls(post_calls, first_click)
            decision_others = {
                m: by.get(200, 0) - counts_before_clicks.get(m, {}).get(200, 0)
                for m, by in counts.items()
                if m != "chat.postMessage" and m in METHOD_TIERS
            }
            decision_others = {m: n for m, n in decision_others.items() if n > 0}
            cards_min = least_time(card_phase_posts, {})
            decisions_min = least_time(decision_posts, decision_others)
            decisions_s = max(delivered, default=first_click) - first_click
            floor = cards_min + decisions_min
            all_posts = phase_calls(post_calls, t0_wall)
            all_others = {m: by.get(200, 0) for m, by in counts.items() if m in METHOD_TIERS}
            unavoidable = over_limit(all_posts, all_others)
            return {
                **clicked,
                "requested_s": round(requested, 2),
                "card_posts_floor_s": posts_before_clicks,  # about 1 post per second per channel
                "update_p50_s": round(pct(lag, 0.5) or 0, 2) if lag else None,
                "update_p95_s": round(pct(lag, 0.95) or 0, 2) if lag else None,
                "posts_total": posts,
                "rate_limited": rate_limited,
                "decisions_s": round(decisions_s, 1),
                "posts_per_approval_in_channel": round(all_posts.get(CHANNEL, 0) / n, 2),
                "least_s": round(floor, 1),
                "time_over_least": round((cards_s + decisions_s) / floor, 3) if floor else None,
                "rate_limited_total": sum(rate_limited.values()),
                "rate_limited_unavoidable": unavoidable,
                "load_after": load_average(),  # after the drain, not the clicks
                "lost": (n - len(cards)) + (len(cards) - len(decided)),
                "doubled": sum(1 for v in per_card.values() if v > 1),
            }
    finally:
        if bot is not None:
            bot.stop()
        fake.stop()


def cpu_line(row: dict[str, Any]) -> str:
    by = row["cpu_ms_per_click"]
    return f"bot {by['bot']}, stand-in {by['slack']}, driver {by['driver']}"


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--approvals", type=int, default=300)
    ap.add_argument("--transports", default="http,socket")
    ap.add_argument("--wait", type=float, default=1800.0, help="seconds allowed per transport")
    ap.add_argument(
        "--in-flight",
        type=int,
        default=CLICKS_IN_FLIGHT,
        help="clicks waiting on the bot at once during the burst",
    )
    ap.add_argument(
        "--clicks-only",
        action="store_true",
        help="stop after the burst of clicks (and the clicks again of those refused busy): "
        "the ack figures only, without waiting for the updates and the drain",
    )
    ap.add_argument(
        "--no-rate-limits",
        action="store_true",
        help="the stand-in's rate limits off, to post many cards fast (with --clicks-only)",
    )
    args = ap.parse_args()
    # The bot and the stand-in are subprocesses (`python -m ...`): without this they would
    # import whichever checkout the environment has installed, not this one.
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    out = ROOT / "bench" / "results" / f"slack_scale-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.jsonl"
    out.parent.mkdir(exist_ok=True)
    print(f"machine: {machine()}")
    print(
        "| transport | approvals | cards/s (all posted in) | clicks late/failed | ack p50/p99 ms "
        "| decision->card update p50/p95 s | 429s by method | lost | doubled |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for transport in args.transports.split(","):
        with tempfile.TemporaryDirectory(prefix="signoff-slack-scale-") as tmp:
            row = await one_transport(
                transport,
                args.approvals,
                args.wait,
                Path(tmp),
                args.in_flight,
                clicks_only=args.clicks_only,
                rate_limits=not args.no_rate_limits,
            )
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if args.clicks_only:
            print(
                f"| {row['transport']} | {row['approvals']} | {row['cards_per_s']} "
                f"({row['cards_s']} s) | {row['clicks_late']}/{row['clicks_failed']} of "
                f"{row['clicks']} ({row['clicks_refused_busy']} refused busy, clicked again) "
                f"| {row['ack_p50_ms']}/{row['ack_p99_ms']} | - | - | - | - |",
                flush=True,
            )
            print(
                f"  clicks ({row['transport']}): ack p99 {row['ack_p99_ms']} ms with "
                f"{row['clicks_in_flight']} in flight, {row['clicks_per_s']} clicks/s (goal < "
                f"{ACK_GOAL_S * 1000:.0f}; load {row['load_before']} before, "
                f"{row['load_after']} after the clicks)",
                flush=True,
            )
            print(f"  cpu ms per click ({row['transport']}): {cpu_line(row)}", flush=True)
            continue
        print(
            f"| {row['transport']} | {row['approvals']} | {row['cards_per_s']} ({row['cards_s']} s) "
            f"| {row['clicks_late']}/{row['clicks_failed']} of {row['clicks']} "
            f"({row['clicks_refused_busy']} refused busy, clicked again) "
            f"| {row['ack_p50_ms']}/{row['ack_p99_ms']} "
            f"| {row['update_p50_s']}/{row['update_p95_s']} | {row['rate_limited'] or 0} "
            f"| {row['lost']} | {row['doubled']} |",
            flush=True,
        )
        print(
            f"  goals ({row['transport']}): time {row['cards_s'] + row['decisions_s']:.0f} s / "
            f"least {row['least_s']:.0f} s = {row['time_over_least']} (goal <= {RATIO_GOAL}; "
            f"{row['posts_per_approval_in_channel']} posts per approval in the channel); "
            f"429s {row['rate_limited_total']} (unavoidable {row['rate_limited_unavoidable']}); "
            f"ack p99 {row['ack_p99_ms']} ms with {row['clicks_in_flight']} in flight, "
            f"{row['clicks_per_s']} clicks/s (goal < {ACK_GOAL_S * 1000:.0f}; load "
            f"{row['load_before']} before, {row['load_after']} after)",
            flush=True,
        )
        print(f"  cpu ms per click ({row['transport']}): {cpu_line(row)}", flush=True)
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
