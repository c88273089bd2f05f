"""`push_message()`: a node sends a message to the `messages` stream as it runs, and writes it
to the state (unless `state_key=None`), as LangGraph's `langgraph.graph.message.push_message`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from graphs import END, START, BaseCheckpointSaver, InvalidUpdateError, interrupt
from graphs.graph import MessagesState, StateGraph
from graphs.graph.message import push_message
from tests.graphs.checkpoint.test_contract import saver_fixture


def _graph(*nodes: Any) -> StateGraph:
    g = StateGraph(MessagesState)
    prev = START
    for fn in nodes:
        g.add_node(fn)
        g.add_edge(prev, fn.__name__)
        prev = fn.__name__
    g.add_edge(prev, END)
    return g


def work(state: MessagesState) -> dict[str, Any]:
    push_message(AIMessage("working", id="m1"))
    push_message(AIMessage("only streamed", id="m2"), state_key=None)
    return {"messages": [AIMessage("done", id="m3")]}


def test_pushed_messages_stream_before_the_return_and_the_state_keeps_the_written_one() -> None:
    app = _graph(work).compile()
    streamed = [
        m.content for m, _ in app.stream({"messages": [("user", "hi")]}, stream_mode="messages")
    ]
    assert streamed == ["working", "only streamed", "done"]
    out = app.invoke({"messages": [("user", "hi")]})
    assert [m.content for m in out["messages"]] == ["hi", "working", "done"]


def test_a_pushed_message_the_node_also_returns_streams_once() -> None:
    def both(state: MessagesState) -> dict[str, Any]:
        return {"messages": [push_message(AIMessage("same", id="s1"))]}

    app = _graph(both).compile()
    chunks = list(app.stream({"messages": []}, stream_mode="messages"))
    assert [m.id for m, _ in chunks] == ["s1"]
    assert chunks[0][1]["langgraph_node"] == "both"
    assert [m.id for m in app.invoke({"messages": []})["messages"]] == ["s1"]


def test_a_message_without_an_id_or_a_bad_key_is_refused() -> None:
    def no_id(state: MessagesState) -> dict[str, Any]:
        push_message(AIMessage("anonymous"))
        return {}

    with pytest.raises(ValueError, match="needs a message with an id"):
        _graph(no_id).compile().invoke({"messages": []})

    def bad_key(state: MessagesState) -> dict[str, Any]:
        push_message(AIMessage("x", id="x1"), state_key="chat")
        return {}

    with pytest.raises(InvalidUpdateError, match="state_key='chat'.*no such key"):
        _graph(bad_key).compile().invoke({"messages": []})
    with pytest.raises(RuntimeError, match="inside a graph node"):
        push_message(AIMessage("x", id="x2"))


saver = saver_fixture("memory", "sqlite")


def test_a_pushed_message_is_in_the_checkpoint_at_a_later_pause(saver: BaseCheckpointSaver) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        interrupt("go on?")
        return {}

    app = _graph(work, ask).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in app.invoke({"messages": [("user", "hi")]}, config)
    saved = app.get_state(config).values["messages"]
    assert [m.content for m in saved] == ["hi", "working", "done"]


def test_the_updates_chunk_lists_the_pushed_write_beside_the_return() -> None:
    # As LangGraph: the node wrote `messages` twice (the push, then the return), so its update
    # is one dict per write, in the order written; a message pushed with state_key=None wrote
    # nothing, and a node that only pushes shows the push as its update.
    def only_push(state: MessagesState) -> None:
        push_message(AIMessage("pushed", id="p1"))

    app = _graph(work, only_push).compile()
    chunks = list(app.stream({"messages": [("user", "hi")]}, stream_mode="updates"))
    assert [list(c) for c in chunks] == [["work"], ["only_push"]]
    first, second = chunks[0]["work"]
    assert (first["messages"].id, [m.id for m in second["messages"]]) == ("m1", ["m3"])
    assert chunks[1]["only_push"]["messages"].id == "p1"
