"""Property: however a run is cut up (paused at every step, failing, async), it ends the same.

Random DAGs of nodes that append their name to a reducer list, with plain and join edges. The
reference is one uninterrupted `invoke` without a checkpointer.
"""

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from graphs import START, GraphInterrupt, InMemorySaver, StateGraph


class State(TypedDict):
    log: Annotated[list, operator.add]


@st.composite
def dags(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(2, 6))
    names = [f"n{i}" for i in range(size)]
    edges: list[tuple[str, str]] = [(START, names[0])]
    joins: list[tuple[list[str], str]] = []
    for i in range(1, size):
        earlier = [START, *names[:i]]
        sources = draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=3, unique=True))
        if len(sources) > 1 and START not in sources and draw(st.booleans()):
            joins.append((sources, names[i]))
        else:
            edges += [(s, names[i]) for s in sources]
    failing = draw(st.sets(st.sampled_from(names), max_size=2))
    return {"names": names, "edges": edges, "joins": joins, "failing": failing}


def build(dag: dict[str, Any], calls: Counter, fail_once: set[str]) -> StateGraph:
    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            if name in fail_once:
                fail_once.discard(name)
                raise RuntimeError(f"{name} failed")
            calls[name] += 1
            return {"log": [name]}

        return run

    g = StateGraph(State)
    for name in dag["names"]:
        g.add_node(name, node(name))
    for a, b in dag["edges"]:
        g.add_edge(a, b)
    for sources, target in dag["joins"]:
        g.add_edge(sources, target)
    return g


def reference(dag: dict[str, Any]) -> tuple[dict[str, Any], Counter]:
    calls: Counter = Counter()
    return build(dag, calls, set()).compile().invoke({"log": []}), calls


def drive(app: Any, config: Any) -> dict[str, Any]:
    """Start, then keep resuming through pauses and failures until the run finishes."""
    value: Any = {"log": []}
    for _ in range(100):
        try:
            return app.invoke(value, config)
        except (GraphInterrupt, RuntimeError):
            value = None
    raise AssertionError("the run never finished")


@settings(max_examples=60, deadline=None)
@given(dags())
def test_pausing_before_every_node_changes_nothing(dag: dict[str, Any]) -> None:
    expected, expected_calls = reference(dag)
    calls: Counter = Counter()
    app = build(dag, calls, set()).compile(checkpointer=InMemorySaver(), interrupt_before="*")
    assert drive(app, {"configurable": {"thread_id": "t"}}) == expected
    assert calls == expected_calls


@settings(max_examples=60, deadline=None)
@given(dags())
def test_pausing_after_every_node_changes_nothing(dag: dict[str, Any]) -> None:
    expected, expected_calls = reference(dag)
    calls: Counter = Counter()
    app = build(dag, calls, set()).compile(checkpointer=InMemorySaver(), interrupt_after="*")
    assert drive(app, {"configurable": {"thread_id": "t"}}) == expected
    assert calls == expected_calls


@settings(max_examples=60, deadline=None)
@given(dags())
def test_failures_and_resumes_change_nothing(dag: dict[str, Any]) -> None:
    expected, expected_calls = reference(dag)
    calls: Counter = Counter()
    app = build(dag, calls, set(dag["failing"])).compile(checkpointer=InMemorySaver())
    assert drive(app, {"configurable": {"thread_id": "t"}}) == expected
    assert calls == expected_calls  # no node that finished ran twice


@settings(max_examples=30, deadline=None)
@given(dags())
def test_ainvoke_matches_invoke(dag: dict[str, Any]) -> None:
    expected, expected_calls = reference(dag)
    calls: Counter = Counter()
    app = build(dag, calls, set()).compile(checkpointer=InMemorySaver())
    result = asyncio.run(app.ainvoke({"log": []}, {"configurable": {"thread_id": "t"}}))
    assert (result, calls) == (expected, expected_calls)
