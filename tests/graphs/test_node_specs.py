"""What LangGraph code reads from a builder's node specs (`builder.nodes[name]`), and the
node-finished hook (`graphs._internal._constants.CONFIG_KEY_NODE_FINISHED`) its tests set."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphSetupError,
    InMemorySaver,
    RetryPolicy,
    StateGraph,
    interrupt,
)
from graphs._internal._constants import CONFIG_KEY_NODE_FINISHED
from graphs.checkpoint.sql import SQLSaver


class Counter:
    """A node as a callable object that counts its calls, as LangGraph's tests write them."""

    def __init__(self, name: str) -> None:
        self.__name__ = name
        self.ticks = 0

    def __call__(self, state: list[str]) -> list[str]:
        self.ticks += 1
        return [self.__name__]


def test_a_node_spec_s_runnable_func_is_the_object_add_node_was_given(tmp_path: Path) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'spec.db'}")
    saver.setup()
    builder = StateGraph(Annotated[list, operator.add])
    builder.add_node(Counter("a"))

    def ask(state: list[str]) -> list[str]:
        return [interrupt("ok?")]

    builder.add_node("ask", ask, retry_policy=RetryPolicy(max_attempts=2), destinations=["a"])
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver, interrupt_mode="return")
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke(["in"], config)["__interrupt__"][0].value == "ok?"
    assert graph.invoke(Command(resume="yes"), config) == ["in", "a", "yes"]
    spec = builder.nodes["a"]
    assert spec.runnable.func.ticks == 1  # the pause's resume did not run "a" again
    assert spec.runnable.name == "a"
    assert builder.nodes["ask"].runnable.func is ask
    assert builder.nodes["ask"].retry_policy == RetryPolicy(max_attempts=2)
    assert builder.nodes["ask"].ends == ("a",)
    assert builder.nodes["a"].cache_policy is None


def test_a_compiled_graph_node_is_its_own_runnable() -> None:
    class State(TypedDict):
        log: Annotated[list[str], operator.add]

    child = StateGraph(State)
    child.add_node("inner", lambda s: {"log": ["inner"]})
    child.add_edge(START, "inner")
    compiled = child.compile()
    parent = StateGraph(State)
    parent.add_node("child", compiled)
    parent.add_edge(START, "child")
    assert parent.nodes["child"].runnable is compiled
    assert parent.compile().invoke({"log": ["x"]}) == {"log": ["x", "x", "inner"]}


def test_a_compiled_graph_s_node_copies_with_fields_replaced() -> None:
    class State(TypedDict):
        foo: str

    graph = (
        StateGraph(State)
        .add_node("agent", lambda s: {"foo": "agent"})
        .add_edge(START, "agent")
        .compile()
    )
    spec = graph.nodes["agent"]
    assert spec.copy({}) == spec
    assert spec.copy({"defer": True}).defer is True
    assert spec.defer is False
    with pytest.raises(GraphSetupError) as e:
        spec.copy({"channels": ["foo"]})
    assert str(e.value).startswith(
        "node 'agent': copy() was given ['channels'], which a node spec does not have; its "
        "fields are ['name', 'fn', "
    )


def _nested(saver: Any) -> Any:
    class State(TypedDict):
        key: str

    def grandchild_1(s: State) -> State:
        return {"key": s["key"] + " here"}

    def grandchild_2(s: State) -> State:
        return {"key": s["key"] + " and there"}

    grandchild = StateGraph(State)
    grandchild.add_node("grandchild_1", grandchild_1)
    grandchild.add_node("grandchild_2", grandchild_2)
    grandchild.add_edge(START, "grandchild_1")
    grandchild.add_edge("grandchild_1", "grandchild_2")
    child = StateGraph(State)
    child.add_node("child_1", grandchild.compile(interrupt_before=["grandchild_2"]))
    child.add_edge(START, "child_1")

    def fails_once(s: State) -> State:
        if s["key"].endswith("there"):
            fails_once.failed = not getattr(fails_once, "failed", False)  # type: ignore[attr-defined]
            if fails_once.failed:  # type: ignore[attr-defined]
                raise RuntimeError("flaky")
        return {"key": s["key"] + " and back"}

    graph = StateGraph(State)
    graph.add_node("parent_1", lambda s: {"key": "hi " + s["key"]})
    graph.add_node("child", child.compile())
    graph.add_node("parent_2", fails_once)
    graph.add_edge(START, "parent_1")
    graph.add_edge("parent_1", "child")
    graph.add_edge("child", "parent_2")
    graph.add_edge("parent_2", END)
    return graph.compile(checkpointer=saver, interrupt_mode="return")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_node_finished_hook_hears_each_node_that_finished_subgraphs_included(
    mode: str, tmp_path: Path
) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'hook.db'}")
    saver.setup()
    graph = _nested(saver)
    finished: list[str] = []
    config = {"configurable": {"thread_id": "t", CONFIG_KEY_NODE_FINISHED: finished.append}}

    def run(value: Any) -> Any:
        if mode == "sync":
            return graph.invoke(value, config)

        async def arun() -> Any:
            try:
                return await graph.ainvoke(value, config)
            finally:
                await saver.aclose()

        return asyncio.run(arun())

    assert run({"key": "v"}) == {"key": "hi v"}  # paused before grandchild_2
    assert finished == ["parent_1", "grandchild_1"]  # not the paused child
    with pytest.raises(RuntimeError, match="flaky"):
        run(None)
    assert finished[2:] == ["grandchild_2", "child_1", "child"]  # not the failed parent_2
    assert run(None) == {"key": "hi v here and there and back"}
    assert finished[5:] == ["parent_2"]
    assert CONFIG_KEY_NODE_FINISHED == "__pregel_node_finished"  # LangGraph's string


def test_a_run_without_the_hook_keeps_it_out_of_the_checkpoint_metadata() -> None:
    graph = _nested(InMemorySaver())
    finished: list[str] = []
    config = {"configurable": {"thread_id": "t", CONFIG_KEY_NODE_FINISHED: finished.append}}
    graph.invoke({"key": "v"}, config)
    state = graph.get_state({"configurable": {"thread_id": "t"}})
    assert CONFIG_KEY_NODE_FINISHED not in state.metadata
    assert finished == ["parent_1", "grandchild_1"]
