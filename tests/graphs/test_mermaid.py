"""`get_graph().draw_mermaid()`: LangGraph's mermaid text for the same graph.

The expected texts are what LangGraph 1.2 draws for these graphs (checked side by side when this
was written): START and END as stadium nodes, plain and join edges solid, a router's
destinations (its path_map, labelled by key, or its `Literal` return type) and `Command` targets
dashed, static pauses noted on their nodes.
"""

import operator
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.tools import tool

from graphs import END, START, Command, InMemorySaver, StateGraph
from graphs.graph import MessagesState
from graphs.prebuilt import ToolNode, create_react_agent, tools_condition


class State(TypedDict):
    x: Annotated[list, operator.add]


def noop(state: Any) -> dict[str, Any]:
    return {}


def route(state: State) -> Literal["b", "__end__"]:
    return "b"


def jump(state: State) -> Command[Literal["c"]]:
    return Command(goto="c")


def test_every_kind_of_edge_as_langgraph_draws_it() -> None:
    g = StateGraph(State)
    for name in ("a", "b", "c"):
        g.add_node(name, noop)
    g.add_node("d", jump).add_node("e", noop)
    g.add_edge(START, "a").add_edge(START, "e")
    g.add_conditional_edges("a", route)
    g.add_conditional_edges("b", lambda s: "x", {"x": "c", "done": END, "d": "d"})
    g.add_edge("c", END).add_edge(["c", "e"], "b")
    app = g.compile(
        checkpointer=InMemorySaver(), interrupt_before=["c"], interrupt_after=["c", "a"]
    )
    assert app.get_graph().draw_mermaid() == (
        "---\n"
        "config:\n"
        "  flowchart:\n"
        "    curve: linear\n"
        "---\n"
        "graph TD;\n"
        "\t__start__([<p>__start__</p>]):::first\n"
        "\ta(a<hr/><small><em>__interrupt = after</em></small>)\n"
        "\tb(b)\n"
        "\tc(c<hr/><small><em>__interrupt = before,after</em></small>)\n"
        "\td(d)\n"
        "\te(e)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> a;\n"
        "\t__start__ --> e;\n"
        "\ta -.-> __end__;\n"
        "\ta -.-> b;\n"
        "\tb -. &nbsp;done&nbsp; .-> __end__;\n"
        "\tb -. &nbsp;x&nbsp; .-> c;\n"
        "\tb -.-> d;\n"
        "\tc --> b;\n"
        "\td -.-> c;\n"
        "\te --> b;\n"
        "\tclassDef default fill:#f2f0ff,line-height:1.2\n"
        "\tclassDef first fill-opacity:0\n"
        "\tclassDef last fill:#bfb6fc\n"
    )


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_an_agent_loop_without_styles() -> None:
    g = StateGraph(MessagesState)
    g.add_node("agent", noop).add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent").add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    expected = (
        "graph TD;\n"
        "\t__start__ --> agent;\n"
        "\tagent -.-> __end__;\n"
        "\tagent -.-> tools;\n"
        "\ttools --> agent;\n"
    )
    assert g.compile().get_graph().draw_mermaid(with_styles=False) == expected
    agent = create_react_agent(lambda messages: None, [add])
    assert agent.get_graph().draw_mermaid(with_styles=False) == expected


def test_a_router_that_declares_nothing_is_not_drawn() -> None:
    g = StateGraph(State)
    g.add_node("only", noop).add_edge(START, "only")
    g.add_conditional_edges("only", lambda s: END)
    assert g.compile().get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> only;\n\tonly --> __end__;\n"
    )


def test_the_graph_object_lists_nodes_and_edges() -> None:
    g = StateGraph(State)
    g.add_node("a", noop).add_node("b", noop)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    drawn = g.compile().get_graph()
    assert list(drawn.nodes) == ["__start__", "a", "b", "__end__"]
    assert [(e.source, e.target, e.conditional) for e in drawn.edges] == [
        ("__start__", "a", False),
        ("a", "b", False),
        ("b", "__end__", False),
    ]
