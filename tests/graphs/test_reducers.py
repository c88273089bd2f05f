"""State schema: reducer keys merge, plain keys are overwritten, bad updates name the culprit."""

import operator
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from graphs import END, START, InMemorySaver, InvalidUpdateError, StateGraph


class State(TypedDict):
    log: Annotated[list, operator.add]
    total: Annotated[int, operator.add]
    status: str


def chain(*steps: Any, checkpointer: Any = None) -> Any:
    """A graph running `steps` (node functions) one after another."""
    g = StateGraph(State)
    names = [f"n{i}" for i in range(len(steps))]
    for name, fn in zip(names, steps):
        g.add_node(name, fn)
    for a, b in zip([START, *names], [*names, END]):
        g.add_edge(a, b)
    return g.compile(checkpointer=checkpointer)


def test_reducer_keys_merge_and_plain_keys_are_overwritten() -> None:
    app = chain(
        lambda s: {"log": ["one"], "total": 1, "status": "started"},
        lambda s: {"log": ["two"], "total": 10, "status": "done"},
    )
    assert app.invoke({"log": ["in"], "total": 100, "status": "new"}) == {
        "log": ["in", "one", "two"],
        "total": 111,
        "status": "done",
    }


def test_nodes_return_partial_updates_and_none_changes_nothing() -> None:
    seen: list[dict[str, Any]] = []

    def look(state: State) -> None:
        seen.append(dict(state))

    app = chain(lambda s: {"status": "a"}, look, lambda s: {"total": 2})
    assert app.invoke({"log": [], "total": 1, "status": ""}) == {
        "log": [],
        "total": 3,
        "status": "a",
    }
    assert seen == [{"log": [], "total": 1, "status": "a"}]


def test_a_reducer_key_starts_from_the_empty_value_of_its_type() -> None:
    app = chain(lambda s: {"log": ["x"], "total": 5})
    assert app.invoke({"status": "s"}) == {"status": "s", "log": ["x"], "total": 5}


def test_a_custom_reducer() -> None:
    def merge(old: dict[str, int], new: dict[str, int]) -> dict[str, int]:
        return {**old, **{k: old.get(k, 0) + v for k, v in new.items()}}

    class Votes(TypedDict):
        votes: Annotated[dict, merge]

    g = StateGraph(Votes)
    g.add_node("alice", lambda s: {"votes": {"yes": 1}})
    g.add_node("bob", lambda s: {"votes": {"yes": 1, "no": 0}})
    g.add_edge(START, "alice").add_edge(START, "bob")
    assert g.compile().invoke({"votes": {"no": 2}}) == {"votes": {"no": 2, "yes": 2}}


def test_not_required_keys_are_channels_too() -> None:
    class Partial(TypedDict):
        items: NotRequired[Annotated[list, operator.add]]
        note: NotRequired[str]

    g = StateGraph(Partial).add_node("a", lambda s: {"items": [1], "note": "n"})
    g.add_edge(START, "a")
    assert g.compile().invoke({"items": [0]}) == {"items": [0, 1], "note": "n"}


def test_node_returning_an_unknown_key() -> None:
    app = chain(lambda s: {"nope": 1}, checkpointer=InMemorySaver())
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"status": "s"}, {"configurable": {"thread_id": "t"}})
    assert str(info.value) == (
        "node 'n0' returned unknown state key 'nope'; the state's keys are: "
        "['log', 'status', 'total']"
    )
    assert info.value.__notes__ == [
        (
            "while running node 'n0' on thread 't'; the last checkpoint is kept: fix the "
            "cause, then resume with invoke(None, config)"
        )
    ]


def test_node_returning_a_non_dict() -> None:
    app = chain(lambda s: ["status", "x"])
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"status": "s"})
    assert str(info.value) == (
        "node 'n0' returned list ['status', 'x']; a node must return a dict of state updates "
        "(or None, or a Command)"
    )


def test_a_failing_reducer_names_the_key_and_the_node() -> None:
    app = chain(lambda s: {"total": "many"})
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"total": 1})
    assert str(info.value) == (
        "the reducer of state key 'total' failed on the value from 'n0': TypeError: "
        "unsupported operand type(s) for +: 'int' and 'str'"
    )


def test_input_with_an_unknown_key_or_not_a_dict() -> None:
    app = chain(lambda s: {})
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"zz": 1})
    assert str(info.value) == (
        "the input has unknown state key(s) ['zz']; the state's keys are: "
        "['log', 'status', 'total']"
    )
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke(["status"])  # type: ignore[arg-type]
    assert str(info.value) == "the input must be a dict of state keys, got list ['status']"


def test_input_goes_through_the_reducers_on_a_thread_that_has_state() -> None:
    app = chain(lambda s: {"log": ["ran"]}, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": ["first"], "status": "a"}, config)
    assert app.invoke({"log": ["second"]}, config) == {
        "log": ["first", "ran", "second", "ran"],
        "status": "a",
        "total": 0,  # an operator.add int key nothing wrote: int(), as in LangGraph
    }


def test_required_inside_annotated_still_has_an_empty_value() -> None:
    """`Annotated[NotRequired[list], add]` starts at `[]`, as LangGraph's does."""
    import operator
    from typing import Annotated, NotRequired, TypedDict

    from graphs.graph import END, START, StateGraph

    class S(TypedDict, total=False):
        log: Annotated[NotRequired[list], operator.add]
        x: str

    g = StateGraph(S)
    g.add_node("n", lambda s: {"log": ["n"]})
    g.add_edge(START, "n")
    g.add_edge("n", END)
    assert g.compile().invoke({"x": "in", "log": ["a"]}) == {"x": "in", "log": ["a", "n"]}
    g2 = StateGraph(S)
    g2.add_node("n", lambda s: {"x": "out"})
    g2.add_edge(START, "n")
    g2.add_edge("n", END)
    assert g2.compile().invoke({"x": "in"}) == {"x": "out", "log": []}
