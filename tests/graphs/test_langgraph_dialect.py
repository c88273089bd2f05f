"""LangGraph's dialect where it decides what runs: the same program, its imports switched
between LangGraph and `graphs`' LangGraph module paths, does the same thing.

Two patterns from LangGraph's guides, where the other dialect (seed 000's, the top-level
`graphs` API) does the unsafe thing:

- The customer-support tutorial denies a sensitive tool by sending a new message to the thread
  paused before the tool node: new input on a paused thread starts again from START and the
  pending tool call never runs.
- The "review tool calls" how-to edits the pending call with `update_state(config,
  {"messages": [edited]})`: the update goes through `add_messages` as the node that ran last,
  replacing the message with that id, so the tool runs with the edited arguments.

Each program is written once and run twice; what it records (the tools that ran, with their
arguments, the final messages, the thread's next nodes) is compared whole.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

DIALECTS = {
    "langgraph": ("langgraph.graph", "langgraph.checkpoint.memory"),
    "graphs": ("graphs.graph", "graphs.checkpoint.memory"),
}


def imports(dialect: str) -> SimpleNamespace:
    """What the program imports: `from <graph> import ...` and `InMemorySaver`."""
    graph_path, memory_path = DIALECTS[dialect]
    graph = importlib.import_module(graph_path)
    memory = importlib.import_module(memory_path)
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        MessagesState=graph.MessagesState,
        START=graph.START,
        END=graph.END,
        InMemorySaver=memory.InMemorySaver,
    )


def booking_agent(lg: SimpleNamespace, booked: list[dict[str, Any]]) -> Any:
    """An assistant that proposes `book_hotel`, a sensitive tool node that books (recording the
    call in `booked`), paused before it (`interrupt_before`), as the customer-support tutorial."""

    def assistant(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            call = {"name": "book_hotel", "args": {"hotel": "Ritz", "nights": 3}, "id": "call_1"}
            return {"messages": [AIMessage(content="", tool_calls=[call], id="ai_1")]}
        return {"messages": [AIMessage(content=f"noted: {last.content}", id="ai_2")]}

    def sensitive_tools(state: dict[str, Any]) -> dict[str, Any]:
        proposal = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        calls = proposal.tool_calls
        booked.extend(dict(c["args"]) for c in calls)
        return {"messages": [ToolMessage(content="booked", tool_call_id=c["id"]) for c in calls]}

    def route(state: dict[str, Any]) -> str:
        last = state["messages"][-1]
        return "sensitive_tools" if getattr(last, "tool_calls", None) else lg.END

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("assistant", assistant)
    builder.add_node("sensitive_tools", sensitive_tools)
    builder.add_edge(lg.START, "assistant")
    builder.add_conditional_edges("assistant", route, ["sensitive_tools", lg.END])
    builder.add_edge("sensitive_tools", "assistant")
    return builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["sensitive_tools"])


def _contents(messages: list[AnyMessage]) -> list[tuple[str, str, Any]]:
    return [(m.type, str(m.content), getattr(m, "tool_calls", None) or None) for m in messages]


def deny_by_new_message(dialect: str) -> dict[str, Any]:
    """The tutorial's denial: at the pause, send the thread a ToolMessage saying no."""
    lg = imports(dialect)
    booked: list[dict[str, Any]] = []
    graph = booking_agent(lg, booked)
    config = {"configurable": {"thread_id": "ticket-1"}}
    graph.invoke({"messages": [HumanMessage(content="book me the Ritz", id="h1")]}, config)
    paused_at = graph.get_state(config).next
    denial = ToolMessage(
        content="API call denied by user. Reasoning: 'too expensive'.",
        tool_call_id="call_1",
        id="t1",
    )
    graph.invoke({"messages": [denial]}, config)
    state = graph.get_state(config)
    return {
        "paused at": paused_at,
        "booked": booked,
        "messages": _contents(state.values["messages"]),
        "next": state.next,
        "sources": [s.metadata["source"] for s in graph.get_state_history(config)],
    }


