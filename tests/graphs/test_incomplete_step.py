"""A step that did not complete (a pause or an error beside finished parallel tasks).

What the finished tasks wrote shows, as in LangGraph: in the state a pause returns, in the last
`values` chunk, in the `updates` stream and in `get_state().values` of the thread's head. The
checkpoint itself keeps the state from before the step (so does `get_state_history`), the
finished tasks do not run again, and their writes go through the reducers once, when the step
completes.
"""

from __future__ import annotations

import operator
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    InvalidUpdateError,
    SQLSaver,
    StateGraph,
    interrupt,
)
from graphs.checkpoint.base import BaseCheckpointSaver
from tests.graphs.checkpoint.test_contract import saver_fixture
from tests.kit.graph_module import graph_module

saver = saver_fixture("memory", "sqlite")

CONFIG = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    total: Annotated[int, operator.add]
    log: Annotated[list[str], operator.add]
    answer: str


def parallel(
    calls: Counter, saver: BaseCheckpointSaver, *, asks: tuple[str, ...] = ("ask",)
) -> Any:
    """START fans out to `count` (adds 2, logs) and the nodes in `asks` (each asks a question)."""

    def count(state: State) -> dict[str, Any]:
        calls["count"] += 1
        return {"total": 2, "log": ["count"]}

    def asker(name: str) -> Any:
        def ask(state: State) -> dict[str, Any]:
            calls[name] += 1
            return {"log": [f"{name}: {interrupt(name + '?')}"]}

        return ask

    g = StateGraph(State).add_node("count", count)
    for name in asks:
        g.add_node(name, asker(name)).add_edge(START, name).add_edge(name, END)
    g.add_edge(START, "count").add_edge("count", END)
    return g.compile(checkpointer=saver, interrupt_mode="return")


