"""Where an agent turn's time goes: the nodes' own work against the engine's, for one engine.

Runs `agent_loop.py`'s workload (the same `build` and `run_thread`, imported) and sums the time
spent inside the two things both engines run alike: the scripted model node and langchain_core's
`BaseTool.invoke` (the tool call ToolNode makes). The rest of the turn is the engine's own: its
loop, `add_messages`, the checkpointer, ToolNode's glue. Run it under each engine's interpreter,
back to back, and compare the engine columns:

    .venv/bin/python bench/agent_split.py graphs [--threads 5]
    $LANGGRAPH_VENV/bin/python bench/agent_split.py langgraph

Prints one line per saver and variant: median µs per turn over the threads (after one warm-up),
total, nodes' own work and engine.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_loop


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("engine", choices=("graphs", "langgraph"))
    p.add_argument("--threads", type=int, default=5, help="timed threads per saver and variant")
    p.add_argument("--turns", type=int, default=100)
    args = p.parse_args()
    if args.engine == "graphs":  # this checkout's graphs, whatever the venv's editable install
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    graph = importlib.import_module(f"{args.engine}.graph")
    prebuilt = importlib.import_module(f"{args.engine}.prebuilt")
    from langchain_core.tools import BaseTool

    spent = [0.0]
    invoke = BaseTool.invoke

    def timed_invoke(self: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return invoke(self, *a, **k)
        finally:
            spent[0] += time.perf_counter() - t

    BaseTool.invoke = timed_invoke  # type: ignore[method-assign]
    add_node = graph.StateGraph.add_node

    def timed_add_node(self: Any, name: Any, fn: Any = None, *a: Any, **k: Any) -> Any:
        if name == "agent":  # agent_loop's model node
            inner = fn

            def fn(state: Any) -> Any:
                t = time.perf_counter()
                try:
                    return inner(state)
                finally:
                    spent[0] += time.perf_counter() - t

        return add_node(self, name, fn, *a, **k)

    graph.StateGraph.add_node = timed_add_node
    tmp = tempfile.mkdtemp(prefix="agent-split-")

    def saver(kind: str, variant: str, i: int) -> Any:
        if kind == "memory":
            return importlib.import_module(f"{args.engine}.checkpoint.memory").InMemorySaver()
        path = f"{tmp}/{variant}-{i}.sqlite"
        if args.engine == "langgraph":
            from langgraph.checkpoint.sqlite import SqliteSaver

            s = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        else:
            s = importlib.import_module("graphs.checkpoint.sql").SQLSaver(f"sqlite:///{path}")
        s.setup()
        return s

    for variant in agent_loop.VARIANTS:
        for kind in agent_loop.SAVERS:
            total, nodes = [], []
            for i in range(args.threads + 1):
                agent = agent_loop.build(
                    graph, prebuilt, saver(kind, variant, i), args.turns, variant == "update"
                )
                spent[0] = 0.0
                seconds, _ = agent_loop.run_thread(agent, f"t{i}", args.turns)
                if i:  # the first thread warms up
                    total.append(seconds / args.turns * 1e6)
                    nodes.append(spent[0] / args.turns * 1e6)
            t, n = statistics.median(total), statistics.median(nodes)
            label = agent_loop.LABEL[kind] + agent_loop.LABEL[variant]
            print(
                f"{args.engine} {label}: {t:.0f} µs per turn, nodes' own work {n:.0f}, "
                f"engine {t - n:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
