"""How a step's tasks run under `ainvoke`: `max_concurrency`, a failure cancelling the other
tasks, `step_timeout`."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, Send, StateGraph, aonce
from graphs.checkpoint.base import BaseCheckpointSaver
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite")


class Fan(TypedDict):
    items: Annotated[list, operator.add]


class Gauge:
    """An async node that notes how many of its runs overlap."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def __call__(self, arg: int) -> dict[str, Any]:
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return {"items": [arg]}


def fan_out(gauge: Gauge, width: int, **compile_options: Any) -> Any:
    g = StateGraph(Fan)
    g.add_node("work", gauge)
    g.add_conditional_edges(START, lambda s: [Send("work", i) for i in range(width)])
    return g.compile(**compile_options)


async def test_max_concurrency_bounds_a_steps_tasks() -> None:
    gauge = Gauge()
    app = fan_out(gauge, 30)
    out = await app.ainvoke({"items": []})
    assert gauge.most == 30  # all at once by default
    gauge.most = 0
    assert await app.ainvoke({"items": []}, {"max_concurrency": 4}) == out
    assert out == {"items": list(range(30))}  # the same result, in the same order
    assert gauge.most == 4


async def test_max_concurrency_applies_to_a_resumed_run_and_its_stream(
    saver: BaseCheckpointSaver,
) -> None:
    gauge = Gauge()
    app = fan_out(gauge, 12, checkpointer=saver, interrupt_before=["work"], interrupt_mode="return")
    config: Any = {"configurable": {"thread_id": "t"}, "max_concurrency": 3}
    await app.ainvoke({"items": []}, config)
    assert gauge.most == 0
    # `custom` runs the step's tasks beside the consumer of what they stream
    assert [c async for c in app.astream(None, config, stream_mode="custom")] == []
    assert gauge.most == 3
    assert (await app.aget_state(config)).values == {"items": list(range(12))}


# ---- a failure cancels the step's other tasks; step_timeout ---------------------------------


class Log(TypedDict):
    log: Annotated[list, operator.add]


class Boom(Exception):
    pass


