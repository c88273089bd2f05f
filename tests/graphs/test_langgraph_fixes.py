"""Bugs found by running LangGraph's own StateGraph tests against graphs: each with a repro."""

from __future__ import annotations

import dataclasses
import operator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphSetupError,
    InMemorySaver,
    RunConfig,
    StateGraph,
)
from graphs.checkpoint.sql import SQLSaver
from graphs.config import get_config


class State(TypedDict):
    items: Annotated[list[int], operator.add]
    note: str


def test_a_reducer_key_nothing_was_written_to_reads_as_its_empty_value() -> None:
    # LangGraph starts a reducer key from its empty value; graphs raised KeyError in the node.
    seen: list[Any] = []

    def node(state: State) -> dict[str, Any]:
        seen.append(state["items"])
        return {"items": [len(state["items"]) + 1]}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_conditional_edges(START, lambda s: "node" if s["items"] == [] else END)
    g.add_edge("node", END)
    out = g.compile().invoke({"note": "no items given"})
    assert seen == [[]] and out["items"] == [1]


def test_a_reducer_key_nothing_was_written_to_is_in_the_output_and_the_state(
    tmp_path: Path,
) -> None:
    # LangGraph's reducer channel holds `typ()` from the start, so the key is always there;
    # graphs left it out of results until something wrote it.
    saver = SQLSaver(f"sqlite:///{tmp_path / 'empty.db'}")
    saver.setup()
    g = StateGraph(State)
    g.add_node("node", lambda s: {"note": s["note"] + "!"})
    g.add_edge(START, "node")
    g.add_edge("node", END)
    graph = g.compile(checkpointer=saver)
    config: RunConfig = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"note": "hi"}, config) == {"items": [], "note": "hi!"}
    assert graph.get_state(config).values == {"items": [], "note": "hi!"}
    oldest = [s.values for s in graph.get_state_history(config)][::-1]
    assert oldest[:2] == [
        {"items": []},
        {"items": [], "note": "hi"},
    ]  # the input checkpoint, step 0
    chunks = list(graph.stream({"note": "again"}, config, stream_mode="values"))
    assert chunks == [{"items": [], "note": "again"}, {"items": [], "note": "again!"}]
    assert graph.get_state({"configurable": {"thread_id": "new"}}).values == {}


def test_compile_refuses_a_checkpointer_that_is_not_one_naming_what_was_given() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: None)
    g.add_edge(START, "a")
    with pytest.raises(GraphSetupError, match="checkpointer must be a BaseCheckpointSaver.*dict"):
        g.compile(checkpointer={"not": "a saver"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^Invalid checkpointer provided"):  # LangGraph's type
        g.compile(checkpointer=object())  # type: ignore[arg-type]
    g.compile(checkpointer=InMemorySaver())
    g.compile(checkpointer=None)


def test_next_does_not_list_nodes_that_finished_in_a_partly_completed_step() -> None:
    def ok(state: State) -> dict[str, Any]:
        return {"items": [1]}

    def fails(state: State) -> dict[str, Any]:
        raise RuntimeError("down")

    g = StateGraph(State)
    g.add_node("ok", ok)
    g.add_node("fails", fails)
    g.add_edge(START, "ok")
    g.add_edge(START, "fails")
    app = g.compile(checkpointer=InMemorySaver())
    config: RunConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError):
        app.invoke({"items": []}, config)
    snap = app.get_state(config)
    assert snap.next == ("fails",)
    assert [(t.name, t.done) for t in snap.tasks] == [("ok", True), ("fails", False)]


def test_a_node_and_a_router_may_take_the_config_as_a_keyword_only_parameter() -> None:
    def node(state: State, *, config: RunConfig) -> dict[str, Any]:
        return {"note": config["configurable"]["thread_id"]}

    def route(state: State, *, config: RunConfig) -> str:
        assert config["configurable"]["thread_id"] == "kw"
        return END

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_conditional_edges("node", route)
    out = g.compile().invoke({"items": []}, {"configurable": {"thread_id": "kw"}})
    assert out["note"] == "kw"


def test_get_config_inside_a_node() -> None:
    def node(state: State) -> dict[str, Any]:
        return {"note": get_config()["configurable"]["thread_id"]}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    assert g.compile().invoke({"items": []}, {"configurable": {"thread_id": "c"}})["note"] == "c"
    with pytest.raises(RuntimeError, match="inside a graph node"):
        get_config()


def _goto_graph(**first: Any) -> StateGraph:
    def a(state: State) -> dict[str, Any]:
        return {"items": [1]}

    def b(state: State) -> dict[str, Any]:
        return {"items": [2]}

    g = StateGraph(State)
    g.add_node("first", first.pop("fn"), **first)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "first")
    return g


def test_a_node_reached_only_through_command_goto_needs_no_declaration() -> None:
    def first(state: State) -> Command:
        return Command(update={"note": "went"}, goto="b")

    # As in LangGraph: "first" may return a Command to any node, so "a" and "b" may be reached.
    assert _goto_graph(fn=first).compile().invoke({"items": []}) == {"items": [2], "note": "went"}
    # Declared destinations are what it may reach: "a" still, through them; "b" no more.
    with pytest.raises(GraphSetupError, match=r"\['b'\] cannot be reached"):
        _goto_graph(fn=first, destinations=("a",)).compile()
    out = _goto_graph(fn=first, destinations=("a", "b")).compile().invoke({"items": []})
    assert out == {"items": [2], "note": "went"}
    with pytest.raises(GraphSetupError, match="destinations of node 'first' names unknown node"):
        _goto_graph(fn=first, destinations=("a", "b", "c")).compile()


def test_or_by_a_command_literal_return_annotation() -> None:
    def first(state: State) -> Command[Literal["a", "b"]]:
        return Command(goto="a")

    out = _goto_graph(fn=first).compile().invoke({"items": []})
    assert out == {"items": [1]}


def test_a_command_copied_with_dataclasses_replace_keeps_whether_it_resumes() -> None:
    # `dataclasses.replace` passes every field to `__init__`; it raised TypeError on `_has_resume`.
    goto = dataclasses.replace(Command(goto="a"), update={"note": "x"})
    assert goto == Command(goto="a", update={"note": "x"}) and not goto.has_resume
    answer = dataclasses.replace(Command(resume=None), goto="b")
    assert answer.has_resume and answer.resume is None and answer.goto == "b"
