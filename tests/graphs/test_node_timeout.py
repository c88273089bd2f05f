"""`StateGraph.add_node(timeout=)` and `set_node_defaults(timeout=)`: each attempt of an async
node runs under a `TimeoutPolicy`, as LangGraph's; a sync node's timeout is refused."""

from __future__ import annotations

import asyncio
import operator
import time
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, InMemorySaver, NodeTimeoutError, RetryPolicy, StateGraph
from graphs.config import get_stream_writer
from graphs.errors import NodeError
from graphs.runtime import Runtime
from graphs.types import TimeoutPolicy

SYNC_REFUSED = (
    "Node timeouts are only supported for async nodes because sync Python execution cannot be "
    "safely cancelled in-process."
)


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def one_node(node: Any, **options: Any) -> StateGraph:
    g = StateGraph(State)
    g.add_node("work", node, **options)
    g.add_edge(START, "work").add_edge("work", END)
    return g


async def sleeps(state: State) -> dict[str, Any]:
    await asyncio.sleep(2)
    return {"log": ["slept"]}


async def test_an_async_node_past_its_timeout_is_cancelled_and_fails_with_node_timeout_error() -> (
    None
):
    cancelled: list[bool] = []

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {"log": ["done"]}

    app = one_node(slow, timeout=0.05).compile(checkpointer=InMemorySaver())
    began = time.monotonic()
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"log": []}, cfg())
    assert time.monotonic() - began < 1
    error = caught.value
    assert (error.node, error.kind, error.timeout) == ("work", "run", 0.05)
    assert str(error).startswith("Node 'work' exceeded its run timeout of 0.050s")
    assert cancelled == [True]
    assert (await app.aget_state(cfg())).next == ("work",)  # resumable: nothing was written


def test_an_async_node_under_invoke_is_timed_too() -> None:
    timed_delta = one_node(sleeps, timeout=timedelta(milliseconds=50)).compile()
    with pytest.raises(NodeTimeoutError, match="run timeout of 0.050s"):
        timed_delta.invoke({"log": []})


async def test_a_node_within_its_timeout_returns_and_a_retry_policy_retries_a_timeout() -> None:
    attempts: list[int] = []

    async def flaky(state: State, runtime: Runtime) -> dict[str, Any]:
        attempts.append(runtime.execution_info.node_attempt)
        if len(attempts) == 1:
            await asyncio.sleep(2)  # the first attempt hangs
        return {"log": ["ok"]}

    retry = RetryPolicy(initial_interval=0, jitter=False)
    app = one_node(flaky, timeout=0.1, retry_policy=retry).compile()
    assert await app.ainvoke({"log": []}) == {"log": ["ok"]}  # the default rule retries it
    assert attempts == [1, 2]

    no_retry = one_node(sleeps, timeout=0.05, retry_policy=RetryPolicy(retry_on=KeyError))
    with pytest.raises(NodeTimeoutError):
        await no_retry.compile().ainvoke({"log": []})


async def test_an_idle_timeout_is_refreshed_by_heartbeats_and_stream_writes() -> None:
    async def beating(state: State, runtime: Runtime) -> dict[str, Any]:
        for _ in range(6):  # 0.3 s in all, never 0.15 s without progress
            await asyncio.sleep(0.05)
            runtime.heartbeat()
        return {"log": ["beat"]}

    async def writing(state: State) -> dict[str, Any]:
        write = get_stream_writer()
        for i in range(6):
            await asyncio.sleep(0.05)
            write({"step": i})
        return {"log": ["wrote"]}

    async def silent(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return {"log": ["silent"]}

    idle = TimeoutPolicy(idle_timeout=0.15)
    assert await one_node(beating, timeout=idle).compile().ainvoke({}) == {"log": ["beat"]}
    chunks = [
        c async for c in one_node(writing, timeout=idle).compile().astream({}, None, "custom")
    ]
    assert len(chunks) == 6
    with pytest.raises(NodeTimeoutError) as caught:
        await one_node(silent, timeout=idle).compile().ainvoke({})
    assert (caught.value.kind, caught.value.idle_timeout) == ("idle", 0.15)


def test_a_timeout_on_a_sync_node_is_refused_when_the_graph_is_compiled() -> None:
    def sync_node(state: State) -> dict[str, Any]:
        return {"log": ["sync"]}

    g = one_node(sync_node, timeout=1)
    with pytest.raises(ValueError) as caught:
        g.compile()
    assert str(caught.value) == f"{SYNC_REFUSED} Node 'work' is sync."
    with pytest.raises(ValueError, match="run_timeout must be greater than 0"):
        one_node(sleeps, timeout=0)
    with pytest.raises(ValueError, match="idle_timeout must be greater than 0"):
        one_node(sleeps, timeout=TimeoutPolicy(idle_timeout=-1))


async def test_set_node_defaults_timeout_applies_to_every_node_and_handler_unless_its_own() -> None:
    async def quick(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.15)
        return {"log": ["quick"]}

    async def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"handled {type(error.error).__name__}"]}

    g = StateGraph(State)
    g.add_node("hangs", sleeps, error_handler=handler)
    g.add_node("own", quick, timeout=1)  # its own timeout wins over the default
    g.add_edge(START, "hangs").add_edge(START, "own")
    g.set_node_defaults(timeout=0.1)
    out = await g.compile().ainvoke({"log": []})
    assert sorted(out["log"]) == ["handled NodeTimeoutError", "quick"]

    def sync_node(state: State) -> dict[str, Any]:
        return {}

    mixed = StateGraph(State).set_node_defaults(timeout=TimeoutPolicy(run_timeout=1))
    mixed.add_node("a", quick).add_node("b", sync_node)
    mixed.add_edge(START, "a").add_edge("a", "b")
    with pytest.raises(ValueError, match="Node 'b' is sync"):
        mixed.compile()  # as LangGraph's: a default timeout reaches sync nodes too