class Nodes:
    """Async nodes for one step of three tasks: `quick` finishes, `slow` sleeps, `bad` fails
    (while `broken`); `events` notes what happened, `effects` each run of slow's effect."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.effects = 0
        self.broken = True
        self.slow_sleep = 5.0

    async def quick(self, state: Log) -> dict[str, Any]:
        self.events.append("quick")
        return {"log": ["quick"]}

    async def slow(self, state: Log) -> dict[str, Any]:
        self.events.append("slow started")
        try:
            await asyncio.sleep(self.slow_sleep)
        except asyncio.CancelledError:
            self.events.append("slow cancelled")
            raise
        return {"log": ["slow"]}

    async def bad(self, state: Log) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        if self.broken:
            raise Boom("payment gateway down")
        return {"log": ["bad"]}


def three(nodes: Nodes, **compile_options: Any) -> Any:
    g = StateGraph(Log)
    g.add_node("quick", nodes.quick).add_node("slow", nodes.slow).add_node("bad", nodes.bad)
    for name in ("quick", "slow", "bad"):
        g.add_edge(START, name)
    return g.compile(**compile_options)


CONFIG: Any = {"configurable": {"thread_id": "t"}}


async def test_a_failing_task_cancels_its_siblings_at_once_and_keeps_the_finished_ones(
    saver: BaseCheckpointSaver,
) -> None:
    nodes = Nodes()
    app = three(nodes, checkpointer=saver)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(Boom, match="payment gateway down"):
        await app.ainvoke({"log": []}, CONFIG)
    assert loop.time() - began < 2  # not slow's 5 s
    assert nodes.events == ["quick", "slow started", "slow cancelled"]
    # what finished is kept, as for any step that did not complete; slow did not finish
    state = await app.aget_state(CONFIG)
    assert state.values == {"log": ["quick"]}
    assert state.next == ("slow", "bad")

    nodes.events.clear()
    nodes.broken, nodes.slow_sleep = False, 0.0
    assert await app.ainvoke(None, CONFIG) == {
        "log": ["bad", "quick", "slow"]
    }  # the step's writes by node name
    assert nodes.events == ["slow started"]  # quick did not run again


async def test_a_cancelled_sibling_ends_its_once_effect_and_records_it(
    saver: BaseCheckpointSaver,
) -> None:
    nodes = Nodes()

    async def effect() -> str:
        nodes.effects += 1
        await asyncio.sleep(0.3)  # the sibling fails meanwhile
        return "refund-1"

    async def slow(state: Log) -> dict[str, Any]:
        refund = await aonce("refund", effect)
        nodes.events.append(f"slow got {refund}")
        await asyncio.sleep(nodes.slow_sleep)
        return {"log": [refund]}

    nodes.slow = slow  # type: ignore[method-assign]
    app = three(nodes, checkpointer=saver)
    with pytest.raises(Boom):
        await app.ainvoke({"log": []}, CONFIG)
    assert nodes.effects == 1
    assert nodes.events == ["quick"]  # cancelled once the effect was recorded

    nodes.broken, nodes.slow_sleep = False, 0.0
    assert await app.ainvoke(None, CONFIG) == {
        "log": ["bad", "quick", "refund-1"]
    }  # the step's writes by node name
    assert nodes.effects == 1  # the effect ran once


async def test_a_sync_sibling_cannot_be_stopped_so_the_step_waits_and_keeps_its_writes(
    saver: BaseCheckpointSaver,
) -> None:
    nodes = Nodes()
    ran: list[str] = []

    def blocking(state: Log) -> dict[str, Any]:
        time.sleep(0.3)
        ran.append("blocking")
        return {"log": ["blocking"]}

    nodes.slow = blocking  # type: ignore[assignment]
    app = three(nodes, checkpointer=saver)
    with pytest.raises(Boom):
        await app.ainvoke({"log": []}, CONFIG)
    assert ran == ["blocking"]
    assert (await app.aget_state(CONFIG)).values == {"log": ["quick", "blocking"]}
    nodes.broken = False
    assert await app.ainvoke(None, CONFIG) == {
        "log": ["bad", "quick", "blocking"]
    }  # the step's writes by node name
    assert ran == ["blocking"]


async def test_step_timeout_cancels_the_tasks_still_running_and_fails_the_run(
    saver: BaseCheckpointSaver,
) -> None:
    nodes = Nodes()
    nodes.broken = False
    app = three(nodes, checkpointer=saver)
    app.step_timeout = 0.3
    chunks: list[Any] = []
    with pytest.raises(asyncio.TimeoutError) as info:
        async for chunk in app.astream({"log": []}, CONFIG):
            chunks.append(chunk)
    assert str(info.value) == (
        "step 1 did not finish within the graph's step_timeout of 0.3 s: node(s) ['slow'] "
        "were still running, and were cancelled"
    )
    assert nodes.events == ["quick", "slow started", "slow cancelled"]
    assert chunks == [{"quick": {"log": ["quick"]}}, {"bad": {"log": ["bad"]}}]
    assert (await app.aget_state(CONFIG)).next == ("slow",)

    app.step_timeout = None
    nodes.slow_sleep = 0.0
    assert await app.ainvoke(None, CONFIG) == {
        "log": ["bad", "quick", "slow"]
    }  # the step's writes by node name


async def test_step_timeout_applies_to_a_step_of_one_task() -> None:
    nodes = Nodes()
    g = StateGraph(Log).add_node("slow", nodes.slow).add_edge(START, "slow")
    app = g.compile()
    app.step_timeout = 0.1
    with pytest.raises(asyncio.TimeoutError):
        await app.ainvoke({"log": []})
    assert nodes.events == ["slow started", "slow cancelled"]


def _timed_nodes(ran: list[str]) -> StateGraph:
    def node(name: str, seconds: float) -> Any:
        def run(state: Log) -> dict[str, Any]:
            time.sleep(seconds)
            ran.append(name)
            return {"log": [name]}

        return run

    g = StateGraph(Log).add_node("slow", node("slow", 0.3)).add_node("after", node("after", 0))
    return g.add_edge(START, "slow").add_edge(START, "after")


def test_under_invoke_step_timeout_waits_for_the_running_threads_then_fails(
    saver: BaseCheckpointSaver,
) -> None:
    # A step's sync tasks run concurrently in threads (as LangGraph's); a running thread cannot
    # be stopped, so invoke waits for it past the timeout, keeps what it wrote, then fails.
    ran: list[str] = []
    app = _timed_nodes(ran).compile(checkpointer=saver)
    app.step_timeout = 0.1
    began = time.monotonic()
    with pytest.raises(TimeoutError, match=r"node\(s\) \['slow'\] were still running"):
        app.invoke({"log": []}, CONFIG)
    assert time.monotonic() - began >= 0.3  # no node is left running behind the call
    assert ran == ["after", "slow"]
    assert app.get_state(CONFIG).values == {"log": ["after", "slow"]}
    app.step_timeout = None
    # Both finished: a resume runs neither again, and applies the writes by node name.
    assert app.invoke(None, CONFIG) == {"log": ["after", "slow"]}
    assert ran == ["after", "slow"]


def test_under_invoke_step_timeout_stops_the_tasks_not_yet_started(
    saver: BaseCheckpointSaver,
) -> None:
    ran: list[str] = []
    app = _timed_nodes(ran).compile(checkpointer=saver)
    app.step_timeout = 0.1
    # One thread at a time: `after` waits for `slow`, and the timeout keeps it from starting.
    config = {**CONFIG, "max_concurrency": 1}
    with pytest.raises(TimeoutError, match=r"node\(s\) \['after'\] had not started"):
        app.invoke({"log": []}, config)
    assert ran == ["slow"]  # a running sync node cannot be stopped; its writes are kept
    assert (app.get_state(CONFIG)).values == {"log": ["slow"]}
    app.step_timeout = None
    # the step's writes by node name
    assert app.invoke(None, CONFIG) == {"log": ["after", "slow"]}
    assert ran == ["slow", "after"]
