"""A compiled graph's LangChain Runnable methods: `batch`, `abatch`, `with_config`, `copy`."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from graphs import END, START, GraphRecursionError, InMemorySaver, StateGraph
from graphs.config import get_config


class S(TypedDict, total=False):
    n: int
    who: str


def inc(state: S) -> dict[str, Any]:
    if state["n"] < 0:
        raise ValueError("negative")
    return {"n": state["n"] + 1, "who": get_config()["configurable"].get("user", "-")}


def _app(**compile: Any) -> Any:
    g = StateGraph(S)
    g.add_node(inc)
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    return g.compile(**compile)


def test_batch_runs_each_input_in_order_and_can_return_errors() -> None:
    app = _app()
    assert [o["n"] for o in app.batch([{"n": 1}, {"n": 5}])] == [2, 6]
    out = app.batch([{"n": 1}, {"n": -1}], return_exceptions=True)
    assert out[0]["n"] == 2 and isinstance(out[1], ValueError)
    with pytest.raises(ValueError, match="negative"):
        app.batch([{"n": -1}])


def test_batch_with_one_config_per_input_runs_on_each_thread() -> None:
    app = _app(checkpointer=InMemorySaver())
    configs: list[Any] = [{"configurable": {"thread_id": t}} for t in ("a", "b")]
    app.batch([{"n": 1}, {"n": 10}], configs)
    assert app.get_state(configs[1]).values["n"] == 11
    with pytest.raises(ValueError, match="2 inputs but 1 configs"):
        app.batch([{"n": 1}, {"n": 2}], configs[:1])


def test_abatch_runs_the_inputs_and_keeps_their_order() -> None:
    out = asyncio.run(_app().abatch([{"n": 3}, {"n": 1}]))
    assert [o["n"] for o in out] == [4, 2]


def test_with_config_binds_a_base_config_the_given_one_goes_over() -> None:
    app = _app()
    bound = app.with_config(configurable={"user": "ann"})
    assert bound.invoke({"n": 1})["who"] == "ann"
    assert bound.invoke({"n": 1}, {"configurable": {"user": "bob"}})["who"] == "bob"
    assert app.invoke({"n": 1})["who"] == "-"  # the original is unchanged


def test_with_config_recursion_limit_applies_to_runs() -> None:
    g = StateGraph(S)
    g.add_node("loop", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "loop")
    g.add_conditional_edges("loop", lambda s: END if s["n"] >= 5 else "loop")
    with pytest.raises(GraphRecursionError):
        g.compile().with_config(recursion_limit=3).invoke({"n": 0})
    assert g.compile().invoke({"n": 0})["n"] == 5


def test_copy_replaces_the_attributes_given() -> None:
    app = _app()
    other = app.copy(update={"name": "renamed"})
    assert (other.name, app.name) == ("renamed", "LangGraph")
    assert other.invoke({"n": 1})["n"] == 2
    with pytest.raises(AttributeError, match="no 'colour'"):
        app.copy(update={"colour": "red"})
