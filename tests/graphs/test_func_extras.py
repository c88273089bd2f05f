"""`graphs.func` extras: `timeout=` on `@task` and `@entrypoint`, `entrypoint(cache_policy=)`,
`task.clear_cache(cache)`, and the `updates` chunk of a task called from a `StateGraph` node."""

from __future__ import annotations

import asyncio
import operator
import threading
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, InMemorySaver, NodeTimeoutError, RetryPolicy, StateGraph
from graphs.cache import CachePolicy
from graphs.cache.memory import InMemoryCache
from graphs.config import get_stream_writer
from graphs.func import entrypoint, task
from graphs.runtime import get_runtime
from graphs.types import TimeoutPolicy


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


# ---- timeout= -------------------------------------------------------------------------------


async def test_an_async_task_past_its_timeout_fails_the_run_with_node_timeout_error() -> None:
    ended = []

    @task(timeout=0.05)
    async def slow(x: int) -> int:
        try:
            await asyncio.sleep(2)
        finally:
            ended.append("cancelled")
        return x

    @entrypoint()
    async def flow(x: int) -> int:
        return await slow(x)

    with pytest.raises(NodeTimeoutError) as caught:
        await flow.ainvoke(1)
    error = caught.value
    assert (error.node, error.kind, error.timeout, error.idle_timeout) == (
        "slow",
        "run",
        0.05,
        None,
    )
    assert str(error).startswith("Node 'slow' exceeded its run timeout of 0.050s (elapsed: 0.0")
    assert ended == ["cancelled"]  # the attempt was cancelled, and ended before the error
    assert not isinstance(error, TimeoutError)


def test_a_timed_async_task_called_under_invoke_times_out_too() -> None:
    @task(timeout=timedelta(milliseconds=50))
    async def slow(x: int) -> int:
        await asyncio.sleep(2)
        return x

    @entrypoint()
    def flow(x: int) -> int:
        return slow(x).result()

    with pytest.raises(NodeTimeoutError, match="run timeout of 0.050s"):
        flow.invoke(1)


async def test_a_task_within_its_timeout_returns_and_a_retry_policy_retries_a_timeout() -> None:
    attempts = []

    @task(timeout=0.1, retry_policy=RetryPolicy(initial_interval=0, jitter=False))
    async def flaky(x: int) -> int:
        attempts.append(x)
        if len(attempts) == 1:
            await asyncio.sleep(2)  # the first attempt hangs
        return x * 10

    @entrypoint()
    async def flow(x: int) -> int:
        return await flaky(x)

    assert await flow.ainvoke(4) == 40  # NodeTimeoutError is retried by the default rule
    assert attempts == [4, 4]


async def test_an_idle_timeout_is_refreshed_by_heartbeats_and_writes_but_not_without() -> None:
    @task(timeout=TimeoutPolicy(idle_timeout=0.15))
    async def beating(x: int) -> int:
        runtime = get_runtime()
        for _ in range(6):  # 0.3 s in all, never 0.15 s without a heartbeat
            await asyncio.sleep(0.05)
            runtime.heartbeat()
        return x

    @task(timeout=TimeoutPolicy(idle_timeout=0.15))
    async def writing(x: int) -> int:
        write = get_stream_writer()
        for i in range(6):
            await asyncio.sleep(0.05)
            write({"step": i})
        return x

    @task(timeout=TimeoutPolicy(idle_timeout=0.15, refresh_on="heartbeat"))
    async def writing_strict(x: int) -> int:
        write = get_stream_writer()
        for i in range(6):
            await asyncio.sleep(0.05)
            write({"step": i})  # not progress when only heartbeats refresh
        return x

    @task(timeout=TimeoutPolicy(run_timeout=0.15, idle_timeout=1))
    async def beating_past_run_timeout(x: int) -> int:
        runtime = get_runtime()
        for _ in range(6):
            await asyncio.sleep(0.05)
            runtime.heartbeat()  # a run timeout is never refreshed
        return x

    def flow_of(t: Any) -> Any:
        @entrypoint()
        async def flow(x: int) -> int:
            return await t(x)  # type: ignore[no-any-return]

        return flow

    assert await flow_of(beating).ainvoke(1) == 1
    assert await flow_of(writing).ainvoke(2) == 2
    with pytest.raises(NodeTimeoutError) as caught:
        await flow_of(writing_strict).ainvoke(3)
    assert (caught.value.kind, caught.value.idle_timeout) == ("idle", 0.15)
    assert "exceeded its idle timeout of 0.150s without making progress" in str(caught.value)
    with pytest.raises(NodeTimeoutError) as caught:
        await flow_of(beating_past_run_timeout).ainvoke(4)
    assert caught.value.kind == "run"


