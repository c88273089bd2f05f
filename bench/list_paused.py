"""Extra w5 measurement: our one-query `SQLSaver.list_paused()` over N paused threads (PostgreSQL).

Builds the same approval graph as w5 of ../shared/bench/workloads.py (imported from there, not
copied), pauses N threads at its `interrupt()` in a fresh schema, then times `saver.list_paused()`
a few times and checks it finds every one of them. Prints one JSON line (workloads.py's record
shape) and appends it to --out. Run with the project's python; bench/checkpointer.py calls it:

    .venv/bin/python bench/list_paused.py --threads 10000 --out bench/results/x.jsonl
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT.parent / "shared" / "bench" / "workloads.py"


def load_workloads() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workloads", WORKLOADS)
    assert spec and spec.loader, WORKLOADS
    mod = importlib.util.module_from_spec(spec)
    sys.modules["workloads"] = mod  # its TypedDicts' string annotations resolve through sys.modules
    spec.loader.exec_module(mod)
    return mod


def thread_id_of(item: Any) -> str | None:
    """Best effort: the thread id of one list_paused() item, whatever its shape."""
    if isinstance(item, dict):
        tid = item.get("thread_id") or item.get("config", {}).get("configurable", {}).get(
            "thread_id"
        )
    else:
        tid = getattr(item, "thread_id", None)
        if tid is None and isinstance(getattr(item, "config", None), dict):
            tid = item.config.get("configurable", {}).get("thread_id")
    return None if tid is None else str(tid)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--threads", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    wl = load_workloads()
    engine = wl.Engine("graphs")
    base_url = args.pg_url or wl.DEFAULT_PG_URL
    schema, url = wl.pg_fresh_schema(base_url)
    saver = engine.make_postgres_saver(url)
    try:
        graph = wl.build_approval(engine, saver)
        t0 = time.perf_counter()
        _, _, interrupted, _ = wl.run_pause_resume(
            SimpleNamespace(engine=engine), graph, graph.invoke, "lp", args.threads, resume=False
        )
        create_s = time.perf_counter() - t0
        runs, found, ids_ok = [], 0, False
        expected = {f"lp-{i}" for i in range(args.threads)}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            items = list(saver.list_paused())
            runs.append(time.perf_counter() - t0)
            found = len(items)
            ids_ok = {thread_id_of(x) for x in items} == expected
        rec = {
            "engine": "graphs",
            "engine_version": engine.version,
            "saver": "postgres",
            "workload": "list_paused",
            "figures": {
                "threads": args.threads,
                "paused_returned___interrupt__": interrupted,
                "create_s": round(create_s, 2),
                "found": found,
                "thread_ids_match": ids_ok,
                "median_s": round(statistics.median(runs), 4),
                "min_s": round(min(runs), 4),
                "runs_s": [round(x, 4) for x in runs],
            },
            "ts": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "host": wl.HOST,
        }
        line = json.dumps(rec)
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    finally:
        wl.close_saver(saver)
        wl.drop_db(
            {"kind": "postgres", "schema": schema}, SimpleNamespace(keep_db=False, pg_url=base_url)
        )


if __name__ == "__main__":
    main()
