"""`invoke(..., stream_mode=, subgraphs=, debug=)`, as LangGraph: a mode other than `"values"`
returns the list of chunks `stream` would yield; `"values"` (the default) the final state."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from graphs import END, START, StateGraph


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _app() -> Any:
    inner = StateGraph(S)
    inner.add_node("a", lambda s: {"log": ["a"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", END)
    g = StateGraph(S)
    g.add_node("sub", inner.compile())
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "sub")
    g.add_edge("sub", "b")
    g.add_edge("b", END)
    return g.compile()


def test_invoke_with_updates_returns_each_nodes_update() -> None:
    assert _app().invoke({"log": []}, stream_mode="updates") == [
        {"sub": {"log": ["a"]}},
        {"b": {"log": ["b"]}},
    ]


def test_invoke_with_several_modes_returns_tagged_chunks() -> None:
    chunks = _app().invoke({"log": []}, stream_mode=["updates", "values"])
    assert chunks[0] == ("values", {"log": []})
    assert chunks[-1] == ("values", {"log": ["a", "b"]})
    assert [m for m, _ in chunks] == ["values", "updates", "values", "updates", "values"]


def test_invoke_with_subgraphs_has_the_subgraphs_chunks_first() -> None:
    chunks = _app().invoke({"log": []}, stream_mode="updates", subgraphs=True)
    assert len(chunks) == 3
    (ns, update), *rest = chunks
    assert len(ns) == 1 and ns[0].startswith("sub:") and update == {"a": {"log": ["a"]}}
    assert rest == [((), {"sub": {"log": ["a"]}}), ((), {"b": {"log": ["b"]}})]


def test_values_and_debug_still_return_the_final_state() -> None:
    app = _app()
    assert app.invoke({"log": []}, stream_mode="values", debug=True) == {"log": ["a", "b"]}
    assert app.invoke({"log": []}) == {"log": ["a", "b"]}


def test_ainvoke_with_a_mode_returns_the_chunks_too() -> None:
    out = asyncio.run(_app().ainvoke({"log": []}, stream_mode="updates"))
    assert out == [{"sub": {"log": ["a"]}}, {"b": {"log": ["b"]}}]
