"""`get_graph()` draws what LangGraph draws for the same graph.

Each graph is built twice, with graphs and with LangGraph (installed for the tests), and the two
`get_graph()` results are compared whole: the nodes with their metadata, the edges in order
(source, target, label, dashed or not) and the mermaid text. A node's `data` is compared in
LangGraph's dialect (`graphs.graph`), whose drawing names LangGraph's classes as LangGraph's does;
seed 000's top-level graphs carry none.
"""

import operator
from types import SimpleNamespace
from typing import Annotated, Any, Literal, TypedDict

import langgraph.checkpoint.memory
import langgraph.graph
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig

import graphs
import graphs.graph
import graphs.prebuilt

GRAPHS = SimpleNamespace(
    StateGraph=graphs.StateGraph, START=graphs.START, END=graphs.END, Saver=graphs.InMemorySaver
)
DIALECT = SimpleNamespace(
    StateGraph=graphs.graph.StateGraph,
    START=graphs.START,
    END=graphs.END,
    Saver=graphs.InMemorySaver,
)
LANGGRAPH = SimpleNamespace(
    StateGraph=langgraph.graph.StateGraph,
    START=langgraph.graph.START,
    END=langgraph.graph.END,
    Saver=langgraph.checkpoint.memory.InMemorySaver,
)


class State(TypedDict):
    log: Annotated[list, operator.add]


def noop(state: Any) -> dict[str, Any]:
    return {}


def shape(drawn: Any) -> dict[str, Any]:
    """What a user sees of a drawing, but the nodes' data."""
    out = drawn.to_json()
    return {
        "nodes": [{k: v for k, v in n.items() if k not in ("data", "type")} for n in out["nodes"]],
        "edges": out["edges"],
        "mermaid": drawn.draw_mermaid(),
    }


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    """A graph whose every node can be reached: each node gets an edge of some kind from START
    or an earlier node, and may get more (back edges make loops, END edges, joins)."""
    size = draw(st.integers(1, 6))
    names = [f"n{i}" for i in range(size)]
    later = st.sampled_from(names)
    edges: list[tuple[str, str]] = []
    joins: list[tuple[list[str], str]] = []
    routers: list[tuple[str, Any]] = []  # (source, path_map as a dict or a list)
    gotos: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        earlier = st.sampled_from(["__start__", *names[:i]])
        kind = draw(st.sampled_from(["edge", "router", "goto", "join"]))
        source = draw(earlier)
        if kind == "join" and i >= 2:
            sources = draw(
                st.lists(st.sampled_from(names[:i]), min_size=2, max_size=3, unique=True)
            )
            joins.append((sources, name))
        elif kind == "router":
            routers.append((source, draw(st.sampled_from([{"go": name}, [name]]))))
        elif kind == "goto" and source != "__start__":
            gotos.setdefault(source, []).append(name)
        else:
            edges.append((source, name))
    for _ in range(draw(st.integers(0, 3))):
        extra = draw(st.sampled_from(["back", "end", "router_end", "join_end"]))
        a, b = draw(later), draw(later)
        if extra == "back":
            edges.append((a, b))
        elif extra == "end":
            edges.append((a, "__end__"))
        elif extra == "router_end":
            routers.append((a, {"stop": "__end__", "again": b}))
        elif a != b:
            joins.append(([a, b], "__end__"))
    return {
        "names": names,
        "edges": edges,
        "joins": joins,
        "routers": routers,
        "gotos": gotos,
        "goto_labels": draw(st.booleans()),  # destinations={"node": "label"}
        "defer": draw(st.sets(later, max_size=2)),
        "before": sorted(draw(st.sets(later, max_size=2))),
        "after": sorted(draw(st.sets(later, max_size=2))),
    }


def router(name: str) -> Any:
    """A router named `name` (LangGraph refuses two routers of one name from one node)."""

    def route(state: Any) -> str:
        return "__end__"

    route.__name__ = name
    return route


