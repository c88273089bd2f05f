"""Durable checkpointers: our SQLSaver beside LangGraph's savers, SQLite and PostgreSQL, one run.

Runs workloads w2..w5 of ../shared/bench/workloads.py for both engines, alternating engines per
workload and backend so they see the same machine load:

- w2 durable10: ms per durable superstep of the 10-node chain (median);
- w3 chat50/100/200: bytes stored for one chat thread ÷ the final state's JSON size
  (all stored column bytes of every table the engine created);
- w4 pause_resume: ms to pause at an interrupt() and to resume, median and p99;
- w5 pending_scan (PostgreSQL): seconds to find every paused thread among 10,000, plus our own
  one-query `SQLSaver.list_paused()` over 10,000 paused threads (bench/list_paused.py).

Prints a markdown table versus the goals of issue 3 (at most half LangGraph's time per durable
step, pause and resume; at most 3x the final state for the 200-turn thread), then workloads.py's
own summary of every record. LangGraph runs with its default durability in the table; its
`durability="sync"` figures are in the summary. `--rounds N` repeats w2 and w4 and reports
medians over rounds. All records go to bench/results/checkpointer-<UTC>.jsonl.

    .venv/bin/python bench/checkpointer.py [--rounds 1] [--backends sqlite,postgres] [--skip-w5]
"""

from __future__ import annotations

import argparse
import subprocess
from typing import Any

from harness import (
    ENGINES,
    ROOT,
    WORKLOADS,
    Session,
    add_common_args,
    fmt,
    ratio,
    show,
    table,
    verdict,
)

HALF, SIZE_GOAL = 0.5, 3.0
LABEL = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def stored_ratio(rec: dict[str, Any] | None) -> float | None:
    if rec is None:
        return None
    f = rec["figures"]
    return float(f["all_column_bytes"]) / float(f["final_state_json_bytes"])


def fig(rec: dict[str, Any] | None, key: str) -> float | None:
    value = None if rec is None else rec["figures"].get(key)
    return None if value is None else float(value)


def best_name(rec: dict[str, Any] | None) -> str:
    return "" if rec is None else f" ({rec['figures']['best']})"


