"""Agent loop: a model node and a ToolNode over `add_messages`, our `graphs` beside LangGraph.

The workload (issue 14, "Measured") is one agent thread: the model node calls a scripted model
(a plain function returning an `AIMessage`: deterministic, no network) that asks for one tool
call per turn for N turns and then answers; the tools node is the engine's prebuilt `ToolNode`
with one trivial tool; `tools_condition` routes between them. The same code runs under both
engines; only the imports differ (`langgraph.graph` / `graphs.graph`, `langgraph.prebuilt` /
`graphs.prebuilt`, and each engine's savers). Each engine runs in its own interpreter (ours the
project's `.venv`, LangGraph's the throwaway venv of bench/langgraph-venv.sh), alternating.

- µs per turn (one model step and one tool step) of a 100-turn thread, with InMemorySaver and
  with each engine's SQLite saver (`SQLSaver("sqlite:///file")` / `SqliteSaver`), median over
  repeats and rounds; goal: at most a tenth of LangGraph's.
- Bytes stored ÷ final state after 200 turns on SQLite: every column of every table the saver
  created, counted as w3 of ../shared/bench/workloads.py counts them (its `sqlite_bytes`),
  over the JSON size of the final messages (each message's fields that differ from their
  defaults, plus its type); goal: at most 3x.
- Both again with an update by id every turn: the model's reply also carries an earlier
  `AIMessage` (the one half-way back) with the same id and a revised content, replacing it.

Engines run with their default durability, which differ: ours saves each step before the next
starts (its "async" too), so a pause or a `once()` effect is never ahead of what is saved;
LangGraph's default, "async", writes a step's checkpoint while the next step runs.
`--durability sync` (or `async`, `exit`) runs both with that one: "sync" is like for like.
Records go to bench/results/agent_loop-<UTC>.jsonl.

    .venv/bin/python bench/agent_loop.py [--turns 100] [--size-turns 200] [--repeats 5] [--rounds 2]
        [--durability default|sync|async|exit]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib
import json
import os
import platform
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, TypedDict

from harness import ENGINES, Session, add_common_args, fmt, ratio, show, table, verdict

GOAL_TIME, GOAL_SIZE = 0.10, 3.0
SAVERS = ("memory", "sqlite")
VARIANTS = ("append", "update")  # update: every turn also replaces an earlier AIMessage by id
LABEL = {"memory": "InMemorySaver", "sqlite": "SQLite", "append": "", "update": ", update by id"}


# ---------------------------------------------------------------------------------------------
# The workload: runs in the child interpreter of either engine.
# ---------------------------------------------------------------------------------------------


def text(i: int, n: int = 200) -> str:
    """`n` deterministic pseudo-random characters (as w3's chat content)."""
    rng = random.Random(i)
    return "".join(rng.choice(string.ascii_lowercase + "      ") for _ in range(n))


def build(graph: ModuleType, prebuilt: ModuleType, checkpointer: Any, turns: int, update: bool):
    """The agent: model -> tools -> model ... until the model answers without a tool call.

    The script's texts (the model's reply of each turn, the tool's answer to each order) are
    written here, before the thread is timed, as a scripted model's canned replies would be:
    drawing 200 characters one `random.choice` at a time costs about 50 µs a message, two a
    turn (more than our engine's own part of a step), the same for both engines, and no real
    scripted model or tool does that work. The texts are the same as before, so are the digests
    and the byte counts.
    """
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    replies = [text(i) for i in range(turns + 1)]
    answers = [text(i + 10_000) for i in range(turns + 1)]

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"order {order}: " + answers[int(order.split("-")[1])]

    def ai(n: int, content: str) -> Any:
        call = {"name": "lookup", "args": {"order": f"A-{n}"}, "id": f"call-{n}"}
        return AIMessage(content, id=f"ai-{n}", tool_calls=[call])

    def model(messages: list[Any]) -> list[Any]:
        """The scripted model: one tool call per turn, then the answer; with `update`, also the
        AIMessage of turn n/2 revised (same id, so add_messages replaces it)."""
        n = sum(isinstance(m, ToolMessage) for m in messages)
        reply = ai(n, replies[n]) if n < turns else AIMessage(f"done after {n} lookups", id="final")
        if update and n > 0:
            return [ai(n // 2, f"revised at turn {n}: " + replies[n // 2]), reply]
        return [reply]

    # The functional form: its annotation is evaluated here, where `graph` is in scope.
    State = TypedDict("State", {"messages": Annotated[list[Any], graph.add_messages]})

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": model(state["messages"])}

    g = graph.StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", prebuilt.ToolNode([lookup]))
    g.add_edge(graph.START, "agent")
    g.add_conditional_edges("agent", prebuilt.tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def run_thread(
    agent: Any, thread: str, turns: int, durability: str = "default"
) -> tuple[float, list[Any]]:
    from langchain_core.messages import HumanMessage

    config = {"configurable": {"thread_id": thread}, "recursion_limit": 2 * turns + 10}
    extra = {} if durability == "default" else {"durability": durability}
    t0 = time.perf_counter()
    out = agent.invoke({"messages": [HumanMessage("look my orders up", id="ask")]}, config, **extra)
    return time.perf_counter() - t0, out["messages"]


def compact(m: Any) -> dict[str, Any]:
    return {"type": m.type, **m.model_dump(exclude_defaults=True)}


def digest(messages: list[Any]) -> str:
    """What both engines must agree on: each message's type, content and (non-random) ids."""
    seen = [(m.type, m.content, m.id if m.type != "tool" else m.tool_call_id) for m in messages]
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:12]


def child(args: argparse.Namespace) -> None:
    prefix = args.child
    graph = importlib.import_module(f"{prefix}.graph")
    prebuilt = importlib.import_module(f"{prefix}.prebuilt")
    memory = importlib.import_module(f"{prefix}.checkpoint.memory")
    from importlib.metadata import version

    ev = getattr(importlib.import_module(prefix), "__version__", None) or version(prefix)
    host = {"nproc": os.cpu_count(), "python": platform.python_version()}
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from list_paused import load_workloads

    sqlite_bytes = load_workloads().sqlite_bytes  # w3's byte count, imported, not copied
    tmp = tempfile.mkdtemp(prefix="agent-loop-")

    def sqlite_saver(path: str) -> Any:
        if prefix == "langgraph":
            from langgraph.checkpoint.sqlite import SqliteSaver

            saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        else:
            saver = importlib.import_module(f"{prefix}.checkpoint.sql").SQLSaver(
                f"sqlite:///{path}"
            )
        saver.setup()
        return saver

    def close(saver: Any) -> None:
        conn = getattr(saver, "conn", None)
        if isinstance(conn, sqlite3.Connection):
            conn.close()
        elif callable(getattr(saver, "close", None)):
            saver.close()

    def emit(workload: str, saver: str, variant: str, figures: dict[str, Any]) -> None:
        rec = {
            "engine": prefix,
            "engine_version": ev,
            "workload": workload,
            "saver": saver,
            "variant": variant,
            "durability": args.durability,
            "figures": figures,
            "ts": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "host": host,
        }
        line = json.dumps(rec)
        print(line, flush=True)
        with open(args.out, "a") as f:
            f.write(line + "\n")

    makers: dict[str, Callable[[str], Any]] = {
        "memory": lambda path: memory.InMemorySaver(),
        "sqlite": sqlite_saver,
    }
    for variant in VARIANTS:
        update = variant == "update"
        for kind in SAVERS:
            us: list[float] = []
            for i in range(args.repeats + 1):  # the first thread warms up and is not counted
                path = os.path.join(tmp, f"time-{kind}-{variant}-{i}.sqlite")
                saver = makers[kind](path)
                try:
                    agent = build(graph, prebuilt, saver, args.turns, update)
                    seconds, msgs = run_thread(agent, f"t{i}", args.turns, args.durability)
                finally:
                    close(saver)
                if i:
                    us.append(seconds * 1e6 / args.turns)
            emit(
                "agent_loop",
                kind,
                variant,
                {
                    "turns": args.turns,
                    "median_us_per_turn": statistics.median(us),
                    "us_per_turn": [round(u, 1) for u in us],
                    "messages": len(msgs),
                    "digest": digest(msgs),
                },
            )
        path = os.path.join(tmp, f"size-{variant}.sqlite")
        saver = sqlite_saver(path)
        try:
            agent = build(graph, prebuilt, saver, args.size_turns, update)
            seconds, msgs = run_thread(agent, "size", args.size_turns)
        finally:
            close(saver)
        m = sqlite_bytes(path)
        final = len(json.dumps([compact(x) for x in msgs]))
        emit(
            "agent_loop_size",
            "sqlite",
            variant,
            {
                "turns": args.size_turns,
                "messages": len(msgs),
                "final_state_json_bytes": final,
                "all_column_bytes": m["all_column_bytes"],
                "ratio_stored_over_final": m["all_column_bytes"] / final,
                "file_bytes_after_vacuum": m["file_bytes_after_vacuum"],
                "tables": m["tables"],
                "digest": digest(msgs),
            },
        )
        os.unlink(path)


# ---------------------------------------------------------------------------------------------
# The comparison: runs under our python, starts one child per engine and round.
# ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--turns", type=int, default=100, help="turns of each timed thread")
    ap.add_argument("--size-turns", type=int, default=200, help="turns of the stored-bytes thread")
    ap.add_argument("--repeats", type=int, default=5, help="timed threads per saver and round")
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="alternate the engines this many times; the median over rounds is reported",
    )
    ap.add_argument(
        "--durability",
        choices=("default", "sync", "async", "exit"),
        default="default",
        help="the durability both engines' timed threads run with (default: each its own)",
    )
    ap.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    s = Session("agent_loop", args)
    s.probe("graphs", "import graphs.graph, graphs.prebuilt, graphs.checkpoint.sql")
    s.probe("langgraph", "import langgraph.graph, langgraph.prebuilt, langgraph.checkpoint.sqlite")
    me = str(Path(__file__).resolve())
    for _ in range(args.rounds):
        for engine in ("langgraph", "graphs"):
            if engine in s.unavailable:
                continue
            s.subprocess(
                engine,
                [
                    s.pythons[engine],
                    me,
                    "--child",
                    engine,
                    "--turns",
                    str(args.turns),
                    "--size-turns",
                    str(args.size_turns),
                    "--repeats",
                    str(args.repeats),
                    "--durability",
                    args.durability,
                ],
            )

    def recs(engine: str, workload: str, saver: str, variant: str) -> list[dict[str, Any]]:
        return [
            r
            for r in s.records(engine)
            if (r["workload"], r["saver"], r["variant"]) == (workload, saver, variant)
        ]

    def agreed(workload: str, saver: str, variant: str) -> str:
        digests = {
            r["figures"]["digest"] for e in ENGINES for r in recs(e, workload, saver, variant)
        }
        return "" if len(digests) <= 1 else " (engines' final messages DIFFER)"

    rows: list[list[str]] = []
    for variant in VARIANTS:
        for saver in SAVERS:
            g, lg = (
                statistics.median(v)
                if (
                    v := [
                        r["figures"]["median_us_per_turn"]
                        for r in recs(e, "agent_loop", saver, variant)
                    ]
                )
                else None
                for e in ENGINES
            )
            r = ratio(g, lg)
            metric = f"µs per turn, {args.turns} turns, {LABEL[saver]}{LABEL[variant]}"
            rows.append(
                [metric + agreed("agent_loop", saver, variant), fmt(g, 1), fmt(lg, 1), fmt(r, 3)]
                + [f"<= {GOAL_TIME:.2f}", verdict(r, GOAL_TIME)]
            )
            s.emit(
                {
                    "engine": "compare",
                    "workload": "comparison",
                    "saver": saver,
                    "variant": variant,
                    "figures": {
                        "metric": metric,
                        "graphs": g,
                        "langgraph": lg,
                        "ratio_graphs_over_langgraph": r,
                        "goal_ratio_at_most": GOAL_TIME,
                    },
                },
            )
        gx, lx = (
            (
                v[-1]["figures"]["ratio_stored_over_final"]
                if (v := recs(e, "agent_loop_size", "sqlite", variant))
                else None
            )
            for e in ENGINES
        )
        metric = f"stored ÷ final state, {args.size_turns} turns, SQLite{LABEL[variant]}"
        rows.append(
            [metric + agreed("agent_loop_size", "sqlite", variant), fmt(gx, 2, "x")]
            + [fmt(lx, 1, "x"), fmt(ratio(gx, lx), 3)]
            + [f"graphs <= {GOAL_SIZE:.0f}x", verdict(gx, GOAL_SIZE)]
        )
        s.emit(
            {
                "engine": "compare",
                "workload": "comparison",
                "saver": "sqlite",
                "variant": variant,
                "figures": {
                    "metric": metric,
                    "graphs": gx,
                    "langgraph": lx,
                    "ratio_graphs_over_langgraph": ratio(gx, lx),
                    "goal_graphs_at_most": GOAL_SIZE,
                },
            }
        )

    print(s.header())
    for line in s.report_unavailable():
        print(line)
    print()
    print(table(["agent loop", "graphs", "LangGraph", "graphs / LangGraph", "goal", "met"], rows))
    print(f"\nresults: {show(s.out)}")
    raise SystemExit(1 if any(r.error for r in s.runs) else 0)


if __name__ == "__main__":
    main()