def build(lib: SimpleNamespace, spec: dict[str, Any]) -> Any:
    g = lib.StateGraph(State)
    for name in spec["names"]:
        dests: Any = spec["gotos"].get(name)
        if dests and spec["goto_labels"]:
            dests = {d: f"to {d}" for d in dests}
        elif dests:
            dests = tuple(dests)
        g.add_node(name, noop, defer=name in spec["defer"], destinations=dests)
    for a, b in spec["edges"]:
        g.add_edge(a, b)
    for sources, target in spec["joins"]:
        g.add_edge(sources, target)
    for i, (source, path_map) in enumerate(spec["routers"]):
        g.add_conditional_edges(source, router(f"route{i}"), path_map)
    return g.compile(
        checkpointer=lib.Saver(), interrupt_before=spec["before"], interrupt_after=spec["after"]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_random_graphs_are_drawn_as_langgraph_draws_them(spec: dict[str, Any]) -> None:
    try:
        expected = shape(build(LANGGRAPH, spec).get_graph())
    except TypeError:
        # LangGraph sorts its edges as tuples, and fails on a None label beside a string one.
        assume(False)
    assert shape(build(GRAPHS, spec).get_graph()) == expected


def test_edges_are_sorted_by_source_and_end_edges_come_last() -> None:
    g = graphs.StateGraph(State)
    for name in ("Upper", "lower", "side"):
        g.add_node(name, noop)
    g.add_edge(graphs.START, "Upper").add_edge("Upper", "side").add_edge("Upper", "lower")
    assert g.compile().get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\tUpper --> lower;\n"
        "\tUpper --> side;\n"
        "\t__start__ --> Upper;\n"  # '_' sorts after upper case, before lower case
        "\tlower --> __end__;\n"
        "\tside --> __end__;\n"
    )


def nested(lib: SimpleNamespace, *, in_function: bool) -> Any:
    """A grandparent whose `middle` node is a parent graph whose `inner` node is a child graph
    (or, `in_function`, a function calling it); each level loops through a router."""

    def level(name: str, sub: Any, prefix: str) -> Any:
        g = lib.StateGraph(State)
        g.add_node(f"{prefix}_one", noop)
        if sub is not None and in_function:

            def call(state: State) -> Any:
                return sub.invoke(state)

            g.add_node(name, call)
        elif sub is not None:
            g.add_node(name, sub)
        g.add_edge(lib.START, f"{prefix}_one")
        if sub is not None:
            g.add_edge(name, f"{prefix}_one")
            g.add_conditional_edges(f"{prefix}_one", noop, {"0": name, "1": lib.END})
        else:
            g.add_node(f"{prefix}_two", noop).add_edge(f"{prefix}_two", f"{prefix}_one")
            g.add_conditional_edges(f"{prefix}_one", noop, {"0": f"{prefix}_two", "1": lib.END})
        return g.compile()

    child = level("", None, "c")
    parent = level("inner", child, "p")
    return level("middle", parent, "g")


@pytest.mark.parametrize("in_function", [False, True], ids=["subgraph node", "called in a node"])
@pytest.mark.parametrize("xray", [False, True, 1, 2])
def test_xray_draws_subgraphs_inside_their_nodes_to_the_depth_asked(
    xray: bool | int, in_function: bool
) -> None:
    ours = shape(nested(GRAPHS, in_function=in_function).get_graph(xray=xray))
    assert ours == shape(nested(LANGGRAPH, in_function=in_function).get_graph(xray=xray))
    names = [n["id"] for n in ours["nodes"]]
    if xray is False:
        assert "middle" in names and not any(":" in n for n in names)
    elif xray is True or xray == 2:
        assert "middle:inner:c_two" in names and "middle:inner" not in names
    else:  # one level
        assert "middle:inner" in names and "middle:p_one" in names


