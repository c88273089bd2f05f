"""`recursion_limit` caps the supersteps of one invocation with `GraphRecursionError`."""

from typing import Any, TypedDict

import pytest

from graphs import END, START, GraphInterrupt, GraphRecursionError, InMemorySaver, StateGraph


class State(TypedDict):
    n: int


def forever() -> StateGraph:
    g = StateGraph(State).add_node("inc", lambda s: {"n": s["n"] + 1})
    return g.add_edge(START, "inc").add_edge("inc", "inc")


def chain(length: int) -> StateGraph:
    g = StateGraph(State)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        g.add_node(name, lambda s: {"n": s["n"] + 1})
    for a, b in zip([START, *names], [*names, END]):
        g.add_edge(a, b)
    return g


def test_default_limit_is_25() -> None:
    app = forever().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphRecursionError) as info:
        app.invoke({"n": 0}, config)
    assert (info.value.limit, info.value.current) == (25, 25)
    assert str(info.value) == (
        "Recursion limit of 25 supersteps reached on thread 't' after 25 steps without hitting "
        'END. Raise it with compile(recursion_limit=...) or config["recursion_limit"], or check '
        "the graph for a loop that never exits."
    )
    assert isinstance(info.value, RecursionError)
    # Every step that ran was saved; the thread can go on.
    assert app.get_state(config).values == {"n": 25}


@pytest.mark.parametrize("length, fails", [(5, False), (6, True)])
def test_the_limit_counts_supersteps(length: int, fails: bool) -> None:
    app = chain(length).compile(recursion_limit=5)
    if fails:
        with pytest.raises(GraphRecursionError) as info:
            app.invoke({"n": 0})
        assert (info.value.limit, info.value.current) == (5, 5)
    else:
        assert app.invoke({"n": 0}) == {"n": 5}


def test_per_run_limit_in_the_config_overrides_the_compiled_one() -> None:
    app = chain(30).compile(checkpointer=InMemorySaver(), recursion_limit=50)
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}, "recursion_limit": 10}
    with pytest.raises(GraphRecursionError) as info:
        app.invoke({"n": 0}, config)
    assert (info.value.limit, info.value.current) == (10, 10)
    # The limit is per invocation: a resumed run gets a fresh budget.
    with pytest.raises(GraphRecursionError):
        app.invoke(None, config)
    assert app.invoke(None, {**config, "recursion_limit": 100}) == {"n": 30}


def test_paused_and_resumed_runs_count_from_zero_each_time() -> None:
    app = chain(8).compile(checkpointer=InMemorySaver(), recursion_limit=5, interrupt_before=["n4"])
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphInterrupt):
        app.invoke({"n": 0}, config)
    assert app.invoke(None, config) == {"n": 8}