def with_p99(median: float | None, p99: float | None) -> str:
    return "-" if median is None or p99 is None else f"{median:.2f} ({p99:.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run w2 and w4 this many times, alternating engines; medians over rounds",
    )
    ap.add_argument("--w2-invokes", default="300")
    ap.add_argument("--w3-turns", default="50,100,200")
    ap.add_argument("--w4-threads", default="300")
    ap.add_argument("--w5-threads", default="10000")
    ap.add_argument(
        "--w5-budget-s", default="120", help="per-approach cap in w5, then extrapolated"
    )
    ap.add_argument(
        "--skip-w5",
        action="store_true",
        help="skip w5 (the slowest part: 10,000 pauses per engine)",
    )
    ap.add_argument(
        "--durability-extra",
        default="sync",
        help="extra durability modes for engines that take one",
    )
    args = ap.parse_args()

    s = Session("checkpointer", args)
    s.probe("graphs", "import graphs; graphs.StateGraph; graphs.SQLSaver")
    s.probe("langgraph", "import langgraph.checkpoint.sqlite, langgraph.checkpoint.postgres")
    backends = [b for b in args.backends.split(",") if b in LABEL]
    dur = ["--durability-extra", args.durability_extra]
    timed = [
        ("w2", ["--w2-invokes", args.w2_invokes, *dur]),
        ("w4", ["--w4-threads", args.w4_threads, *dur]),
    ]
    plan = [*timed * args.rounds, ("w3", ["--w3-turns", args.w3_turns])]
    for workload, extra in plan:
        for backend in backends:
            for engine in ("langgraph", "graphs"):
                s.workloads(engine, "--workload", workload, "--saver", backend, *extra)
    w5 = not args.skip_w5 and "postgres" in backends
    if w5:
        for engine in ("langgraph", "graphs"):
            s.workloads(
                engine,
                "--workload",
                "w5",
                "--saver",
                "postgres",
                "--w5-threads",
                args.w5_threads,
                "--w5-budget-s",
                args.w5_budget_s,
            )
        if "graphs" not in s.unavailable:
            pg = ["--pg-url", args.pg_url] if args.pg_url else []
            s.subprocess(
                "graphs",
                [args.python, "bench/list_paused.py", "--threads", args.w5_threads, *pg],
            )

    rows: list[list[str]] = []

    def row(
        metric: str,
        backend: str,
        g: float | None,
        lg: float | None,
        shown: tuple[str, str],
        goal: float | None,
        digits: int = 2,
    ) -> None:
        r = ratio(g, lg)
        rows.append(
            [
                metric,
                LABEL[backend],
                shown[0],
                shown[1],
                fmt(r, digits),
                f"<= {goal}" if goal else "-",
                verdict(r, goal) if goal else "-",
            ]
        )
        s.emit(
            {
                "engine": "compare",
                "engine_version": "-",
                "workload": "comparison",
                "saver": backend,
                "figures": {
                    "metric": metric,
                    "graphs": g,
                    "langgraph": lg,
                    "ratio_graphs_over_langgraph": r,
                    "goal_ratio_at_most": goal,
                },
            }
        )

    for b in backends:
        gv, lv = (s.median(e, "durable10", b, "median_ms_per_superstep") for e in ENGINES)
        row("w2 ms per durable superstep (median)", b, gv, lv, (fmt(gv, 3), fmt(lv, 3)), HALF)
    for b in backends:
        for what in ("pause", "resume"):
            gv, lv = (s.median(e, "pause_resume", b, f"{what}_median_ms") for e in ENGINES)
            gp, lp99 = (s.median(e, "pause_resume", b, f"{what}_p99_ms") for e in ENGINES)
            shown = (with_p99(gv, gp), with_p99(lv, lp99))
            row(f"w4 {what} ms, median (p99)", b, gv, lv, shown, HALF)
    for b in backends:
        for turns in (int(t) for t in args.w3_turns.split(",")):
            gx, lx = (stored_ratio(s.find(e, f"chat{turns}", b)) for e in ("graphs", "langgraph"))
            last = turns == max(int(t) for t in args.w3_turns.split(","))
            rows.append(
                [
                    f"w3 stored ÷ final state, {turns} turns",
                    LABEL[b],
                    fmt(gx, 1, "x"),
                    fmt(lx, 1, "x"),
                    fmt(ratio(gx, lx), 3),
                    f"graphs <= {SIZE_GOAL:.0f}x" if last else "-",
                    verdict(gx, SIZE_GOAL) if last else "-",
                ]
            )
            s.emit(
                {
                    "engine": "compare",
                    "engine_version": "-",
                    "workload": "comparison",
                    "saver": b,
                    "figures": {
                        "metric": f"chat{turns} all stored column bytes / final state json bytes",
                        "graphs": gx,
                        "langgraph": lx,
                        "ratio_graphs_over_langgraph": ratio(gx, lx),
                        "goal_graphs_at_most": SIZE_GOAL if last else None,
                    },
                }
            )
    if w5:
        g, lg = (s.find(e, "pending_scan", "postgres", None) for e in ("graphs", "langgraph"))
        gv, lv = fig(g, "best_seconds"), fig(lg, "best_seconds")
        row(
            f"w5 s to find {args.w5_threads} paused threads, best approach",
            "postgres",
            gv,
            lv,
            (fmt(gv, 3) + best_name(g), fmt(lv, 3) + best_name(lg)),
            None,
            3,
        )
        lp = s.find("graphs", "list_paused", "postgres", None)
        lpv = fig(lp, "median_s")
        ok = "" if lp is None else f" (found {lp['figures']['found']}"
        ok += "" if lp is None else f", ids match: {lp['figures']['thread_ids_match']})"
        row(
            f"w5 graphs SQLSaver.list_paused() over {args.w5_threads} paused threads",
            "postgres",
            lpv,
            lv,
            (fmt(lpv, 3) + ok, fmt(lv, 3) + best_name(lg)),
            None,
            3,
        )

    print(s.header())
    for line in s.report_unavailable():
        print(line)
    print()
    print(
        table(
            ["metric", "backend", "graphs", "LangGraph", "graphs / LangGraph", "goal", "met"], rows
        )
    )
    print("\nEvery record (workloads.py --summarize):\n", flush=True)
    subprocess.run([args.python, WORKLOADS, "--summarize", show(s.out)], check=False, cwd=ROOT)
    print(f"\nresults: {show(s.out)}")
    raise SystemExit(1 if any(r.error for r in s.runs) else 0)


if __name__ == "__main__":
    main()
