"""The multi-agent and subgraph patterns of LangGraph's guides, in LangGraph's dialect: each
program is written once, run on LangGraph and on `graphs`' LangGraph module paths (its imports
switched, nothing else), and what it observed is compared whole.

Here: multi-agent handoffs (a tool returning `Command(graph=Command.PARENT, goto=..., update=...)`
from the `ToolNode` of an agent that is a subgraph), alone and beside another call, and
subgraphs (shared keys, `get_state(subgraphs=True)`, and `stream(subgraphs=True)`'s namespaces,
LangGraph's `node:<task id>`, their ids hidden for the comparison), in memory and read back
from a database.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool

from tests.graphs.langgraph_programs import history, imports, ns, on_langgraph, shown

# --- multi-agent handoffs --------------------------------------------------------------------


def handoffs(dialect: str, beside: bool = False, **tool_node: Any) -> dict[str, Any]:
    """The multi-agent guide's handoff: each agent a subgraph (a scripted model and a `ToolNode`);
    its handoff tool returns `Command(graph=Command.PARENT, goto=<other agent>, update=...)`.
    `beside`: the model asks for the weather in the same message (the tools node leaves with
    the handoff's `Command` alone). `tool_node`: more arguments for the `ToolNode`s (graphs'
    `before_call=`)."""
    lg = imports(dialect)
    ran: list[tuple[str, Any]] = []

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(("weather", city))
        return f"sunny in {city}"

    def handoff_tool(agent: str) -> BaseTool:
        def handoff(state: dict, tool_call_id: str) -> Any:
            ran.append((f"transfer_to_{agent}", len(state["messages"])))
            message = ToolMessage(
                f"Successfully transferred to {agent}",
                name=f"transfer_to_{agent}",
                tool_call_id=tool_call_id,
                id=f"t_{agent}",
            )
            update = {"messages": [*state["messages"], message]}
            return lg.Command(goto=agent, graph=lg.Command.PARENT, update=update)

        # this module's annotations are strings; the tool reads these, the dialect's own
        handoff.__annotations__ = {
            "state": Annotated[dict, lg.InjectedState],
            "tool_call_id": Annotated[str, InjectedToolCallId],
            "return": Any,
        }
        return tool(f"transfer_to_{agent}", description=f"Ask {agent} for help.")(handoff)

    def agent(name: str, other: str) -> Any:
        def model(state: dict[str, Any]) -> dict[str, Any]:
            ran.append((name, [m.type for m in state["messages"]]))
            last = state["messages"][-1]
            if name == "hotel_advisor" or isinstance(last, ToolMessage):
                return {"messages": [AIMessage(f"{name}: stay at McKittrick", id=f"a_{name}")]}
            calls = [{"name": f"transfer_to_{other}", "args": {}, "id": f"call_{name}"}]
            if beside:
                calls.insert(0, {"name": "weather", "args": {"city": "NYC"}, "id": "call_w"})
            return {"messages": [AIMessage("", tool_calls=calls, id=f"a_{name}")]}

        builder = lg.StateGraph(lg.MessagesState)
        builder.add_node("model", model)
        builder.add_node("tools", lg.ToolNode([weather, handoff_tool(other)], **tool_node))
        builder.add_edge(lg.START, "model")
        builder.add_conditional_edges("model", lg.tools_condition)
        builder.add_edge("tools", "model")
        return builder.compile(name=name)

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("travel_advisor", agent("travel_advisor", "hotel_advisor"))
    builder.add_node("hotel_advisor", agent("hotel_advisor", "travel_advisor"))
    builder.add_edge(lg.START, "travel_advisor")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    chunks = list(
        graph.stream(
            {"messages": [HumanMessage("where to stay in NYC?", id="h1")]},
            config,
            stream_mode="updates",
            subgraphs=True,
        )
    )
    return {
        "chunks": [(ns(n), shown(c)) for n, c in chunks],
        "ran": sorted(ran, key=str),  # a step's tool calls run in any order on LangGraph
        "state": shown(graph.get_state(config).values),
        "history": history(graph, config),
    }


def handoff_beside_another_call(dialect: str) -> dict[str, Any]:
    return handoffs(dialect, beside=True)


# --- subgraphs -------------------------------------------------------------------------------


class Parent(TypedDict):
    foo: str


class Child(TypedDict):
    foo: str  # shared with the parent
    bar: str


def subgraph_state_and_namespaces(dialect: str, saver: Any = None) -> dict[str, Any]:
    """A compiled subgraph as a node, sharing `foo`; it pauses in `interrupt()`. The parent's
    `get_state(subgraphs=True)` shows the subgraph's state; `stream(subgraphs=True)` names each
    chunk's graph as `(node:<task id>,)`. `saver`: another than the dialect's `InMemorySaver`."""
    lg = imports(dialect)

    def sub_1(state: Child) -> dict[str, Any]:
        return {"bar": "bar"}

    def sub_2(state: Child) -> dict[str, Any]:
        answer = lg.interrupt(f"ok with {state['bar']}?")
        return {"foo": state["foo"] + state["bar"] + answer}

    child = lg.StateGraph(Child)
    child.add_node("sub_1", sub_1)
    child.add_node("sub_2", sub_2)
    child.add_edge(lg.START, "sub_1")
    child.add_edge("sub_1", "sub_2")
    parent = lg.StateGraph(Parent)
    parent.add_node("node_1", lambda s: {"foo": "hi! " + s["foo"]})
    parent.add_node("node_2", child.compile())
    parent.add_edge(lg.START, "node_1")
    parent.add_edge("node_1", "node_2")
    graph = parent.compile(checkpointer=saver or lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    first = list(graph.stream({"foo": "foo"}, config, stream_mode="updates", subgraphs=True))
    top = graph.get_state(config, subgraphs=True)
    inner = top.tasks[0].state
    inner_ns = inner.config["configurable"]["checkpoint_ns"]
    namespaces = {n for n, _ in first if n}
    resumed = list(
        graph.stream(
            lg.Command(resume="!"), config, stream_mode=["updates", "values"], subgraphs=True
        )
    )
    return {
        "first": [(ns(n), shown(c)) for n, c in first],
        "top": (top.next, top.values, [t.name for t in top.tasks]),
        "inner": (inner.next, inner.values, shown(inner.interrupts), ns((inner_ns,))),
        "the stream's namespace is the state's": namespaces == {(inner_ns,)},
        "task id in it": inner_ns.split(":")[1] == top.tasks[0].id,
        "resumed": [(ns(n), mode, shown(c)) for n, mode, c in resumed],
        "state": graph.get_state(config).values,
    }


@pytest.mark.parametrize(
    "program", [handoffs, handoff_beside_another_call, subgraph_state_and_namespaces]
)
def test_a_guides_pattern_does_what_it_does_on_langgraph(program: Any) -> None:
    assert program("graphs") == on_langgraph(program)


def test_a_handoff_from_a_gated_tool_node_still_goes_to_the_parent() -> None:
    """A `ToolNode` with a `before_call` hook runs each call it lets through under `once()`,
    which stores the tool's `Command`: the stored one still names the parent graph."""
    expected = on_langgraph(handoffs)
    assert handoffs("graphs", before_call=lambda call, state, config: None) == expected


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_subgraph_namespaces_and_task_ids_read_back_from_a_database_as_langgraphs(
    backend: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """`SQLSaver` stores a task id in fewer characters; read back, it is the id the stream
    named, in LangGraph's shape."""
    from graphs.checkpoint.sql import SQLSaver

    url = (
        f"sqlite:///{tmp_path / 'sub.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    saver = SQLSaver(url)
    saver.setup()
    try:
        seen = subgraph_state_and_namespaces("graphs", saver)
    finally:
        saver.close()
    assert seen == on_langgraph(subgraph_state_and_namespaces)


def test_a_checkpoint_saved_with_task_ids_of_the_older_shape_reads_them_as_saved() -> None:
    from graphs.checkpoint.base import checkpoint_from_record, checkpoint_record

    record: Any = {"v": 1, "ts": "t", "channel_versions": {}, "paused": []}
    old = checkpoint_from_record("c", {**record, "next_tasks": [["a", "062639f4ad45d7b7"]]}, {})
    assert old["next_tasks"] == [["a", "062639f4ad45d7b7"]]
    new_id = "b1dbc76f-b3d5-401f-69b2-09030a503fcc"
    stored = checkpoint_record({**old, "next_tasks": [["a", new_id]]}, compact=True)
    assert len(stored["next_tasks"][0][1]) == 22
    assert checkpoint_from_record("c", stored, {})["next_tasks"] == [["a", new_id]]
