"""What `get_state` shows of a subgraph, as LangGraph shows it: a paused subgraph's head
with the writes its finished tasks made in the step that paused, and the `state` config of a
pending task whose node function calls a subgraph; and what `invoke` does given a
subgraph's `checkpoint_ns`.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, BaseCheckpointSaver, Command, GraphInterrupt, StateGraph, interrupt
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite", "postgres")


class State(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def inner() -> Any:
    """Two parallel nodes: `draft` finishes, `ask` pauses in the same step."""

    def draft(state: State) -> State:
        return {"notes": ["drafted"]}

    def ask(state: State) -> State:
        return {"notes": [interrupt("ok?")]}

    b = StateGraph(State)
    b.add_node("draft", draft)
    b.add_node("ask", ask)
    b.add_edge(START, "draft")
    b.add_edge(START, "ask")
    return b.compile()


def parent(review: Any, saver: BaseCheckpointSaver) -> Any:
    """A parent graph whose one node, `review`, is `review`: a compiled subgraph, or a function
    that calls one."""
    b = StateGraph(State)
    b.add_node("review", review)
    b.add_edge(START, "review")
    return b.compile(checkpointer=saver)


def calling(sub: Any) -> Any:
    """A node function that runs `sub` on the node's whole state."""

    def review(state: State) -> State:
        return sub.invoke(state)

    return review


def test_a_paused_subgraph_s_snapshot_shows_its_finished_sibling_s_writes(
    saver: BaseCheckpointSaver,
) -> None:
    graph = parent(inner(), saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"notes": ["start"]}, config())

    child = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert child.values == {"notes": ["start", "drafted"]}
    assert child.next == ("ask",)
    assert sorted(t.name for t in child.tasks) == ["ask", "draft"]
    done = {t.name: t.result for t in child.tasks}
    assert done["draft"] == {"notes": ["drafted"]}
    achild = asyncio.run(graph.aget_state(config(), subgraphs=True)).tasks[0].state
    assert achild.values == child.values and achild.next == ("ask",)
    # Read directly through its config, the subgraph's head shows the same.
    direct = graph.get_state(graph.get_state(config()).tasks[0].state)
    assert direct.values == {"notes": ["start", "drafted"]}
    assert direct.next == ("ask",)


def test_a_pending_task_whose_function_calls_a_subgraph_has_its_state_config(
    saver: BaseCheckpointSaver,
) -> None:
    graph = parent(calling(inner()), saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"notes": ["start"]}, config())

    task = graph.get_state(config()).tasks[0]
    assert task.state == {"configurable": {"thread_id": "t", "checkpoint_ns": f"review:{task.id}"}}
    child = graph.get_state(task.state)
    assert child.values == {"notes": ["start", "drafted"]}
    assert child.next == ("ask",)


def test_a_run_given_a_subgraph_s_config_is_the_parent_s_run_from_its_head(
    saver: BaseCheckpointSaver,
) -> None:
    """As LangGraph: `invoke`/`stream` drop a subgraph's `checkpoint_ns` (and its checkpoint
    id) and run the graph's own thread, which goes on inside the subgraph."""
    graph = parent(inner(), saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"notes": ["start"]}, config())
    task = graph.get_state(config()).tasks[0]
    sub_head = graph.get_state(task.state).config  # with the subgraph's checkpoint_id
    assert sub_head["configurable"]["checkpoint_id"]
    with pytest.raises(GraphInterrupt):  # no answer: it asks again
        graph.invoke(None, sub_head)
    assert graph.get_state(config()).next == ("review",)
    out = list(graph.stream(Command(resume="yes"), task.state, stream_mode="values"))
    # The same as answering through the parent's own config, on another thread.
    with pytest.raises(GraphInterrupt):
        graph.invoke({"notes": ["start"]}, config("u"))
    assert out[-1] == graph.invoke(Command(resume="yes"), config("u"))
    assert "yes" in out[-1]["notes"]
    head = graph.get_state(config())
    assert head.next == () and head.config["configurable"]["checkpoint_ns"] == ""


def test_a_run_given_a_kept_subgraph_s_namespace_runs_the_parent(
    saver: BaseCheckpointSaver,
) -> None:
    """A `checkpointer=True` subgraph's namespace is its node's name: a run given it is the
    parent's, and the subgraph's kept state is not overwritten by the parent's checkpoints."""

    def note(state: State) -> State:
        return {"notes": ["kept"]}

    sb = StateGraph(State)
    sb.add_node("note", note)
    sb.add_edge(START, "note")
    b = StateGraph(State)
    b.add_node("memo", sb.compile(checkpointer=True))
    b.add_edge(START, "memo")
    graph = b.compile(checkpointer=saver)
    graph.invoke({"notes": []}, config())
    kept = {"configurable": {"thread_id": "t", "checkpoint_ns": "memo"}}
    before = graph.get_state(kept).values
    graph.invoke({"notes": []}, kept)
    head = graph.get_state(config())
    assert head.metadata["step"] > 1  # the parent's second run, on its own history
    after = graph.get_state(kept)
    assert after.values != before and after.config["configurable"]["checkpoint_ns"] == "memo"
    assert set(after.values) == {"notes"}


def test_the_checkpoints_stream_names_a_called_subgraph_s_state_as_get_state_does(
    saver: BaseCheckpointSaver,
) -> None:
    graph = parent(calling(inner()), saver)
    seen = []
    with pytest.raises(GraphInterrupt):
        for chunk in graph.stream({"notes": ["start"]}, config(), stream_mode="checkpoints"):
            seen.extend(t for t in chunk["tasks"] if t["name"] == "review")
    (task,) = graph.get_state(config()).tasks
    assert seen and seen[-1]["state"] == task.state
    assert task.state is not None
