"""Subgraphs: a compiled graph as a node, or called from inside a node, on the parent's thread.

Every test runs on each saver (in memory, a user's dict saver, SQLite, PostgreSQL): the
subgraph's checkpoints are kept under its `checkpoint_ns` in the parent's thread, a pause inside
it pauses the parent, and resuming the parent resumes the subgraph where it stopped.
"""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    GraphSetupError,
    ResumeError,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "user_dict_saver", "sqlite", "postgres")


class Inner(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]
    private: str


class Outer(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]
    verdict: str


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def chain(schema: Any, **nodes: Any) -> StateGraph:
    """A graph that runs `nodes` one after another, in the order given."""
    b = StateGraph(schema)
    previous = START
    for name, node in nodes.items():
        b.add_node(name, node)
        b.add_edge(previous, name)
        previous = name
    b.add_edge(previous, END)
    return b


def review_graph(calls: Counter[str]) -> Any:
    """draft -> ask (interrupt) -> publish; counts each node's runs."""

    def draft(state: Inner) -> Inner:
        calls["draft"] += 1
        return {"steps": ["draft"], "private": "notes"}

    def ask(state: Inner) -> Inner:
        calls["ask"] += 1
        answer = interrupt({"question": f"publish {state['topic']}?"})
        return {"steps": [f"ask:{answer}"]}

    def publish(state: Inner) -> Inner:
        calls["publish"] += 1
        return {"steps": ["publish"]}

    return chain(Inner, draft=draft, ask=ask, publish=publish).compile()


def parent_with_node(child: Any, saver: BaseCheckpointSaver, calls: Counter[str]) -> Any:
    def decide(state: Outer) -> Outer:
        calls["decide"] += 1
        return {"verdict": f"done after {len(state['steps'])} steps"}

    return chain(Outer, review=child, decide=decide).compile(checkpointer=saver)


# ---- a compiled graph as a node ---------------------------------------------------------------


def test_a_pause_in_a_subgraph_pauses_the_parent_and_resumes_where_it_stopped(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    graph = parent_with_node(review_graph(calls), saver, calls)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "pricing"}, config())
    (intr,) = paused.value.interrupts
    assert intr.value == {"question": "publish pricing?"} and intr.node == "ask"

    state = graph.get_state(config())
    assert state.next == ("review",) and state.interrupts == (intr,)
    (task,) = state.tasks
    # The subgraph's checkpoints: the same thread, under the namespace "review:<task id>".
    assert task.state == {"configurable": {"thread_id": "t", "checkpoint_ns": f"review:{task.id}"}}
    inner = saver.get_tuple(task.state)  # type: ignore[arg-type]
    assert inner is not None
    assert inner.checkpoint["channel_values"]["steps"] == ["draft"]
    assert inner.checkpoint["channel_values"]["private"] == "notes"

    out = graph.invoke(Command(resume={intr.id: "yes"}), config())
    assert out == {
        "topic": "pricing",
        "steps": ["draft", "ask:yes", "publish"],
        "verdict": "done after 3 steps",
    }  # the subgraph's private key stays in the subgraph
    # draft ran once: the subgraph's finished work is not run again; ask ran again to return.
    assert calls == Counter(draft=1, ask=2, publish=1, decide=1)
    assert graph.get_state(config()).next == ()


def test_a_subgraph_s_namespace_is_run_only_through_its_parent(saver: BaseCheckpointSaver) -> None:
    """Its state is read (and updated: tests/graphs/test_subgraph_update.py) under its
    namespace, but a run given its config is the parent's (as LangGraph's: the namespace is
    dropped), whose resume runs it."""
    calls: Counter[str] = Counter()
    graph = parent_with_node(review_graph(calls), saver, calls)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "pricing"}, config())
    (task,) = graph.get_state(config()).tasks
    assert graph.get_state(task.state).values["steps"] == ["draft"]  # type: ignore[arg-type]
    assert graph.invoke(Command(resume="yes"), task.state)["verdict"] == "done after 3 steps"  # type: ignore[arg-type]
    assert calls == Counter(draft=1, ask=2, publish=1, decide=1)


