"""`StateGraph` building and `compile()` validation: every message names the problem."""

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from graphs import (
    END,
    START,
    CheckpointerRequiredError,
    Command,
    GraphSetupError,
    InMemorySaver,
    Send,
    StateGraph,
)


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
    assert setup_error(g.compile) == (
        "Found edge ending at unknown node 'b' (edge 'a' -> 'b'); nodes are: ['a']"
    )


def test_edge_from_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_edge("ghost", END)
    assert setup_error(g.compile) == (
        "Found edge starting at unknown node 'ghost' (edge 'ghost' -> '__end__'); nodes are: ['a']"
    )


def test_join_edge_with_unknown_source() -> None:
    g = one_node().add_edge(START, "a").add_edge(["a", "q"], END)
    assert setup_error(g.compile) == (
        "Found edge starting at unknown node 'q' (edge ['a', 'q'] -> '__end__'); nodes are: ['a']"
    )


def test_path_map_to_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_conditional_edges("a", lambda s: "b", {"b": "bb"})
    assert setup_error(g.compile) == (
        "path_map of conditional edges from 'a' names unknown node 'bb'; nodes are: ['a']"
    )


def test_conditional_edges_from_unknown_node() -> None:
    g = one_node().add_edge(START, "a").add_conditional_edges("zz", lambda s: END)
    assert setup_error(g.compile) == (
        "Found edge starting at unknown node 'zz' (conditional edges from 'zz'); nodes are: ['a']"
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
        "node(s) ['atoll', 'island'] cannot be reached from START: no edge, path_map or "
        "destinations= leads to them, and no node or router on the way may route anywhere "
        "else: add an edge to them, or remove them"
    )


def unannotated(state):  # type: ignore[no-untyped-def]  # may return a Command to anywhere
    return Command(goto="island")


def test_a_node_that_may_return_an_undeclared_command_may_reach_any_node() -> None:
    g = StateGraph(State).add_node("a", unannotated).add_node("island", lambda s: {"x": 2})
    app = g.add_edge(START, "a").compile()  # "island" is reached by a's Command
    assert app.invoke({"x": 1}) == {"x": 2}


def test_so_may_one_annotated_to_return_a_bare_command_or_a_send() -> None:
    def bare(state: State) -> Command:
        return Command(goto="island")

    def sends(state: State) -> Command[Any] | None:
        return Command(goto=[Send("island", state)])

    for fn in (bare, sends):
        g = StateGraph(State).add_node("a", fn).add_node("island", lambda s: {"x": 2})
        assert g.add_edge(START, "a").compile().invoke({"x": 1}) == {"x": 2}


def test_a_node_whose_annotation_rules_out_a_command_reaches_only_its_edges() -> None:
    def typed(state: State) -> dict[str, Any] | None:
        return None

    g = StateGraph(State).add_node("a", typed).add_node("island", unannotated)
    g.add_edge(START, "a")
    assert "['island'] cannot be reached from START" in setup_error(g.compile)


def test_a_dynamic_node_no_run_reaches_reaches_nothing() -> None:
    # "island" may go anywhere, but nothing reaches it; the typed "a" only has its edge to END.
    g = one_node().add_edge(START, "a").add_edge("a", END)
    g.add_node("island", unannotated).add_node("atoll", noop).add_edge("island", "atoll")
    assert "['atoll', 'island'] cannot be reached from START" in setup_error(g.compile)


def test_a_router_with_a_path_map_that_may_send_may_reach_any_node() -> None:
    g = one_node().add_node("b", lambda s: {"x": 3}).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: Send("b", s), {"a": "a"})  # a Send skips the map
    assert g.compile().invoke({"x": 1}) == {"x": 3}

    def route(state: State) -> Literal["a"]:
        return "a"

    g = one_node().add_node("b", noop).add_edge(START, "a")
    g.add_conditional_edges("a", route, {"a": END})
    assert "['b'] cannot be reached from START" in setup_error(g.compile)


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


