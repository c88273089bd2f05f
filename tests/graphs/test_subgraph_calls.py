"""Subgraphs compiled with the parent's own saver, on each saver: given the parent's thread
(or none) they run as its subgraphs; given another thread, on that thread by themselves.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from graphs import (
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    interrupt,
)
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
