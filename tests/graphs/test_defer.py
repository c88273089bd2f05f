"""`add_node(..., defer=True)`: a triggered node waits until no other node is to run, then runs
once, seeing every branch's writes (LangGraph's deferred nodes)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    StateGraph,
    interrupt,
)
from tests.graphs.checkpoint.test_contract import saver_fixture


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    return lambda state: {"log": [name]}


def summary(state: S) -> dict[str, Any]:
    return {"log": [f"summary of {len(state['log'])}"]}


def _branches(defer: bool, long_branch: Any = None) -> StateGraph:
    """`a` fans out to a long branch (b, b2, b3) and a short one (c); both lead to `summary`."""
    g = StateGraph(S)
    for name in ("a", "b", "b3", "c"):
        g.add_node(name, _step(name))
    g.add_node("b2", long_branch or _step("b2"))
    g.add_node("summary", summary, defer=defer)
    g.add_edge(START, "a")
    for a, b in [("a", "b"), ("a", "c"), ("b", "b2"), ("b2", "b3")]:
        g.add_edge(a, b)
    g.add_edge("b3", "summary")
    g.add_edge("c", "summary")
    g.add_edge("summary", END)
    return g


def test_a_deferred_node_runs_once_after_the_longest_branch() -> None:
    out = _branches(defer=True).compile().invoke({"log": []})
    assert out["log"] == ["a", "b", "c", "b2", "b3", "summary of 5"]


def test_without_defer_the_same_node_runs_after_each_branch() -> None:
    out = _branches(defer=False).compile().invoke({"log": []})
    assert out["log"] == ["a", "b", "c", "b2", "summary of 3", "b3", "summary of 6"]


def test_a_deferred_node_reached_by_command_waits_for_a_send_too() -> None:
    from graphs import Send

    g = StateGraph(S)
    g.add_node(
        "fan",
        lambda s: Command(goto=[Send("work", {"log": []}), "last"]),
        destinations=("work", "last"),
    )
    g.add_node("work", lambda s: {"log": ["work"]})
    g.add_node("more", _step("more"))
    g.add_node("last", summary, defer=True)
    g.add_edge(START, "fan")
    g.add_edge("work", "more")
    g.add_edge("more", END)
    g.add_edge("last", END)
    out = g.compile().invoke({"log": []})
    assert out["log"] == ["work", "more", "summary of 2"]


saver = saver_fixture("memory", "sqlite")


def test_a_waiting_deferred_node_is_kept_across_a_pause(saver: BaseCheckpointSaver) -> None:
    def ask(state: S) -> dict[str, Any]:
        return {"log": [f"b2 {interrupt('go on?')}"]}

    app = _branches(defer=True, long_branch=ask).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, config)
    assert app.get_state(config).values["log"] == ["a", "b", "c"]
    out = app.invoke(Command(resume="yes"), config)
    assert out["log"] == ["a", "b", "c", "b2 yes", "b3", "summary of 5"]
