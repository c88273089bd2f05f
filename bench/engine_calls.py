"""Issue 37: the engine's work per invoke of w1 (the 10-node chain), counted and timed, for one
or more trees of this project alternated, without and with InMemorySaver.

For each tree (`--code NAME=PATH`, default this checkout) and each saver: Python function calls
per invoke (cProfile over 200 invokes after 50 warm-up; the count does not depend on the
machine's load) and CPU µs per superstep (`time.process_time`, the median and best of 5 × 1,000
invokes after 100 warm-up). Each tree runs in its own process with PATH first on `PYTHONPATH`;
`--rounds N` alternates the trees N times and prints every figure with the load average.

    .venv/bin/python bench/engine_calls.py --code branch=. --code main=PATH [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT.parent / "shared" / "bench"

MEASURE = """
import cProfile, gc, json, pstats, statistics, sys, time, uuid
sys.path.insert(0, sys.argv[1])
import workloads as W
E = W.Engine("graphs")
out = {}
for kind in ("none", "memory"):
    def graph():
        return W.build_linear10(E, E.make_memory_saver() if kind == "memory" else None)
    g, tag = graph(), uuid.uuid4().hex[:8]
    for i in range(50):
        g.invoke({"n": 0}, W.cfg(f"w-{tag}-{i}"))
    prof = cProfile.Profile()
    prof.enable()
    for i in range(200):
        r = g.invoke({"n": 0}, W.cfg(f"p-{tag}-{i}"))
    prof.disable()
    assert r["n"] == 10, r
    calls = pstats.Stats(prof).total_calls / 200
    times = []
    for rep in range(5):
        g = graph()
        for i in range(100):
            g.invoke({"n": 0}, W.cfg(f"w-{tag}-{rep}-{i}"))
        gc.collect()
        t0 = time.process_time()
        for i in range(1000):
            g.invoke({"n": 0}, W.cfg(f"t-{tag}-{rep}-{i}"))
        times.append((time.process_time() - t0) / 1000 / 10 * 1e6)
    out[kind] = {"calls": calls, "median_us": statistics.median(times), "best_us": min(times)}
print(json.dumps(out))
"""


def measure(python: str, code: Path) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    p = subprocess.run(
        [python, "-c", MEASURE, str(WORKLOADS)],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--code", action="append", help="NAME=PATH of a tree (repeatable)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = ap.parse_args()
    trees = [c.split("=", 1) for c in (args.code or ["this=."])]
    print(
        "| tree | load average | calls per invoke, none / memory | CPU µs per step, none | memory |"
    )
    print("|---|---|---|---|---|")
    for _ in range(args.rounds):
        for name, path in trees:
            load = os.getloadavg()[0]
            f = measure(args.python, Path(path).resolve())
            none, mem = f["none"], f["memory"]
            print(
                f"| {name} | {load:.1f} | {none['calls']:.0f} / {mem['calls']:.0f} "
                f"| {none['median_us']:.2f} (best {none['best_us']:.2f}) "
                f"| {mem['median_us']:.2f} (best {mem['best_us']:.2f}) |",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
