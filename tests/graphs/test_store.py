"""`compile(store=...)`: long-term memory nodes share across threads (LangGraph's `BaseStore`).

Nodes get the store through a `store` parameter, `Runtime.store` or `get_store()`; a subgraph
uses its parent's; what one thread puts, another reads (on SQLite too). `InMemoryStore`'s own
methods are checked as a user calls them.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, BaseCheckpointSaver, Command, GraphInterrupt, StateGraph, interrupt
from graphs.config import get_store
from graphs.runtime import Runtime
from graphs.store import BaseStore, InMemoryStore
from tests.graphs.checkpoint.test_contract import saver_fixture


class State(TypedDict, total=False):
    user: str
    log: Annotated[list[Any], operator.add]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    store.put(("users", state["user"]), "lang", {"value": "fr"})
    return {"log": ["remembered"]}


def recall(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    item = runtime.store.get(("users", state["user"]), "lang")
    return {"log": [item.value if item else None]}


def _graph(*nodes: Any) -> StateGraph:
    g = StateGraph(State)
    prev = START
    for fn in nodes:
        g.add_node(fn)
        g.add_edge(prev, fn.__name__)
        prev = fn.__name__
    g.add_edge(prev, END)
    return g


def test_one_node_puts_and_the_next_reads_through_runtime_store() -> None:
    store = InMemoryStore()
    out = _graph(remember, recall).compile(store=store).invoke({"user": "u1"})
    assert out["log"] == ["remembered", {"value": "fr"}]
    assert store.get(("users", "u1"), "lang") is not None


def test_get_store_and_the_injected_parameter_are_the_compiled_store() -> None:
    store = InMemoryStore()
    seen: list[Any] = []

    def look(state: State, store: BaseStore) -> dict[str, Any]:
        seen.extend([store, get_store()])
        return {}

    _graph(look).compile(store=store).invoke({"user": "u"})
    _graph(look).compile().invoke({"user": "u"})
    assert seen == [store, store, None, None]


def test_a_subgraph_without_a_store_uses_its_parents() -> None:
    store = InMemoryStore()
    inner = _graph(remember).compile()
    outer = StateGraph(State)
    outer.add_node("inner", inner)
    outer.add_node(recall)
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "recall")
    outer.add_edge("recall", END)
    out = outer.compile(store=store).invoke({"user": "u2"})
    assert out["log"] == ["remembered", {"value": "fr"}]


saver = saver_fixture("memory", "sqlite")


def test_what_one_thread_stores_another_reads_after_a_pause(saver: BaseCheckpointSaver) -> None:
    def confirm(state: State, *, store: BaseStore) -> dict[str, Any]:
        if interrupt("remember the language?"):
            store.put(("users", state["user"]), "lang", {"value": "fr"})
        return {}

    store = InMemoryStore()
    app = _graph(confirm, recall).compile(checkpointer=saver, store=store)
    first: Any = {"configurable": {"thread_id": "first"}}
    with pytest.raises(GraphInterrupt):
        app.invoke({"user": "u3"}, first)
    assert store.get(("users", "u3"), "lang") is None
    app.invoke(Command(resume=True), first)
    reader = _graph(recall).compile(checkpointer=saver, store=store)
    out = reader.invoke({"user": "u3"}, {"configurable": {"thread_id": "second"}})
    assert out["log"] == [{"value": "fr"}]


def test_an_async_node_uses_the_async_methods() -> None:
    async def note(state: State, *, store: BaseStore) -> dict[str, Any]:
        await store.aput(("notes",), "n1", {"text": "hi"})
        found = await store.asearch(("notes",))
        return {"log": [i.value["text"] for i in found]}

    out = asyncio.run(_graph(note).compile(store=InMemoryStore()).ainvoke({"user": "u"}))
    assert out["log"] == ["hi"]


def test_search_filters_by_prefix_value_and_operators_with_limit_and_offset() -> None:
    store = InMemoryStore()
    for i in range(5):
        store.put(("docs", "a" if i % 2 else "b"), f"k{i}", {"n": i, "tag": "x" if i < 3 else "y"})
    store.put(("other",), "k9", {"n": 9, "tag": "x"})

    def keys(*args: Any, **kw: Any) -> list[str]:
        return [i.key for i in store.search(*args, **kw)]

    assert keys(("docs",)) == ["k0", "k1", "k2", "k3", "k4"]
    assert keys(("docs", "a")) == ["k1", "k3"]
    assert keys(("docs",), filter={"tag": "x"}) == ["k0", "k1", "k2"]
    assert keys((), filter={"n": {"$gte": 3}}) == ["k3", "k4", "k9"]
    assert keys(("docs",), limit=2, offset=1) == ["k1", "k2"]
    with pytest.raises(NotImplementedError, match="no semantic search"):
        store.search(("docs",), query="about tea")


def test_put_keeps_created_at_replaces_the_value_and_none_deletes() -> None:
    store = InMemoryStore()
    store.put(("u",), "k", {"v": 1})
    first = store.get(("u",), "k")
    store.put(("u",), "k", {"v": 2})
    second = store.get(("u",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at <= second.updated_at
    assert second.dict()["namespace"] == ["u"]
    store.put(("u",), "k", None)
    assert store.get(("u",), "k") is None


def test_list_namespaces_by_prefix_suffix_and_depth() -> None:
    store = InMemoryStore()
    for ns in [("users", "u1", "prefs"), ("users", "u2", "prefs"), ("users", "u2", "notes")]:
        store.put(ns, "k", {})
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(suffix=("notes",)) == [("users", "u2", "notes")]
    assert store.list_namespaces(max_depth=2) == [("users", "u1"), ("users", "u2")]


def test_a_bad_namespace_or_value_is_refused_with_what_to_give() -> None:
    store = InMemoryStore()
    with pytest.raises(ValueError, match="a namespace is a tuple of non-empty strings"):
        store.put(["users"], "k", {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the value must be a dict"):
        store.put(("users",), "k", "text")  # type: ignore[arg-type]