def test_a_reducer_that_cannot_take_two_values_is_refused_when_the_graph_is_built() -> None:
    def keep(current: list) -> list:
        return current

    class One(TypedDict):
        a: Annotated[list, keep]

    assert setup_error(lambda: StateGraph(One)) == (
        "Invalid reducer signature for state key 'a' in "
        "test_a_reducer_that_cannot_take_two_values_is_refused_when_the_graph_is_built.<locals>."
        "One: test_a_reducer_that_cannot_take_two_values_is_refused_when_the_graph_is_built."
        "<locals>.keep(current: list) -> list cannot be called as reducer(current, update); "
        "expected (a, b) -> c, the value made of both"
    )
    assert "Invalid reducer signature for the root channel" in setup_error(
        lambda: StateGraph(Annotated[list, keep])
    )

    # Two positional values, however declared, make a reducer: defaults, *args, keywords after.
    def merge(a: list, b: list, *, dedupe: bool = False) -> list:
        return a + b

    class Fine(TypedDict):
        a: Annotated[list, merge]
        b: Annotated[list, lambda *parts: [x for p in parts for x in p]]
        c: Annotated[int, max]  # a builtin
        d: Annotated[list, operator.add]

    app = StateGraph(Fine).add_node("n", lambda s: {"a": [1], "b": [2], "c": 3, "d": [4]})
    out = app.add_edge(START, "n").compile().invoke({"a": [0], "b": [0], "c": 1, "d": [0]})
    assert out == {"a": [0, 1], "b": [0, 2], "c": 3, "d": [0, 4]}


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


def async_routed(saver: InMemorySaver | None = None) -> Any:
    seen: list[Any] = []

    async def router(state: State, config: Any) -> str:
        await asyncio.sleep(0)
        seen.append((state["x"], config["configurable"]["thread_id"]))
        return "big" if state["x"] > 1 else END

    class Route:  # a callable object whose __call__ is async
        async def __call__(self, state: State) -> str:
            return END

    g = StateGraph(State).add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("big", lambda s: {"x": s["x"] * 10}).add_edge(START, "a")
    g.add_conditional_edges("a", router).add_conditional_edges("big", Route())
    return g.compile(checkpointer=saver), seen


def test_an_async_router_is_awaited_under_ainvoke_and_astream() -> None:
    app, seen = async_routed()
    assert asyncio.run(app.ainvoke({"x": 0})) == {"x": 1}
    assert asyncio.run(app.ainvoke({"x": 1}, {"configurable": {"thread_id": "t"}})) == {"x": 20}

    async def updates() -> list[Any]:
        return [c async for c in app.astream({"x": 5}, stream_mode="updates")]

    assert asyncio.run(updates()) == [{"a": {"x": 6}}, {"big": {"x": 60}}]
    assert [s[0] for s in seen] == [1, 2, 6] and seen[1][1] == "t"


def test_invoke_refuses_an_async_router_by_name_and_keeps_the_last_checkpoint() -> None:
    saver = InMemorySaver()
    app, _ = async_routed(saver)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(TypeError) as info:
        app.invoke({"x": 1}, config)
    assert str(info.value) == (
        "the router 'router' of the conditional edges from 'a' is async, so it can only run "
        "under the async API: use `await graph.ainvoke(...)` or `graph.astream(...)` (or make "
        "the router a plain function)"
    )
    assert app.get_state(config).next == ("a",)  # the step that needed it is not saved
    assert asyncio.run(app.ainvoke(None, config)) == {"x": 20}  # it goes on under ainvoke


def test_an_async_routers_error_names_where_it_routed() -> None:
    async def router(state: State) -> str:
        raise KeyError("nope")

    app = one_node().add_edge(START, "a").add_conditional_edges("a", router).compile()
    with pytest.raises(KeyError) as info:
        asyncio.run(app.ainvoke({"x": 1}))
    assert any("while routing after node 'a'" in n for n in info.value.__notes__)


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


def test_interrupt_before_and_after_none_pause_nowhere_as_langgraph_s_default() -> None:
    # code that passes its own optional list through (`interrupt_before=before`) gives None
    g = one_node().add_edge(START, "a")
    app = g.compile(checkpointer=InMemorySaver(), interrupt_before=None, interrupt_after=None)
    config: Any = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"x": 1}, config) == {"x": 1}
    assert app.get_state(config).next == ()


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
