"""`durability="exit"`: a run saves its checkpoint and pending writes only when it exits
(completes, pauses, fails), as LangGraph's, and also before a `once()` effect begins, so the
effect's record attaches to a saved checkpoint and a crash after it never runs it again."""

from __future__ import annotations

import itertools
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, Command, SQLSaver, StateGraph, aonce, interrupt, once
from graphs.checkpoint.base import BaseCheckpointSaver
from graphs.errors import GraphInterrupt
from tests.graphs.checkpoint.test_contract import saver_fixture
from tests.kit.graph_module import graph_module

saver = saver_fixture("memory", "sqlite")


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def chain(*nodes: Any) -> StateGraph:
    g = StateGraph(State)
    names = [n.__name__ for n in nodes]
    for node in nodes:
        g.add_node(node.__name__, node)
    g.add_edge(START, names[0])
    for before, after in itertools.pairwise(names):
        g.add_edge(before, after)
    return g


def a(state: State) -> dict[str, Any]:
    return {"log": ["a"]}


def b(state: State) -> dict[str, Any]:
    return {"log": ["b"]}


def c(state: State) -> dict[str, Any]:
    return {"log": ["c"]}


def steps(graph: Any, config: Any) -> list[int]:
    return [h.metadata["step"] for h in graph.get_state_history(config)]


def test_an_exit_run_saves_only_the_checkpoint_it_ends_at(saver: BaseCheckpointSaver) -> None:
    graph = chain(a, b, c).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"log": []}, config, durability="exit") == {"log": ["a", "b", "c"]}
    (only,) = graph.get_state_history(config)
    assert (only.metadata["step"], only.metadata["source"], only.next) == (3, "loop", ())
    assert only.parent_config is None
    # A second run on the thread: one more checkpoint, whose parent is the first run's.
    graph.invoke({"log": []}, config, durability="exit")
    last, first = graph.get_state_history(config)
    assert last.values == {"log": ["a", "b", "c", "a", "b", "c"]}
    assert last.parent_config == first.config
    assert steps(graph, config) == [8, 3]  # (its input checkpoint would be step 4)
    # "sync" saves every step, as before.
    graph.invoke({"log": []}, {"configurable": {"thread_id": "s"}}, durability="sync")
    assert steps(graph, {"configurable": {"thread_id": "s"}}) == [3, 2, 1, 0, -1]


def test_an_exit_run_that_fails_saves_where_it_failed(saver: BaseCheckpointSaver) -> None:
    def boom(state: State) -> dict[str, Any]:
        raise RuntimeError("boom")

    graph = chain(a, boom).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="boom"):
        graph.invoke({"log": []}, config, durability="exit")
    state = graph.get_state(config)
    assert (state.values, state.next, steps(graph, config)) == ({"log": ["a"]}, ("boom",), [1])


def test_an_exit_run_that_pauses_is_saved_and_resumes(saver: BaseCheckpointSaver) -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    graph = chain(a, ask, c).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphInterrupt):
        graph.invoke({"log": []}, config, durability="exit")
    state = graph.get_state(config)
    assert (state.values, state.next, steps(graph, config)) == ({"log": ["a"]}, ("ask",), [1])
    assert [i.value for i in state.interrupts] == ["ok?"]
    done = graph.invoke(Command(resume="yes"), config, durability="exit")
    assert done == {"log": ["a", "yes", "c"]}
    assert steps(graph, config) == [3, 1]


@pytest.mark.parametrize("use_async", [False, True])
async def test_the_step_of_a_once_effect_is_saved_before_the_effect_begins(
    saver: BaseCheckpointSaver, use_async: bool
) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    seen: list[Any] = []

    def look() -> str:
        tup = saver.get_tuple(config)
        seen.append(None if tup is None else tup.metadata["step"])
        return "sent"

    async def alook() -> str:
        return look()

    def b(state: State) -> dict[str, Any]:
        return {"log": [once("refund", look)]}

    async def ab(state: State) -> dict[str, Any]:
        return {"log": [await aonce("refund", alook)]}

    ab.__name__ = "b"
    graph = chain(a, ab if use_async else b, c).compile(checkpointer=saver)
    if use_async:
        out = await graph.ainvoke({"log": []}, config, durability="exit")
    else:
        out = graph.invoke({"log": []}, config, durability="exit")
    assert out == {"log": ["a", "sent", "c"]}
    assert seen == [1]  # b's step, saved
    assert steps(graph, config) == [3, 1]  # that one and the one the run exits at


CRASH_MODULE = """
import operator, os, sys
from typing import Annotated, TypedDict
from graphs import START, SQLSaver, StateGraph, once

CONFIG = {"configurable": {"thread_id": "t"}}

class State(TypedDict):
    log: Annotated[list[str], operator.add]

def build(saver):
    def a(state):
        return {"log": ["a"]}

    def refund(state):
        def send():
            with open(os.environ["COUNT_FILE"], "a") as f:
                f.write("refund\\n")
            return "refunded"
        return {"log": [once("refund", send)]}

    def c(state):
        if os.environ.get("CRASH"):
            os._exit(3)  # the process dies after the effect, before the run exits
        return {"log": ["c"]}

    g = StateGraph(State).add_node("a", a).add_node("refund", refund).add_node("c", c)
    g.add_edge(START, "a").add_edge("a", "refund").add_edge("refund", "c")
    return g.compile(checkpointer=saver)

if __name__ == "__main__":
    saver = SQLSaver(sys.argv[1])
    saver.setup()
    build(saver).invoke({"log": []}, CONFIG, durability="exit")
"""


def test_a_crash_after_a_once_effect_under_exit_does_not_run_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = graph_module(tmp_path, "exit_crash_graph", CRASH_MODULE)
    counted = tmp_path / "count.txt"
    monkeypatch.setenv("COUNT_FILE", str(counted))
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    died = module.run(url, timeout=60, CRASH="1")
    assert died.returncode == 3, died.stderr[-3000:]
    assert counted.read_text().split() == ["refund"]

    exit_crash_graph = module.load()
    with SQLSaver.from_conn_string(url) as fresh:
        app = exit_crash_graph.build(fresh)
        assert app.get_state(exit_crash_graph.CONFIG).next == ("refund",)
        out = app.invoke(None, exit_crash_graph.CONFIG, durability="exit")
        assert out == {"log": ["a", "refunded", "c"]}
    assert counted.read_text().split() == ["refund"]  # ran in the first process only


def test_the_checkpoints_stream_of_an_exit_run_shows_the_parents_they_are_saved_with(
    saver: BaseCheckpointSaver,
) -> None:
    graph = chain(a, b).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    shown = list(graph.stream({"log": []}, config, stream_mode="checkpoints", durability="exit"))
    assert [c["metadata"]["step"] for c in shown] == [-1, 0, 1, 2]
    # none before the run's end is saved: each would be saved with the thread's parent (none)
    assert [c["parent_config"] for c in shown] == [None] * 4
    (only,) = graph.get_state_history(config)
    assert only.config == shown[-1]["config"] and only.parent_config is None
