"""Stream modes `custom`, `messages`, `tasks`, `checkpoints`, `debug`, and pauses in `updates`."""

import asyncio
import contextlib
import operator
import threading
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from graphs import (
    END,
    START,
    Command,
    GraphInterrupt,
    InMemorySaver,
    StateGraph,
    interrupt,
    once,
)
from graphs.checkpoint.sql import SQLSaver
from graphs.config import get_stream_writer
from graphs.graph import MessagesState
from graphs.types import StreamWriter


class State(TypedDict):
    log: Annotated[list, operator.add]


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


@pytest.fixture
def sqlite_saver(tmp_path: Any) -> Iterator[SQLSaver]:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'streams.db'}")
    saver.setup()
    yield saver
    saver.close()


def writing_graph() -> StateGraph:
    """a writes through get_stream_writer(), b through its `writer` parameter (async)."""

    def a(state: State) -> dict[str, Any]:
        write = get_stream_writer()
        write({"step": "a", "progress": 0.5})
        write({"step": "a", "progress": 1.0})
        return {"log": ["a"]}

    async def b(state: State, writer: StreamWriter) -> dict[str, Any]:
        writer("b says hi")
        return {"log": ["b"]}

    g = StateGraph(State)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return g


# ---- custom ------------------------------------------------------------------------------


async def test_custom_mode_yields_what_nodes_write_in_order_sync_and_async() -> None:
    app = writing_graph().compile()
    expected = [
        {"step": "a", "progress": 0.5},
        {"step": "a", "progress": 1.0},
        "b says hi",
    ]
    got = [c async for c in app.astream({"log": []}, stream_mode="custom")]
    assert got == expected

    sync_app = writing_graph().compile()
    # b is async: under sync stream it runs through asyncio.run, in the step's worker thread.
    assert list(sync_app.stream({"log": []}, stream_mode="custom")) == expected


def test_custom_chunks_interleave_with_updates_in_a_list_of_modes() -> None:
    app = writing_graph().compile(checkpointer=InMemorySaver())
    got = list(app.stream({"log": []}, thread("t"), stream_mode=["updates", "custom"]))
    assert got == [
        ("custom", {"step": "a", "progress": 0.5}),
        ("custom", {"step": "a", "progress": 1.0}),
        ("updates", {"a": {"log": ["a"]}}),
        ("custom", "b says hi"),
        ("updates", {"b": {"log": ["b"]}}),
    ]


def test_without_custom_mode_the_writer_writes_nowhere() -> None:
    app = writing_graph().compile()
    assert list(app.stream({"log": []}, stream_mode="updates")) == [
        {"a": {"log": ["a"]}},
        {"b": {"log": ["b"]}},
    ]
    assert app.invoke({"log": []}) == {"log": ["a", "b"]}


def test_get_stream_writer_outside_a_node_is_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"get_stream_writer\(\) can only be called inside"):
        get_stream_writer()


def _handshake_graph(seen: threading.Event, answered: list[bool]) -> StateGraph:
    def slow(state: State) -> dict[str, Any]:
        get_stream_writer()("started")
        # The caller sets `seen` when it receives "started": only if chunks leave while the
        # node still runs. (The timeout only keeps a broken build from hanging the suite.)
        answered.append(seen.wait(timeout=30))
        return {"log": ["done"]}

    g = StateGraph(State)
    g.add_node("slow", slow).add_edge(START, "slow")
    return g


def test_custom_chunks_reach_the_caller_while_the_node_still_runs() -> None:
    seen, answered = threading.Event(), []
    app = _handshake_graph(seen, answered).compile()
    for chunk in app.stream({"log": []}, stream_mode="custom"):
        assert chunk == "started"
        seen.set()
    assert answered == [True]


async def test_custom_chunks_reach_the_async_caller_while_the_node_still_runs() -> None:
    seen, answered = threading.Event(), []
    app = _handshake_graph(seen, answered).compile()
    async for chunk in app.astream({"log": []}, stream_mode="custom"):
        assert chunk == "started"
        seen.set()
    assert answered == [True]


