"""The patterns of LangGraph's human-in-the-loop, multi-agent and streaming guides, in LangGraph's
dialect: each program is written once, run on LangGraph and on `graphs`' LangGraph module paths
(its imports switched, nothing else), and what it observed is compared whole.

Here: breakpoints and approval (`interrupt_before`, `invoke(None)`), editing the state at a
breakpoint, dynamic interrupts (`interrupt()` and `Command(resume=...)`), a tool wrapped with an
Agent Inbox interrupt (accept, edit, respond), multi-agent handoffs (a tool returning
`Command(graph=Command.PARENT, ...)` from a subgraph agent's `ToolNode`), subgraphs (shared keys,
`get_state(subgraphs=True)`, `stream(subgraphs=True)`'s namespaces), map-reduce with `Send` and
`astream_events` over a node calling a chat model. The second process resuming a thread on SQLite
and PostgreSQL is in `test_langgraph_resume_elsewhere.py`.

What a program records is what a user sees: results, stream chunks (with the random ids of task
namespaces and runs normalised), the state, the history's sources, and which nodes and tools ran
with which arguments.
"""

from __future__ import annotations

import asyncio
import importlib
import operator
import re
import warnings
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool

DIALECTS = ["langgraph", "graphs"]


def imports(dialect: str) -> SimpleNamespace:
    """What a program imports, from LangGraph or from graphs' LangGraph module paths."""
    graph = importlib.import_module(f"{dialect}.graph")
    types = importlib.import_module(f"{dialect}.types")
    prebuilt = importlib.import_module(f"{dialect}.prebuilt")
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        MessagesState=graph.MessagesState,
        START=graph.START,
        END=graph.END,
        add_messages=graph.add_messages,
        InMemorySaver=importlib.import_module(f"{dialect}.checkpoint.memory").InMemorySaver,
        Command=types.Command,
        Send=types.Send,
        interrupt=types.interrupt,
        ToolNode=prebuilt.ToolNode,
        InjectedState=prebuilt.InjectedState,
        tools_condition=prebuilt.tools_condition,
        inbox=importlib.import_module(f"{dialect}.prebuilt.interrupt"),
    )


_TASK_NS = re.compile(r"^([^:|]+):[0-9a-f-]{36}$")


