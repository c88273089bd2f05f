"""`Send(node, arg, timeout=)`: a timeout for one pushed task, in place of its node's own
`timeout=`, as LangGraph's; saved with the pending `Send`, so a paused, failed or crashed run
resumed later times the task the same."""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    InMemorySaver,
    NodeTimeoutError,
    RetryPolicy,
    StateGraph,
    interrupt,
)
from graphs.checkpoint.serde import dumps, loads
from graphs.checkpoint.sql import SQLSaver
from graphs.runtime import Runtime
from graphs.types import Send, TimeoutPolicy

SYNC_REFUSED = (
    "Node timeouts are only supported for async nodes because sync Python execution cannot be "
    "safely cancelled in-process. Node 'work' is sync."
)


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


async def work(arg: dict[str, Any]) -> dict[str, Any]:
    """Sleeps `arg["sleep"]` seconds, then logs `arg["name"]`."""
    await asyncio.sleep(arg["sleep"])
    return {"log": [arg["name"]]}


def fan_out(node: Any, sends: list[Send], **options: Any) -> StateGraph:
    g = StateGraph(State)
    g.add_node("work", node, **options)
    g.add_conditional_edges(START, lambda s: sends)
    g.add_edge("work", END)
    return g


def test_send_s_timeout_is_a_coerced_policy_in_equality_repr_hash_and_storage() -> None:
    timed = Send("work", {"x": 1}, timeout=0.05)
    assert timed.timeout == TimeoutPolicy(run_timeout=0.05)
    assert Send("work", 1, timeout=timedelta(milliseconds=250)).timeout == TimeoutPolicy(
        run_timeout=0.25
    )
    assert timed == Send("work", {"x": 1}, timeout=TimeoutPolicy(run_timeout=0.05))
    assert timed != Send("work", {"x": 1})  # the timeout is part of equality, as LangGraph's
    assert hash(Send("w", 1, timeout=1)) == hash(Send("w", 1, timeout=timedelta(seconds=1)))
    assert len({Send("w", 1), Send("w", 1, timeout=1)}) == 2
    assert repr(Send("work", 1)) == "Send(node='work', arg=1)"
    assert repr(timed) == (
        "Send(node='work', arg={'x': 1}, "
        "timeout=TimeoutPolicy(run_timeout=0.05, idle_timeout=None, refresh_on='auto'))"
    )
    assert repr(Command(goto=timed)) == f"Command(goto={timed!r})"
    with pytest.raises(ValueError, match="run_timeout must be greater than 0"):
        Send("work", 1, timeout=0)

    policy = TimeoutPolicy(run_timeout=1, idle_timeout=2, refresh_on="heartbeat")
    for value in (Send("w", {"x": 1}), Send("w", {"x": 1}, timeout=policy), Command(goto=timed)):
        assert loads(dumps(value)) == value
    assert loads(dumps(Send("w", 1))) == Send("w", 1)
    assert "timeout" not in dumps(Send("w", 1))  # stored as before, without one


async def test_a_shorter_send_timeout_times_out_that_task_only() -> None:
    sends = [
        Send("work", {"name": "a", "sleep": 0.01}),
        Send("work", {"name": "slow", "sleep": 2}, timeout=0.2),
        Send("work", {"name": "b", "sleep": 0.01}),
    ]
    app = fan_out(work, sends, timeout=5).compile(checkpointer=InMemorySaver())
    began = time.monotonic()
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"log": []}, cfg())
    assert time.monotonic() - began < 1
    error = caught.value
    assert (error.node, error.kind, error.timeout) == ("work", "run", 0.2)
    assert str(error).startswith("Node 'work' exceeded its run timeout of 0.200s")
    tasks = (await app.aget_state(cfg())).tasks
    assert [(t.done, t.result) for t in tasks] == [
        (True, {"log": ["a"]}),
        (False, None),
        (True, {"log": ["b"]}),
    ]
    assert tasks[1].error is not None and "0.200s" in tasks[1].error


def test_a_longer_send_timeout_overrides_the_node_s_short_one() -> None:
    node_only = fan_out(work, [Send("work", {"name": "x", "sleep": 0.2})], timeout=0.05)
    with pytest.raises(NodeTimeoutError, match="run timeout of 0.050s"):
        asyncio.run(node_only.compile().ainvoke({"log": []}))

    longer = fan_out(work, [Send("work", {"name": "x", "sleep": 0.2}, timeout=2)], timeout=0.05)
    assert asyncio.run(longer.compile().ainvoke({"log": []})) == {"log": ["x"]}
    # Under invoke too (an async node is timed there as well).
    assert longer.compile().invoke({"log": []}) == {"log": ["x"]}


