"""The worker threads that run a step's sync tasks are kept from step to step: what a user may
rely on still holds (a forked child runs parallel steps, a node's parallel subgraph inside a
parallel step finishes, the tasks begin in frontier order)."""

from __future__ import annotations

import multiprocessing
import operator
import threading
from typing import Annotated, Any, TypedDict

from graphs.graph import END, START, StateGraph


class State(TypedDict):
    out: Annotated[list[str], operator.add]


def _fan(names: tuple[str, ...], node: Any = None) -> Any:
    g = StateGraph(State)
    for n in names:
        g.add_node(n, node or (lambda s, n=n: {"out": [n]}))
        g.add_edge(START, n)
        g.add_edge(n, END)
    return g.compile()


def _child(q: Any) -> None:
    q.put(_fan(("a", "b", "c")).invoke({"out": []})["out"])


def test_a_forked_child_runs_a_parallel_step_after_its_parent_ran_one() -> None:
    app = _fan(("a", "b", "c"))
    assert app.invoke({"out": []})["out"] == ["a", "b", "c"]  # the parent's workers are idle now
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, (
        "the forked child's parallel step never ran (it waited for the parent's workers)"
    )
    assert q.get(timeout=5) == ["a", "b", "c"]


def test_a_parallel_step_inside_a_node_of_a_parallel_step_finishes() -> None:
    inner = _fan(("x", "y"))
    names: list[str] = []

    def outer(state: State) -> dict[str, Any]:
        names.append(threading.current_thread().name)
        return {"out": inner.invoke({"out": []})["out"]}

    app = _fan(("a", "b"), outer)
    for _ in range(3):  # again with the workers of the runs before
        assert app.invoke({"out": []})["out"] == ["x", "y", "x", "y"]
    assert set(names) == {"graphs-a", "graphs-b"}  # each task's thread is named after its node


def test_the_tasks_of_a_step_begin_in_frontier_order_each_time() -> None:
    began: list[str] = []
    g = StateGraph(State)
    for n in ("a", "b", "c", "d"):

        def node(state: State, n: str = n) -> dict[str, Any]:
            began.append(n)
            return {"out": [n]}

        g.add_node(n, node)
        g.add_edge(START, n)
    app = g.compile()
    for _ in range(5):
        began.clear()
        assert app.invoke({"out": []})["out"] == ["a", "b", "c", "d"]
        assert began == ["a", "b", "c", "d"]
