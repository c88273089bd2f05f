"""`RetryPolicy` per node: LangGraph's defaults, retried within the step, the sleep replaced."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from graphs import END, START, InMemorySaver, StateGraph, _task
from graphs.types import RetryPolicy, default_retry_on


class S(TypedDict):
    n: int


def _graph(fn: Any, policy: RetryPolicy | None, saver: Any = None) -> Any:
    g = StateGraph(S)
    g.add_node("flaky", fn, retry_policy=policy)
    g.add_edge(START, "flaky")
    g.add_edge("flaky", END)
    return g.compile(saver)


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(_task, "sleep", waits.append)

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(_task, "asleep", asleep)
    return waits


def test_defaults_are_langgraphs() -> None:
    p = RetryPolicy()
    assert (p.initial_interval, p.backoff_factor, p.max_interval, p.max_attempts, p.jitter) == (
        0.5,
        2.0,
        128.0,
        3,
        True,
    )
    assert p.retry_on is default_retry_on


def test_default_retry_on_skips_programming_errors() -> None:
    assert default_retry_on(ConnectionError("reset"))
    assert default_retry_on(Exception("flaky service"))
    for exc in (ValueError(), TypeError(), KeyError(), RuntimeError(), OSError()):
        assert not default_retry_on(exc)


def test_a_failed_attempt_is_retried_within_the_step(slept: list[float]) -> None:
    attempts: list[int] = []

    def flaky(state: S) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return {"n": state["n"] + 1}

    policy = RetryPolicy(initial_interval=1.0, backoff_factor=3.0, jitter=False)
    out = _graph(flaky, policy, InMemorySaver()).invoke(
        {"n": 1}, {"configurable": {"thread_id": "t"}}
    )
    assert out == {"n": 2} and len(attempts) == 3 and slept == [1.0, 3.0]


def test_max_interval_caps_the_wait_and_the_last_error_fails_the_step(
    slept: list[float],
) -> None:
    def broken(state: S) -> dict[str, Any]:
        raise ConnectionError("down")

    policy = RetryPolicy(max_attempts=4, initial_interval=2.0, max_interval=5.0, jitter=False)
    with pytest.raises(ConnectionError, match="down"):
        _graph(broken, policy).invoke({"n": 1})
    assert slept == [2.0, 4.0, 5.0]


def test_retry_on_decides_what_is_retried(slept: list[float]) -> None:
    calls: list[int] = []

    def bad(state: S) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        _graph(bad, RetryPolicy()).invoke({"n": 1})
    assert len(calls) == 1 and slept == []
    with pytest.raises(ValueError):
        _graph(bad, RetryPolicy(retry_on=ValueError, jitter=False)).invoke({"n": 1})
    assert len(calls) == 4 and slept == [0.5, 1.0]


def test_an_async_node_is_retried_with_the_async_sleep(slept: list[float]) -> None:
    attempts: list[int] = []

    async def flaky(state: S) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 2:
            raise ConnectionError("again")
        return {"n": 5}

    graph = _graph(flaky, RetryPolicy(jitter=False))
    assert asyncio.run(graph.ainvoke({"n": 1})) == {"n": 5} and slept == [0.5]


def test_jitter_adds_up_to_a_second() -> None:
    waits = {RetryPolicy().delay(1) for _ in range(20)}
    assert all(0.5 <= w <= 1.5 for w in waits) and len(waits) > 1


def test_a_runnable_object_is_a_node_with_its_async_form() -> None:
    class Double:
        name = "double"

        def invoke(self, state: S, config: Any = None) -> dict[str, Any]:
            return {"n": state["n"] * 2}

        async def ainvoke(self, state: S, config: Any = None) -> dict[str, Any]:
            return {"n": state["n"] * 3}

    g = StateGraph(S)
    g.add_node(Double())
    g.add_edge(START, "double")
    g.add_edge("double", END)
    graph = g.compile()
    assert graph.invoke({"n": 2}) == {"n": 4}
    assert asyncio.run(graph.ainvoke({"n": 2})) == {"n": 6}
