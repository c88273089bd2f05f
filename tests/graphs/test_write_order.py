"""The order a step's writes reach a reducer: LangGraph's, whatever order the tasks finish in.

LangGraph sorts a step's tasks by path before applying their writes: the tasks of the nodes
edges, routers or gotos triggered by node name, then the `Send` tasks in the order they were
made. So an `operator.add` list filled by a fan-out reads the same in every run, sync or async,
whichever node was added first or finished first; and an incomplete step's finished writes
show in that order too (in the returned state and in `get_state`), and are applied in it once
the step completes.
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

from graphs import END, START, Command, Send, StateGraph, interrupt
from graphs.checkpoint.base import BaseCheckpointSaver
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite")


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _writes(name: str, wait: float = 0.0) -> Any:
    async def node(state: State) -> dict[str, Any]:
        await asyncio.sleep(wait)
        return {"log": [name]}

    return node


def _fan_out(*names: str, waits: dict[str, float] | None = None) -> StateGraph:
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, _writes(name, (waits or {}).get(name, 0.0)))
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder


def test_a_fan_outs_writes_reach_the_reducer_by_node_name_not_the_order_nodes_were_added() -> None:
    graph = _fan_out("zeta", "mid", "alpha").compile()
    assert asyncio.run(graph.ainvoke({"log": []})) == {"log": ["alpha", "mid", "zeta"]}


def test_under_ainvoke_the_order_is_the_same_whichever_task_finishes_first() -> None:
    # `alpha` finishes last, `zeta` first: the list still reads by name, on every run.
    waits = {"alpha": 0.2, "mid": 0.1, "zeta": 0.0}
    graph = _fan_out("mid", "zeta", "alpha", waits=waits).compile()
    started = time.perf_counter()
    assert asyncio.run(graph.ainvoke({"log": []})) == {"log": ["alpha", "mid", "zeta"]}
    assert time.perf_counter() - started < 0.3 + 0.25  # they ran at once (0.2 s, not 0.3)


def test_sync_invoke_applies_in_the_same_order() -> None:
    builder = StateGraph(State)
    for name in ("zeta", "alpha"):
        builder.add_node(name, lambda state, name=name: {"log": [name]})
        builder.add_edge(START, name)
    assert builder.compile().invoke({"log": []}) == {"log": ["alpha", "zeta"]}


def test_send_tasks_come_after_the_nodes_in_the_order_their_makers_are_sorted() -> None:
    # `zeta` (added first) and `alpha` each send work; the next step's `Send` tasks are made in
    # the order their makers' writes were applied (alpha's first), and run after `tail`.
    builder = StateGraph(State)
    builder.add_node("zeta", lambda s: Command(update={"log": ["zeta"]}, goto=[Send("work", "z")]))
    builder.add_node("alpha", lambda s: Command(update={"log": ["alpha"]}, goto=[Send("work", "a1"), Send("work", "a2")]))  # fmt: skip
    builder.add_node("work", lambda arg: {"log": [f"work {arg}"]})
    builder.add_node("tail", lambda s: {"log": ["tail"]})
    builder.add_node("head", lambda s: {"log": ["head"]})
    builder.add_edge(START, "zeta")
    builder.add_edge(START, "alpha")
    builder.add_edge("zeta", "tail")
    builder.add_edge("alpha", "head")
    expected = ["alpha", "zeta", "head", "tail", "work a1", "work a2", "work z"]
    graph = builder.compile()
    assert graph.invoke({"log": []}) == {"log": expected}
    assert asyncio.run(graph.ainvoke({"log": []})) == {"log": expected}


def test_an_incomplete_steps_finished_writes_show_and_apply_in_that_order(
    saver: BaseCheckpointSaver,
) -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"asked: {interrupt('ok?')}"]}

    builder = _fan_out("zeta", "alpha")
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=saver, interrupt_mode="return")
    config = {"configurable": {"thread_id": "t"}}

    paused = asyncio.run(graph.ainvoke({"log": []}, config))
    assert paused["log"] == ["alpha", "zeta"]
    assert graph.get_state(config).values == {"log": ["alpha", "zeta"]}

    # On resume only `ask` runs; the saved writes of the others are applied beside its own.
    done = asyncio.run(graph.ainvoke(Command(resume="yes"), config))
    assert done == {"log": ["alpha", "asked: yes", "zeta"]}
    assert graph.get_state(config).values == {"log": ["alpha", "asked: yes", "zeta"]}