async def test_a_send_s_idle_timeout_times_a_node_that_has_none() -> None:
    async def beats(arg: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
        for _ in range(6):
            await asyncio.sleep(0.03)
            if arg["beat"]:
                runtime.heartbeat()
        return {"log": [arg["name"]]}

    idle = TimeoutPolicy(idle_timeout=0.1)
    ok = fan_out(beats, [Send("work", {"name": "beat", "beat": True}, timeout=idle)])
    assert await ok.compile().ainvoke({"log": []}) == {"log": ["beat"]}

    quiet = fan_out(
        beats,
        [Send("work", {"name": "quiet", "beat": False}, timeout=TimeoutPolicy(idle_timeout=0.05))],
    )
    with pytest.raises(NodeTimeoutError) as caught:
        await quiet.compile().ainvoke({"log": []})
    assert (caught.value.node, caught.value.kind, caught.value.idle_timeout) == (
        "work",
        "idle",
        0.05,
    )


async def test_the_node_s_retry_policy_retries_a_send_s_timeout() -> None:
    attempts: list[float] = []

    async def flaky(arg: dict[str, Any]) -> dict[str, Any]:
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            await asyncio.sleep(2)
        return {"log": [f"attempt {len(attempts)}"]}

    retry = RetryPolicy(initial_interval=0, jitter=False, max_attempts=3)
    sends = [Send("work", {}, timeout=0.05)]
    began = time.monotonic()
    app = fan_out(flaky, sends, timeout=5, retry_policy=retry).compile()
    assert await app.ainvoke({"log": []}) == {"log": ["attempt 3"]}
    assert len(attempts) == 3 and time.monotonic() - began < 1

    attempts.clear()
    two = RetryPolicy(initial_interval=0, jitter=False, max_attempts=2)
    with pytest.raises(NodeTimeoutError, match="Node 'work' exceeded its run timeout of 0.050s"):
        await fan_out(flaky, sends, timeout=5, retry_policy=two).compile().ainvoke({"log": []})
    assert len(attempts) == 2


async def test_a_send_s_timeout_to_a_sync_node_is_refused_before_it_runs_and_not_retried() -> None:
    ran: list[str] = []

    def sync_work(arg: dict[str, Any]) -> dict[str, Any]:
        ran.append(arg["name"])
        return {"log": [arg["name"]]}

    retry = RetryPolicy(retry_on=Exception, initial_interval=0, jitter=False)
    g = fan_out(sync_work, [Send("work", {"name": "x"}, timeout=1)], retry_policy=retry)
    app = g.compile()  # nothing to refuse yet: the Send is made as the graph runs
    with pytest.raises(ValueError) as caught:
        app.invoke({"log": []})
    assert str(caught.value) == SYNC_REFUSED  # LangGraph's words
    assert "a Send's timeout needs an async node" in "\n".join(caught.value.__notes__)
    with pytest.raises(ValueError, match="Node 'work' is sync"):
        await app.ainvoke({"log": []})
    assert ran == []

    # Without a timeout, the same Send to the sync node runs.
    plain = fan_out(sync_work, [Send("work", {"name": "x"})])
    assert plain.compile().invoke({"log": []}) == {"log": ["x"]}


async def test_command_goto_send_with_a_timeout_from_a_node_and_as_input() -> None:
    def route(state: State) -> Command:
        return Command(goto=[Send("work", {"name": "slow", "sleep": 2}, timeout=0.05)])

    g = StateGraph(State)
    g.add_node("route", route, destinations=("work",))
    g.add_node("work", work, timeout=5)
    g.add_edge(START, "route")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"log": []}, cfg("node"))
    assert (caught.value.node, caught.value.timeout) == ("work", 0.05)

    # `invoke(Command(goto=Send(..., timeout=)))` on a thread: the task runs under it too.
    g2 = StateGraph(State)
    g2.add_node("begin", lambda s: {"log": ["begin"]})
    g2.add_node("work", work, timeout=5)
    g2.add_edge(START, "begin")
    app2 = g2.compile(checkpointer=InMemorySaver())
    assert await app2.ainvoke({"log": []}, cfg("input")) == {"log": ["begin"]}
    with pytest.raises(NodeTimeoutError) as caught:
        await app2.ainvoke(
            Command(goto=Send("work", {"name": "slow", "sleep": 2}, timeout=0.05)), cfg("input")
        )
    assert (caught.value.node, caught.value.timeout) == ("work", 0.05)
    assert await app2.ainvoke({"log": []}, cfg("input2")) == {"log": ["begin"]}
    quick = Command(goto=Send("work", {"name": "quick", "sleep": 0.1}, timeout=1))
    assert await app2.ainvoke(quick, cfg("input2")) == {"log": ["begin", "quick"]}


