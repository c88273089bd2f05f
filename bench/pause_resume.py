"""Focused w4: our pause and resume times on SQLite and PostgreSQL, and what a resume sends.

Builds w4's approval graph (draft -> approve, which calls interrupt() -> act) from
../shared/bench/workloads.py (imported, not copied), then for N fresh threads times
`invoke(input)` (the pause) and `invoke(Command(resume=...))` (the resume) and prints their
medians and p99s, ours only (bench/checkpointer.py compares with LangGraph). `--api async`
times `ainvoke` instead (the bot's path), each call run to completion on one event loop that
lives through the run; `--api sync,async` alternates the two per backend. `--at-once N` then
runs N async runs side by side on that loop (as the bot resumes runs while clicks arrive), each
pausing and resuming `--iterations / N` threads in turn, and prints runs a second, the
process's CPU (user and system) per pause and resume, and how late the loop meanwhile wakes a
task from a 1 ms sleep (what a click arriving then would wait for the loop). With `--count`,
also lists every statement (and COMMIT) one pause and one resume send to PostgreSQL, counted at
psycopg's cursor and connection calls and at the saver's wire (`_sql/wire.py`, libpq itself);
each is one round trip unless pipelined.

    .venv/bin/python bench/pause_resume.py [--iterations 300] [--backends sqlite,postgres]
        [--api sync,async] [--at-once 16] [--count]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from list_paused import load_workloads

ROOT = Path(__file__).resolve().parent.parent


def stats(ns: list[int]) -> str:
    ms = sorted(x / 1e6 for x in ns)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):.3f} ms (p99 {p99:.3f})"


def on_loop(loop: asyncio.AbstractEventLoop, ainvoke: Any) -> Any:
    """`ainvoke` as a call that returns its result, run to completion on `loop`."""

    def invoke(x: Any, c: Any) -> Any:
        return loop.run_until_complete(ainvoke(x, c))

    return invoke


def count_calls(wl: Any, engine: Any, graph: Any, thread: str) -> None:
    """Print what one pause and one resume of `thread` send through psycopg and the saver's
    wire (libpq itself)."""
    import psycopg

    from graphs.checkpoint._sql.wire import Wire

    log: list[str] = []
    patched = []

    def wrap(cls: type, name: str, describe: Any) -> None:
        orig = getattr(cls, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            what = describe(self, *args)
            if isinstance(what, list):
                log.extend(what)
            elif what:
                log.append(what)
            return orig(self, *args, **kwargs)

        setattr(cls, name, call)
        patched.append((cls, name, orig))

    def stmt(_cur: Any, query: Any, *_: Any) -> str:
        text = " ".join(str(query).split())
        return text if len(text) <= 110 else text[:107] + "..."

    def txn(word: str) -> Any:
        def describe(conn: Any) -> str | None:
            idle = conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
            return None if idle else word  # psycopg sends nothing outside a transaction

        return describe

    def pipelined(_wire: Any, statements: Any) -> list[str]:
        # The saver's wire (`graphs/checkpoint/_sql/wire.py`): one round trip for all.
        n = len(statements)
        return [
            stmt(None, sql) + (f"  [wire, {i} of {n}]" if n > 1 else "  [wire]")
            for i, (sql, _) in enumerate(statements, 1)
        ]

    wrap(Wire, "pipeline", pipelined)
    wrap(psycopg.Cursor, "execute", stmt)
    wrap(psycopg.Cursor, "executemany", stmt)
    wrap(psycopg.Connection, "commit", txn("COMMIT"))
    wrap(psycopg.Connection, "rollback", txn("ROLLBACK"))
    try:
        for what, run in (
            ("pause", lambda: graph.invoke({"request": "x"}, wl.cfg(thread))),
            (
                "resume",
                lambda: graph.invoke(engine.Command(resume={"approved": True}), wl.cfg(thread)),
            ),
        ):
            log.clear()
            run()
            print(f"  {what}: {len(log)} statements")
            for line in log:
                print(f"    {line}")
    finally:
        for cls, name, orig in patched:
            setattr(cls, name, orig)


def at_once(wl: Any, engine: Any, graph: Any, loop: Any, n: int, iterations: int) -> str:
    """`n` async runs side by side, each pausing then resuming its threads one after another:
    runs a second, the process's CPU per pause and resume, and the loop's lag meanwhile."""
    per = max(iterations // n, 1)

    async def one(k: int) -> None:
        for i in range(per):
            config = wl.cfg(f"at-once-{k}-{i}")
            out = await graph.ainvoke({"request": f"r{k}-{i}"}, config)
            assert "__interrupt__" in out, out
            done = await graph.ainvoke(engine.Command(resume={"approved": True}), config)
            assert done.get("done") is True, done

    lags: list[int] = []  # how late the loop woke a 1 ms sleep: what a click would wait extra

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            t = time.perf_counter_ns()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter_ns() - t - 1_000_000)

    async def all_of_them() -> None:
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        await asyncio.gather(*(one(k) for k in range(n)))
        stop.set()
        await ticking

    cpu0, t0 = time.process_time(), time.perf_counter()
    loop.run_until_complete(all_of_them())
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    runs = per * n
    return (
        f"{runs / wall:.0f} runs/s, CPU {cpu / runs * 1e3:.2f} ms a pause and resume; "
        f"the loop's lag waking a 1 ms sleep {stats(lags)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--api", default="sync", help="sync, async (ainvoke) or both: sync,async")
    ap.add_argument("--at-once", type=int, default=0, help="then N async runs side by side")
    ap.add_argument("--count", action="store_true", help="list a resume's statements (PostgreSQL)")
    args = ap.parse_args()

    wl = load_workloads()
    engine = wl.Engine("graphs")
    base_url = args.pg_url or os.environ.get("BENCH_PG_URL") or wl.DEFAULT_PG_URL
    ctx = SimpleNamespace(engine=engine)
    for backend in args.backends.split(","):
        tmp = tempfile.TemporaryDirectory()
        if backend == "postgres":
            schema, url = wl.pg_fresh_schema(base_url)
            saver = engine.make_postgres_saver(url)
        else:
            schema = None
            saver = engine.make_sqlite_saver(os.path.join(tmp.name, "w4.sqlite"))
        loop = asyncio.new_event_loop()
        try:
            graph = wl.build_approval(engine, saver)
            for api in args.api.split(","):
                invoke = on_loop(loop, graph.ainvoke) if api == "async" else graph.invoke
                wl.run_pause_resume(ctx, graph, invoke, f"warm-{api}", args.warmup)
                pause, resume, paused, done = wl.run_pause_resume(
                    ctx, graph, invoke, f"w4-{api}", args.iterations
                )
                assert paused == done == args.iterations, (paused, done)
                print(f"{backend} {api}: pause {stats(pause)}; resume {stats(resume)}", flush=True)
            if args.at_once:
                figures = at_once(wl, engine, graph, loop, args.at_once, args.iterations)
                print(f"{backend} async, {args.at_once} at once: {figures}", flush=True)
            if args.count and backend == "postgres":
                count_calls(wl, engine, graph, "count")
        finally:
            wl.close_saver(saver)
            if hasattr(saver, "aclose"):
                loop.run_until_complete(saver.aclose())
            loop.close()
            if schema:
                wl.drop_db(
                    {"kind": "postgres", "schema": schema},
                    SimpleNamespace(keep_db=False, pg_url=base_url),
                )
            tmp.cleanup()


if __name__ == "__main__":
    main()