def edit_pending_call(dialect: str) -> dict[str, Any]:
    """The review how-to's edit: replace the pending AI message (same id) with new arguments,
    then go on with `invoke(None)`."""
    lg = imports(dialect)
    booked: list[dict[str, Any]] = []
    graph = booking_agent(lg, booked)
    config = {"configurable": {"thread_id": "ticket-2"}}
    graph.invoke({"messages": [HumanMessage(content="book me the Ritz", id="h1")]}, config)
    pending = graph.get_state(config).values["messages"][-1]
    call = dict(pending.tool_calls[0], args={"hotel": "Ritz", "nights": 1})
    edited = AIMessage(content="", tool_calls=[call], id=pending.id)
    graph.update_state(config, {"messages": [edited]})
    shown = graph.get_state(config)
    graph.invoke(None, config)
    state = graph.get_state(config)
    return {
        "shown after the edit": (_contents(shown.values["messages"]), shown.next),
        "booked": booked,
        "messages": _contents(state.values["messages"]),
        "next": state.next,
    }


def finished_thread(dialect: str) -> dict[str, Any]:
    """A thread whose run finished, invoked again with `None` (nothing to run: its state), then
    with an input holding a key the state does not have (dropped, the rest applied)."""
    lg = imports(dialect)
    graph = booking_agent(lg, [])
    config = {"configurable": {"thread_id": "ticket-3"}}
    graph.invoke({"messages": [HumanMessage(content="hello", id="h1")], "mood": "x"}, config)
    graph.invoke(None, config)  # paused before the tool: it runs now
    again = graph.invoke(None, config)
    more = graph.invoke({"messages": [HumanMessage(content="thanks", id="h2")], "mood": 1}, config)
    return {
        "again": _contents(again["messages"]),
        "after more input": (_contents(more["messages"]), graph.get_state(config).next),
    }


def usage_report_and_unsaved_pause(dialect: str) -> dict[str, Any]:
    """A node that returns a key the state does not have beside its answer (a usage report),
    then one that asks a question in a graph compiled without a checkpointer."""
    lg = imports(dialect)
    interrupt = importlib.import_module(f"{dialect}.types").interrupt

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content="hi", id="ai_1")], "usage": {"tokens": 12}}

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content=interrupt("sure?"), id="ai_2")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("answer", answer)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "answer")
    builder.add_edge("answer", "ask")
    out = builder.compile().invoke({"messages": [HumanMessage(content="hello", id="h1")]})
    return {
        "messages": _contents(out["messages"]),
        "asked": [i.value for i in out["__interrupt__"]],
        "keys": sorted(out),
    }


def bare_answer_to_two_pauses(dialect: str) -> dict[str, Any]:
    """Two nodes of one step pause; a bare `Command(resume=...)` cannot say which it answers."""
    lg = imports(dialect)
    types = importlib.import_module(f"{dialect}.types")

    def first(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content=types.interrupt("first?"), id="a1")]}

    def second(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content=types.interrupt("second?"), id="a2")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(lg.START, "first")
    builder.add_edge(lg.START, "second")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "ticket-6"}}
    graph.invoke({"messages": []}, config)
    with pytest.raises(RuntimeError) as refused:
        graph.invoke(types.Command(resume="yes"), config)
    answers = {i.id: f"{i.value} yes" for i in graph.get_state(config).interrupts}
    out = graph.invoke(types.Command(resume=answers), config)
    return {
        "refused": str(refused.value).split(".")[0],
        "then": sorted(m.content for m in out["messages"]),
    }


@pytest.mark.parametrize(
    "program",
    [
        deny_by_new_message,
        edit_pending_call,
        finished_thread,
        usage_report_and_unsaved_pause,
        bare_answer_to_two_pauses,
    ],
)
def test_a_ported_program_does_what_it_did_on_langgraph(program: Any) -> None:
    assert program("graphs") == program("langgraph")


def test_a_denied_tool_never_runs() -> None:
    out = deny_by_new_message("graphs")
    assert out["paused at"] == ("sensitive_tools",)
    assert out["booked"] == []
    denial = "API call denied by user. Reasoning: 'too expensive'."
    assert out["messages"][-1] == ("ai", f"noted: {denial}", None)
    assert out["next"] == ()


def test_an_edited_tool_call_runs_edited() -> None:
    out = edit_pending_call("graphs")
    messages, next_nodes = out["shown after the edit"]
    assert [m for m in messages if m[0] == "ai"][-1][2][0]["args"] == {"hotel": "Ritz", "nights": 1}
    assert len(messages) == 2  # the edit replaced the message with that id
    assert next_nodes == ("sensitive_tools",)
    assert out["booked"] == [{"hotel": "Ritz", "nights": 1}]


