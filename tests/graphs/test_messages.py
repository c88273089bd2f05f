"""`add_messages` and `MessagesState`: LangGraph's message reducer, on langchain_core messages."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
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


# ---- add_messages(format="langchain-openai") and MessageGraph ---------------------------------


def _anthropic_turn() -> list[Any]:
    image = {"type": "base64", "media_type": "image/jpeg", "data": "1234"}
    return [
        HumanMessage(
            [
                {
                    "type": "text",
                    "text": "Here's an image:",
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "image", "source": image},
            ],
            id="h",
        ),
        AIMessage(
            [{"type": "tool_use", "name": "look", "input": {"at": "it"}, "id": "c1"}], id="a"
        ),
        HumanMessage(
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "a cat"}],
                },
                {"type": "tool_result", "tool_use_id": "c2", "content": "nothing"},
            ],
            id="r",
        ),
    ]


def test_the_openai_format_reducer_stores_each_added_message_as_openai_s_format(
    tmp_path: Any,
) -> None:
    from graphs.checkpoint.sql import SQLSaver

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages(format="langchain-openai")]

    g = StateGraph(State)
    g.add_node("turn", lambda state: {"messages": _anthropic_turn()})
    g.add_edge(START, "turn")
    g.add_edge("turn", END)
    saver = SQLSaver(f"sqlite:///{tmp_path / 'fmt.db'}")
    saver.setup()
    graph = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"messages": [("user", "meow")]}, config)["messages"]
    assert [type(m).__name__ for m in out] == [
        "HumanMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
    ]
    assert out[0].content == "meow"
    assert out[1].content == [
        {"type": "text", "text": "Here's an image:"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,1234"}},
    ]
    assert out[2].content == "" and out[2].tool_calls == [
        {"name": "look", "args": {"at": "it"}, "id": "c1", "type": "tool_call"}
    ]
    assert [(m.tool_call_id, m.content) for m in out[3:]] == [
        ("c1", "a cat"),
        ("c2", "nothing"),
    ]
    # Ids are kept (LangGraph's formatted messages lose theirs): one message made two has
    # its id, then id:1; so an update by id still replaces the message.
    assert [m.id for m in out[1:]] == ["h", "a", "r", "r:1"]
    assert graph.get_state(config).values["messages"] == out
    graph.update_state(config, {"messages": [AIMessage("edited", id="a")]}, as_node="turn")
    assert [m.content for m in graph.get_state(config).values["messages"]][2] == "edited"


def test_add_messages_without_lists_is_the_reducer_and_refuses_half_a_call() -> None:
    assert add_messages() is add_messages
    reducer = add_messages(format="langchain-openai")
    assert reducer([HumanMessage("a", id="1")], [AIMessage("b", id="2")]) == [
        HumanMessage("a", id="1"),
        AIMessage("b", id="2"),
    ]
    with pytest.raises(ValueError, match="Only received: 'left'"):
        add_messages([HumanMessage("a")], None)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="Unrecognized format='xml'"):
        add_messages(format="xml")  # type: ignore[call-overload]


def test_a_message_graph_s_state_is_the_list_of_messages() -> None:
    from graphs.graph import MessageGraph

    with pytest.warns(DeprecationWarning, match="MessageGraph is deprecated"):
        b = MessageGraph()
    b.add_node("chatbot", lambda messages: [("assistant", f"{len(messages)} so far")])
    b.add_node("again", lambda messages: AIMessage("bye", id="bye"))
    b.add_edge(START, "chatbot")
    b.add_edge("chatbot", "again")
    b.add_edge("again", END)
    graph = b.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke([("user", "hi")], config)
    assert [(type(m).__name__, m.content) for m in out] == [
        ("HumanMessage", "hi"),
        ("AIMessage", "1 so far"),
        ("AIMessage", "bye"),
    ]
    assert graph.get_state(config).values == out
    # The thread's list goes on; "bye" (one id) is replaced where it was, not appended again.
    assert [m.content for m in graph.invoke([HumanMessage("more")], config)] == [
        "hi",
        "1 so far",
        "bye",
        "more",
        "4 so far",
    ]