def test_get_state_with_subgraphs_shows_the_subgraph_s_own_snapshot(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    graph = parent_with_node(review_graph(calls), saver, calls)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "pricing"}, config())
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    inner = task.state
    assert isinstance(inner, StateSnapshot)
    assert inner.values == {"topic": "pricing", "steps": ["draft"], "private": "notes"}
    assert inner.next == ("ask",)
    assert inner.config["configurable"]["checkpoint_ns"] == f"review:{task.id}"
    assert [i.value for i in inner.interrupts] == [{"question": "publish pricing?"}]


def test_two_pauses_in_parallel_branches_of_a_subgraph_are_answered_by_id(
    saver: BaseCheckpointSaver,
) -> None:
    ran: list[str] = []

    def ask(name: str) -> Any:
        def node(state: Inner) -> Inner:
            answer = interrupt(name)
            ran.append(f"{name}:{answer}")
            return {"steps": [f"{name}:{answer}"]}

        return node

    b = StateGraph(Inner)
    b.add_node("left", ask("left"))
    b.add_node("right", ask("right"))
    b.add_edge(START, "left")
    b.add_edge(START, "right")
    graph = parent_with_node(b.compile(), saver, Counter())
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "x"}, config())
    by_value = {i.value: i.id for i in paused.value.interrupts}
    assert sorted(by_value) == ["left", "right"]

    with pytest.raises(GraphInterrupt) as still:
        graph.invoke(Command(resume={by_value["right"]: "R"}), config())
    assert [i.value for i in still.value.interrupts] == ["left"]
    out = graph.invoke(Command(resume={by_value["left"]: "L"}), config())
    assert sorted(out["steps"]) == ["left:L", "right:R"]
    assert sorted(ran) == ["left:L", "right:R"]  # each branch finished once


def test_two_pauses_one_after_another_in_a_subgraph_node_are_answered_in_turn(
    saver: BaseCheckpointSaver,
) -> None:
    def twice(state: Inner) -> Inner:
        first = interrupt("first?")
        second = interrupt(f"second, after {first}?")
        return {"steps": [first, second]}

    graph = parent_with_node(chain(Inner, twice=twice).compile(), saver, Counter())
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "x"}, config())
    (first,) = paused.value.interrupts
    with pytest.raises(GraphInterrupt) as again:
        graph.invoke(Command(resume={first.id: "one"}), config())
    (second,) = again.value.interrupts
    assert second.value == "second, after one?" and second.id != first.id
    with pytest.raises(ResumeError, match="no pending interrupt has id"):
        graph.invoke(Command(resume={first.id: "again"}), config())  # answered already
    out = graph.invoke(Command(resume={second.id: "two"}), config())
    assert out["steps"] == ["one", "two"]


# ---- a subgraph called from inside a node -----------------------------------------------------


def test_a_subgraph_called_in_a_node_inherits_the_checkpointer_and_resumes(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    child = review_graph(calls)

    def review(state: Outer) -> Outer:
        calls["review"] += 1
        result = child.invoke({"topic": state["topic"].upper()})
        return {"steps": result["steps"]}

    graph = chain(Outer, review=review).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "pricing"}, config())
    (intr,) = paused.value.interrupts
    assert intr.value == {"question": "publish PRICING?"}
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    assert isinstance(task.state, StateSnapshot) and task.state.next == ("ask",)

    out = graph.invoke(Command(resume="ok"), config())  # one pending pause: no id needed
    assert out["steps"] == ["draft", "ask:ok", "publish"]
    assert calls == Counter(review=2, draft=1, ask=2, publish=1)


@pytest.mark.parametrize(("own", "runs"), [(None, 1), (False, 2)])
def test_a_finished_subgraph_is_not_run_again_when_its_node_pauses_after_it(
    saver: BaseCheckpointSaver, own: Any, runs: int
) -> None:
    """With the parent's checkpointer (the default) the subgraph's result is read back; a
    subgraph compiled with `checkpointer=False` keeps nothing, so it runs again."""
    calls: Counter[str] = Counter()

    def work(state: Inner) -> Inner:
        calls["work"] += 1
        return {"steps": ["work"]}

    child = chain(Inner, work=work).compile(checkpointer=own)

    def node(state: Outer) -> Outer:
        result = child.invoke({"topic": state["topic"]})
        return {"verdict": interrupt(f"keep {result['steps']}?")}

    graph = chain(Outer, node=node).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "x"}, config())
    assert paused.value.interrupts[0].value == "keep ['work']?"
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    assert (task.state is None) == (own is False)  # nothing stored under the task's namespace
    assert graph.invoke(Command(resume="kept"), config())["verdict"] == "kept"
    assert calls["work"] == runs