# ---- what refreshes an idle timeout ---------------------------------------------------------


def slow_model() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=["abcdefgh"], sleep=0.05)  # 0.4 s, a token each 0.05 s


async def test_a_model_s_streamed_tokens_refresh_an_idle_timeout_and_not_under_heartbeat() -> None:
    async def chat(state: State, config: Any) -> dict[str, Any]:
        text = ""
        async for chunk in slow_model().astream("hi", config):
            text += str(chunk.content)
        return {"log": [text]}

    async def chat_without_config(state: State) -> dict[str, Any]:
        text = "".join([str(c.content) async for c in slow_model().astream("hi")])
        return {"log": [text]}

    idle = TimeoutPolicy(idle_timeout=0.15)
    for node in (chat, chat_without_config):
        app = one_node(node, timeout=idle).compile()
        assert await app.ainvoke({"log": []}) == {"log": ["abcdefgh"]}
        streamed = [m async for m, _ in app.astream({"log": []}, None, "messages")]
        assert "".join(str(m.content) for m in streamed) == "abcdefgh"

    strict = one_node(chat, timeout=TimeoutPolicy(idle_timeout=0.15, refresh_on="heartbeat"))
    with pytest.raises(NodeTimeoutError, match="idle timeout"):
        await strict.compile().ainvoke({"log": []})  # only runtime.heartbeat() refreshes it


async def test_an_entrypoint_s_idle_timeout_is_refreshed_by_its_model_s_tokens() -> None:
    from graphs.func import entrypoint

    @entrypoint(timeout=TimeoutPolicy(idle_timeout=0.15))
    async def flow(x: str) -> str:
        return "".join([str(c.content) async for c in slow_model().astream(x)])

    assert await flow.ainvoke("hi") == "abcdefgh"


async def test_a_subgraph_s_nodes_and_chunks_refresh_the_idle_timeout_of_the_node_running_it() -> (
    None
):
    async def step(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.1)
        return {"log": ["step"]}

    async def writes(state: State) -> dict[str, Any]:
        for i in range(4):
            await asyncio.sleep(0.1)
            get_stream_writer()({"i": i})
        return {"log": ["wrote"]}

    sub = StateGraph(State)
    sub.add_node("s1", step).add_node("s2", step).add_node("s3", writes)
    sub.add_edge(START, "s1").add_edge("s1", "s2").add_edge("s2", "s3")
    child = sub.compile()

    async def runs_child(state: State) -> dict[str, Any]:
        out = await child.ainvoke({"log": []})
        return {"log": out["log"]}

    idle = TimeoutPolicy(idle_timeout=0.15)  # 0.7 s in all, never 0.15 s without progress
    for node in (runs_child, child):
        app = one_node(node, timeout=idle).compile()
        chunks = [c async for c in app.astream({"log": []}, None, "custom", subgraphs=True)]
        assert [chunk for _, chunk in chunks] == [{"i": i} for i in range(4)]

    chain = StateGraph(State)
    for name in ("s1", "s2", "s3", "s4"):
        chain.add_node(name, step)
    chain.add_edge(START, "s1").add_edge("s1", "s2").add_edge("s2", "s3").add_edge("s3", "s4")
    steps = chain.compile()  # 0.4 s in all; each of its nodes starting is progress
    assert await one_node(steps, timeout=idle).compile().ainvoke({"log": []}) == {
        "log": ["step"] * 4
    }


async def test_a_subgraph_node_and_a_send_s_task_are_timed_as_their_node() -> None:
    from graphs.types import Send

    inner = StateGraph(State)
    inner.add_node("hangs", sleeps).add_edge(START, "hangs")
    with pytest.raises(NodeTimeoutError, match="Node 'work' exceeded its run timeout"):
        await one_node(inner.compile(), timeout=0.05).compile().ainvoke({"log": []})

    g = StateGraph(State)
    g.add_node("work", sleeps, timeout=0.05)
    g.add_conditional_edges(START, lambda s: [Send("work", {"log": []})])
    with pytest.raises(NodeTimeoutError, match="Node 'work'"):
        await g.compile().ainvoke({"log": []})