async def test_an_entrypoint_past_its_timeout_fails_and_a_task_it_started_still_runs() -> None:
    started = threading.Event()

    @task
    def child(x: int) -> int:
        started.set()
        return x + 1

    @entrypoint(checkpointer=InMemorySaver(), timeout=TimeoutPolicy(idle_timeout=0.05))
    async def parent(x: int) -> int:
        child(x)
        await asyncio.sleep(1)
        return x

    with pytest.raises(NodeTimeoutError, match="Node 'parent' exceeded its idle timeout"):
        await parent.ainvoke(1, cfg())
    assert started.wait(1)
    assert (await parent.aget_state(cfg())).next == ("parent",)  # resumable from its input


def test_timeout_on_a_sync_function_and_a_timeout_of_zero_are_refused_when_declared() -> None:
    words = (
        "Node timeouts are only supported for async nodes because sync Python execution cannot "
        "be safely cancelled in-process."
    )
    with pytest.raises(ValueError) as caught:

        @task(timeout=1)
        def sync_task(x: int) -> int:
            return x

    assert str(caught.value) == f"{words} Task 'sync_task' is sync."
    with pytest.raises(ValueError) as caught:

        @entrypoint(timeout=TimeoutPolicy(idle_timeout=1))
        def sync_flow(x: int) -> int:
            return x

    assert str(caught.value) == f"{words} Node 'sync_flow' is sync."
    with pytest.raises(ValueError, match="run_timeout must be greater than 0"):
        task(timeout=0)
    with pytest.raises(ValueError, match="idle_timeout must be greater than 0"):
        entrypoint(timeout=TimeoutPolicy(idle_timeout=-1))
    with pytest.raises(ValueError, match="refresh_on must be 'auto' or 'heartbeat'"):
        task(timeout=TimeoutPolicy(idle_timeout=1, refresh_on="never"))  # type: ignore[arg-type]


# ---- entrypoint(cache_policy=), task.clear_cache --------------------------------------------


def test_a_cached_entrypoint_returns_its_stored_result_for_the_same_input() -> None:
    runs: list[int] = []
    cache = InMemoryCache()

    @entrypoint(checkpointer=InMemorySaver(), cache=cache, cache_policy=CachePolicy())
    def double(x: int, previous: Any = None) -> int:
        runs.append(x)
        return x * 2

    assert double.invoke(2, cfg("a")) == 4
    assert double.invoke(2, cfg("b")) == 4  # another thread: the same input is cached
    assert double.invoke(2, cfg("a")) == 4  # a `previous` of its own does not change the key
    assert runs == [2]
    assert list(double.stream(2, cfg("c"))) == [{"double": 4, "__metadata__": {"cached": True}}]
    assert double.invoke(3, cfg("a")) == 6
    assert runs == [2, 3]
    assert double.get_state(cfg("a")).values == 6
    double.clear_cache()
    assert double.invoke(2, cfg("a")) == 4
    assert runs == [2, 3, 2]


async def test_task_clear_cache_forgets_that_task_s_results_only() -> None:
    runs: list[str] = []
    cache = InMemoryCache()

    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        runs.append("double")
        return x * 2

    @task(cache_policy=CachePolicy())
    def triple(x: int) -> int:
        runs.append("triple")
        return x * 3

    @entrypoint(cache=cache)
    def flow(x: int) -> list[int]:
        return [double(x).result(), triple(x).result()]

    assert flow.invoke(1) == [2, 3]
    assert flow.invoke(1) == [2, 3]
    assert runs == ["double", "triple"]
    double.clear_cache(cache)
    assert flow.invoke(1) == [2, 3]
    assert runs == ["double", "triple", "double"]
    await triple.aclear_cache(cache)
    assert await flow.ainvoke(1) == [2, 3]
    assert runs == ["double", "triple", "double", "triple"]


# ---- a task's `updates` chunk from a StateGraph node ----------------------------------------


class State(TypedDict):
    x: Annotated[list[Any], operator.add]


@task
def double(v: int) -> int:
    return v * 2


@task
async def adouble(v: int) -> int:
    return v * 2


@task
def outer(v: int) -> int:
    return double(v).result() + 1