def test_a_consumer_that_stops_early_lets_the_step_finish_and_frees_the_thread() -> None:
    saver = InMemorySaver()
    app = writing_graph().compile(checkpointer=saver)
    stream = app.stream({"log": []}, thread("t"), stream_mode="custom")
    assert next(stream) == {"step": "a", "progress": 0.5}
    stream.close()
    # The thread is free again, and resuming runs the step that was cut short.
    assert app.get_state(thread("t")).next == ("a",)
    assert app.invoke(None, thread("t")) == {"log": ["a", "b"]}


def test_live_modes_with_sqlite_and_once(sqlite_saver: SQLSaver) -> None:
    calls: list[str] = []

    def ask(state: State) -> dict[str, Any]:
        draft = once("draft", lambda: calls.append("drafted") or "the draft")
        get_stream_writer()({"draft": draft})
        answer = interrupt({"review": draft})
        return {"log": [f"{draft}: {answer}"]}

    g = StateGraph(State)
    g.add_node("ask", ask).add_edge(START, "ask")
    app = g.compile(checkpointer=sqlite_saver)
    first: list[Any] = []
    with pytest.raises(GraphInterrupt):  # raised after the stream's last chunk (kept by extend)
        first.extend(app.stream({"log": []}, thread("s"), stream_mode=["custom", "updates"]))
    assert first[0] == ("custom", {"draft": "the draft"})
    assert first[1][0] == "updates" and list(first[1][1]) == ["__interrupt__"]
    resumed = list(app.stream(Command(resume="ok"), thread("s"), stream_mode="custom"))
    assert resumed == [{"draft": "the draft"}]
    assert app.get_state(thread("s")).values == {"log": ["the draft: ok"]}
    assert calls == ["drafted"]  # the replay read the stored draft


# ---- messages ----------------------------------------------------------------------------


def _chat_graph(model: Any) -> StateGraph:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def tool(state: MessagesState) -> dict[str, Any]:
        return {"messages": [ToolMessage("42", tool_call_id="call-1")]}

    g = StateGraph(MessagesState)
    g.add_node("call_model", call_model).add_node("tool", tool)
    g.add_edge(START, "call_model").add_edge("call_model", "tool").add_edge("tool", END)
    return g


def test_messages_mode_streams_a_chat_models_tokens_then_the_nodes_new_messages() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("the answer is")]))
    app = _chat_graph(model).compile(checkpointer=InMemorySaver())
    got = list(app.stream({"messages": [HumanMessage("q", id="h1")]}, thread("m"), "messages"))
    chunks = [(m, meta) for m, meta in got if isinstance(m, AIMessageChunk)]
    assert "".join(str(m.content) for m, _ in chunks) == "the answer is"
    assert len(chunks) == 5  # "the", " ", "answer", " ", "is"
    assert len({m.id for m, _ in chunks}) == 1
    # The whole AIMessage the node returns carries that id: it is not sent again. The human
    # message the node read is not sent; the tool's message is.
    rest = [(m, meta) for m, meta in got if not isinstance(m, AIMessageChunk)]
    assert [(type(m), m.content) for m, _ in rest] == [(ToolMessage, "42")]
    stored = app.get_state(thread("m")).values["messages"]
    assert stored[1].id == chunks[0][0].id and stored[2].id == rest[0][0].id

    meta = chunks[0][1]
    assert {k: meta[k] for k in ("langgraph_node", "langgraph_step", "thread_id")} == {
        "langgraph_node": "call_model",
        "langgraph_step": 1,
        "thread_id": "m",
    }
    assert meta["langgraph_triggers"] == ("branch:to:call_model",)
    assert meta["langgraph_path"] == ("__pregel_pull", "call_model")
    assert meta["langgraph_checkpoint_ns"].startswith("call_model:")
    assert meta["ls_provider"] == "genericfakechatmodel"  # the model's own metadata rides along
    assert rest[0][1]["langgraph_node"] == "tool" and rest[0][1]["langgraph_step"] == 2