# ---- two levels deep --------------------------------------------------------------------------


def nested(saver: BaseCheckpointSaver, calls: Counter[str]) -> Any:
    """outer: start -> middle (a graph: prepare -> inner (review_graph)) -> decide."""

    def prepare(state: Inner) -> Inner:
        calls["prepare"] += 1
        return {"steps": ["prepare"]}

    middle = chain(Inner, prepare=prepare, inner=review_graph(calls)).compile()

    def start(state: Outer) -> Outer:
        calls["start"] += 1
        return {"steps": ["start"]}

    return chain(Outer, start=start, middle=middle).compile(checkpointer=saver)


def test_a_pause_two_levels_deep_resumes_through_the_top(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = nested(saver, calls)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "deep"}, config())
    (intr,) = paused.value.interrupts

    top = graph.get_state(config(), subgraphs=True)
    (mid_task,) = top.tasks
    middle = mid_task.state
    assert isinstance(middle, StateSnapshot) and middle.next == ("inner",)
    (inner_task,) = middle.tasks
    inner = inner_task.state
    assert isinstance(inner, StateSnapshot)
    assert inner.config["configurable"]["checkpoint_ns"] == (
        f"middle:{mid_task.id}|inner:{inner_task.id}"
    )
    assert inner.next == ("ask",) and inner.interrupts == (intr,)
    assert top.interrupts == (intr,) and middle.interrupts == (intr,)

    out = graph.invoke(Command(resume={intr.id: "deep yes"}), config())
    # Each level's input carries the steps so far, and operator.add joins them back up a level.
    assert out["steps"][-3:] == ["draft", "ask:deep yes", "publish"]
    assert calls == Counter(start=1, prepare=1, draft=1, ask=2, publish=1)


def test_streaming_with_subgraphs_yields_namespaced_chunks(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = nested(saver, calls)
    chunks: list[Any] = []
    with pytest.raises(GraphInterrupt):
        chunks.extend(graph.stream({"topic": "s"}, config(), stream_mode="updates", subgraphs=True))
    (mid_task,) = graph.get_state(config()).tasks
    mid = f"middle:{mid_task.id}"
    namespaces = [ns for ns, _ in chunks]
    assert namespaces[0] == ()
    assert chunks[0][1] == {"start": {"steps": ["start"]}}
    assert (mid,) in namespaces
    inner = [ns for ns in namespaces if len(ns) == 2]
    assert inner and inner[0][0] == mid and inner[0][1].startswith("inner:")
    assert (inner[0], {"draft": {"steps": ["draft"], "private": "notes"}}) in chunks
    # The pause, at each level: the subgraph that asked, then each parent up to this graph.
    pauses = [ns for ns, chunk in chunks if "__interrupt__" in chunk]
    assert pauses == [inner[0], (mid,), ()]

    # With a list of modes: (namespace, mode, chunk); the pause shows in the stream.
    (intr,) = graph.get_state(config()).interrupts
    items = list(
        graph.stream(
            Command(resume={intr.id: "go"}),
            config(),
            stream_mode=["updates", "values"],
            subgraphs=True,
        )
    )
    assert all(len(item) == 3 for item in items)
    assert (inner[0], "updates", {"publish": {"steps": ["publish"]}}) in items
    last_ns, last_mode, last = items[-1]
    assert last_ns == () and last_mode == "values" and last["steps"][-1] == "publish"
    # Without subgraphs=True the stream has this graph's chunks only, unprefixed.
    plain: list[Any] = []
    with pytest.raises(GraphInterrupt):
        plain.extend(graph.stream({"topic": "u"}, config("u"), stream_mode="updates"))
    assert plain == [{"start": {"steps": ["start"]}}, {"__interrupt__": paused_at("u", graph)}]


def paused_at(thread: str, graph: Any) -> tuple[Any, ...]:
    return tuple(graph.get_state(config(thread)).interrupts)


# ---- Command(graph=Command.PARENT) ------------------------------------------------------------


def test_command_parent_routes_in_the_parent_graph(saver: BaseCheckpointSaver) -> None:
    def escalate(state: Inner) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="manager", update={"verdict": "escalated"})

    def never(state: Inner) -> Inner:
        raise AssertionError("the subgraph left for its parent before this node")

    child = chain(Inner, escalate=escalate, never=never).compile()

    def manager(state: Outer) -> Outer:
        return {"steps": [f"manager saw {state['verdict']}"]}

    b = StateGraph(Outer)
    b.add_node("team", child, destinations=["manager"])
    b.add_node("manager", manager)
    b.add_edge(START, "team")
    b.add_edge("manager", END)
    graph = b.compile(checkpointer=saver)
    out = graph.invoke({"topic": "t"}, config())
    assert out == {"topic": "t", "verdict": "escalated", "steps": ["manager saw escalated"]}


