"""`saver.list(config)` without a `checkpoint_ns`: every namespace of the thread, subgraphs' too
(as LangGraph's savers list them); with one, that namespace only; a graph's own history stays
its own namespace's.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from graphs import END, START, BaseCheckpointSaver, StateGraph
from graphs.checkpoint.base import checkpoint_seq, new_checkpoint_id
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite", "postgres")


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _app(saver: BaseCheckpointSaver) -> Any:
    inner = StateGraph(State)
    inner.add_node("a", lambda s: {"log": ["a"]})
    inner.add_node("b", lambda s: {"log": ["b"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    outer = StateGraph(State)
    outer.add_node("child", inner.compile())
    outer.add_node("after", lambda s: {"log": ["after"]})
    outer.add_edge(START, "child")
    outer.add_edge("child", "after")
    outer.add_edge("after", END)
    return outer.compile(checkpointer=saver)


def _thread(**extra: Any) -> Any:
    return {"configurable": {"thread_id": "t", **extra}}


def test_list_without_a_namespace_lists_the_subgraphs_checkpoints_too(
    saver: BaseCheckpointSaver,
) -> None:
    app = _app(saver)
    app.invoke({"log": []}, _thread())
    own = list(saver.list(_thread(checkpoint_ns="")))
    every = list(saver.list(_thread()))
    spaces = [t.config["configurable"]["checkpoint_ns"] for t in every]
    assert own and all(t.config["configurable"]["checkpoint_ns"] == "" for t in own)
    child = [ns for ns in spaces if ns]
    assert child and all(ns.startswith("child:") for ns in child)
    # The graph's own first, then each subgraph namespace; each newest first.
    assert spaces == [""] * len(own) + child
    assert [t.checkpoint["id"] for t in every[: len(own)]] == [t.checkpoint["id"] for t in own]
    sub = [t.checkpoint["id"] for t in every[len(own) :]]
    assert sub == sorted(sub, reverse=True)
    assert len(list(saver.list(_thread(), limit=len(own) + 1))) == len(own) + 1
    assert [t.checkpoint["id"] for t in saver.list(_thread(checkpoint_ns=child[0]))] == sub
    # The history of the graph is its own namespace's, with or without one in the config.
    history = [s.config["configurable"]["checkpoint_id"] for s in app.get_state_history(_thread())]
    assert history == [t.checkpoint["id"] for t in own]

    async def alist() -> list[str]:
        return [t.config["configurable"]["checkpoint_ns"] async for t in saver.alist(_thread())]

    assert asyncio.run(alist()) == spaces


def test_an_async_history_is_the_graphs_own_namespace(saver: BaseCheckpointSaver) -> None:
    app = _app(saver)

    async def run() -> list[Any]:
        await app.ainvoke({"log": []}, _thread())
        return [s async for s in app.aget_state_history(_thread())]

    history = asyncio.run(run())
    own = list(saver.list(_thread(checkpoint_ns="")))
    assert [s.config["configurable"]["checkpoint_id"] for s in history] == [
        t.checkpoint["id"] for t in own
    ]
    assert history[0].values == {"log": ["a", "b", "after"]}


def test_a_subgraphs_checkpoints_name_the_checkpoint_each_enclosing_graph_ran_them_from(
    saver: BaseCheckpointSaver,
) -> None:
    leaf = StateGraph(State)
    leaf.add_node("c", lambda s: {"log": ["c"]})
    leaf.add_edge(START, "c")
    leaf.add_edge("c", END)
    mid = StateGraph(State)
    mid.add_node("leaf", leaf.compile())
    mid.add_edge(START, "leaf")
    mid.add_edge("leaf", END)
    top = StateGraph(State)
    top.add_node("first", lambda s: {"log": ["first"]})
    top.add_node("mid", mid.compile())
    top.add_edge(START, "first")
    top.add_edge("first", "mid")
    top.add_edge("mid", END)
    top.compile(checkpointer=saver).invoke({"log": []}, _thread())
    by_ns: dict[str, list[Any]] = {}
    for t in saver.list(_thread()):
        by_ns.setdefault(t.config["configurable"]["checkpoint_ns"], []).append(t)
    assert all(t.metadata["parents"] == {} for t in by_ns[""])  # as LangGraph's top graph
    [mid_ns] = [ns for ns in by_ns if ns.startswith("mid:") and "|" not in ns]
    [leaf_ns] = [ns for ns in by_ns if "|leaf:" in ns]
    # `mid` ran in the step after `first`: from the top graph's checkpoint holding first's write.
    ran_from = next(t for t in by_ns[""] if t.checkpoint["channel_values"].get("log") == ["first"])
    for t in by_ns[mid_ns]:
        assert t.metadata["parents"] == {"": ran_from.checkpoint["id"]}
    # `leaf` ran from mid's step 0 (its input applied; the only one with it before leaf's write).
    [mid_from] = [
        t for t in by_ns[mid_ns] if t.checkpoint["channel_values"].get("log") == ["first"]
    ]
    for t in by_ns[leaf_ns]:
        assert t.metadata["parents"] == {
            "": ran_from.checkpoint["id"],
            mid_ns: mid_from.checkpoint["id"],
        }
        assert list(t.metadata["parents"]) == ["", mid_ns]


def test_a_top_graphs_checkpoints_have_empty_parents_and_older_ones_without_the_key_still_run(
    saver: BaseCheckpointSaver,
) -> None:
    # LangGraph writes `"parents": {}` into every top-level checkpoint's metadata: the input's,
    # each step's, an update's and a fork's.
    app = _app(saver)
    app.invoke({"log": []}, _thread())
    app.update_state(_thread(), {"log": ["fixed"]}, as_node="after")
    copy = app.fork(_thread())
    tops = list(saver.list(_thread(checkpoint_ns=""))) + list(saver.list(copy))
    assert {t.metadata["source"] for t in tops} == {"input", "loop", "update", "fork"}
    assert all(t.metadata["parents"] == {} for t in tops)
    head = saver.get_tuple(_thread(checkpoint_ns=""))
    assert head is not None
    assert head.metadata == {"source": "update", "step": 3, "parents": {}}

    # A checkpoint stored before the key was written (metadata without `parents`) reads, and a
    # run goes on from it; the checkpoints it adds have the key.
    seq = checkpoint_seq(head.checkpoint["id"]) + 1
    checkpoint = {**head.checkpoint, "id": new_checkpoint_id(seq)}
    saver.put(head.config, checkpoint, {"source": "update", "step": 4}, {})  # type: ignore[arg-type]
    assert app.get_state(_thread()).metadata == {"source": "update", "step": 4}
    assert app.invoke({"log": ["again"]}, _thread())["log"][-5:] == [
        "fixed",
        "again",
        "a",
        "b",
        "after",
    ]
    added = list(saver.list(_thread(checkpoint_ns="")))[:3]
    assert [t.metadata["parents"] for t in added] == [{}, {}, {}]
