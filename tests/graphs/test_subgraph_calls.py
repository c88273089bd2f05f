"""Several subgraph runs in one task, subgraphs compiled with the parent's own saver, and
`Command(graph=Command.PARENT)` from a graph that is not a subgraph, on each saver.

A task's first subgraph run keeps its checkpoints under `node:task_id`, its later ones under
`node:task_id|1`, `|2`, ... in the order it runs them, so a task resumed after a pause in any of
them finds each where it stopped.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    InMemorySaver,
    MultipleSubgraphsError,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from graphs.errors import ParentCommand
from tests.graphs.checkpoint.test_contract import saver_fixture
from tests.graphs.test_subgraphs import Inner, Outer, chain, config

saver = saver_fixture("memory", "sqlite", "postgres")


def counted(calls: Counter[str], name: str, **compile: Any) -> Any:
    """A one-node subgraph that appends `name:topic` and counts its runs."""

    def work(state: Inner) -> Inner:
        calls[name] += 1
        return {"steps": [f"{name}:{state['topic']}"]}

    return chain(Inner, work=work).compile(**compile)


def asking(calls: Counter[str], name: str, **compile: Any) -> Any:
    """A one-node subgraph that asks, then appends `name:answer`."""

    def ask(state: Inner) -> Inner:
        calls[name] += 1
        answer = interrupt(f"{name} {state['topic']}?")
        return {"steps": [f"{name}:{answer}"]}

    return chain(Inner, ask=ask).compile(**compile)


# ---- several subgraph runs in one task ----------------------------------------------------------


def test_two_subgraphs_in_one_task_run_under_namespaces_numbered_in_call_order(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    first, second = counted(calls, "first"), counted(calls, "second")

    def both(state: Outer) -> Outer:
        a = first.invoke({"topic": state["topic"]})
        b = second.invoke({"topic": a["steps"][0]})
        return {"steps": [*a["steps"], *b["steps"]]}

    graph = chain(Outer, both=both).compile(checkpointer=saver)
    items = list(graph.stream({"topic": "x"}, config(), stream_mode="updates", subgraphs=True))
    (task_ns,) = {ns[0] for ns, _ in items if ns}
    assert task_ns.startswith("both:")
    assert items == [
        ((task_ns,), {"work": {"steps": ["first:x"]}}),
        ((task_ns, "1"), {"work": {"steps": ["second:first:x"]}}),
        ((), {"both": {"steps": ["first:x", "second:first:x"]}}),
    ]
    for ns, steps in ((task_ns, ["first:x"]), (f"{task_ns}|1", ["second:first:x"])):
        kept = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ns}})
        assert kept is not None and kept.checkpoint["channel_values"]["steps"] == steps


def test_a_pause_in_a_task_s_second_subgraph_resumes_it_without_running_the_first_again(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    first, second = counted(calls, "first"), asking(calls, "second")

    def both(state: Outer) -> Outer:
        calls["both"] += 1
        a = first.invoke({"topic": state["topic"]})
        b = second.invoke({"topic": state["topic"]})
        return {"steps": [*a["steps"], *b["steps"]]}

    graph = chain(Outer, both=both).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "x"}, config())
    assert [i.value for i in paused.value.interrupts] == ["second x?"]
    # get_state shows the subgraph the task stopped in, not the one that finished before it.
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    assert isinstance(task.state, StateSnapshot)
    assert task.state.next == ("ask",)
    assert task.state.config["configurable"]["checkpoint_ns"] == f"both:{task.id}|1"

    out = graph.invoke(Command(resume="yes"), config())
    assert out["steps"] == ["first:x", "second:yes"]
    assert calls == Counter(both=2, first=1, second=2)


def test_the_same_subgraph_twice_in_a_task_asks_twice_under_two_ids(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    child = asking(calls, "ask")

    def twice(state: Outer) -> Outer:
        a = child.invoke({"topic": "one"})
        b = child.invoke({"topic": "two"})
        return {"steps": [*a["steps"], *b["steps"]]}

    graph = chain(Outer, twice=twice).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as one:
        graph.invoke({"topic": "x"}, config())
    with pytest.raises(GraphInterrupt) as two:
        graph.invoke(Command(resume="A"), config())
    (asked_one,), (asked_two,) = one.value.interrupts, two.value.interrupts
    assert (asked_one.value, asked_two.value) == ("ask one?", "ask two?")
    assert asked_one.id != asked_two.id
    out = graph.invoke(Command(resume={asked_two.id: "B"}), config())
    assert out["steps"] == ["ask:A", "ask:B"]
    assert calls["ask"] == 4  # each asked, then ran again to return its answer


async def test_two_subgraphs_in_one_async_task_keep_their_own_namespaces(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    first, second = counted(calls, "first"), asking(calls, "second")

    async def both(state: Outer) -> Outer:
        a = await first.ainvoke({"topic": state["topic"]})
        b = await second.ainvoke({"topic": state["topic"]})
        return {"steps": [*a["steps"], *b["steps"]]}

    graph = chain(Outer, both=both).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        await graph.ainvoke({"topic": "x"}, config())
    out = await graph.ainvoke(Command(resume="ok"), config())
    assert out["steps"] == ["first:x", "second:ok"]
    assert calls == Counter(first=1, second=2)


def test_a_checkpointer_true_subgraph_and_a_default_one_in_one_task(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    kept = counted(calls, "kept", checkpointer=True)
    fresh = counted(calls, "fresh")

    def both(state: Outer) -> Outer:
        a = kept.invoke({"topic": state["topic"]})
        b = fresh.invoke({"topic": state["topic"]})
        return {"steps": [*a["steps"], *b["steps"]]}

    graph = chain(Outer, both=both).compile(checkpointer=saver)
    assert graph.invoke({"topic": "x"}, config())["steps"] == ["kept:x", "fresh:x"]
    # The kept one goes on from its last state; the default one starts over.
    second = graph.invoke({"topic": "y", "steps": []}, config())["steps"]
    assert second == ["kept:x", "fresh:x", "kept:x", "kept:y", "fresh:y"]


def test_a_second_checkpointer_true_subgraph_in_one_task_is_refused(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    one = counted(calls, "one", checkpointer=True)
    two = counted(calls, "two", checkpointer=True)

    def both(state: Outer) -> Outer:
        one.invoke({"topic": "a"})
        two.invoke({"topic": "b"})
        return {}

    graph = chain(Outer, both=both).compile(checkpointer=saver)
    with pytest.raises(MultipleSubgraphsError, match="second checkpointer=True subgraph"):
        graph.invoke({"topic": "x"}, config())


# ---- get_state of a checkpointer=True subgraph called in a node ---------------------------------


def test_get_state_shows_a_paused_checkpointer_true_subgraph_called_in_a_node(
    saver: BaseCheckpointSaver,
) -> None:
    def ask(state: Inner) -> Inner:
        return {"steps": [interrupt("which?")]}

    child = chain(Inner, ask=ask).compile(checkpointer=True)

    def node(state: Outer) -> Outer:
        return {"steps": child.invoke({"topic": state["topic"]})["steps"]}

    graph = chain(Outer, node=node).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "x"}, config())
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    assert isinstance(task.state, StateSnapshot)
    assert task.state.values == {"topic": "x", "steps": []} and task.state.next == ("ask",)
    assert task.state.config["configurable"]["checkpoint_ns"] == "node"
    assert graph.invoke(Command(resume="this"), config())["steps"] == ["this"]


def test_get_state_does_not_show_a_checkpointer_true_subgraph_another_task_ran(
    saver: BaseCheckpointSaver,
) -> None:
    child = chain(Inner, work=lambda state: {"steps": ["work"]}).compile(checkpointer=True)

    def node(state: Outer) -> Outer:
        if state.get("verdict"):
            return {"verdict": interrupt("again?")}  # this time it runs no subgraph
        return {"verdict": "first", "steps": child.invoke({"topic": "x"})["steps"]}

    graph = chain(Outer, node=node).compile(checkpointer=saver)
    graph.invoke({"topic": "x"}, config())
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "y"}, config())
    (task,) = graph.get_state(config(), subgraphs=True).tasks
    assert task.state is None  # the kept state under "node" is from the first invocation's task


# ---- a subgraph compiled with the parent's saver --------------------------------------------------


def test_a_subgraph_compiled_with_the_parent_s_saver_runs_as_its_subgraph(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    own = asking(calls, "review", checkpointer=saver)
    graph = chain(Outer, review=own).compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"topic": "x"}, config())
    assert [i.value for i in paused.value.interrupts] == ["review x?"]
    (task,) = graph.get_state(config()).tasks
    assert task.state == {"configurable": {"thread_id": "t", "checkpoint_ns": f"review:{task.id}"}}
    assert graph.invoke(Command(resume="ok"), config())["steps"] == ["review:ok"]


def test_a_graph_with_the_parent_s_saver_given_another_thread_runs_on_that_thread(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    own = counted(calls, "other", checkpointer=saver)

    def node(state: Outer) -> Outer:
        return {"steps": own.invoke({"topic": "o"}, config("other"))["steps"]}

    graph = chain(Outer, node=node).compile(checkpointer=saver)
    assert graph.invoke({"topic": "x"}, config())["steps"] == ["other:o"]
    assert own.get_state(config("other")).values["steps"] == ["other:o"]


# ---- Command(graph=Command.PARENT) without a parent ---------------------------------------------


def test_command_parent_from_a_graph_run_by_itself_reaches_the_caller() -> None:
    def node(state: Inner) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="elsewhere", update={"topic": "t2"})

    graph = chain(Inner, node=node).compile(checkpointer=InMemorySaver())
    with pytest.raises(ParentCommand) as raised:
        graph.invoke({"topic": "t"}, config())
    assert raised.value.command.goto == "elsewhere"
    assert raised.value.command.update == {"topic": "t2"}
    assert "not running as a subgraph" in "\n".join(raised.value.__notes__)


def test_command_parent_from_a_graph_on_its_own_thread_applies_in_the_calling_node_s_graph(
    saver: BaseCheckpointSaver,
) -> None:
    def escalate(state: Inner) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="manager", update={"verdict": "escalated"})

    team = chain(Inner, escalate=escalate).compile(checkpointer=InMemorySaver())

    def call_team(state: Outer) -> Outer:
        return team.invoke({"topic": state["topic"]}, config("team"))

    def manager(state: Outer) -> Outer:
        return {"steps": [f"manager saw {state['verdict']}"]}

    b = StateGraph(Outer)
    b.add_node("call_team", call_team, destinations=["manager"])
    b.add_node("manager", manager)
    b.add_edge(START, "call_team")
    b.add_edge("manager", END)
    out = b.compile(checkpointer=saver).invoke({"topic": "t"}, config())
    assert out == {"topic": "t", "verdict": "escalated", "steps": ["manager saw escalated"]}