# ---- failures, async, names -------------------------------------------------------------------


def test_a_failed_subgraph_resumes_at_its_failed_step(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    broken = {"yes": True}

    def first(state: Inner) -> Inner:
        calls["first"] += 1
        return {"steps": ["first"]}

    def flaky(state: Inner) -> Inner:
        calls["flaky"] += 1
        if broken["yes"]:
            raise ConnectionError("the service is down")
        return {"steps": ["flaky"]}

    graph = parent_with_node(chain(Inner, first=first, flaky=flaky).compile(), saver, calls)
    with pytest.raises(ConnectionError):
        graph.invoke({"topic": "t"}, config())
    broken["yes"] = False
    out = graph.invoke(None, config())
    assert out["steps"] == ["first", "flaky"]
    assert calls == Counter(first=1, flaky=2, decide=1)


def test_async_subgraph_pause_and_resume(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = parent_with_node(review_graph(calls), saver, calls)

    async def go() -> dict[str, Any]:
        with pytest.raises(GraphInterrupt) as paused:
            await graph.ainvoke({"topic": "a"}, config())
        (intr,) = paused.value.interrupts
        (task,) = (await graph.aget_state(config(), subgraphs=True)).tasks
        assert isinstance(task.state, StateSnapshot) and task.state.next == ("ask",)
        return await graph.ainvoke(Command(resume={intr.id: "async"}), config())

    out = asyncio.run(go())
    assert out["steps"] == ["draft", "ask:async", "publish"]
    assert calls == Counter(draft=1, ask=2, publish=1, decide=1)


def test_node_names_cannot_hold_the_namespace_separators() -> None:
    b = StateGraph(Inner)
    for name in ("a:b", "a|b"):
        with pytest.raises(GraphSetupError, match="choose another name"):
            b.add_node(name, lambda s: {})


# ---- what is paused (SQLSaver's indexed query) -------------------------------------------------


sql_saver = saver_fixture("sqlite", "postgres", name="sql_saver")


def test_a_pause_in_a_subgraph_is_listed_once_under_the_parent_thread(sql_saver: Any) -> None:
    calls: Counter[str] = Counter()
    graph = nested(sql_saver, calls)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "listed"}, config("deep"))
    (intr,) = paused.value.interrupts
    (listed,) = sql_saver.list_paused()
    assert (listed.thread_id, listed.checkpoint_ns) == ("deep", "")
    assert listed.interrupts == (intr,)
    # What the listing names is what resumes it: the parent thread, answered by the id.
    out = graph.invoke(Command(resume={intr.id: "from the list"}), listed.config)
    assert out["steps"][-2:] == ["ask:from the list", "publish"]
    assert sql_saver.list_paused() == []
    assert sql_saver.get_status(config("deep")) == "done"


def test_a_root_channel_subgraph_as_a_node_of_a_root_channel_parent(
    saver: BaseCheckpointSaver,
) -> None:
    # `StateGraph(Annotated[list, add])` as a node: its value is the node's return (it once
    # failed, reading the child's list result as a dict of keys).
    child = StateGraph(Annotated[list, operator.add])
    child.add_node("c", lambda items: [f"child saw {len(items)}"])
    child.add_edge(START, "c")
    parent = StateGraph(Annotated[list, operator.add])
    parent.add_node("p", lambda items: ["parent"])
    parent.add_node("child", child.compile())
    parent.add_edge(START, "p").add_edge("p", "child")
    app = parent.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "root"}}
    out = app.invoke(["in"], config)
    # the child returns its whole value (its input plus its own write), which the parent's
    # reducer appends, as LangGraph's root channel does
    assert out == ["in", "parent", "in", "parent", "child saw 2"]
    assert app.get_state(config).values == out