def ns(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """A stream namespace with its task ids hidden; one not of LangGraph's `node:<task id>`
    shape is kept as it is, so the comparison shows it."""
    return tuple(_TASK_NS.sub(r"\1:<task id>", part) for part in namespace)


def shown(value: Any) -> Any:
    """A value as compared: messages as (type, content, tool calls, name), interrupts as their
    values, containers recursively."""
    if hasattr(value, "type") and hasattr(value, "content"):
        calls = [(c["name"], c["args"]) for c in getattr(value, "tool_calls", None) or []]
        return (value.type, value.content, calls, getattr(value, "name", None))
    if type(value).__name__ == "Interrupt":
        return ("Interrupt", shown(value.value))
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(shown(v) for v in value)
    return value


def history(graph: Any, config: Any) -> list[tuple[Any, ...]]:
    """The thread's history, newest first: source, step, next nodes and values."""
    return [
        (s.metadata["source"], s.metadata["step"], s.next, shown(s.values))
        for s in graph.get_state_history(config)
    ]


# --- breakpoints, editing at a breakpoint, dynamic interrupts ------------------------------


class Steps(TypedDict):
    input: str
    seen: Annotated[list[str], operator.add]


def three_steps(lg: SimpleNamespace, ran: list[tuple[str, str]], **compile: Any) -> Any:
    def step(name: str) -> Any:
        def run(state: Steps) -> dict[str, Any]:
            ran.append((name, state["input"]))
            return {"seen": [f"{name} saw {state['input']}"]}

        return run

    builder = lg.StateGraph(Steps)
    for name in ("step_1", "step_2", "step_3"):
        builder.add_node(name, step(name))
    builder.add_edge(lg.START, "step_1")
    builder.add_edge("step_1", "step_2")
    builder.add_edge("step_2", "step_3")
    builder.add_edge("step_3", lg.END)
    return builder.compile(checkpointer=lg.InMemorySaver(), **compile)


def breakpoint_approval(dialect: str) -> dict[str, Any]:
    """The breakpoints guide: pause before `step_3`, look, approve with `invoke(None)`."""
    lg = imports(dialect)
    ran: list[tuple[str, str]] = []
    graph = three_steps(lg, ran, interrupt_before=["step_3"])
    config = {"configurable": {"thread_id": "1"}}
    first = list(graph.stream({"input": "hello"}, config, stream_mode="values"))
    paused = graph.get_state(config)
    second = list(graph.stream(None, config, stream_mode="values"))
    return {
        "first": shown(first),
        "paused": (paused.next, shown(paused.values), [t.name for t in paused.tasks]),
        "second": shown(second),
        "ran": ran,
        "history": history(graph, config),
    }


def edit_at_breakpoint(dialect: str) -> dict[str, Any]:
    """Edit the state at the breakpoint (`update_state`), then go on."""
    lg = imports(dialect)
    ran: list[tuple[str, str]] = []
    graph = three_steps(lg, ran, interrupt_before=["step_2"])
    config = {"configurable": {"thread_id": "1"}}
    first = graph.invoke({"input": "hello"}, config)
    updated = graph.update_state(config, {"input": "hello universe!", "seen": ["edited"]})
    after = graph.get_state(config)
    updates = list(graph.stream(None, config, stream_mode="updates"))
    return {
        "first": shown(first),
        "update's checkpoint is the head": updated == after.config,
        "after the edit": (after.next, shown(after.values), after.metadata["source"]),
        "writes": after.metadata.get("writes"),
        "updates": shown(updates),
        "ran": ran,
        "history": history(graph, config),
    }


def dynamic_interrupt(dialect: str) -> dict[str, Any]:
    """`interrupt()` in a node asks; `Command(resume=...)` answers; the node runs again from its
    top with the answer."""
    lg = imports(dialect)
    ran: list[tuple[str, Any]] = []

    def human_feedback(state: Steps) -> dict[str, Any]:
        ran.append(("human_feedback", "before"))
        feedback = lg.interrupt({"question": "Please provide feedback:", "input": state["input"]})
        ran.append(("human_feedback", feedback))
        return {"input": feedback, "seen": [f"feedback {feedback}"]}

    builder = lg.StateGraph(Steps)
    builder.add_node("step_1", lambda s: {"seen": ["step_1"]})
    builder.add_node("human_feedback", human_feedback)
    builder.add_node("step_3", lambda s: {"seen": [f"step_3 saw {s['input']}"]})
    builder.add_edge(lg.START, "step_1")
    builder.add_edge("step_1", "human_feedback")
    builder.add_edge("human_feedback", "step_3")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    first = list(graph.stream({"input": "hello"}, config, stream_mode="updates"))
    paused = graph.get_state(config)
    interrupt_id = paused.interrupts[0].id
    resumed = list(graph.stream(lg.Command(resume="go to step 3!"), config, stream_mode="updates"))
    return {
        "first": shown(first),
        "paused": (paused.next, shown(paused.interrupts), [t.name for t in paused.tasks]),
        "interrupt id is the task's": paused.tasks[0].interrupts[0].id == interrupt_id,
        "resumed": shown(resumed),
        "ran": ran,
        "state": shown(graph.get_state(config).values),
        "history": history(graph, config),
    }


# --- a tool wrapped with an Agent Inbox interrupt --------------------------------------------


def add_human_in_the_loop(lg: SimpleNamespace, wrapped: BaseTool) -> BaseTool:
    """The guide's wrapper: the tool asks a person (an Agent Inbox `HumanInterrupt`) before it
    runs; `accept` runs it, `edit` runs it with the edited arguments, `response` answers the
    model with the person's words instead."""
    inbox = lg.inbox

    @tool(wrapped.name, description=wrapped.description, args_schema=wrapped.args_schema)
    def call_tool_with_interrupt(config: RunnableConfig, **tool_input: Any) -> Any:
        request = inbox.HumanInterrupt(
            action_request=inbox.ActionRequest(action=wrapped.name, args=tool_input),
            config=inbox.HumanInterruptConfig(
                allow_accept=True, allow_edit=True, allow_respond=True, allow_ignore=False
            ),
            description="Please review the tool call",
        )
        response = lg.interrupt([request])[0]
        if response["type"] == "accept":
            return wrapped.invoke(tool_input, config)
        if response["type"] == "edit":
            return wrapped.invoke(response["args"]["args"], config)
        if response["type"] == "response":
            return response["args"]
        raise ValueError(f"Unsupported interrupt response type: {response['type']}")

    return call_tool_with_interrupt


def inbox_tool(dialect: str) -> dict[str, Any]:
    """A hotel-booking tool behind the wrapper, in a model-and-tools loop; three threads, one
    per answer: accept, edit, respond."""
    lg = imports(dialect)
    inbox = lg.inbox
    booked: list[dict[str, Any]] = []

    @tool
    def book_hotel(hotel_name: str, nights: int) -> str:
        """Book a hotel."""
        booked.append({"hotel_name": hotel_name, "nights": nights})
        return f"Successfully booked {nights} nights at {hotel_name}."

    def model(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            call = {"name": "book_hotel", "args": {"hotel_name": "McKittrick", "nights": 2}}
            return {"messages": [AIMessage("", tool_calls=[dict(call, id="call_1")], id="ai_1")]}
        return {"messages": [AIMessage(f"done: {last.content}", id="ai_2")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", lg.ToolNode([add_human_in_the_loop(lg, book_hotel)]))
    builder.add_edge(lg.START, "model")
    builder.add_conditional_edges("model", lg.tools_condition)
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    answers = {
        "accept": inbox.HumanResponse(type="accept", args=None),
        "edit": inbox.HumanResponse(
            type="edit",
            args=inbox.ActionRequest(
                action="book_hotel", args={"hotel_name": "McKittrick", "nights": 1}
            ),
        ),
        "response": inbox.HumanResponse(type="response", args="Not now: ask me next week."),
    }
    seen: dict[str, Any] = {}
    for kind, answer in answers.items():
        config = {"configurable": {"thread_id": kind}}
        asked = graph.invoke({"messages": [HumanMessage("book a hotel", id="h1")]}, config)
        out = graph.invoke(lg.Command(resume=[answer]), config)
        seen[kind] = {
            "asked": shown(asked["__interrupt__"]),
            "out": shown(out["messages"]),
            "booked": list(booked),
            "next": graph.get_state(config).next,
        }
        booked.clear()
    return seen


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


# --- map-reduce with Send --------------------------------------------------------------------


class Jokes(TypedDict):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def map_reduce(dialect: str) -> dict[str, Any]:
    """The map-reduce guide: one `Send` per subject, their jokes reduced in `Send` order, then the
    best one picked."""
    lg = imports(dialect)
    sent: list[Any] = []

    def generate_topics(state: Jokes) -> dict[str, Any]:
        return {"subjects": [f"{state['topic']} {n}" for n in ("lions", "tigers", "bears")]}

    def generate_joke(state: dict[str, Any]) -> dict[str, Any]:
        sent.append(state)
        return {"jokes": [f"a joke about {state['subject']}"]}

    def continue_to_jokes(state: Jokes) -> list[Any]:
        return [lg.Send("generate_joke", {"subject": s}) for s in state["subjects"]]

    def best_joke(state: Jokes) -> dict[str, Any]:
        return {"best": max(state["jokes"], key=len)}

    builder = lg.StateGraph(Jokes)
    builder.add_node("generate_topics", generate_topics)
    builder.add_node("generate_joke", generate_joke)
    builder.add_node("best_joke", best_joke)
    builder.add_edge(lg.START, "generate_topics")
    builder.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
    builder.add_edge("generate_joke", "best_joke")
    builder.add_edge("best_joke", lg.END)
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    values = list(graph.stream({"topic": "animals"}, config, stream_mode="values"))
    updates = list(graph.stream({"topic": "birds"}, config, stream_mode="updates"))
    # a step's Send tasks finish in any order: their updates as a sorted multiset
    step_2 = sorted(str(u) for u in updates if "generate_joke" in u)
    return {
        "values": values,
        "updates around the Sends": [u for u in updates if "generate_joke" not in u],
        "the Sends' updates": step_2,
        "sent": sorted(str(s) for s in sent),
        "history": history(graph, config),
    }


# --- streaming with events -------------------------------------------------------------------


def model_events(dialect: str) -> list[tuple[Any, ...]]:
    """`astream_events(version="v2")` over a graph whose node calls a langchain_core chat model:
    the graph's, the nodes' and the model's events, in order, with what they carry."""
    lg = imports(dialect)
    model = GenericFakeChatModel(messages=iter([AIMessage("the answer is 42", id="ai_1")]))

    async def call_model(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("call_model", call_model)
    builder.add_node("after", lambda s: {"messages": [AIMessage("bye", id="ai_2")]})
    builder.add_edge(lg.START, "call_model")
    builder.add_edge("call_model", "after")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}

    async def go() -> list[dict[str, Any]]:
        inputs = {"messages": [HumanMessage("what is the answer?", id="h1")]}
        return [e async for e in graph.astream_events(inputs, config, version="v2")]

    events = asyncio.run(go())
    names = {e["run_id"]: e["name"] for e in events}
    rows = []
    for e in events:
        if e["event"].startswith("on_chain") and e["name"] not in ("LangGraph", *graph.nodes):
            continue  # what LangGraph runs inside a task (its writers, routers) is its own
        data = e["data"].get("chunk", e["data"].get("output", e["data"].get("input")))
        rows.append(
            (
                e["event"],
                e["name"],
                e["metadata"].get("langgraph_node"),
                [names.get(p) for p in e["parent_ids"]],
                shown(data),
            )
        )
    return rows


PROGRAMS = [
    breakpoint_approval,
    edit_at_breakpoint,
    dynamic_interrupt,
    inbox_tool,
    handoffs,
    handoff_beside_another_call,
    subgraph_state_and_namespaces,
    map_reduce,
    model_events,
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_guides_pattern_does_what_it_does_on_langgraph(program: Any) -> None:
    with warnings.catch_warnings():
        # LangGraph 1.x deprecates its Agent Inbox types (moved to langchain.agents)
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = program("langgraph")
    assert program("graphs") == expected


def test_a_handoff_from_a_gated_tool_node_still_goes_to_the_parent() -> None:
    """A `ToolNode` with a `before_call` hook runs each call it lets through under `once()`,
    which stores the tool's `Command`: the stored one still names the parent graph."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = handoffs("langgraph")
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
    assert seen == subgraph_state_and_namespaces("langgraph")


def test_a_checkpoint_saved_with_task_ids_of_the_older_shape_reads_them_as_saved() -> None:
    from graphs.checkpoint.base import checkpoint_from_record, checkpoint_record

    record: Any = {"v": 1, "ts": "t", "channel_versions": {}, "paused": []}
    old = checkpoint_from_record("c", {**record, "next_tasks": [["a", "062639f4ad45d7b7"]]}, {})
    assert old["next_tasks"] == [["a", "062639f4ad45d7b7"]]
    new_id = "b1dbc76f-b3d5-401f-69b2-09030a503fcc"
    stored = checkpoint_record({**old, "next_tasks": [["a", new_id]]}, compact=True)
    assert len(stored["next_tasks"][0][1]) == 22
    assert checkpoint_from_record("c", stored, {})["next_tasks"] == [["a", new_id]]
