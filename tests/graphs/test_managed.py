"""`graphs.managed`: `RemainingSteps` and `IsLastStep`, computed from the recursion limit for
each node run and each router, never written, saved or returned."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, NotRequired

from pydantic import BaseModel
from typing_extensions import TypedDict

from graphs import END, START, InMemorySaver, StateGraph
from graphs.managed import IsLastStep, RemainingSteps


class State(TypedDict):
    seen: Annotated[list[tuple[int, bool]], operator.add]
    remaining_steps: NotRequired[RemainingSteps]
    is_last_step: NotRequired[IsLastStep]


def _looping_graph() -> Any:
    def work(state: State) -> dict[str, Any]:
        # what a node returns under a managed key is dropped
        return {"seen": [(state["remaining_steps"], state["is_last_step"])], "remaining_steps": 99}

    def again(state: State) -> str:
        return END if state["seen"][-1][0] <= 1 else "work"

    g = StateGraph(State)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_conditional_edges("work", again)
    return g.compile(checkpointer=InMemorySaver())


def test_a_node_reads_the_steps_its_invocation_has_left() -> None:
    graph = _looping_graph()
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 5}
    out = graph.invoke({"seen": []}, config)
    # LangGraph's numbers: the steps allowed after this one (its count has the input's step)
    assert out == {"seen": [(4, False), (3, False), (2, False), (1, True)]}
    saved = graph.get_state(config)
    assert "remaining_steps" not in saved.values
    assert (
        "remaining_steps" not in graph.checkpointer.get_tuple(config).checkpoint["channel_values"]
    )

    # a new invocation on the thread has the whole limit again
    out = graph.invoke({"seen": []}, {**config, "recursion_limit": 3})
    assert out["seen"][4:] == [(2, False), (1, True)]


def test_the_last_step_allowed_has_no_steps_left() -> None:
    def work(state: State) -> dict[str, Any]:
        return {"seen": [(state["remaining_steps"], state["is_last_step"])]}

    def again(state: State) -> str:
        return END if state["seen"][-1][0] == 0 else "work"

    g = StateGraph(State)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_conditional_edges("work", again)
    out = g.compile().invoke({"seen": []}, {"recursion_limit": 3})
    assert out == {"seen": [(2, False), (1, True), (0, False)]}  # and no GraphRecursionError


class Model(BaseModel):
    count: int = 0
    remaining_steps: RemainingSteps = 25


def test_a_pydantic_state_gets_the_computed_value_not_its_default() -> None:
    got: list[int] = []

    def work(state: Model) -> Model:
        got.append(state.remaining_steps)
        return Model(count=state.count + 1)  # its remaining_steps default is dropped

    g = StateGraph(Model)
    g.add_node("work", work)
    g.add_edge(START, "work")
    out = g.compile().invoke({"count": 0}, {"recursion_limit": 7})
    assert got == [6] and out == {"count": 1}


def _routed_graph(routed: list[tuple[str, int, bool]], *, is_async: bool) -> Any:
    """A loop whose routers stop it by the steps left: no node counts."""

    def work(state: State) -> dict[str, Any]:
        return {"seen": [(state["remaining_steps"], state["is_last_step"])]}

    def first(state: State) -> str:
        routed.append(("start", state["remaining_steps"], state["is_last_step"]))
        return "work"

    def again(state: State) -> str:
        routed.append(("work", state["remaining_steps"], state["is_last_step"]))
        return END if state["is_last_step"] else "work"

    async def afirst(state: State) -> str:
        return first(state)

    async def aagain(state: State) -> str:
        return again(state)

    g = StateGraph(State)
    g.add_node("work", work)
    g.add_conditional_edges(START, afirst if is_async else first, ["work"])
    g.add_conditional_edges("work", aagain if is_async else again, ["work", END])
    return g.compile()


def test_a_router_reads_the_steps_left_as_the_node_it_routes_after() -> None:
    routed: list[tuple[str, int, bool]] = []
    out = _routed_graph(routed, is_async=False).invoke({"seen": []}, {"recursion_limit": 4})
    # each router after `work` sees what that `work` saw; START's, one more (the input's step)
    assert out == {"seen": [(3, False), (2, False), (1, True)]}
    assert routed == [
        ("start", 4, False),
        ("work", 3, False),
        ("work", 2, False),
        ("work", 1, True),
    ]


def test_an_async_router_reads_them_too() -> None:
    routed: list[tuple[str, int, bool]] = []
    graph = _routed_graph(routed, is_async=True)
    out = asyncio.run(graph.ainvoke({"seen": []}, {"recursion_limit": 3}))
    assert out == {"seen": [(2, False), (1, True)]}
    assert routed == [("start", 3, False), ("work", 2, False), ("work", 1, True)]


def test_a_pydantic_router_gets_the_computed_value_not_its_default() -> None:
    got: list[int] = []

    def work(state: Model) -> dict[str, Any]:
        return {"count": state.count + 1}

    def again(state: Model) -> str:
        got.append(state.remaining_steps)
        return END if state.remaining_steps <= 2 else "work"

    g = StateGraph(Model)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_conditional_edges("work", again, ["work", END])
    out = g.compile().invoke({"count": 0}, {"recursion_limit": 5})
    assert got == [4, 3, 2] and out == {"count": 3}