def graph_of(*nodes: Any, saver: Any = None) -> Any:
    builder = StateGraph(State)
    for node in nodes:
        builder.add_node(node)
        builder.add_edge(START, node.__name__)
        builder.add_edge(node.__name__, END)
    return builder.compile(checkpointer=saver)


def node(state: State) -> dict[str, Any]:
    return {"x": [double(1).result(), double(2).result()]}


async def anode(state: State) -> dict[str, Any]:
    return {"x": [await adouble(1), await adouble(2)]}


def nested(state: State) -> dict[str, Any]:
    return {"x": [outer(1).result()]}


def other(state: State) -> dict[str, Any]:
    return {"x": ["o"]}


NODE_UPDATES = [{"double": 2}, {"double": 4}, {"node": {"x": [2, 4]}}]


def test_a_node_s_task_calls_stream_as_updates_before_the_node_s_own() -> None:
    assert list(graph_of(node).stream({"x": []}, stream_mode="updates")) == NODE_UPDATES
    saved = graph_of(node, saver=InMemorySaver())
    assert list(saved.stream({"x": []}, cfg(), stream_mode="updates")) == NODE_UPDATES
    chunks = list(graph_of(node).stream({"x": []}, stream_mode=["values", "updates"]))
    assert chunks == [
        ("values", {"x": []}),
        *(("updates", update) for update in NODE_UPDATES),
        ("values", {"x": [2, 4]}),
    ]
    assert list(graph_of(nested).stream({"x": []}, stream_mode="updates")) == [
        {"double": 2},
        {"outer": 3},
        {"nested": {"x": [3]}},
    ]


def test_in_a_step_of_two_nodes_each_task_s_update_comes_before_its_node_s() -> None:
    chunks = list(graph_of(node, other).stream({"x": []}, stream_mode="updates"))
    assert sorted(map(str, chunks)) == sorted(map(str, [*NODE_UPDATES, {"other": {"x": ["o"]}}]))
    mine = [c for c in chunks if "other" not in c]
    assert mine == NODE_UPDATES


async def test_async_a_node_s_task_calls_stream_as_updates_before_the_node_s_own() -> None:
    graph = graph_of(anode)
    chunks = [c async for c in graph.astream({"x": []}, stream_mode="updates")]
    assert chunks == [{"adouble": 2}, {"adouble": 4}, {"anode": {"x": [2, 4]}}]
    chunks = [c async for c in graph_of(node).astream({"x": []}, stream_mode="updates")]
    assert chunks == NODE_UPDATES  # a sync node (in a thread) under astream
    chunks = [c async for c in graph_of(anode, other).astream({"x": []}, stream_mode="updates")]
    assert [c for c in chunks if "other" not in c] == [
        {"adouble": 2},
        {"adouble": 4},
        {"anode": {"x": [2, 4]}},
    ]
    assert len(chunks) == 4


async def test_a_task_s_idle_timeout_is_refreshed_by_its_own_model_s_tokens() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    def model() -> Any:  # 8 tokens, one each 0.05 s: 0.4 s in all
        return FakeListChatModel(responses=["abcdefgh"], sleep=0.05)

    @task(timeout=TimeoutPolicy(idle_timeout=0.15))
    async def chat(prompt: str) -> str:
        return "".join([str(c.content) async for c in model().astream(prompt)])

    @task(timeout=TimeoutPolicy(idle_timeout=0.15, refresh_on="heartbeat"))
    async def chat_strict(prompt: str) -> str:
        return "".join([str(c.content) async for c in model().astream(prompt)])

    def flow_of(t: Any, timeout: Any = None) -> Any:
        @entrypoint(timeout=timeout)
        async def flow(x: str) -> str:
            return await t(x)  # type: ignore[no-any-return]

        return flow

    # The entrypoint has no idle timeout of its own: the task's tokens refresh the task's.
    assert await flow_of(chat).ainvoke("hi") == "abcdefgh"
    # Called from a sync entrypoint under invoke (its async code on a loop of its own), the same.

    @entrypoint()
    def sync_flow(x: str) -> str:
        return chat(x).result()

    assert await asyncio.to_thread(sync_flow.invoke, "hi") == "abcdefgh"
    # The enclosing entrypoint's idle timeout is refreshed by them too, as LangGraph's.
    assert await flow_of(chat, TimeoutPolicy(idle_timeout=0.15)).ainvoke("hi") == "abcdefgh"
    with pytest.raises(NodeTimeoutError) as caught:
        await flow_of(chat_strict).ainvoke("hi")  # tokens are not heartbeats
    assert (caught.value.node, caught.value.kind) == ("chat_strict", "idle")
