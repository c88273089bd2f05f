"""Time travel that reaches a subgraph keeping its own state (`compile(checkpointer=True)`), in
LangGraph's dialect: the same program, its imports switched between LangGraph and `graphs`'
LangGraph module paths, does the same thing.

Such a subgraph remembers across the parent's steps and runs (a sub-agent's memory). When the
parent goes back to a past checkpoint (a replay, an update of a past checkpoint then its run, or
`invoke(None, config)` naming a checkpoint), the subgraph's first run goes on from the state it
had then, not from what it learnt after: its newest checkpoint made before that point, or its
empty state when it had not run yet. Each program records the results, what the subgraph saw
each time it ran, and the subgraph's own history; they are compared whole, on LangGraph's
`InMemorySaver` and on each of graphs' savers (in memory, SQLite, PostgreSQL), sync and async.
"""

from __future__ import annotations

import asyncio
import importlib
import operator
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def imports(dialect: str) -> SimpleNamespace:
    graph = importlib.import_module(f"{dialect}.graph")
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        START=graph.START,
        InMemorySaver=importlib.import_module(f"{dialect}.checkpoint.memory").InMemorySaver,
    )


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def graphs_saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A saver for the graphs run: None (the program's own `InMemorySaver`), or `SQLSaver` on
    SQLite or PostgreSQL."""
    if request.param == "memory":
        yield None
        return
    from graphs.checkpoint.sql import SQLSaver

    url = (
        f"sqlite:///{tmp_path / 'travel.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    saver = SQLSaver(url)
    saver.setup()
    try:
        yield saver
    finally:
        saver.close()


def memory_agent(lg: SimpleNamespace, seen: list[list[str]], saver: Any) -> Any:
    """A parent (`plan`, then the `memory` subgraph) whose subgraph keeps its state: it notes
    each run's input in its own log and says how many entries it holds."""

    def note(state: State) -> dict[str, Any]:
        seen.append(list(state["log"]))
        return {"log": [f"memory holds {len(state['log'])}"]}

    sub = lg.StateGraph(State)
    sub.add_node("note", note)
    sub.add_edge(lg.START, "note")

    def plan(state: State) -> dict[str, Any]:
        return {"log": [f"plan {len(state['log'])}"]}

    parent = lg.StateGraph(State)
    parent.add_node("plan", plan)
    parent.add_node("memory", sub.compile(checkpointer=True))
    parent.add_edge(lg.START, "plan")
    parent.add_edge("plan", "memory")
    return parent.compile(checkpointer=saver if saver is not None else lg.InMemorySaver())


def sub_history(graph: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The subgraph's own checkpoints, newest first: source, step and its log."""
    sub = {"configurable": {**config["configurable"], "checkpoint_ns": "memory"}}
    return [
        (t.metadata["source"], t.metadata["step"], t.checkpoint["channel_values"].get("log"))
        for t in graph.checkpointer.list(sub)
    ]


def the_steps_to(graph: Any, config: dict[str, Any], run: int) -> Any:
    """The checkpoint before the subgraph's step of the parent's `run`-th run (0: the first)."""
    before = [s for s in graph.get_state_history(config) if s.next == ("memory",)]
    return before[-1 - run]


def travels(dialect: str, saver: Any = None) -> dict[str, Any]:
    """Three runs, then: a replay to the first run's subgraph step (the subgraph had not run
    then: it starts empty), a replay to the third run's (it holds what the first two left),
    and an update of the second run's checkpoint, then its run."""
    lg = imports(dialect)
    seen: list[list[str]] = []
    graph = memory_agent(lg, seen, saver)
    config = {"configurable": {"thread_id": "agent-1"}}
    for word in ("a", "b", "c"):
        graph.invoke({"log": [word]}, config)
    out: dict[str, Any] = {"runs": list(seen)}
    seen.clear()
    out["replay first"] = graph.invoke(None, the_steps_to(graph, config, 0).config)
    out["replay third"] = graph.invoke(None, the_steps_to(graph, config, 2).config)
    forked = graph.update_state(the_steps_to(graph, config, 1).config, {"log": ["edited"]})
    out["fork of second"] = graph.invoke(None, forked)
    out["seen"] = seen
    out["subgraph history"] = sub_history(graph, config)
    out["subgraph now"] = graph.get_state(config, subgraphs=True).values
    return out


def travels_and_runs_on(dialect: str, saver: Any = None) -> dict[str, Any]:
    """A replay, then a new run on the thread: the subgraph goes on from the replay's state."""
    lg = imports(dialect)
    seen: list[list[str]] = []
    graph = memory_agent(lg, seen, saver)
    config = {"configurable": {"thread_id": "agent-2"}}
    for word in ("a", "b"):
        graph.invoke({"log": [word]}, config)
    graph.invoke(None, the_steps_to(graph, config, 1).config)
    after = graph.invoke({"log": ["c"]}, config)
    return {"seen": seen, "after": after, "subgraph history": sub_history(graph, config)}


async def travels_async(dialect: str) -> dict[str, Any]:
    lg = imports(dialect)
    seen: list[list[str]] = []
    graph = memory_agent(lg, seen, None)
    config = {"configurable": {"thread_id": "agent-3"}}
    for word in ("a", "b"):
        await graph.ainvoke({"log": [word]}, config)
    replayed = await graph.ainvoke(None, the_steps_to(graph, config, 1).config)
    return {"seen": seen, "replayed": replayed, "subgraph history": sub_history(graph, config)}


@pytest.mark.parametrize("program", [travels, travels_and_runs_on])
def test_a_subgraph_that_keeps_its_state_travels_with_its_parent(
    program: Any, graphs_saver: Any
) -> None:
    assert program("graphs", graphs_saver) == program("langgraph")


def test_the_subgraph_goes_back_to_what_it_held_then() -> None:
    # What the comparison holds, in words (the subgraph is given the parent's whole log and
    # adds it to its own): replayed to the first run, it starts empty; replayed to the third,
    # it holds the first two runs and sees the third's input once, from the parent; the fork
    # of the second run's checkpoint holds nothing of the third run.
    first, third, fork = travels("graphs")["seen"]
    assert first == ["a", "plan 1"]
    assert third.count("c") == 1 and "b" in third
    assert "c" not in fork and fork[-1] == "edited"


def test_an_async_replay_rewinds_the_subgraph_as_a_sync_one() -> None:
    assert asyncio.run(travels_async("graphs")) == asyncio.run(travels_async("langgraph"))
