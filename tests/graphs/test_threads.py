"""A step's tasks under `invoke`/`stream`: run concurrently in threads, as LangGraph's, and
reported as each finishes (its writes saved as pending writes, then its chunks)."""

from __future__ import annotations

import operator
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, Command, InMemorySaver, Send, SQLSaver, StateGraph, interrupt, once
from graphs.checkpoint.base import DONE, BaseCheckpointSaver
from graphs.config import get_config, get_stream_writer
from tests.graphs.checkpoint.test_contract import saver_fixture
from tests.kit.graph_module import graph_module

saver = saver_fixture("memory", "sqlite")

CONFIG: Any = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def fan_out(node: Any, n: int = 5) -> StateGraph:
    """START sends `n` items to `node`, a sync node."""
    g = StateGraph(State).add_node("work", node)
    g.add_conditional_edges(START, lambda s: [Send("work", {"log": [str(i)]}) for i in range(n)])
    return g


def test_a_fan_out_of_blocking_sends_runs_its_tasks_at_the_same_time() -> None:
    # Each of the five calls waits for all five to be running: one after another, the first
    # would wait alone and fail.
    together = threading.Barrier(5, timeout=5)

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        together.wait()
        return {"log": [f"done {arg['log'][0]}"]}

    out = fan_out(work).compile().invoke({"log": []})
    # Applied in the order the Sends were made, whatever order they finished in.
    assert out == {"log": [f"done {i}" for i in range(5)]}


def test_max_concurrency_bounds_how_many_tasks_run_at_once() -> None:
    lock = threading.Lock()
    running, most = 0, 0

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return {"log": arg["log"]}

    out = fan_out(work).compile().invoke({"log": []}, {"max_concurrency": 2})
    assert out == {"log": ["0", "1", "2", "3", "4"]}
    assert most == 2


def test_each_thread_has_its_own_task_for_config_writer_and_interrupt(
    saver: BaseCheckpointSaver,
) -> None:
    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            thread_id = get_config()["configurable"]["thread_id"]
            get_stream_writer()(f"{name} on {thread_id}")
            return {"log": [f"{name}: {interrupt(f'{name}?')}"]}

        return run

    g = StateGraph(State).add_node("a", node("a")).add_node("b", node("b"))
    app = g.add_edge(START, "a").add_edge(START, "b")
    app = app.compile(checkpointer=saver, interrupt_mode="return")
    chunks = list(app.stream({"log": []}, CONFIG, stream_mode=["custom", "updates"]))
    assert sorted(c for mode, c in chunks if mode == "custom") == ["a on t", "b on t"]
    asked = {i.value: i.id for i in app.get_state(CONFIG).interrupts}
    assert sorted(asked) == ["a?", "b?"]
    out = app.invoke(Command(resume={asked["a?"]: "yes", asked["b?"]: "no"}), CONFIG)
    assert out == {"log": ["a: yes", "b: no"]}


def test_a_fast_tasks_update_streams_before_a_slow_one_ends(saver: BaseCheckpointSaver) -> None:
    seen = threading.Event()

    def slow(state: State) -> dict[str, Any]:
        # Ends only once the consumer has seen `fast`'s update: chunks that waited for the
        # whole step would never come.
        assert seen.wait(timeout=5), "fast's update did not stream while slow ran"
        return {"log": ["slow"]}

    g = StateGraph(State).add_node("fast", lambda s: {"log": ["fast"]}).add_node("slow", slow)
    app = g.add_edge(START, "fast").add_edge(START, "slow").compile(checkpointer=saver)
    chunks = []
    for chunk in app.stream({"log": []}, CONFIG, stream_mode="updates"):
        chunks.append(chunk)
        if chunk == {"fast": {"log": ["fast"]}}:
            # Saved as a pending write of the step's checkpoint before it was shown.
            tup = saver.get_tuple(CONFIG)
            assert tup is not None
            assert [c for _, c, _ in tup.pending_writes] == ["log", DONE]
            seen.set()
    assert chunks == [{"fast": {"log": ["fast"]}}, {"slow": {"log": ["slow"]}}]
    assert app.get_state(CONFIG).values == {"log": ["fast", "slow"]}  # by node name


def test_a_failing_task_is_raised_after_the_running_ones_end_and_they_keep_their_writes(
    saver: BaseCheckpointSaver,
) -> None:
    calls: list[str] = []
    broken = True

    def fails(state: State) -> dict[str, Any]:
        calls.append("fails")
        if broken:
            raise ValueError("no model today")
        return {"log": ["fails"]}

    def slow(state: State) -> dict[str, Any]:
        time.sleep(0.2)
        calls.append("slow")
        return {"log": ["slow"]}

    g = StateGraph(State).add_node("fails", fails).add_node("slow", slow)
    app = g.add_edge(START, "fails").add_edge(START, "slow").compile(checkpointer=saver)
    with pytest.raises(ValueError, match="no model today"):
        app.invoke({"log": []}, CONFIG)
    assert calls == ["fails", "slow"]  # the call returned after slow ended, not before
    assert app.get_state(CONFIG).next == ("fails",)
    broken = False
    assert app.invoke(None, CONFIG) == {"log": ["fails", "slow"]}
    assert calls == ["fails", "slow", "fails"]  # slow did not run again


