"""`fork`: run again from a past checkpoint, explicitly, in a new thread.

History never branches inside a thread: `invoke` and `update_state` given a past checkpoint
are refused (with a message that says to fork), and `fork(config, thread_id)` copies the
checkpoint into a new thread that then runs on its own. Every test runs on each saver.
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
    InvalidUpdateError,
    ResumeError,
    Send,
    StateGraph,
    interrupt,
)
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "user_dict_saver", "sqlite", "postgres")


class S(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]
    note: str


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def abc(saver: BaseCheckpointSaver, calls: Counter[str]) -> Any:
    """a -> b -> c, each appending its name; counts each node's runs."""

    def node(name: str) -> Any:
        def run(state: S) -> S:
            calls[name] += 1
            return {"steps": [name]}

        return run

    b = StateGraph(S)
    for name in "abc":
        b.add_node(name, node(name))
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    return b.compile(checkpointer=saver)


def checkpoint_before(graph: Any, thread: str, node: str) -> Any:
    """The snapshot of `thread`'s history whose next node is `node`."""
    (snap,) = [s for s in graph.get_state_history(config(thread)) if s.next == (node,)]
    return snap


def ids(graph: Any, thread: str) -> list[str]:
    return [
        s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config(thread))
    ]


def test_a_fork_replays_from_a_past_checkpoint_in_a_new_thread(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = abc(saver, calls)
    graph.invoke({"steps": []}, config("t"))
    before = ids(graph, "t")
    past = checkpoint_before(graph, "t", "b")

    forked = graph.fork(past.config, "copy")
    assert forked["configurable"]["thread_id"] == "copy"
    start = graph.get_state(forked)
    assert start.values == {"steps": ["a"]} and start.next == ("b",)
    assert start.parent_config is None  # the new thread's first checkpoint
    assert start.metadata["source"] == "fork"
    assert start.metadata["forked_from"] == {
        "thread_id": "t",
        "checkpoint_id": past.config["configurable"]["checkpoint_id"],
    }

    calls.clear()
    assert graph.invoke(None, forked) == {"steps": ["a", "b", "c"]}
    assert calls == Counter(b=1, c=1)  # only what came after the checkpoint runs again
    assert ids(graph, "t") == before  # the source thread has no new checkpoint
    assert graph.get_state(config("t")).values == {"steps": ["a", "b", "c"]}
    assert [s.metadata["source"] for s in graph.get_state_history(config("copy"))] == [
        "loop",
        "loop",
        "fork",
    ]


def test_a_fork_can_change_the_copy_first(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = abc(saver, calls)
    graph.invoke({"steps": []}, config("t"))
    past = checkpoint_before(graph, "t", "b")

    # Without as_node: keys replaced as given, the frontier kept.
    replaced = graph.fork(past.config, "replaced", values={"steps": ["A"], "note": "fixed"})
    assert graph.invoke(None, replaced) == {"steps": ["A", "b", "c"], "note": "fixed"}
    # As node b: through the reducer, and on to what follows b.
    calls.clear()
    as_b = graph.fork(past.config, "as-b", values={"steps": ["B"]}, as_node="b")
    assert graph.get_state(as_b).next == ("c",)
    assert graph.invoke(None, as_b) == {"steps": ["a", "B", "c"]}
    assert calls == Counter(c=1)
    assert graph.get_state(config("t")).values == {"steps": ["a", "b", "c"]}


def test_without_a_checkpoint_id_the_head_is_forked(saver: BaseCheckpointSaver) -> None:
    graph = abc(saver, Counter())
    graph.invoke({"steps": []}, config("t"))
    forked = graph.fork(config("t"))
    assert forked["configurable"]["thread_id"] != "t"
    assert graph.get_state(forked).values == {"steps": ["a", "b", "c"]}
    assert graph.get_state(forked).next == ()


def test_update_state_given_a_past_checkpoint_is_refused_and_writes_nothing(
    saver: BaseCheckpointSaver,
) -> None:
    graph = abc(saver, Counter())
    graph.invoke({"steps": []}, config("t"))
    before = ids(graph, "t")
    past = checkpoint_before(graph, "t", "b")
    with pytest.raises(InvalidUpdateError) as info:
        graph.update_state(past.config, {"note": "x"})
    assert str(info.value) == (
        f"update_state on thread 't' names checkpoint {past.config['configurable']['checkpoint_id']}, "
        f"which is not the thread's latest ({before[0]}): an update goes on the latest "
        "checkpoint only. To change a past checkpoint, fork it into a new thread: "
        "graph.fork(config, thread_id, values=...); to update the latest, drop checkpoint_id "
        "from the config"
    )
    assert ids(graph, "t") == before
    # The head's own config (what get_state gives) is an update of the head.
    graph.update_state(graph.get_state(config("t")).config, {"note": "x"})
    assert graph.get_state(config("t")).values["note"] == "x"


def test_invoke_from_a_past_checkpoint_is_refused_and_says_to_fork(
    saver: BaseCheckpointSaver,
) -> None:
    graph = abc(saver, Counter())
    graph.invoke({"steps": []}, config("t"))
    before = ids(graph, "t")
    past = checkpoint_before(graph, "t", "b")
    with pytest.raises(ResumeError, match=r"fork it into a new thread first"):
        graph.invoke(None, past.config)
    assert ids(graph, "t") == before


def test_a_fork_into_a_thread_that_exists_or_from_nothing_is_refused(
    saver: BaseCheckpointSaver,
) -> None:
    graph = abc(saver, Counter())
    graph.invoke({"steps": []}, config("t"))
    graph.invoke({"steps": []}, config("other"))
    past = checkpoint_before(graph, "t", "b")
    with pytest.raises(InvalidUpdateError, match=r"thread 'other' already exists"):
        graph.fork(past.config, "other")
    assert graph.get_state(config("other")).values == {"steps": ["a", "b", "c"]}
    with pytest.raises(ResumeError, match=r"thread 'nobody' has no checkpoint"):
        graph.fork(config("nobody"), "new")
    assert graph.get_state(config("new")).created_at is None


def approval(saver: BaseCheckpointSaver | None, calls: Counter[str]) -> Any:
    """ask (interrupt) alone; compiled without a saver, it is a subgraph."""

    def ask(state: S) -> S:
        calls["ask"] += 1
        return {"steps": [f"ask:{interrupt('ship it?')}"]}

    b = StateGraph(S)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile(checkpointer=saver)


def test_a_fork_of_a_paused_thread_asks_again_and_each_is_answered_on_its_own(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    graph = approval(saver, calls)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"steps": []}, config("t"))
    (original,) = graph.get_state(config("t")).interrupts

    forked = graph.fork(config("t"), "copy")
    with pytest.raises(GraphInterrupt) as info:
        graph.invoke(None, forked)
    (asked,) = info.value.interrupts
    assert asked.value == "ship it?" and asked.id != original.id
    # The original's pause cannot answer the fork's, and the other way round.
    with pytest.raises(ResumeError):
        graph.invoke(Command(resume={original.id: "no"}), config("copy"))
    assert graph.invoke(Command(resume={asked.id: "no"}), config("copy")) == {"steps": ["ask:no"]}
    assert graph.get_state(config("t")).interrupts == (original,)
    assert graph.invoke(Command(resume="yes"), config("t")) == {"steps": ["ask:yes"]}


def test_a_fork_of_a_fan_out_runs_each_send_with_its_own_arg(saver: BaseCheckpointSaver) -> None:
    def split(state: S) -> S:
        return {}

    def work(arg: Any) -> S:
        return {"steps": [f"work:{arg['item']}"]}

    b = StateGraph(S)
    b.add_node("split", split)
    b.add_node("work", work)
    b.add_edge(START, "split")
    b.add_conditional_edges("split", lambda s: [Send("work", {"item": i}) for i in "xy"])
    b.add_edge("work", END)
    graph = b.compile(checkpointer=saver)
    graph.invoke({"steps": []}, config("t"))
    (past,) = [s for s in graph.get_state_history(config("t")) if s.next == ("work", "work")]
    forked = graph.fork(past.config, "copy")
    assert graph.invoke(None, forked) == {"steps": ["work:x", "work:y"]}


def test_afork_replays_in_a_new_thread(saver: BaseCheckpointSaver) -> None:
    calls: Counter[str] = Counter()
    graph = abc(saver, calls)

    async def main() -> Any:
        await graph.ainvoke({"steps": []}, config("t"))
        history = [s async for s in graph.aget_state_history(config("t"))]
        (past,) = [s for s in history if s.next == ("c",)]
        forked = await graph.afork(past.config, "copy", values={"note": "async"})
        calls.clear()
        return await graph.ainvoke(None, forked)

    assert asyncio.run(main()) == {"steps": ["a", "b", "c"], "note": "async"}
    assert calls == Counter(c=1)
    assert "note" not in graph.get_state(config("t")).values


def test_a_fork_of_a_thread_paused_in_a_subgraph_runs_the_subgraph_afresh(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    b = StateGraph(S)
    b.add_node("review", approval(None, calls))
    b.add_edge(START, "review")
    b.add_edge("review", END)
    graph = b.compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"steps": []}, config("t"))
    (original,) = graph.get_state(config("t")).interrupts

    forked = graph.fork(config("t"), "copy")
    with pytest.raises(GraphInterrupt) as info:
        graph.invoke(None, forked)
    (asked,) = info.value.interrupts
    assert asked.id != original.id and calls["ask"] == 2
    assert graph.invoke(Command(resume="no"), config("copy")) == {"steps": ["ask:no"]}
    assert graph.invoke(Command(resume="yes"), config("t")) == {"steps": ["ask:yes"]}
