"""`compile(store=...)`: long-term memory nodes share across threads (LangGraph's `BaseStore`).

Nodes get the store through a `store` parameter, `Runtime.store` or `get_store()`; a subgraph
uses its parent's; what one thread puts, another reads (on SQLite too). The store's own methods
are checked as a user calls them, on every store (`store_fixture`): `InMemoryStore`, and
`SQLStore` on a SQLite file and on PostgreSQL, which must answer exactly as it does.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, BaseCheckpointSaver, Command, GraphInterrupt, StateGraph, interrupt
from graphs.config import get_store
from graphs.runtime import Runtime
from graphs.store import BaseStore, InMemoryStore, Item, SearchItem
from tests.graphs.checkpoint.test_contract import saver_fixture


def store_fixture(*names: str) -> Any:
    """A fixture `store` over the named stores (all when none is named): `memory`, `sqlite`
    (a file of the test's own, set up) and `postgres` (a schema of its own, set up)."""

    @pytest.fixture(
        name="store",
        params=[
            pytest.param(n, marks=[pytest.mark.postgres] if n == "postgres" else [])
            for n in names or ("memory", "sqlite", "postgres")
        ],
    )
    def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
        if request.param == "memory":
            yield InMemoryStore()
            return
        from graphs.store.sql import SQLStore

        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / 'store.db'}"
        else:
            url = str(request.getfixturevalue("pg_url"))
        sql_store = SQLStore(url)
        sql_store.setup()
        try:
            yield sql_store
        finally:
            sql_store.close()

    return store


store = store_fixture()


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


def test_one_node_puts_and_the_next_reads_through_runtime_store(store: BaseStore) -> None:
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


def test_a_subgraph_without_a_store_uses_its_parents(store: BaseStore) -> None:
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


def test_what_one_thread_stores_another_reads_after_a_pause(
    saver: BaseCheckpointSaver, store: BaseStore
) -> None:
    def confirm(state: State, *, store: BaseStore) -> dict[str, Any]:
        if interrupt("remember the language?"):
            store.put(("users", state["user"]), "lang", {"value": "fr"})
        return {}

    app = _graph(confirm, recall).compile(checkpointer=saver, store=store)
    first: Any = {"configurable": {"thread_id": "first"}}
    with pytest.raises(GraphInterrupt):
        app.invoke({"user": "u3"}, first)
    assert store.get(("users", "u3"), "lang") is None
    app.invoke(Command(resume=True), first)
    reader = _graph(recall).compile(checkpointer=saver, store=store)
    out = reader.invoke({"user": "u3"}, {"configurable": {"thread_id": "second"}})
    assert out["log"] == [{"value": "fr"}]


def test_an_async_node_uses_the_async_methods(store: BaseStore) -> None:
    async def note(state: State, *, store: BaseStore) -> dict[str, Any]:
        await store.aput(("notes",), "n1", {"text": "hi"})
        found = await store.asearch(("notes",))
        return {"log": [i.value["text"] for i in found]}

    out = asyncio.run(_graph(note).compile(store=store).ainvoke({"user": "u"}))
    assert out["log"] == ["hi"]


def test_search_filters_by_prefix_value_and_operators_with_limit_and_offset(
    store: BaseStore,
) -> None:
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
    assert keys(("docs",), filter={"n": {"$gt": 0, "$lt": 4}}, offset=1, limit=1) == ["k2"]
    assert keys(("docs",), filter={"tag": {"$ne": "x"}}) == ["k3", "k4"]
    # without an index, a query is ignored, as in LangGraph: the same items, unscored
    found = store.search(("docs",), query="about tea", filter={"tag": "x"})
    assert [i.key for i in found] == ["k0", "k1", "k2"] and {i.score for i in found} == {None}


def test_put_keeps_created_at_replaces_the_value_and_none_deletes(store: BaseStore) -> None:
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


