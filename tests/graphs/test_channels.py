"""`graphs.channels`: LangGraph's channel classes as state-key markers, each giving its key
LangGraph's behaviour, on a real SQLite file where a checkpoint is involved."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, GraphSetupError, InvalidUpdateError, StateGraph
from graphs.channels import BinaryOperatorAggregate, LastValue
from graphs.checkpoint.sql import SQLSaver


def sqlite(tmp_path: Path) -> SQLSaver:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'channels.db'}")
    saver.setup()
    return saver


def fan_out(state_schema: Any, writes: dict[str, Any], checkpointer: Any = None) -> Any:
    """START -> a and b (one step, in parallel) -> END; each writes `writes[name]`."""
    g = StateGraph(state_schema)
    for name in ("a", "b"):
        g.add_node(name, lambda s, name=name: writes[name])
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g.compile(checkpointer=checkpointer)


# ---- LastValue, BinaryOperatorAggregate ------------------------------------------------------


class Totals(TypedDict):
    total: Annotated[int, BinaryOperatorAggregate(int, operator.add)]
    name: Annotated[str, LastValue(str)]
    note: Annotated[str, LastValue]


def test_binary_operator_aggregate_merges_parallel_writes_and_keeps_them(tmp_path: Path) -> None:
    seen: list[int] = []

    def a(state: Totals) -> dict[str, Any]:
        seen.append(state["total"])  # read before anything was written: the type's empty value
        return {"total": 2}

    g = StateGraph(Totals)
    g.add_node("a", a)
    g.add_node("b", lambda s: {"total": 3})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"name": "x"}, config) == {"name": "x", "total": 5}
    assert seen == [0]
    assert app.invoke({"total": 10}, config)["total"] == 20  # 5 + 10 + 2 + 3, read back
    assert app.get_state(config).values == {"name": "x", "total": 20}


def test_last_value_is_a_plain_key_one_writer_per_step() -> None:
    app = fan_out(Totals, {"a": {"name": "a"}, "b": {"note": "b"}})
    assert app.invoke({"total": 1}) == {"total": 1, "name": "a", "note": "b"}
    app = fan_out(Totals, {"a": {"name": "a"}, "b": {"name": "b"}})
    with pytest.raises(InvalidUpdateError, match="state key 'name' got 2 values in one step"):
        app.invoke({"total": 1})


def test_a_channel_beside_a_reducer_or_a_channel_that_needs_arguments_is_refused() -> None:
    class Both(TypedDict):
        total: Annotated[int, BinaryOperatorAggregate(int, operator.add), operator.add]

    with pytest.raises(GraphSetupError, match="give it one: a channel or a reducer"):
        StateGraph(Both)

    class Bare(TypedDict):
        total: Annotated[int, BinaryOperatorAggregate]

    with pytest.raises(GraphSetupError, match=r"BinaryOperatorAggregate needs arguments"):
        StateGraph(Bare)
