"""How a step's tasks run under `ainvoke`: `max_concurrency`, a failure cancelling the other
tasks, `step_timeout`."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from graphs import START, Send, StateGraph
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
