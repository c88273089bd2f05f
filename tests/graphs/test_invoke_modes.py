"""`invoke(..., stream_mode=, subgraphs=, print_mode=, debug=)`, as LangGraph: a mode other than
`"values"` returns the list of chunks `stream` would yield; `"values"` (the default) the final
state; `print_mode` and `debug` print chunks to stdout as LangGraph does."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, StateGraph

BOLD, YELLOW, PLAIN = "\033[1m", "\033[1;30;33m", "\033[0m"


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


def test_values_and_debug_still_return_the_final_state(capsys: pytest.CaptureFixture[str]) -> None:
    app = _app()
    assert app.invoke({"log": []}, stream_mode="values", debug=True) == {"log": ["a", "b"]}
    assert capsys.readouterr().out  # printed (below)
    assert app.invoke({"log": []}) == {"log": ["a", "b"]}
    assert capsys.readouterr().out == ""


def test_print_mode_prints_those_chunks_as_langgraph_and_returns_the_same(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = _app()
    assert app.invoke({"log": []}, print_mode=["values", "updates"]) == {"log": ["a", "b"]}
    assert capsys.readouterr().out.splitlines() == [
        f"{BOLD}[values]{PLAIN} {{'log': []}}",
        f"{BOLD}[updates]{PLAIN} {{'sub': {{'log': ['a']}}}}",
        f"{BOLD}[values]{PLAIN} {{'log': ['a']}}",
        f"{BOLD}[updates]{PLAIN} {{'b': {{'log': ['b']}}}}",
        f"{BOLD}[values]{PLAIN} {{'log': ['a', 'b']}}",
    ]
    # What a stream yields does not change; a printed mode it does not stream is printed only.
    streamed = list(app.stream({"log": []}, stream_mode="values", print_mode="updates"))
    assert streamed == [{"log": []}, {"log": ["a"]}, {"log": ["a", "b"]}]
    assert capsys.readouterr().out.splitlines() == [
        f"{BOLD}[updates]{PLAIN} {{'sub': {{'log': ['a']}}}}",
        f"{BOLD}[updates]{PLAIN} {{'b': {{'log': ['b']}}}}",
    ]
    # A subgraph's chunks, under subgraphs=True, name their namespace.
    asyncio.run(app.ainvoke({"log": []}, print_mode="updates", subgraphs=True))
    first, *rest = capsys.readouterr().out.splitlines()
    assert first.startswith(f"{BOLD}[updates]{PLAIN} {YELLOW}[graph=('sub:")
    assert first.endswith(f"]{PLAIN} {{'a': {{'log': ['a']}}}}")
    assert len(rest) == 2


def test_debug_prints_updates_and_values_per_run_or_per_compile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    g = StateGraph(S).add_node("b", lambda s: {"log": ["b"]}).add_edge(START, "b")
    expected = [
        f"{BOLD}[values]{PLAIN} {{'log': []}}",
        f"{BOLD}[updates]{PLAIN} {{'b': {{'log': ['b']}}}}",
        f"{BOLD}[values]{PLAIN} {{'log': ['b']}}",
    ]
    assert g.compile().invoke({"log": []}, debug=True) == {"log": ["b"]}
    assert capsys.readouterr().out.splitlines() == expected
    assert list(g.compile(debug=True).stream({"log": []})) == [{"b": {"log": ["b"]}}]
    assert capsys.readouterr().out.splitlines() == expected
    with pytest.raises(ValueError, match="unknown stream_mode"):
        g.compile().invoke({"log": []}, print_mode="everything")  # type: ignore[arg-type]


def test_ainvoke_with_a_mode_returns_the_chunks_too() -> None:
    out = asyncio.run(_app().ainvoke({"log": []}, stream_mode="updates"))
    assert out == [{"sub": {"log": ["a"]}}, {"b": {"log": ["b"]}}]
