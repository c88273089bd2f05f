"""`StateGraph` building and `compile()` validation: every message names the problem."""

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, CheckpointerRequiredError, GraphSetupError, InMemorySaver, StateGraph


class State(TypedDict):
    x: int


def noop(state: State) -> dict[str, Any]:
    return {}


def one_node() -> StateGraph:
    g = StateGraph(State)
    g.add_node("a", noop)
    return g


def setup_error(build: Any) -> str:
    with pytest.raises(GraphSetupError) as info:
        build()
    return str(info.value)


def test_edge_to_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_edge("a", "b")
    assert setup_error(g.compile) == "edge 'a' -> 'b' names unknown node 'b'; nodes are: ['a']"


def test_edge_from_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_edge("ghost", END)
    assert setup_error(g.compile) == (
        "edge 'ghost' -> '__end__' names unknown node 'ghost'; nodes are: ['a']"
    )


def test_join_edge_with_unknown_source() -> None:
    g = one_node().add_edge(START, "a").add_edge(["a", "q"], END)
    assert setup_error(g.compile) == (
        "edge ['a', 'q'] -> '__end__' names unknown node 'q'; nodes are: ['a']"
    )


def test_path_map_to_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_conditional_edges("a", lambda s: "b", {"b": "bb"})
    assert setup_error(g.compile) == (
        "path_map of conditional edges from 'a' names unknown node 'bb'; nodes are: ['a']"
    )


def test_conditional_edges_from_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_conditional_edges("zz", lambda s: END)
    assert setup_error(g.compile) == (
        "conditional edges from 'zz' names unknown node 'zz'; nodes are: ['a']"
    )


def test_no_entry_point() -> None:
    assert setup_error(one_node().compile) == (
        "the graph has no entry point: add add_edge(START, 'first_node') "
        "(or add_conditional_edges(START, router))"
    )


def test_unreachable_node() -> None:
    g = one_node().add_edge(START, "a").add_edge("a", END)
    g.add_node("island", noop).add_node("atoll", noop).add_edge("island", "atoll")
    assert setup_error(g.compile) == (
        "node(s) ['atoll', 'island'] cannot be reached from START: add an edge to them, or "
        "remove them"
    )


def test_nodes_reachable_only_through_a_path_map_or_a_join_are_reachable() -> None:
    g = StateGraph(State)
    for name in ("a", "b", "c", "d"):
        g.add_node(name, noop)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: ["b", "c"], ["b", "c"])
    g.add_edge(["b", "c"], "d")
    g.compile()  # no error


def test_a_router_without_path_map_may_reach_any_node() -> None:
    g = one_node().add_node("b", noop).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b")
    assert g.compile().invoke({"x": 1}) == {"x": 1}


@pytest.mark.parametrize("name", [START, END, "__secret"])
def test_reserved_node_names(name: str) -> None:
    assert setup_error(lambda: one_node().add_node(name, noop)) == (
        f"node name {name!r} is reserved (START, END and '__' names)"
    )


def test_duplicate_node() -> None:
    assert setup_error(lambda: one_node().add_node("a", noop)) == (
        "node 'a' is already in the graph"
    )


def test_node_taking_three_arguments() -> None:
    assert setup_error(lambda: one_node().add_node("b", lambda s, c, d: {})) == (
        "node 'b' takes 3 arguments; it must take (state) or (state, config)"
    )


def test_add_node_with_function_only_names_it_after_the_function() -> None:
    def shout(state: State) -> dict[str, Any]:
        return {"x": state["x"] * 10}

    g = StateGraph(State).add_node(shout).add_edge(START, "shout")
    assert g.compile().invoke({"x": 2}) == {"x": 20}


def test_reserved_state_key() -> None:
    bad = TypedDict("Bad", {"__x": int})  # type: ignore[misc]
    assert setup_error(lambda: StateGraph(bad)) == (
        "state key '__x' in Bad: names starting with '__' are reserved for the runtime"
    )


def test_two_reducers_on_one_key() -> None:
    class Two(TypedDict):
        a: Annotated[list, operator.add, max]

    assert setup_error(lambda: StateGraph(Two)) == (
        "state key 'a' in test_two_reducers_on_one_key.<locals>.Two has 2 reducers; give one"
    )


def test_schema_must_be_a_typeddict_a_dataclass_or_a_pydantic_model_or_a_type() -> None:
    assert setup_error(lambda: StateGraph("State")) == (  # type: ignore[arg-type]
        "state schema must be a TypedDict, a dataclass or a pydantic model class (or a value's "
        "type, for a root channel: Annotated[list, operator.add]), got 'State': "
        "class State(TypedDict): messages: Annotated[list, operator.add]"
    )


def test_edges_into_start_or_out_of_end_are_refused() -> None:
    assert setup_error(lambda: one_node().add_edge("a", START)) == (
        "START cannot be the end of an edge"
    )
    assert setup_error(lambda: one_node().add_edge(END, "a")) == (
        "END cannot be the start of an edge (END -> 'a')"
    )


def test_async_router_is_refused() -> None:
    async def router(state: State) -> str:
        return END

    assert setup_error(lambda: one_node().add_conditional_edges("a", router)) == (
        "conditional edges from 'a': the router must be a plain function; do async work in a "
        "node and route on its result"
    )


def test_interrupt_before_unknown_node() -> None:
    g = one_node().add_edge(START, "a")
    assert (
        setup_error(lambda: g.compile(checkpointer=InMemorySaver(), interrupt_before=["zz"]))
        == "interrupt_before names unknown node(s) ['zz']; nodes are: ['a']"
    )


def test_interrupt_after_unknown_node() -> None:
    g = one_node().add_edge(START, "a")
    assert (
        setup_error(lambda: g.compile(checkpointer=InMemorySaver(), interrupt_after=["a", "zz"]))
        == "interrupt_after names unknown node(s) ['zz']; nodes are: ['a']"
    )


@pytest.mark.parametrize("option", ["interrupt_before", "interrupt_after"])
def test_static_interrupts_need_a_checkpointer(option: str) -> None:
    g = one_node().add_edge(START, "a")
    assert setup_error(lambda: g.compile(checkpointer=False, **{option: ["a"]})) == (
        "interrupt_before/interrupt_after need a checkpointer to save the pause: "
        "compile(checkpointer=InMemorySaver(), ...) or SQLSaver(url), or compile it without "
        "checkpointer=False to run it as a subgraph"
    )
    # Without one it may still run as a subgraph (on its parent's); on its own it cannot.
    app = g.compile(**{option: ["a"]})
    with pytest.raises(CheckpointerRequiredError) as info:
        app.invoke({})
    assert str(info.value) == (
        "interrupt_before/interrupt_after need a checkpointer to save the pause: "
        "compile(checkpointer=InMemorySaver(), ...) or SQLSaver(url), or run this graph as a "
        "subgraph of a graph that has one"
    )


def test_bad_recursion_limit_and_interrupt_mode() -> None:
    g = one_node().add_edge(START, "a")
    assert setup_error(lambda: g.compile(recursion_limit=0)) == (
        "recursion_limit must be a positive int, got 0"
    )
    assert setup_error(lambda: g.compile(interrupt_mode="pause")) == (  # type: ignore[arg-type]
        "interrupt_mode must be 'raise' or 'return', got 'pause'"
    )


def test_setup_errors_are_value_errors() -> None:
    # Code written against LangGraph catches ValueError for a badly built graph.
    with pytest.raises(ValueError):
        one_node().compile()


def test_a_graph_runs_without_a_checkpointer() -> None:
    g = one_node().add_node("b", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    assert g.compile().invoke({"x": 1}) == {"x": 2}