def test_list_namespaces_by_prefix_suffix_and_depth(store: BaseStore) -> None:
    for ns in [("users", "u1", "prefs"), ("users", "u2", "prefs"), ("users", "u2", "notes")]:
        store.put(ns, "k", {})
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(suffix=("notes",)) == [("users", "u2", "notes")]
    assert store.list_namespaces(max_depth=2) == [("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(suffix=("*", "prefs"), limit=1, offset=1) == [
        ("users", "u2", "prefs")
    ]
    store.delete(("users", "u2", "notes"), "k")
    assert store.list_namespaces(prefix=("users", "u2")) == [("users", "u2", "prefs")]


def test_a_bad_namespace_or_value_is_refused_with_what_to_give(store: BaseStore) -> None:
    with pytest.raises(ValueError, match="a namespace is a tuple of non-empty strings"):
        store.put(["users"], "k", {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the value must be a dict"):
        store.put(("users",), "k", "text")  # type: ignore[arg-type]


def test_a_prefix_is_whole_parts_and_an_update_keeps_the_items_place(store: BaseStore) -> None:
    for ns in [("docs", "a"), ("docs", "a-b"), ("docs", "ab"), ("docs", "a", "x"), ("docs",)]:
        store.put(ns, "k", {"ns": list(ns)})
    store.put(("docs", "a"), "k", {"ns": ["updated"]})
    found = store.search(("docs", "a"))
    assert [i.namespace for i in found] == [("docs", "a"), ("docs", "a", "x")]
    assert found[0].value == {"ns": ["updated"]}
    assert len(store.search(("docs",))) == 5
    assert store.get(("docs", "a.x"), "k") is None  # a part with "." names nothing stored
    store.put(("docs", "a"), "k", None)
    store.put(("docs", "a"), "k", {"again": True})  # deleted, then put: now the last
    assert [i.namespace for i in store.search(("docs",))][-1] == ("docs", "a")


def test_a_filtered_page_far_down_a_long_prefix(store: BaseStore) -> None:
    for i in range(250):
        store.put(("log",), f"e{i:03d}", {"i": i, "even": i % 2 == 0, "meta": {"t": i % 5}})
    page = store.search(("log",), filter={"even": True, "meta": {"t": 0}}, offset=20, limit=3)
    assert [i.key for i in page] == ["e200", "e210", "e220"]
    assert [i.key for i in store.search(("log",), offset=248, limit=5)] == ["e248", "e249"]
    assert store.search(("log",), filter={"i": {"$gte": 249}})[0].value["i"] == 249


def test_the_async_methods_answer_as_the_sync_ones(store: BaseStore) -> None:
    async def use() -> tuple[Any, ...]:
        await store.aput(("a", "b"), "k1", {"n": 1})
        await store.aput(("a", "c"), "k2", {"n": 2})
        await store.aput(("a", "c"), "k3", {"n": 3})
        await store.aput(("a", "c"), "k3", None)
        got = await store.aget(("a", "b"), "k1")
        found = await store.asearch(("a",), filter={"n": {"$gt": 1}})
        spaces = await store.alist_namespaces(prefix=("a",))
        await store.adelete(("a", "b"), "k1")
        return got, found, spaces, await store.aget(("a", "b"), "k1")

    got, found, spaces, gone = asyncio.run(use())
    assert got is not None and got.value == {"n": 1} and got.namespace == ("a", "b")
    assert [(i.key, i.value) for i in found] == [("k2", {"n": 2})]
    assert spaces == [("a", "b"), ("a", "c")]
    assert gone is None
    assert store.search(("a",)) == found


def test_batch_reads_before_its_puts_and_answers_each_op_in_order(store: BaseStore) -> None:
    from graphs.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

    store.put(("users", "u1"), "tea", {"likes": "green"})
    store.put(("users", "u2", "notes"), "n1", {"text": "hi"})
    results = store.batch(
        [
            PutOp(("users", "u1"), "tea", {"likes": "black"}),
            GetOp(("users", "u1"), "tea"),
            SearchOp(("users",), filter={"text": "hi"}),
            ListNamespacesOp((MatchCondition("suffix", ("notes",)),)),
            PutOp(("users", "u1"), "tea", {"likes": "oolong"}),
            PutOp(("users", "u2", "notes"), "n1", None),
        ]
    )
    assert results[0] is None and results[4] is None and results[5] is None
    got = results[1]
    assert isinstance(got, Item) and got.value == {"likes": "green"}
    found = results[2]
    assert isinstance(found, list) and [i.key for i in found] == ["n1"]
    assert results[3] == [("users", "u2", "notes")]
    after = store.get(("users", "u1"), "tea")
    assert after is not None and after.value == {"likes": "oolong"}
    assert store.get(("users", "u2", "notes"), "n1") is None
    with pytest.raises(ValueError, match="an op is a GetOp"):
        store.batch([GetOp(("users", "u1"), "tea"), "get"])  # type: ignore[list-item]
    async_results = asyncio.run(
        store.abatch(
            [
                GetOp(("users", "u1"), "tea"),
                ListNamespacesOp((MatchCondition("prefix", ("users", "*")),), max_depth=2, limit=1),
            ]
        )
    )
    item = async_results[0]
    assert isinstance(item, Item) and item.value == {"likes": "oolong"}
    assert async_results[1] == [("users", "u1")]


def test_search_item_is_made_positionally_as_langgraph_s() -> None:
    from datetime import UTC, datetime

    when = datetime(2026, 12, 2, tzinfo=UTC)
    found = SearchItem(["docs", "a"], "k", {"v": 1}, when, when, 0.5)  # type: ignore[arg-type]
    assert (found.namespace, found.key, found.value, found.score) == (
        ("docs", "a"),
        "k",
        {"v": 1},
        0.5,
    )
    assert isinstance(found, Item) and SearchItem(("d",), "k", {}, when, when).score is None
    assert found.dict()["namespace"] == ["docs", "a"] and found.dict()["score"] == 0.5
    assert found == SearchItem(("docs", "a"), "k", {"v": 1}, when, when, 0.5)
