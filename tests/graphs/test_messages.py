"""`add_messages` and `MessagesState`: LangGraph's message reducer, on langchain_core messages."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from graphs import END, START, InMemorySaver, StateGraph
from graphs.checkpoint import serde
from graphs.graph import MessagesState, add_messages
from graphs.graph.message import REMOVE_ALL_MESSAGES


def test_appends_and_gives_every_message_an_id() -> None:
    out = add_messages([HumanMessage("hi", id="1")], [AIMessage("hello")])
    assert [m.content for m in out] == ["hi", "hello"]
    assert out[0].id == "1"
    assert isinstance(out[1].id, str) and len(out[1].id) == 36  # a uuid4


def test_an_update_with_a_known_id_replaces_the_message_in_place() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    out = add_messages(left, [AIMessage("B", id="2"), HumanMessage("d", id="4")])
    assert [(m.id, m.content) for m in out] == [("1", "a"), ("2", "B"), ("3", "c"), ("4", "d")]
    assert [m.content for m in left] == ["a", "b", "c"]  # left is not modified


def test_remove_message_deletes_by_id_and_an_unknown_id_is_an_error() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    assert [m.id for m in add_messages(left, RemoveMessage(id="1"))] == ["2"]
    with pytest.raises(ValueError, match="no message has that id"):
        add_messages(left, [RemoveMessage(id="nope")])


def test_remove_all_clears_what_came_before_it() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    update = [
        HumanMessage("dropped too", id="x"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        SystemMessage("fresh", id="s"),
    ]
    assert [(m.id, m.content) for m in add_messages(left, update)] == [("s", "fresh")]
    assert REMOVE_ALL_MESSAGES == "__remove_all__"


def test_dicts_tuples_and_strings_are_coerced_as_langgraph_does() -> None:
    out = add_messages(
        [],
        [
            ("user", "tuple"),
            {"role": "assistant", "content": "dict by role"},
            {"type": "human", "content": "dict by type"},
            "a string",
        ],
    )
    assert [type(m) for m in out] == [HumanMessage, AIMessage, HumanMessage, HumanMessage]
    assert [m.content for m in out] == ["tuple", "dict by role", "dict by type", "a string"]
    # A single message-like value (not in a list) on either side.
    assert [m.content for m in add_messages("x", ("ai", "y"))] == ["x", "y"]


def test_a_chunk_is_stored_as_the_message_it_completes() -> None:
    (m,) = add_messages([], [AIMessageChunk("tok", id="c")])
    assert type(m) is AIMessage and m.content == "tok"


def test_when_the_update_only_appends_the_result_starts_with_the_same_objects() -> None:
    left = add_messages([], [("user", "a"), ("ai", "b")])
    out = add_messages(left, [("user", "c")])
    assert all(a is b for a, b in zip(left, out, strict=False))
    replaced = add_messages(left, [AIMessage("B", id=left[1].id)])
    assert replaced[1] is not left[1]


def _chat_graph(checkpointer: Any = None) -> Any:
    def model(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(f"the answer is {last.content}")]}
        call = {"name": "lookup", "args": {"q": last.content}, "id": "call-1"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    def tools(state: MessagesState) -> dict[str, Any]:
        ai = state["messages"][-1]
        assert isinstance(ai, AIMessage)
        return {"messages": [ToolMessage("42", tool_call_id=c["id"]) for c in ai.tool_calls]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    return g.compile(checkpointer=checkpointer)


def test_a_tool_calling_loop_on_messages_state() -> None:
    app = _chat_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"messages": [("user", "question")]}, config)
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][1].tool_calls[0]["args"] == {"q": "question"}
    assert out["messages"][-1].content == "the answer is 42"
    # Read back from the checkpoint: the same classes, equal messages.
    assert app.get_state(config).values["messages"] == out["messages"]


def test_messages_round_trip_through_tagged_json_as_the_same_classes() -> None:
    messages = [
        HumanMessage("hi", id="1", name="ann"),
        AIMessage(
            "",
            id="2",
            tool_calls=[{"name": "f", "args": {"a": [1, 2]}, "id": "c1", "type": "tool_call"}],
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
        ToolMessage("ok", tool_call_id="c1", id="3", status="error"),
        SystemMessage([{"type": "text", "text": "be brief"}], id="4"),
        RemoveMessage(id="5"),
    ]
    text = serde.dumps({"messages": messages})
    assert "pickle" not in text and '"$t":["message",["ai",' in text
    back = serde.loads(text)["messages"]
    assert [type(m) for m in back] == [type(m) for m in messages]
    assert back == messages


def test_an_unknown_stored_message_type_is_refused_not_imported() -> None:
    from graphs.errors import CheckpointFormatError

    with pytest.raises(CheckpointFormatError, match="os.system"):
        serde.loads('{"$t":["message",["os.system",{"content":"x"}]]}')


def test_a_reducer_key_without_the_messages_state_base() -> None:
    from typing import TypedDict

    class State(TypedDict):
        history: Annotated[list[Any], add_messages]
        turns: int

    g = StateGraph(State)
    g.add_node("a", lambda s: {"history": "hello", "turns": len(s["history"])})
    g.add_edge(START, "a")
    out = g.compile().invoke({"history": [("user", "x")]})
    assert [m.content for m in out["history"]] == ["x", "hello"] and out["turns"] == 1
