"""The engine in each of graphs' two dialects, this tree against another, in one run.

Issue 32 asks that speaking LangGraph's dialect cost nothing: "the engine is no slower
(`bench/engine.py`, alternated with main) in either dialect". This runs w1 (`linear10`, a
10-node chain, one node per superstep) of ../shared/bench/workloads.py with no checkpointer
and with `InMemorySaver`, once through the top-level `graphs` API (seed 000's dialect) and once
through LangGraph's module paths (`bench/graphs_langgraph_dialect.py`), for this tree and for
`--base PATH` (a checkout of main, say), alternating the trees round by round with the same
interpreter, and prints each median µs per superstep over the rounds and the ratio this/base.

    .venv/bin/python bench/dialects.py --base PATH [--rounds 3] [--repeats 3] [--invokes 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import ROOT, WORKLOADS, table

DIALECTS = {
    "seed 000's (graphs)": "graphs",
    "LangGraph's (graphs.graph)": "graphs_langgraph_dialect",  # this directory's, for both
}
SAVERS = {"none": "no checkpointer", "memory": "InMemorySaver"}


def run(tree: Path, engine: str, args: argparse.Namespace) -> dict[str, float]:
    """µs per superstep of w1 for `engine` with `tree`'s code: median of medians, by saver."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT / "bench")])
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        done = subprocess.run(
            [sys.executable, str(ROOT / WORKLOADS), "--engine", engine, "--workload", "w1",
             "--saver", ",".join(SAVERS), "--repeats", str(args.repeats),
             "--w1-invokes", str(args.invokes), "--out", out.name],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"{engine} on {tree} failed:\n{done.stderr}")
        records = [json.loads(line) for line in Path(out.name).read_text().splitlines()]
    return {
        r["saver"]: r["figures"]["median_of_median_us_per_superstep"]
        for r in records
        if r.get("workload") == "linear10" and r["figures"].get("summary")
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--base", required=True, type=Path, help="the other checkout of signoff")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two trees")
    ap.add_argument("--repeats", type=int, default=3, help="w1 repeats per run")
    ap.add_argument("--invokes", type=int, default=2000, help="invokes per repeat")
    args = ap.parse_args()
    trees = {"this": ROOT, "base": args.base.resolve()}
    for name, tree in trees.items():
        if not (tree / "graphs" / "graph").is_dir():
            raise SystemExit(f"{name}: {tree} has no graphs/graph: not a checkout of signoff")
    figures: dict[tuple[str, str, str], list[float]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for dialect, engine in DIALECTS.items():
            for name, tree in trees.items():
                for saver, us in run(tree, engine, args).items():
                    figures.setdefault((dialect, saver, name), []).append(us)
        loads.append(os.getloadavg()[0])
    rows = []
    for dialect in DIALECTS:
        for saver, label in SAVERS.items():
            this = statistics.median(figures[dialect, saver, "this"])
            base = statistics.median(figures[dialect, saver, "base"])
            rows.append([dialect, label, f"{this:.2f}", f"{base:.2f}", f"{this / base:.3f}"])
    print(
        f"base: {args.base}; {args.rounds} rounds; load average {min(loads):.1f}-{max(loads):.1f}"
    )
    print(
        table(["dialect", "saver", "this µs/superstep", "base µs/superstep", "this / base"], rows)
    )


if __name__ == "__main__":
    main()