async def test_a_paused_send_keeps_its_timeout_through_a_sqlite_file(tmp_path: Path) -> None:
    async def ask(arg: dict[str, Any]) -> dict[str, Any]:
        seconds = interrupt(arg["name"])
        await asyncio.sleep(float(seconds))
        return {"log": [f"{arg['name']} {seconds}"]}

    def build(saver: SQLSaver) -> Any:
        sends = [
            Send("work", {"name": "timed"}, timeout=0.3),
            Send("work", {"name": "plain"}),
        ]
        return fan_out(ask, sends, timeout=5).compile(checkpointer=saver, interrupt_mode="return")

    url = f"sqlite:///{tmp_path / 'send.db'}"
    first = SQLSaver(url)
    first.setup()
    try:
        out = await build(first).ainvoke({"log": []}, cfg())
        assert sorted(i.value for i in out["__interrupt__"]) == ["plain", "timed"]
        ids = {i.value: i.id for i in out["__interrupt__"]}
    finally:
        await first.aclose()

    second = SQLSaver(url)  # another saver on the file, and a graph built afresh
    try:
        app = build(second)
        began = time.monotonic()
        with pytest.raises(NodeTimeoutError) as caught:
            await app.ainvoke(Command(resume={ids["timed"]: "2", ids["plain"]: "0.01"}), cfg())
        assert time.monotonic() - began < 1.5
        assert (caught.value.node, caught.value.timeout) == ("work", 0.3)
        # The untimed Send ran under the node's 5 s and finished.
        tasks = (await app.aget_state(cfg())).tasks
        assert [(t.done, t.result) for t in tasks] == [
            (False, None),
            (True, {"log": ["plain 0.01"]}),
        ]
    finally:
        await second.aclose()


CRASHING = """
import asyncio, operator, os, sys, time
from typing import Annotated, TypedDict
from graphs import END, START, SQLSaver, StateGraph
from graphs.types import Send

class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]

def build(saver, crash):
    async def work(arg):
        if arg["name"] == "slow":
            if crash:
                time.sleep(1)  # blocks its loop, so its timeout cannot fire; quick is saved by then
                os._exit(3)  # the process dies inside the step, closing nothing
            await asyncio.sleep(2)
        return {"log": [arg["name"]]}

    g = StateGraph(State)
    g.add_node("work", work, timeout=5)
    g.add_conditional_edges(
        START,
        lambda s: [Send("work", {"name": "quick"}), Send("work", {"name": "slow"}, timeout=0.3)],
    )
    g.add_edge("work", END)
    return g.compile(checkpointer=saver, interrupt_mode="return")

if __name__ == "__main__":
    saver = SQLSaver(sys.argv[1])
    saver.setup()
    build(saver, crash=True).invoke({"log": []}, {"configurable": {"thread_id": "t"}})
"""


def test_a_send_pending_when_the_process_crashed_keeps_its_timeout(tmp_path: Path) -> None:
    module = tmp_path / "crashing.py"
    module.write_text(textwrap.dedent(CRASHING))
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(module), url],
        check=False,
        cwd=repo,
        env={"PYTHONPATH": str(repo), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr

    sys.path.insert(0, str(tmp_path))
    try:
        import crashing  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("crashing", None)
    saver = SQLSaver(url)
    try:
        app = crashing.build(saver, crash=False)
        began = time.monotonic()
        with pytest.raises(NodeTimeoutError) as caught:
            app.invoke(None, cfg())
        assert time.monotonic() - began < 1.5
        assert (caught.value.node, caught.value.timeout) == ("work", 0.3)
        tasks = app.get_state(cfg()).tasks
        assert [(t.done, t.result) for t in tasks] == [(True, {"log": ["quick"]}), (False, None)]
    finally:
        saver.close()


async def test_a_fork_keeps_a_pending_send_s_timeout() -> None:
    async def ask(arg: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(float(interrupt("how long?")))
        return {"log": ["done"]}

    app = fan_out(ask, [Send("work", {}, timeout=0.1)], timeout=5).compile(
        checkpointer=InMemorySaver(), interrupt_mode="return"
    )
    await app.ainvoke({"log": []}, cfg("source"))
    forked = app.fork(cfg("source"), "copy")
    assert (await app.ainvoke(None, forked))["__interrupt__"][0].value == "how long?"
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke(Command(resume="2"), forked)
    assert (caught.value.node, caught.value.timeout) == ("work", 0.1)
