"""`add_node(..., cache_policy=CachePolicy(...))` with `compile(cache=InMemoryCache())`: a node
runs once per distinct input; later tasks with that input take its stored return value."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from graphs import END, START, GraphSetupError, StateGraph
from graphs.cache import InMemoryCache
from graphs.types import CachePolicy


class S(TypedDict, total=False):
    x: int
    y: int


def _app(calls: list[int], policy: CachePolicy | None, **compile: Any) -> Any:
    def double(state: S) -> dict[str, Any]:
        calls.append(state["x"])
        return {"y": state["x"] * 2}

    g = StateGraph(S)
    g.add_node("double", double, cache_policy=policy)
    g.add_edge(START, "double")
    g.add_edge("double", END)
    return g.compile(**compile)


def test_a_cached_node_runs_once_per_input_and_clear_cache_forgets() -> None:
    calls: list[int] = []
    app = _app(calls, CachePolicy(), cache=InMemoryCache())
    assert [app.invoke({"x": x})["y"] for x in (1, 1, 2, 1)] == [2, 2, 4, 2]
    assert calls == [1, 2]
    app.clear_cache()
    app.invoke({"x": 1})
    assert calls == [1, 2, 1]


def test_without_a_cache_or_a_policy_the_node_always_runs() -> None:
    calls: list[int] = []
    _app(calls, CachePolicy()).invoke({"x": 1})
    _app(calls, CachePolicy()).invoke({"x": 1})
    _app(calls, None, cache=InMemoryCache()).invoke({"x": 1})
    assert calls == [1, 1, 1]


def test_key_func_decides_what_counts_as_the_same_input() -> None:
    calls: list[int] = []
    app = _app(calls, CachePolicy(key_func=lambda s: str(s["x"] % 2)), cache=InMemoryCache())
    assert [app.invoke({"x": x})["y"] for x in (1, 3, 2)] == [2, 2, 4]
    assert calls == [1, 2]


def test_an_entry_expires_after_its_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    import graphs.cache.memory as cache_module

    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    calls: list[int] = []
    app = _app(calls, CachePolicy(ttl=60), cache=InMemoryCache())
    app.invoke({"x": 1})
    now[0] += 59
    app.invoke({"x": 1})
    now[0] += 2
    app.invoke({"x": 1})
    assert calls == [1, 1]


def test_an_async_run_uses_the_cache_too() -> None:
    calls: list[int] = []

    async def double(state: S) -> dict[str, Any]:
        calls.append(state["x"])
        return {"y": state["x"] * 2}

    g = StateGraph(S)
    g.add_node("double", double, cache_policy=CachePolicy())
    g.add_edge(START, "double")
    g.add_edge("double", END)
    app = g.compile(cache=InMemoryCache())

    async def twice() -> list[int]:
        return [(await app.ainvoke({"x": 3}))["y"] for _ in range(2)]

    assert asyncio.run(twice()) == [6, 6]
    assert calls == [3]


def test_a_cache_policy_that_is_not_one_is_refused() -> None:
    g = StateGraph(S)
    with pytest.raises(GraphSetupError, match="cache_policy must be a CachePolicy"):
        g.add_node("n", lambda s: {}, cache_policy={"ttl": 5})  # type: ignore[arg-type]


def test_a_cache_hits_updates_chunk_says_it_was_cached() -> None:
    # As LangGraph: the node did not run, so its `updates` chunk carries
    # `"__metadata__": {"cached": True}`; a run of the node shows the plain chunk.
    calls: list[int] = []
    app = _app(calls, CachePolicy(), cache=InMemoryCache())
    assert list(app.stream({"x": 1})) == [{"double": {"y": 2}}]
    hit = [{"double": {"y": 2}, "__metadata__": {"cached": True}}]
    assert list(app.stream({"x": 1})) == hit
    assert list(app.stream({"x": 1}, stream_mode=["updates", "values"])) == [
        ("values", {"x": 1}),
        ("updates", hit[0]),
        ("values", {"x": 1, "y": 2}),
    ]

    async def astream() -> list[Any]:
        return [c async for c in app.astream({"x": 1})]

    assert asyncio.run(astream()) == hit
    assert list(app.stream({"x": 2})) == [{"double": {"y": 4}}]  # a miss: the node ran
    assert calls == [1, 2]
