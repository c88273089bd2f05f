"""The patterns of LangGraph's human-in-the-loop and streaming guides, in LangGraph's dialect:
each program is written once, run on LangGraph and on `graphs`' LangGraph module paths (its
imports switched, nothing else), and what it observed is compared whole.

Here: breakpoints and approval (`interrupt_before`, `invoke(None)`), editing the state at a
breakpoint, dynamic interrupts (`interrupt()` and `Command(resume=...)`), a tool wrapped with an
Agent Inbox interrupt (accept, edit, respond), map-reduce with `Send` and `astream_events` over a
node calling a chat model. Multi-agent handoffs and subgraphs are in
`test_langgraph_multiagent.py`; a thread resumed by a second process on SQLite and PostgreSQL in
`test_langgraph_resume_elsewhere.py`.

What a program records is what a user sees: results, stream chunks, the state, the history's
sources, and which nodes and tools ran with which arguments.
"""

from __future__ import annotations

import asyncio
import operator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool

from tests.graphs.langgraph_programs import history, imports, on_langgraph, shown

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
    """`astream_events(version="v2")` over a graph whose nodes call a langchain_core chat model
    with their config (an async node, then a sync one): the graph's, the nodes' and the
    models' events, in order, with what they carry."""
    lg = imports(dialect)
    model = GenericFakeChatModel(messages=iter([AIMessage("the answer is 42", id="ai_1")]))
    closing = GenericFakeChatModel(messages=iter([AIMessage("bye now", id="ai_2")]))

    async def call_model(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    def after(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [closing.invoke(state["messages"], config)]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("call_model", call_model)
    builder.add_node("after", after)
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
    map_reduce,
    model_events,
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_guides_pattern_does_what_it_does_on_langgraph(program: Any) -> None:
    assert program("graphs") == on_langgraph(program)