def test_a_pause_returns_and_shows_what_the_finished_tasks_wrote(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter = Counter()
    app = parallel(calls, saver)
    out = app.invoke({"total": 1, "log": []}, CONFIG)
    (asked,) = out.pop("__interrupt__")
    assert asked.value == "ask?"
    assert out == {"total": 3, "log": ["count"]}

    head = app.get_state(CONFIG)
    assert head.values == {"total": 3, "log": ["count"]}
    assert head.next == ("ask",)
    # the checkpoint itself, asked for by id, and the history keep the state before the step
    assert app.get_state(head.config).values == {"total": 1, "log": []}
    assert next(app.get_state_history(CONFIG)).values == {"total": 1, "log": []}

    done = app.invoke(Command(resume="yes"), CONFIG)
    # `total` reduced once (1 + 2); the step's writes by node name, as LangGraph applies them
    assert done == {"total": 3, "log": ["ask: yes", "count"]}
    assert app.get_state(CONFIG).values == done
    assert calls == Counter(count=1, ask=2)


async def test_the_same_under_ainvoke_and_aget_state(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()
    app = parallel(calls, saver)
    out = await app.ainvoke({"total": 1, "log": []}, CONFIG)
    assert {k: v for k, v in out.items() if k != "__interrupt__"} == {"total": 3, "log": ["count"]}
    assert (await app.aget_state(CONFIG)).values == {"total": 3, "log": ["count"]}
    # answering again from the same pause state: still one application of `count`'s write
    assert await app.ainvoke(Command(resume="ok"), CONFIG) == {
        "total": 3,
        "log": ["ask: ok", "count"],
    }
    assert calls["count"] == 1


def test_the_updates_stream_shows_each_finished_task_and_each_pause(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter = Counter()
    app = parallel(calls, saver, asks=("a", "b"))
    chunks = list(app.stream({"total": 0, "log": []}, CONFIG, stream_mode="updates"))
    # in frontier order: the update, then a pause per task (as LangGraph: one chunk per task)
    assert [list(c) for c in chunks] == [["count"], ["__interrupt__"], ["__interrupt__"]]
    assert chunks[0] == {"count": {"total": 2, "log": ["count"]}}
    assert [i.value for c in chunks[1:] for i in c["__interrupt__"]] == ["a?", "b?"]
    a, b = (c["__interrupt__"][0] for c in chunks[1:])

    # resumed: the update of the task that finished before shows first, marked as cached
    chunks = list(app.stream(Command(resume={a.id: "A"}), CONFIG, stream_mode="updates"))
    assert chunks == [
        {"count": {"total": 2, "log": ["count"]}, "__metadata__": {"cached": True}},
        {"a": {"log": ["a: A"]}},
        {"__interrupt__": (b,)},
    ]
    chunks = list(app.stream(Command(resume={b.id: "B"}), CONFIG, stream_mode="updates"))
    assert chunks == [
        {"count": {"total": 2, "log": ["count"]}, "__metadata__": {"cached": True}},
        {"a": {"log": ["a: A"]}, "__metadata__": {"cached": True}},
        {"b": {"log": ["b: B"]}},
    ]
    assert app.get_state(CONFIG).values == {"total": 2, "log": ["a: A", "b: B", "count"]}
    assert calls == Counter(a=2, b=3, count=1)


def test_the_values_stream_ends_with_the_pause_then_the_finished_writes(
    saver: BaseCheckpointSaver,
) -> None:
    app = parallel(Counter(), saver)
    chunks = list(app.stream({"total": 1, "log": []}, CONFIG, stream_mode="values"))
    assert chunks[0] == {"total": 1, "log": []}
    assert chunks[1]["__interrupt__"][0].value == "ask?"
    assert {k: v for k, v in chunks[1].items() if k != "__interrupt__"} == chunks[0]
    assert chunks[2:] == [{"total": 3, "log": ["count"]}]


def test_a_failed_step_shows_the_finished_writes_and_keeps_them_for_the_retry(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter = Counter()
    broken = [True]

    def count(state: State) -> dict[str, Any]:
        calls["count"] += 1
        return {"total": 2}

    def pay(state: State) -> dict[str, Any]:
        calls["pay"] += 1
        if broken[0]:
            raise ConnectionError("gateway down")
        return {"log": ["paid"]}

    g = StateGraph(State).add_node("count", count).add_node("pay", pay)
    g.add_edge(START, "count").add_edge(START, "pay")
    app = g.compile(checkpointer=saver)
    seen: list[Any] = []
    with pytest.raises(ConnectionError):
        seen.extend(app.stream({"total": 1}, CONFIG, stream_mode="updates"))
    assert seen == [{"count": {"total": 2}}]  # streamed before the error is raised
    snap = app.get_state(CONFIG)
    assert snap.values == {"total": 3, "log": []}
    assert [(t.name, t.done, t.error) for t in snap.tasks] == [
        ("count", True, None),
        ("pay", False, "ConnectionError('gateway down')"),
    ]
    with pytest.raises(ConnectionError):  # still broken: `count` is not run again
        app.invoke(None, CONFIG)
    assert app.get_state(CONFIG).values == {"total": 3, "log": []}
    broken[0] = False
    assert app.invoke(None, CONFIG) == {"total": 3, "log": ["paid"]}
    assert calls == Counter(count=1, pay=3)


def test_writes_that_cannot_be_merged_leave_the_state_as_saved_until_the_step_fails(
    saver: BaseCheckpointSaver,
) -> None:
    """Two finished tasks wrote a key without a reducer: the pause still returns (with the state
    from before the step), and the step fails when it completes, as a completed one would."""

    def left(state: State) -> dict[str, Any]:
        return {"answer": "left"}

    def right(state: State) -> dict[str, Any]:
        return {"answer": "right"}

    def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("?")]}

    g = StateGraph(State).add_node("left", left).add_node("right", right).add_node("ask", ask)
    for name in ("left", "right", "ask"):
        g.add_edge(START, name)
    app = g.compile(checkpointer=saver, interrupt_mode="return")
    out = app.invoke({"total": 0}, CONFIG)
    assert {k: v for k, v in out.items() if k != "__interrupt__"} == {"total": 0, "log": []}
    assert app.get_state(CONFIG).values == {"total": 0, "log": []}
    with pytest.raises(
        InvalidUpdateError, match="At key 'answer': Can receive only one value per step, got 2"
    ):
        app.invoke(Command(resume="x"), CONFIG)


def test_a_subgraphs_static_pause_shows_once_in_the_parents_stream(
    saver: BaseCheckpointSaver,
) -> None:
    class Inner(TypedDict):
        log: Annotated[list[str], operator.add]

    inner = (
        StateGraph(Inner)
        .add_node("first", lambda s: {"log": ["first"]})
        .add_node("second", lambda s: {"log": ["second"]})
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile(interrupt_before=["second"])
    )
    g = StateGraph(Inner).add_node("inner", inner).add_node("beside", lambda s: {"log": ["beside"]})
    g.add_edge(START, "inner").add_edge(START, "beside")
    app = g.compile(checkpointer=saver, interrupt_mode="return")
    chunks = list(app.stream({"log": []}, CONFIG, stream_mode="updates", subgraphs=True))
    shown = [(len(ns), chunk) for ns, chunk in chunks]
    # `inner` and `beside` run concurrently (threads, as LangGraph's): their chunks come in
    # the order they finish, which the test does not fix; the pause shows once, last.
    assert sorted(shown[:2], key=repr) == [
        (0, {"beside": {"log": ["beside"]}}),
        (1, {"first": {"log": ["first"]}}),
    ]
    assert shown[2:] == [(0, {"__interrupt__": ()})]
    assert app.get_state(CONFIG).values == {"log": ["beside"]}
    assert app.invoke(None, CONFIG) == {"log": ["beside", "first", "second"]}  # by node name


GRAPH_MODULE = """
import operator, os, sys
from typing import Annotated, TypedDict
from graphs import END, START, SQLSaver, StateGraph, interrupt

class State(TypedDict):
    total: Annotated[int, operator.add]
    log: Annotated[list[str], operator.add]

def build(saver):
    def count(state):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("count\\n")
        return {"total": 2, "log": ["count"]}

    def ask(state):
        return {"log": ["ask: " + interrupt("ask?")]}

    g = StateGraph(State).add_node("count", count).add_node("ask", ask)
    g.add_edge(START, "count").add_edge(START, "ask").add_edge("count", END).add_edge("ask", END)
    return g.compile(checkpointer=saver, interrupt_mode="return")

if __name__ == "__main__":
    saver = SQLSaver(sys.argv[1])
    saver.setup()
    out = build(saver).invoke({"total": 1, "log": []}, {"configurable": {"thread_id": "t"}})
    print(out["total"], flush=True)
    os._exit(0)  # gone without closing anything
"""


def test_a_new_process_sees_the_finished_writes_and_applies_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = graph_module(tmp_path, "paused_graph", GRAPH_MODULE)
    counted = tmp_path / "count.txt"
    monkeypatch.setenv("COUNT_FILE", str(counted))
    url = f"sqlite:///{tmp_path / 'paused.db'}"
    done = module.run(url)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "3"

    with SQLSaver.from_conn_string(url) as fresh:
        app = module.load().build(fresh)
        assert app.get_state(CONFIG).values == {"total": 3, "log": ["count"]}
        assert app.invoke(Command(resume="yes"), CONFIG) == {
            "total": 3,
            "log": ["ask: yes", "count"],
        }
    assert counted.read_text().split() == ["count"]  # ran in the first process only


def test_a_message_without_an_id_keeps_the_id_the_pause_showed(saver: BaseCheckpointSaver) -> None:
    from langchain_core.messages import AIMessage

    from graphs.graph import MessagesState

    def talk(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("hello")]}  # no id: add_messages gives it one

    def ask(state: MessagesState) -> None:
        interrupt("go on?")

    g = StateGraph(MessagesState).add_node("talk", talk).add_node("ask", ask)
    g.add_edge(START, "talk").add_edge(START, "ask")
    app = g.compile(checkpointer=saver, interrupt_mode="return")
    (shown,) = app.invoke({"messages": []}, CONFIG)["messages"]
    assert shown.id is not None
    assert [m.id for m in app.get_state(CONFIG).values["messages"]] == [shown.id]
    assert [m.id for m in app.get_state(CONFIG).values["messages"]] == [shown.id]
    final = app.invoke(Command(resume="yes"), CONFIG)["messages"]
    assert [(m.id, m.content) for m in final] == [(shown.id, "hello")]
