"""Subgraphs that keep their own state (`compile(checkpointer=True)`) and static pauses
(`interrupt_before` / `interrupt_after`) inside a subgraph, on each saver.

A `checkpointer=True` subgraph keeps its checkpoints under its node's name in the parent's
thread, so each invocation of the parent goes on from the subgraph's last state; a default
subgraph starts over every time. A static pause inside a subgraph pauses the parent, and
`invoke(None, config)` on the parent goes on inside the subgraph.
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
    StateGraph,
    interrupt,
)
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "user_dict_saver", "sqlite", "postgres")


class Inner(TypedDict, total=False):
    topic: str
    seen: Annotated[list[str], operator.add]
    """Only the subgraph has it: what it remembers."""
    reply: str


class Outer(TypedDict, total=False):
    topic: str
    reply: str


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def memory_graph(calls: Counter[str], **compile: Any) -> Any:
    """remember (notes the topic) -> answer (replies with every topic so far)."""

    def remember(state: Inner) -> Inner:
        calls["remember"] += 1
        return {"seen": [state["topic"]]}

    def answer(state: Inner) -> Inner:
        calls["answer"] += 1
        return {"reply": "+".join(state["seen"])}

    b = StateGraph(Inner)
    b.add_node("remember", remember)
    b.add_node("answer", answer)
    b.add_edge(START, "remember")
    b.add_edge("remember", "answer")
    b.add_edge("answer", END)
    return b.compile(**compile)


def parent_of(child: Any, saver: BaseCheckpointSaver) -> Any:
    b = StateGraph(Outer)
    b.add_node("chat", child)
    b.add_edge(START, "chat")
    b.add_edge("chat", END)
    return b.compile(checkpointer=saver)


def test_a_checkpointer_true_subgraph_keeps_its_state_across_the_parent_s_runs(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    graph = parent_of(memory_graph(calls, checkpointer=True), saver)
    assert graph.invoke({"topic": "one"}, config())["reply"] == "one"
    assert graph.invoke({"topic": "two"}, config())["reply"] == "one+two"
    assert graph.invoke({"topic": "x"}, config("other"))["reply"] == "x"  # per thread
    # Kept under the node's name in the parent's thread.
    kept = graph.get_state({"configurable": {"thread_id": "t", "checkpoint_ns": "chat"}})
    assert kept.values["seen"] == ["one", "two"]
    assert kept.metadata["source"] == "loop"


def test_a_default_subgraph_starts_over_on_every_run(saver: BaseCheckpointSaver) -> None:
    graph = parent_of(memory_graph(Counter()), saver)
    graph.invoke({"topic": "one"}, config())
    assert graph.invoke({"topic": "two"}, config())["reply"] == "two"


def test_a_pause_in_a_checkpointer_true_subgraph_resumes_it_and_the_next_run_goes_on(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()

    def remember(state: Inner) -> Inner:
        calls["remember"] += 1
        return {"seen": [state["topic"]]}

    def confirm(state: Inner) -> Inner:
        calls["confirm"] += 1
        return {"reply": f"{'+'.join(state['seen'])}:{interrupt('ok?')}"}

    b = StateGraph(Inner)
    b.add_node("remember", remember)
    b.add_node("confirm", confirm)
    b.add_edge(START, "remember")
    b.add_edge("remember", "confirm")
    b.add_edge("confirm", END)
    graph = parent_of(b.compile(checkpointer=True), saver)

    with pytest.raises(GraphInterrupt) as info:
        graph.invoke({"topic": "one"}, config())
    (asked,) = info.value.interrupts
    state = graph.get_state(config(), subgraphs=True)
    (task,) = state.tasks
    assert task.state is not None and task.state.next == ("confirm",)  # type: ignore[union-attr]
    assert graph.invoke(Command(resume={asked.id: "yes"}), config())["reply"] == "one:yes"
    assert calls == Counter(remember=1, confirm=2)  # resumed where it stopped

    with pytest.raises(GraphInterrupt) as info:
        graph.invoke({"topic": "two"}, config())
    (again,) = info.value.interrupts
    assert again.id != asked.id
    assert graph.invoke(Command(resume="sure"), config())["reply"] == "one+two:sure"


def test_a_finished_checkpointer_true_subgraph_is_not_run_again_when_its_node_pauses_after_it(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    child = memory_graph(calls, checkpointer=True)

    def chat(state: Outer) -> Outer:
        reply = child.invoke({"topic": state["topic"]})["reply"]
        return {"reply": f"{reply}:{interrupt('send it?')}"}

    b = StateGraph(Outer)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    b.add_edge("chat", END)
    graph = b.compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "one"}, config())
    assert graph.invoke(Command(resume="yes"), config())["reply"] == "one:yes"
    assert calls == Counter(remember=1, answer=1)
    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "two"}, config())
    assert graph.invoke(Command(resume="ok"), config())["reply"] == "one+two:ok"
    assert calls == Counter(remember=2, answer=2)


@pytest.mark.parametrize(
    ("option", "waiting"), [("interrupt_before", ("answer",)), ("interrupt_after", ("answer",))]
)
def test_a_static_pause_inside_a_subgraph_pauses_the_parent(
    saver: BaseCheckpointSaver, option: str, waiting: tuple[str, ...]
) -> None:
    calls: Counter[str] = Counter()
    node = "answer" if option == "interrupt_before" else "remember"
    graph = parent_of(memory_graph(calls, **{option: [node]}), saver)
    chunks: list[Any] = []
    with pytest.raises(GraphInterrupt) as info:
        chunks.extend(graph.stream({"topic": "one"}, config(), stream_mode="updates"))
    assert info.value.interrupts == ()
    assert chunks == [{"__interrupt__": ()}]  # the pause shows in the parent's stream
    state = graph.get_state(config(), subgraphs=True)
    assert state.next == ("chat",)
    (task,) = state.tasks
    assert task.state is not None and task.state.next == waiting  # type: ignore[union-attr]
    assert calls == Counter(remember=1)

    assert graph.invoke(None, config()) == {"topic": "one", "reply": "one"}
    assert calls == Counter(remember=1, answer=1)


def test_a_checkpointer_true_subgraph_keeps_its_state_under_ainvoke(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    graph = parent_of(memory_graph(calls, checkpointer=True), saver)

    async def main() -> list[str]:
        return [
            (await graph.ainvoke({"topic": topic}, config()))["reply"] for topic in ("a", "b", "c")
        ]

    assert asyncio.run(main()) == ["a", "a+b", "a+b+c"]
    assert calls == Counter(remember=3, answer=3)
