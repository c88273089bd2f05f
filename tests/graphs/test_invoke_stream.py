"""`invoke`, `ainvoke`, `stream`, `astream`; threads accumulate, are isolated, run one at a time."""

import asyncio
import contextlib
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphInterrupt,
    InMemorySaver,
    StateGraph,
    ThreadBusyError,
    interrupt,
)


class State(TypedDict):
    log: Annotated[list, operator.add]
    x: int


def fan_graph() -> StateGraph:
    """START -> a -> (b, c): b sets x, c returns nothing."""
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"x": 2})
    g.add_node("c", lambda s: None)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    return g


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_stream_values_yields_the_state_after_the_input_and_each_step() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    assert list(app.stream({"log": []}, thread("t"), "values")) == [
        {"log": []},
        {"log": ["a"]},
        {"log": ["a"], "x": 2},
    ]


def test_stream_updates_yields_what_each_node_returned() -> None:
    app = fan_graph().compile()
    assert list(app.stream({"log": []}, stream_mode="updates")) == [
        {"a": {"log": ["a"]}},
        {"b": {"x": 2}},
        {"c": None},
    ]


def test_stream_several_modes_tags_each_chunk() -> None:
    app = fan_graph().compile()
    assert list(app.stream({"log": []}, stream_mode=["updates", "values"])) == [
        ("values", {"log": []}),
        ("updates", {"a": {"log": ["a"]}}),
        ("values", {"log": ["a"]}),
        ("updates", {"b": {"x": 2}}),
        ("updates", {"c": None}),
        ("values", {"log": ["a"], "x": 2}),
    ]


def test_unknown_stream_mode() -> None:
    app = fan_graph().compile()
    with pytest.raises(ValueError) as info:
        list(app.stream({"log": []}, stream_mode="tokens"))  # type: ignore[arg-type]
    assert str(info.value) == (
        "unknown stream_mode ['tokens']; use any of ['checkpoints', 'custom', 'debug', "
        "'messages', 'tasks', 'updates', 'values']"
    )


async def test_astream_and_ainvoke_match_their_sync_twins() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    chunks = [c async for c in app.astream({"log": []}, thread("s"), stream_mode="updates")]
    assert chunks == list(app.stream({"log": []}, thread("t"), stream_mode="updates"))
    assert await app.ainvoke({"log": []}, thread("u")) == app.invoke({"log": []}, thread("v"))


def test_a_pause_ends_the_stream_with_an_interrupt_chunk() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"x": interrupt("how many?")}

    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_node("ask", ask)
    g.add_edge(START, "a").add_edge("a", "ask")
    app = g.compile(checkpointer=InMemorySaver())
    chunks: list[Any] = []
    with pytest.raises(GraphInterrupt) as info:
        for chunk in app.stream({"log": []}, thread("t"), stream_mode="updates"):
            chunks.append(chunk)  # noqa: PERF402 - kept up to the pause
    assert chunks == [{"a": {"log": ["a"]}}, {"__interrupt__": info.value.interrupts}]
    assert [i.value for i in info.value.interrupts] == ["how many?"]
    resumed = list(app.stream(Command(resume=5), thread("t"), stream_mode="updates"))
    assert resumed == [{"ask": {"x": 5}}]


def test_in_return_mode_a_paused_stream_ends_with_the_pause_in_each_mode() -> None:
    g = StateGraph(State).add_node("ask", lambda s: {"x": interrupt("?")})
    app = g.add_edge(START, "ask").compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    chunks = list(app.stream({"log": []}, thread("t"), stream_mode=["values", "updates"]))
    assert chunks[0] == ("values", {"log": []})
    [(mode, update), (last, values)] = chunks[1:]
    assert (mode, [i.value for i in update["__interrupt__"]]) == ("updates", ["?"])
    # As LangGraph: the last `values` chunk is the state with the pause, what invoke returns.
    assert (last, values) == ("values", {"log": [], "__interrupt__": update["__interrupt__"]})
    assert app.invoke({"log": []}, thread("u"))["__interrupt__"][0].value == "?"


def test_the_default_stream_mode_is_updates_as_in_langgraph() -> None:
    app = fan_graph().compile()
    expected = [{"a": {"log": ["a"]}}, {"b": {"x": 2}}, {"c": None}]
    assert list(app.stream({"log": []})) == list(app.stream({"log": []}, None, None)) == expected


def test_invocations_on_one_thread_accumulate_and_threads_are_isolated() -> None:
    g = StateGraph(State).add_node("a", lambda s: {"log": [len(s["log"])]})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=InMemorySaver())
    app.invoke({"log": ["hi"]}, thread("one"))
    assert app.invoke({"log": ["again"]}, thread("one")) == {"log": ["hi", 1, "again", 3]}
    assert app.invoke({"log": ["other"]}, thread("two")) == {"log": ["other", 1]}
    assert app.get_state(thread("one")).values == {"log": ["hi", 1, "again", 3]}


def test_checkpoint_ns_separates_histories_within_a_thread() -> None:
    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    app = g.compile(checkpointer=InMemorySaver())
    main = {"configurable": {"thread_id": "t"}}
    side = {"configurable": {"thread_id": "t", "checkpoint_ns": "side"}}
    app.invoke({"log": ["main"]}, main)
    assert app.invoke({"log": ["side"]}, side) == {"log": ["side", "a"]}
    assert app.get_state(main).values == {"log": ["main", "a"]}