async def test_messages_mode_under_astream_with_an_async_model() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("two words")]))

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("call_model", call_model).add_edge(START, "call_model")
    app = g.compile()
    got = [c async for c in app.astream({"messages": [("user", "hi")]}, None, ["messages"])]
    assert [(mode, str(m.content)) for mode, (m, _) in got] == [
        ("messages", "two"),
        ("messages", " "),
        ("messages", "words"),
    ]


async def test_tokens_of_a_model_given_the_nodes_config_in_a_sync_node_under_astream() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("a b")]))

    def call_model(state: MessagesState, config: Any) -> dict[str, Any]:
        # Runs in a worker thread (a sync node under astream), the model given the node's config.
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(MessagesState)
    g.add_node("call_model", call_model).add_edge(START, "call_model")
    app = g.compile(checkpointer=InMemorySaver())
    got = [c async for c in app.astream({"messages": [("user", "q")]}, thread("t"), "messages")]
    assert [(type(m), m.content, meta["thread_id"]) for m, meta in got] == [
        (AIMessageChunk, "a", "t"),
        (AIMessageChunk, " ", "t"),
        (AIMessageChunk, "b", "t"),
    ]


def test_messages_mode_sends_whole_messages_of_a_node_without_a_model() -> None:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("hello"), ("ai", "from a tuple")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply).add_edge(START, "reply")
    got = list(g.compile().stream({"messages": [("user", "hi")]}, None, "messages"))
    # A tuple is not a message yet (add_messages makes it one later): only the AIMessage.
    assert [(type(m), m.content, meta["langgraph_node"]) for m, meta in got] == [
        (AIMessage, "hello", "reply")
    ]
    assert got[0][0].id is not None


def test_a_model_tagged_nostream_sends_only_its_whole_message() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("quiet words")])).with_config(
        tags=["nostream"]
    )
    got = list(_chat_graph(model).compile().stream({"messages": []}, None, "messages"))
    assert [(type(m), m.content) for m, _ in got] == [
        (AIMessage, "quiet words"),
        (ToolMessage, "42"),
    ]


# ---- tasks, checkpoints, debug -----------------------------------------------------------


def test_tasks_mode_shows_each_task_start_and_result() -> None:
    app = writing_graph().compile()
    got = list(app.stream({"log": []}, stream_mode="tasks"))
    assert [sorted(c) for c in got] == [
        ["id", "input", "name", "triggers"],
        ["error", "id", "interrupts", "name", "result"],
    ] * 2
    start_a, result_a, start_b, result_b = got
    assert start_a["name"] == "a" and start_a["input"] == {"log": []}
    assert start_a["triggers"] == ("branch:to:a",)
    assert result_a == {
        "id": start_a["id"],
        "name": "a",
        "error": None,
        "result": {"log": ["a"]},
        "interrupts": [],
    }
    assert start_b["input"] == {"log": ["a"]} and result_b["result"] == {"log": ["b"]}


def test_tasks_mode_shows_an_interrupt_and_an_error() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    g = StateGraph(State)
    g.add_node("ask", ask).add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    *_, result = app.stream({"log": []}, thread("i"), stream_mode="tasks")
    assert result["result"] == {} and result["error"] is None
    [pause] = result["interrupts"]
    assert pause["value"] == "ok?" and pause["id"] == app.get_state(thread("i")).interrupts[0].id

    def boom(state: State) -> dict[str, Any]:
        raise ValueError("no")

    g = StateGraph(State)
    g.add_node("boom", boom).add_edge(START, "boom")
    seen: list[Any] = []
    with pytest.raises(ValueError, match="no"):
        seen.extend(g.compile().stream({"log": []}, stream_mode="tasks"))
    assert isinstance(seen[-1]["error"], ValueError) and seen[-1]["name"] == "boom"


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_checkpoints_mode_matches_the_threads_history(saver_kind: str, tmp_path: Any) -> None:
    saver: Any = InMemorySaver()
    if saver_kind == "sqlite":
        saver = SQLSaver(f"sqlite:///{tmp_path / 'cp.db'}")
        saver.setup()
    app = writing_graph().compile(checkpointer=saver)
    events = list(app.stream({"log": []}, thread("c"), stream_mode="checkpoints"))
    history = list(app.get_state_history(thread("c")))
    assert len(events) == len(history) == 4  # the input checkpoint, step 0, a's, b's
    for event, snap in zip(reversed(events), history, strict=True):
        assert event["config"] == snap.config
        assert event["parent_config"] == snap.parent_config
        assert event["values"] == snap.values
        assert event["metadata"] == snap.metadata
        assert tuple(event["next"]) == snap.next  # a list there, as LangGraph's
        assert [(t["id"], t["name"]) for t in event["tasks"]] == [
            (t.id, t.name) for t in snap.tasks
        ]
    if saver_kind == "sqlite":
        saver.close()


