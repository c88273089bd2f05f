"""LangGraph's `EmptyInputError`, `EmptyChannelError` and `ErrorCode` in `graphs.errors`:
importable where LangGraph has them, with its meanings, and an empty input raises
`EmptyInputError` (still an `InvalidUpdateError`, what graphs raised before)."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphError,
    InMemorySaver,
    InvalidUpdateError,
    StateGraph,
    errors,
)
from graphs.errors import EmptyChannelError, EmptyInputError, ErrorCode


class State(TypedDict, total=False):
    n: int


def counter(saver: Any = None) -> Any:
    b = StateGraph(State)
    b.add_node("inc", lambda s: {"n": s.get("n", 0) + 1})
    b.add_edge(START, "inc")
    b.add_edge("inc", END)
    return b.compile(checkpointer=saver)


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def test_an_empty_command_as_input_raises_empty_input_error_and_saves_nothing() -> None:
    saver = InMemorySaver()
    graph = counter(saver)
    with pytest.raises(EmptyInputError, match=r"the input Command\(\) is empty") as raised:
        graph.invoke(Command(), config())
    assert isinstance(raised.value, InvalidUpdateError)
    assert saver.get_tuple(config()) is None

    # On a thread that has run, too: it is not taken for "go on" (that is None).
    assert graph.invoke({"n": 1}, config()) == {"n": 2}
    head = saver.get_tuple(config())
    with pytest.raises(EmptyInputError):
        graph.invoke(Command(), config())
    after = saver.get_tuple(config())
    assert head is not None and after is not None and after.config == head.config


def test_an_empty_command_is_refused_under_ainvoke_too() -> None:
    import asyncio

    graph = counter(InMemorySaver())
    with pytest.raises(EmptyInputError):
        asyncio.run(graph.ainvoke(Command(), config()))


def test_the_error_names_are_where_langgraph_has_them() -> None:
    assert {"EmptyInputError", "EmptyChannelError", "ErrorCode"} <= set(errors.__all__)
    assert issubclass(EmptyChannelError, GraphError) and issubclass(EmptyChannelError, LookupError)
    assert [c.value for c in ErrorCode] == [
        "GRAPH_RECURSION_LIMIT",
        "INVALID_CONCURRENT_GRAPH_UPDATE",
        "INVALID_GRAPH_NODE_RETURN_VALUE",
        "MULTIPLE_SUBGRAPHS",
        "INVALID_CHAT_HISTORY",
    ]
    assert ErrorCode("MULTIPLE_SUBGRAPHS") is ErrorCode.MULTIPLE_SUBGRAPHS