def test_once_in_concurrent_tasks_records_each_effect_once(saver: BaseCheckpointSaver) -> None:
    effects: list[str] = []

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            draft = once(f"draft-{name}", lambda: effects.append(name) or f"{name} draft")
            return {"log": [f"{draft}: {interrupt('send?')}"]}

        return run

    g = StateGraph(State)
    for name in ("a", "b", "c"):
        g.add_node(name, node(name)).add_edge(START, name)
    app = g.compile(checkpointer=saver, interrupt_mode="return")
    app.invoke({"log": []}, CONFIG)
    asked = [i.id for i in app.get_state(CONFIG).interrupts]
    out = app.invoke(Command(resume=dict.fromkeys(asked, "ok")), CONFIG)
    assert out == {"log": ["a draft: ok", "b draft: ok", "c draft: ok"]}
    assert sorted(effects) == ["a", "b", "c"]  # not again on the resume


class CountingSaver(InMemorySaver):
    def __init__(self) -> None:
        super().__init__()
        self.task_ids: list[str] = []

    def put_writes(self, config: Any, writes: Any, task_id: str, *args: Any, **kw: Any) -> None:
        self.task_ids.append(task_id)
        super().put_writes(config, writes, task_id, *args, **kw)

    def node_writes(self, app: Any, config: Any) -> int:
        """The put_writes calls for the nodes' tasks: a run's input is always saved as its
        `__start__` task's writes, as LangGraph saves it."""
        starts = {t.id for s in app.get_state_history(config) for t in s.tasks if t.name == START}
        return sum(1 for task_id in self.task_ids if task_id not in starts)


def test_only_a_step_of_several_tasks_saves_pending_writes() -> None:
    counting = CountingSaver()
    chain = StateGraph(State).add_node("a", lambda s: {"log": ["a"]})
    chain.add_node("b", lambda s: {"log": ["b"]}).add_edge(START, "a").add_edge("a", "b")
    app = chain.compile(checkpointer=counting)
    app.invoke({"log": []}, CONFIG)
    assert counting.node_writes(app, CONFIG) == 0  # one task a step: its checkpoint is enough
    fan = fan_out(lambda arg: {"log": arg["log"]}, 3).compile(checkpointer=counting)
    fan_config: Any = {"configurable": {"thread_id": "u"}}
    counting.task_ids.clear()
    fan.invoke({"log": []}, fan_config)
    assert counting.node_writes(fan, fan_config) == 3  # one per finished task, as it finished


CRASH_MODULE = """
import operator, os, sys, time
from typing import Annotated, TypedDict
from graphs import START, SQLSaver, StateGraph
from graphs.checkpoint.base import DONE

CONFIG = {"configurable": {"thread_id": "t"}}

class State(TypedDict):
    log: Annotated[list[str], operator.add]

def build(saver):
    def fast(state):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("fast\\n")
        return {"log": ["fast"]}

    def crash(state):
        if os.environ.get("CRASH"):
            # Wait until fast's writes are saved, then die in the middle of the step.
            for _ in range(500):
                tup = saver.get_tuple(CONFIG)
                if tup is not None and any(c == DONE for _, c, _ in tup.pending_writes):
                    os._exit(3)
                time.sleep(0.01)
            os._exit(4)
        return {"log": ["crash"]}

    g = StateGraph(State).add_node("fast", fast).add_node("crash", crash)
    return g.add_edge(START, "fast").add_edge(START, "crash").compile(checkpointer=saver)

if __name__ == "__main__":
    saver = SQLSaver(sys.argv[1])
    saver.setup()
    build(saver).invoke({"log": []}, CONFIG)
"""


def test_a_process_that_dies_mid_step_keeps_the_finished_tasks_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = graph_module(tmp_path, "crash_graph", CRASH_MODULE)
    counted = tmp_path / "count.txt"
    monkeypatch.setenv("COUNT_FILE", str(counted))
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    died = module.run(url, timeout=60, CRASH="1")
    assert died.returncode == 3, died.stderr[-3000:]  # (4: fast's writes were never saved)

    with SQLSaver.from_conn_string(url) as fresh:
        app = module.load().build(fresh)
        assert app.get_state(CONFIG).next == ("crash",)
        assert app.invoke(None, CONFIG) == {"log": ["crash", "fast"]}
    assert counted.read_text().split() == ["fast"]  # ran in the first process only


async def test_an_astream_closed_at_a_fast_tasks_update_ends_the_slow_one_first() -> None:
    import asyncio
    import contextlib

    ended: list[str] = []

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            ended.append("slow cancelled")
            raise
        return {"log": ["slow"]}

    async def fast(state: State) -> dict[str, Any]:
        return {"log": ["fast"]}

    g = StateGraph(State).add_node("fast", fast).add_node("slow", slow)
    app = g.add_edge(START, "fast").add_edge(START, "slow").compile(checkpointer=InMemorySaver())
    async with contextlib.aclosing(app.astream({"log": []}, CONFIG)) as stream:
        async for chunk in stream:
            assert chunk == {"fast": {"log": ["fast"]}}  # not held back by slow
            break
    assert ended == ["slow cancelled"]  # by the time the stream is closed, not later
    assert app.get_state(CONFIG).next == ("slow",)  # fast's writes are kept


def test_a_task_result_shows_a_key_written_twice_as_its_writes() -> None:
    g = StateGraph(State).add_node(
        "two", lambda s: Command(update=[("log", ["x"]), ("log", ["y"])])
    )
    app = g.add_edge(START, "two").compile()
    (result,) = [c for c in app.stream({"log": []}, stream_mode="tasks") if "result" in c]
    assert result["result"] == {"log": {"$writes": [["x"], ["y"]]}}  # as LangGraph's