def test_without_a_thread_id_one_is_generated_and_written_back_into_the_config() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {}
    app.invoke({"log": ["x"]}, config)
    thread_id = config["configurable"]["thread_id"]
    assert isinstance(thread_id, str) and len(thread_id) == 32
    assert app.get_state(config).values == {"log": ["x", "a"], "x": 2}
    other: dict[str, Any] = {"configurable": {}}
    app.invoke({"log": []}, other)
    assert other["configurable"]["thread_id"] != thread_id


def test_a_pause_without_a_config_names_the_generated_thread() -> None:
    g = StateGraph(State).add_node("ask", lambda s: {"x": interrupt("?")})
    app = g.add_edge(START, "ask").compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []})
    assert info.value.config is not None
    assert app.invoke(Command(resume=1), info.value.config) == {"log": [], "x": 1}


def test_thread_id_must_be_a_non_empty_string_an_int_or_a_uuid() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    with pytest.raises(ValueError) as info:
        app.invoke({"log": []}, {"configurable": {"thread_id": ""}})
    assert str(info.value) == "thread_id must be a non-empty string, an int or a UUID, got ''"
    # A UUID thread id (`uuid4()`, as LangGraph takes) is the thread of its string.
    thread = uuid.uuid4()
    app.invoke({"log": []}, {"configurable": {"thread_id": thread}})
    assert app.get_state({"configurable": {"thread_id": str(thread)}}).values != {}
    assert (
        app.get_state({"configurable": {"thread_id": thread}}).values
        == app.get_state({"configurable": {"thread_id": str(thread)}}).values
    )
    # An int thread id (LangGraph takes one) is the thread of its string, for every reader.
    app.invoke({"log": []}, {"configurable": {"thread_id": 7}})
    assert (
        app.get_state({"configurable": {"thread_id": 7}}).values
        == app.get_state({"configurable": {"thread_id": "7"}}).values
    )
    assert app.get_state({"configurable": {"thread_id": 7}}).values != {}


async def test_one_run_per_thread() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(state: State) -> dict[str, Any]:
        started.set()
        async with asyncio.timeout(5):
            await release.wait()
        return {"log": ["slow"]}

    g = StateGraph(State).add_node("slow", slow).add_edge(START, "slow")
    app = g.compile(checkpointer=InMemorySaver())
    first = asyncio.create_task(app.ainvoke({"log": []}, thread("t")))
    async with asyncio.timeout(5):
        await started.wait()
    with pytest.raises(ThreadBusyError) as info:
        await app.ainvoke({"log": ["second"]}, thread("t"))
    assert str(info.value) == (
        "thread 't' is already running in this process; wait for that run to pause or finish"
    )
    assert info.value.thread_id == "t"
    # Another thread is not blocked.
    release.set()
    assert await app.ainvoke({"log": []}, thread("u")) == {"log": ["slow"]}
    assert await first == {"log": ["slow"]}
    assert app.get_state(thread("t")).values == {"log": ["slow"]}


def test_leaving_a_stream_early_releases_the_thread_and_keeps_the_progress() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    for chunk in app.stream({"log": []}, thread("t"), stream_mode="updates"):
        assert chunk == {"a": {"log": ["a"]}}
        break
    assert app.get_state(thread("t")).next == ("b", "c")
    assert app.invoke(None, thread("t")) == {"log": ["a"], "x": 2}


async def test_an_astream_closed_early_with_aclosing_releases_the_thread() -> None:
    app = fan_graph().compile(checkpointer=InMemorySaver())
    async with contextlib.aclosing(app.astream({"log": []}, thread("t"), "values")) as stream:
        async for chunk in stream:
            assert chunk == {"log": []}
            break
    assert await app.ainvoke(None, thread("t")) == {"log": ["a"], "x": 2}


async def test_sync_invoke_of_an_async_node_inside_an_event_loop_says_to_use_ainvoke() -> None:
    async def node(state: State) -> dict[str, Any]:
        return {}

    app = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    with pytest.raises(RuntimeError) as info:
        app.invoke({"log": []})
    assert str(info.value) == (
        "node 'node' is async and invoke() was called from a running event loop: use "
        "`await graph.ainvoke(...)`"
    )


def test_a_finished_thread_starts_over_from_start_with_new_input() -> None:
    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    app = g.add_edge("a", END).compile(checkpointer=InMemorySaver())
    app.invoke({"log": ["1"]}, thread("t"))
    assert list(app.stream({"log": ["2"]}, thread("t"), "values")) == [
        {"log": ["1", "a", "2"]},
        {"log": ["1", "a", "2", "a"]},
    ]


def test_values_shows_no_input_chunk_for_an_empty_input_as_in_langgraph() -> None:
    app = fan_graph().compile()
    assert list(app.stream({}, stream_mode="values")) == [{"log": ["a"]}, {"log": ["a"], "x": 2}]


def test_a_resumed_values_stream_starts_with_the_state_it_resumes() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"x": interrupt("how many?")}

    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_node("ask", ask)
    app = g.add_edge(START, "a").add_edge("a", "ask").compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        list(app.stream({"log": []}, thread("t"), "values"))
    resumed = list(app.stream(Command(resume=3), thread("t"), "values"))
    assert resumed == [{"log": ["a"]}, {"log": ["a"], "x": 3}]