async def test_debug_mode_wraps_tasks_and_checkpoints_with_step_and_type() -> None:
    app = writing_graph().compile(checkpointer=InMemorySaver())
    got = [c async for c in app.astream({"log": []}, thread("d"), stream_mode="debug")]
    assert [(c["type"], c["step"], c["payload"].get("name")) for c in got] == [
        ("checkpoint", -1, None),  # the input checkpoint (its `__start__` task is not shown)
        ("checkpoint", 0, None),
        ("task", 1, "a"),
        ("task_result", 1, "a"),
        ("checkpoint", 1, None),
        ("task", 2, "b"),
        ("task_result", 2, "b"),
        ("checkpoint", 2, None),
    ]
    assert all(isinstance(c["timestamp"], str) for c in got)
    assert got[0]["payload"]["next"] == ["__start__"]
    assert got[4]["payload"]["next"] == ["b"]
    # Without a checkpointer there are no checkpoints to show.
    plain = [c["type"] async for c in writing_graph().compile().astream({"log": []}, None, "debug")]
    assert plain == ["task", "task_result"] * 2


def test_unknown_stream_mode_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown stream_mode \['tokens'\]; use any of"):
        list(writing_graph().compile().stream({"log": []}, stream_mode="tokens"))  # type: ignore[arg-type]


# ---- pauses in the stream ----------------------------------------------------------------


@pytest.mark.parametrize("option", ["interrupt_before", "interrupt_after"])
def test_a_static_pause_shows_in_updates(option: str) -> None:
    # Both pause between a and b.
    node = "b" if option == "interrupt_before" else "a"
    app = writing_graph().compile(checkpointer=InMemorySaver(), **{option: [node]})
    got: list[Any] = []
    with pytest.raises(GraphInterrupt):
        got.extend(app.stream({"log": []}, thread("p"), stream_mode="updates"))
    assert got == [{"a": {"log": ["a"]}}, {"__interrupt__": ()}]
    # Resuming runs on to the end: the last chunk is an update, not a pause.
    assert list(app.stream(None, thread("p"), stream_mode="updates")) == [{"b": {"log": ["b"]}}]


async def test_a_static_pause_before_the_first_node_shows_in_async_updates() -> None:
    app = writing_graph().compile(
        checkpointer=InMemorySaver(), interrupt_before=["a"], interrupt_mode="return"
    )
    got = [c async for c in app.astream({"log": []}, thread("p"), ["values", "updates"])]
    assert got == [("values", {"log": []}), ("updates", {"__interrupt__": ()})]


def test_a_stream_left_early_frees_the_thread_under_astream() -> None:
    async def main() -> list[Any]:
        app = writing_graph().compile(checkpointer=InMemorySaver())
        async with contextlib.aclosing(app.astream({"log": []}, thread("e"), "custom")) as s:
            async for _ in s:
                break
        return [c async for c in app.astream(None, thread("e"), "custom")]

    assert asyncio.run(main()) == [
        {"step": "a", "progress": 0.5},
        {"step": "a", "progress": 1.0},
        "b says hi",
    ]