def test_a_usage_report_is_dropped_and_a_pause_without_a_checkpointer_returns() -> None:
    out = usage_report_and_unsaved_pause("graphs")
    assert out["messages"] == [("human", "hello", None), ("ai", "hi", None)]
    assert (out["asked"], out["keys"]) == (["sure?"], ["__interrupt__", "messages"])


def test_the_top_level_api_keeps_seed_000s_semantics() -> None:
    """The same denial through the top-level `graphs` API: input given to a paused thread is
    applied before its frontier runs (seed 000's documented rule)."""
    import graphs
    from graphs.graph.message import MessagesState

    booked: list[dict[str, Any]] = []
    lg = SimpleNamespace(
        StateGraph=graphs.StateGraph,
        MessagesState=MessagesState,
        START=graphs.START,
        END=graphs.END,
        InMemorySaver=graphs.InMemorySaver,
    )
    graph = booking_agent(lg, booked)
    config = {"configurable": {"thread_id": "seed"}}
    with pytest.raises(graphs.GraphInterrupt):
        graph.invoke({"messages": [HumanMessage(content="book", id="h1")]}, config)
    graph.invoke({"messages": [HumanMessage(content="and breakfast", id="h2")]}, config)
    assert booked == [{"hotel": "Ritz", "nights": 3}]


def test_an_answer_to_a_thread_that_is_not_paused_is_refused_in_both_dialects() -> None:
    """The one place LangGraph's dialect keeps graphs' rule, for safety: LangGraph returns the
    state for `Command(resume=...)` on a finished thread; an answer that reaches no pause (a
    second click on a decided card) is refused loudly."""
    from graphs.errors import ResumeError
    from graphs.types import Command

    lg = imports("graphs")
    graph = booking_agent(lg, [])
    config = {"configurable": {"thread_id": "ticket-4"}}
    graph.invoke({"messages": [HumanMessage(content="hello", id="h1")]}, config)
    graph.invoke(None, config)
    with pytest.raises(ResumeError, match="is not paused: its last run finished"):
        graph.invoke(Command(resume={"approved": True}), config)


def test_graphs_constants_are_langgraphs() -> None:
    import langgraph.constants

    import graphs.constants

    for name in graphs.constants.__all__:
        assert getattr(graphs.constants, name) == getattr(langgraph.constants, name), name


def test_an_update_whose_node_is_not_recorded_is_refused_not_guessed() -> None:
    """Under `durability="exit"` the checkpoint before a run's last one is not saved, so which
    node made the state is unknown: the update names it, rather than being written as START
    (which would run the model again instead of the edited call)."""
    from graphs.errors import InvalidUpdateError

    lg = imports("graphs")
    graph = booking_agent(lg, [])
    config = {"configurable": {"thread_id": "ticket-5"}}
    graph.invoke({"messages": [HumanMessage(content="book", id="h1")]}, config, durability="exit")
    edited = AIMessage(content="no booking", id="ai_1")
    with pytest.raises(InvalidUpdateError, match="pass as_node= the node whose update it is"):
        graph.update_state(config, {"messages": [edited]})
    graph.update_state(config, {"messages": [edited]}, as_node="assistant")
    assert graph.get_state(config).next == ()


def test_an_update_on_a_fresh_fork_is_written_as_the_node_that_made_its_source() -> None:
    """A fork's first checkpoint has no parent in its own thread: the node that made the state
    is read from the checkpoint it was forked from, so the edit replaces the pending call."""
    lg = imports("graphs")
    booked: list[dict[str, Any]] = []
    graph = booking_agent(lg, booked)
    config = {"configurable": {"thread_id": "ticket-6"}}
    graph.invoke({"messages": [HumanMessage(content="book", id="h1")]}, config)
    graph.fork(config, "ticket-6-fork")
    forked = {"configurable": {"thread_id": "ticket-6-fork"}}
    pending = graph.get_state(forked).values["messages"][-1]
    call = dict(pending.tool_calls[0], args={"hotel": "Ritz", "nights": 2})
    graph.update_state(forked, {"messages": [AIMessage("", tool_calls=[call], id=pending.id)]})
    graph.invoke(None, forked)
    assert booked == [{"hotel": "Ritz", "nights": 2}]