def test_a_subgraph_compiled_without_checkpointing_is_not_drawn_inside() -> None:
    inner = graphs.StateGraph(State)
    inner.add_node("x", noop).add_node("y", noop)
    inner.add_edge(graphs.START, "x").add_edge("x", "y")
    g = graphs.StateGraph(State)
    g.add_node("child", inner.compile(checkpointer=False)).add_edge(graphs.START, "child")
    assert list(g.compile().get_graph(xray=True).nodes) == ["__start__", "child", "__end__"]
    g = graphs.StateGraph(State)
    g.add_node("child", inner.compile()).add_edge(graphs.START, "child")
    assert list(g.compile().get_graph(xray=True).nodes) == [
        "__start__",
        "__end__",
        "child:x",
        "child:y",
    ]


async def test_aget_graph_draws_the_same() -> None:
    app = nested(GRAPHS, in_function=False)
    drawn = await app.aget_graph(xray=True)
    assert shape(drawn) == shape(app.get_graph(xray=True))


def test_functions_taking_config_or_injected_arguments_are_read_as_declared() -> None:
    """A router taking `config` by keyword keeps its `Literal` return type, and a node taking
    `writer` keeps the subgraph it calls, as in LangGraph."""

    def build_with(lib: SimpleNamespace) -> Any:
        child = lib.StateGraph(State)
        child.add_node("x", noop).add_node("y", noop)
        child.add_edge(lib.START, "x").add_edge("x", "y")
        sub = child.compile()

        def route(state: State, *, config: RunnableConfig) -> Literal["call", "__end__"]:
            return "call"

        def call(state: State, writer: Any) -> Any:
            return sub.invoke(state)

        g = lib.StateGraph(State)
        g.add_node("first", noop).add_node("call", call)
        g.add_edge(lib.START, "first").add_conditional_edges("first", route)
        return g.compile()

    ours = shape(build_with(GRAPHS).get_graph(xray=True))
    assert ours == shape(build_with(LANGGRAPH).get_graph(xray=True))
    assert "call:y" in [n["id"] for n in ours["nodes"]]
    assert {"source": "first", "target": "__end__", "conditional": True} in ours["edges"]


def test_langgraphs_dialect_draws_the_json_langgraph_draws_node_data_included() -> None:
    """`get_graph().to_json()` of a graph built with `graphs.graph` is LangGraph's, whole: each
    node's data names the class LangGraph holds for it (a function's `RunnableCallable`, a
    subgraph's `CompiledStateGraph`, `ToolNode`, a langchain_core Runnable as itself)."""
    from langchain_core.runnables import RunnableLambda
    from langgraph.prebuilt import ToolNode as LangGraphToolNode

    def lookup(city: str) -> str:
        """Weather in a city."""
        return "sunny"

    def build_with(lib: SimpleNamespace, tool_node: Any) -> Any:
        child = lib.StateGraph(State)
        child.add_node("x", noop).add_edge(lib.START, "x")
        g = lib.StateGraph(State)
        g.add_node("first", noop).add_node("sub", child.compile())
        g.add_node("tools", tool_node([lookup]))
        g.add_node("chain", RunnableLambda(lambda s: {}) | RunnableLambda(lambda s: {}))
        g.add_edge(lib.START, "first").add_edge("first", "sub").add_edge("sub", "tools")
        g.add_edge("tools", "chain")
        return g.compile()

    ours = build_with(DIALECT, graphs.prebuilt.ToolNode).get_graph()
    theirs = build_with(LANGGRAPH, LangGraphToolNode).get_graph()
    assert ours.to_json() == theirs.to_json()
    ids = {n["id"]: n["data"]["id"][-1] for n in ours.to_json()["nodes"] if "data" in n}
    assert ids == {
        "__start__": "RunnableCallable",
        "first": "RunnableCallable",
        "sub": "CompiledStateGraph",
        "tools": "ToolNode",
        "chain": "RunnableSequence",
    }
    assert ours.draw_mermaid() == theirs.draw_mermaid()
    assert build_with(GRAPHS, graphs.prebuilt.ToolNode).get_graph().to_json()["nodes"][0] == {
        "id": "__start__"
    }
