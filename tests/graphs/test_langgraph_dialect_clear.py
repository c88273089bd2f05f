"""LangGraph's dialect where a thread is read and ended by hand: the same program, its imports
switched between LangGraph and `graphs`' LangGraph module paths, sees the same thing.

- A graph with a checkpointer run without a `thread_id` is refused with LangGraph's
  `ValueError` (seed 000's dialect makes a thread id and writes it back into the config).
- `update_state(config, None, as_node=END)` ends a paused run where it stands: the finished
  tasks' writes are kept, the pause and the tasks still to run are dropped.
- `get_state().tasks` lists a step's `Send` tasks before its nodes, as LangGraph does.
- `update_state(..., as_node=)` on a thread paused before a deferred node keeps that node to
  run, as LangGraph's deferred trigger lasts until the node runs.
"""

from __future__ import annotations

import importlib
import operator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

import graphs

DIALECTS = {
    "langgraph": ("langgraph.graph", "langgraph.types", "langgraph.checkpoint.memory"),
    "graphs": ("graphs.graph", "graphs.types", "graphs.checkpoint.memory"),
}


def imports(dialect: str) -> SimpleNamespace:
    graph, types, memory = (importlib.import_module(p) for p in DIALECTS[dialect])
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        START=graph.START,
        END=graph.END,
        Send=types.Send,
        Command=types.Command,
        interrupt=types.interrupt,
        InMemorySaver=memory.InMemorySaver,
    )


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def fan_out(lg: SimpleNamespace, effects: list[str]) -> Any:
    """START routes to `ask` (which pauses) and sends `note` a task: a step of a node and a
    `Send`, one of which pauses while the other finishes."""

    def ask(state: State) -> dict[str, Any]:
        answer = lg.interrupt("approve?")
        effects.append(f"ask:{answer}")
        return {"log": [f"ask:{answer}"]}

    def note(arg: dict[str, Any]) -> dict[str, Any]:
        effects.append("note")
        return {"log": ["note"]}

    def route(state: State) -> list[Any]:
        return ["ask", lg.Send("note", {"log": []})]

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask).add_node("note", note)
    builder.add_conditional_edges(lg.START, route, ["ask", "note"])
    return builder.compile(checkpointer=lg.InMemorySaver())


def seen(dialect: str, program: Any) -> Any:
    effects: list[str] = []
    return program(imports(dialect), effects), effects


@pytest.mark.parametrize("dialect", ["langgraph", "graphs"])
def test_a_run_of_a_graph_with_a_checkpointer_needs_a_thread_id(dialect: str) -> None:
    app = fan_out(imports(dialect), [])
    with pytest.raises(ValueError, match="Checkpointer requires .* thread_id"):
        app.invoke({"log": []})


def test_seed_000s_dialect_still_makes_a_thread_id_and_writes_it_back() -> None:
    builder = graphs.StateGraph(State)
    builder.add_node("a", lambda s: {"log": ["a"]}).add_edge(graphs.START, "a")
    app = builder.compile(checkpointer=graphs.InMemorySaver())
    config: dict[str, Any] = {}
    assert app.invoke({"log": []}, config) == {"log": ["a"]}
    assert app.get_state(config).values == {"log": ["a"]}


def what_a_reader_sees(lg: SimpleNamespace, app: Any, config: Any) -> dict[str, Any]:
    state = app.get_state(config)
    return {
        "values": state.values,
        "next": state.next,
        "tasks": [(t.name, t.path, t.result, [i.value for i in t.interrupts]) for t in state.tasks],
        "interrupts": [i.value for i in state.interrupts],
        "source": state.metadata["source"],
    }


def clear_after_pause(lg: SimpleNamespace, effects: list[str]) -> dict[str, Any]:
    app = fan_out(lg, effects)
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"log": ["in"]}, config)
    paused = what_a_reader_sees(lg, app, config)
    app.update_state(config, None, as_node=lg.END)
    cleared = what_a_reader_sees(lg, app, config)
    again = app.invoke({"log": ["again"]}, config)  # a new run on the thread
    return {
        "returned": {k: v for k, v in out.items() if k != "__interrupt__"},
        "paused": paused,
        "cleared": cleared,
        "new run": {k: v for k, v in again.items() if k != "__interrupt__"},
        "effects": list(effects),
    }


def test_update_state_as_end_ends_a_paused_run_keeping_finished_writes() -> None:
    ours, _ = seen("graphs", clear_after_pause)
    theirs, _ = seen("langgraph", clear_after_pause)
    assert ours == theirs
    assert ours["paused"]["tasks"][0][0] == "note"  # the Send first, as LangGraph lists it
    assert ours["cleared"]["values"] == {"log": ["in", "note"]}
    assert ours["cleared"]["next"] == () and ours["cleared"]["interrupts"] == []
    assert ours["effects"] == ["note", "note"]  # `ask` never went past its pause
    assert ours["new run"] == {"log": ["in", "note", "again", "note"]}


def test_a_cleared_pause_cannot_be_answered() -> None:
    """The one difference: an answer to the pause `as_node=END` dropped reaches no pause, and
    graphs refuses it (LangGraph returns the state), as for any finished thread."""
    lg = imports("graphs")
    app = fan_out(lg, [])
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    app.update_state(config, None, as_node=lg.END)
    with pytest.raises(graphs.ResumeError, match="not paused"):
        app.invoke(lg.Command(resume="yes"), config)


@pytest.mark.parametrize("dialect", ["langgraph", "graphs"])
def test_a_snapshot_is_copied_with_fields_replaced_as_langgraphs_named_tuple(dialect: str) -> None:
    lg = imports(dialect)
    app = fan_out(lg, [])
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    state = app.get_state(config)
    copy = state._replace(next=(), interrupts=())
    assert (copy.next, copy.interrupts, copy.values) == ((), (), state.values)
    assert state.next == ("ask",) and copy.config == state.config


def deferred_summary(lg: SimpleNamespace, effects: list[str]) -> dict[str, Any]:
    """Two branches, then a deferred `summary` paused before it runs; a person corrects the
    state as the branch that ran last, and the run goes on."""

    def branch(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            effects.append(name)
            return {"log": [name]}

        return node

    def summary(state: State) -> dict[str, Any]:
        effects.append("summary")
        return {"log": [f"summary of {len(state['log'])}"]}

    builder = lg.StateGraph(State)
    builder.add_node("left", branch("left")).add_node("right", branch("right"))
    builder.add_node("after_left", branch("after_left"))
    builder.add_node("summary", summary, defer=True)
    builder.add_edge(lg.START, "left").add_edge(lg.START, "right")
    builder.add_edge("left", "after_left")
    builder.add_edge("left", "summary").add_edge("right", "summary")
    app = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["summary"])
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    paused = app.get_state(config).next
    app.update_state(config, {"log": ["fixed"]}, as_node="after_left")
    updated = what_a_reader_sees(lg, app, config)
    final = app.invoke(None, config)
    return {"paused": paused, "updated": updated, "final": final, "effects": list(effects)}


def test_an_update_keeps_a_deferred_node_to_run_as_on_langgraph() -> None:
    ours, _ = seen("graphs", deferred_summary)
    theirs, _ = seen("langgraph", deferred_summary)
    assert ours == theirs
    assert ours["updated"]["next"] == ("summary",)
    assert ours["effects"][-1] == "summary"
