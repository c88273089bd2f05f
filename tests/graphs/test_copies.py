"""Saved state is a copy: mutating a value after the step that saved it cannot rewrite history."""

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, Command, GraphInterrupt, InMemorySaver, StateGraph, interrupt


class State(TypedDict):
    items: list
    log: Annotated[list, operator.add]
    meta: dict


CONFIG = {"configurable": {"thread_id": "t"}}


def history(app: Any) -> list[dict[str, Any]]:
    return [s.values for s in app.get_state_history(CONFIG)][::-1]


def test_a_later_node_mutating_state_in_place_does_not_change_earlier_checkpoints() -> None:
    def vandal(state: State) -> dict[str, Any]:
        state["items"].append("evil")
        state["log"].append("evil")
        state["meta"]["owner"] = "evil"
        return {"log": ["vandal"]}

    g = StateGraph(State)
    g.add_node("a", lambda s: {"items": ["x"], "log": ["a"], "meta": {"owner": "ada"}})
    g.add_node("vandal", vandal)
    g.add_edge(START, "a").add_edge("a", "vandal")
    app = g.compile(checkpointer=InMemorySaver())
    app.invoke({"log": []}, CONFIG)

    assert history(app)[:3] == [
        {"log": []},  # the input checkpoint: the state before the input (a reducer key empty)
        {"log": []},
        {"items": ["x"], "log": ["a"], "meta": {"owner": "ada"}},
    ]


def test_mutating_what_a_node_returned_after_the_step_does_not_change_history() -> None:
    kept: list[list[str]] = []

    def a(state: State) -> dict[str, Any]:
        items = ["x"]
        kept.append(items)
        return {"items": items}

    def b(state: State) -> dict[str, Any]:
        kept[0].append("late")
        return {"log": ["b"]}

    g = StateGraph(State).add_node("a", a).add_node("b", b)
    app = g.add_edge(START, "a").add_edge("a", "b").compile(checkpointer=InMemorySaver())
    app.invoke({"log": []}, CONFIG)
    assert history(app)[2] == {"log": [], "items": ["x"]}


def test_mutating_the_input_the_result_or_a_snapshot_changes_nothing_saved() -> None:
    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    app = g.compile(checkpointer=InMemorySaver())
    given = {"items": ["in"], "log": ["in"], "meta": {"k": [1]}}
    result = app.invoke(given, CONFIG)
    saved = {"items": ["in"], "log": ["in", "a"], "meta": {"k": [1]}}

    given["items"].append("input mutated")
    given["meta"]["k"].append(2)
    result["log"].append("result mutated")
    result["items"].append("result mutated")
    snapshot = app.get_state(CONFIG)
    snapshot.values["log"].append("snapshot mutated")
    snapshot.values["meta"]["k"].append(3)

    assert app.get_state(CONFIG).values == saved
    assert history(app) == [
        {"log": []},
        {"items": ["in"], "log": ["in"], "meta": {"k": [1]}},
        saved,
    ]
    # nor the input as its checkpoint's `__start__` task holds it
    first = list(app.get_state_history(CONFIG))[-1]
    assert first.tasks[0].result == {"items": ["in"], "log": ["in"], "meta": {"k": [1]}}


def test_pending_writes_are_copies_too() -> None:
    # A finished branch of an incomplete step is saved as pending writes; mutating the value it
    # returned afterwards must not change what is applied on resume.
    returned: list[list[str]] = []

    def done(state: State) -> dict[str, Any]:
        items = ["done"]
        returned.append(items)
        return {"items": items}

    g = StateGraph(State).add_node("ask", lambda s: {"log": [interrupt("?")]})
    g.add_node("done", done).add_edge(START, "ask").add_edge(START, "done")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    returned[0].append("mutated after the pause")
    assert app.invoke(Command(resume="ok"), CONFIG) == {"log": ["ok"], "items": ["done"]}
