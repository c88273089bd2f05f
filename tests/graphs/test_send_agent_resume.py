"""A tool-calling agent with one `Send` per tool call (the shape of `create_react_agent`'s
`version="v2"`), paused before its tools or inside one, resumed from a SQLite file by a new
saver and a freshly compiled graph, as after a restart: the conversation comes back whole (the
question, the model's call, each tool's answer, the final reply) and each tool runs once.

LangGraph's `send_react_interrupt` tests edit the pending call with `update_state(config,
values)` and no `as_node`, which graphs deliberately applies as a replacement (docs/langgraph.md):
a lone message given for the `messages` list is refused rather than made the whole list. With
`as_node=` naming the model node, the edit goes through `add_messages` and re-routes, as
LangGraph's inferred node does.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from graphs import END, START, Command, InvalidUpdateError, Send, StateGraph, interrupt
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import MessagesState
from graphs.prebuilt import create_react_agent

CALLS = [
    {"name": "lookup", "args": {"order": "o-1"}, "id": "call_a", "type": "tool_call"},
    {"name": "refund", "args": {"amount": 5}, "id": "call_b", "type": "tool_call"},
]


def _agent(ran: Counter[str], *, ask: bool, calls: list[dict[str, Any]] = CALLS) -> StateGraph:
    """model -> one Send("tool", call) per tool call -> model, until the model answers."""

    def model(state: MessagesState) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": AIMessage("done", id="ai_final")}
        return {"messages": AIMessage("", id="ai_call", tool_calls=calls)}

    def route(state: MessagesState) -> Any:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return [Send("tool", call) for call in last.tool_calls]
        return END

    def tool(call: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"call": call["id"]}) if ask else "ok"
        ran[call["id"]] += 1
        return {"messages": ToolMessage(f"{call['args']} {answer}", tool_call_id=call["id"])}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("tool", tool)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tool", END])
    g.add_edge("tool", "model")
    return g


def _shape(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    """Each message as (type, what identifies it): enough to see the whole list, in order."""
    return [
        (m.type, m.tool_call_id if isinstance(m, ToolMessage) else str(m.content or m.id))
        for m in messages
    ]


WHOLE = [
    ("human", "refund o-1"),
    ("ai", "ai_call"),
    ("tool", "call_a"),
    ("tool", "call_b"),
    ("ai", "done"),
]
ASKED = [("human", "refund o-1"), ("ai", "ai_call")]


def _run(url: str, build: Any, what: Any, config: Any, use_async: bool) -> Any:
    """One process's work: a new saver on the file and a freshly compiled graph."""
    saver = SQLSaver(url)
    saver.setup()
    try:
        app = build(saver)
        if use_async:
            out = asyncio.run(app.ainvoke(what, config))
        else:
            out = app.invoke(what, config)
        return out, app.get_state(config)
    finally:
        saver.close()


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_paused_before_the_tools_the_restarted_run_keeps_every_message(
    tmp_path: Path, use_async: bool
) -> None:
    ran: Counter[str] = Counter()
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}

    def build(saver: SQLSaver) -> Any:
        return _agent(ran, ask=False).compile(
            checkpointer=saver, interrupt_before=["tool"], interrupt_mode="return"
        )

    paused, snap = _run(url, build, {"messages": [HumanMessage("refund o-1")]}, config, use_async)
    assert _shape(paused["messages"]) == ASKED
    assert snap.next == ("tool", "tool") and not ran
    assert _shape(snap.values["messages"]) == ASKED

    out, snap = _run(url, build, None, config, use_async)
    # (the model's second turn has no tool calls, so the run ends without another pause)
    assert _shape(out["messages"]) == WHOLE
    assert _shape(snap.values["messages"]) == WHOLE and snap.next == ()
    assert ran == {"call_a": 1, "call_b": 1}


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_each_tool_call_paused_by_interrupt_resumes_after_a_restart_with_every_message(
    tmp_path: Path, use_async: bool
) -> None:
    ran: Counter[str] = Counter()
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}

    def build(saver: SQLSaver) -> Any:
        return _agent(ran, ask=True).compile(checkpointer=saver, interrupt_mode="return")

    paused, snap = _run(url, build, {"messages": [HumanMessage("refund o-1")]}, config, use_async)
    asked = {i.value["call"]: i.id for i in paused["__interrupt__"]}
    assert sorted(asked) == ["call_a", "call_b"] and not ran
    assert _shape(snap.values["messages"]) == ASKED

    # one call answered in one process: its tool runs, the other still waits
    paused, snap = _run(url, build, Command(resume={asked["call_a"]: "yes"}), config, use_async)
    assert [i.value for i in paused["__interrupt__"]] == [{"call": "call_b"}]
    assert ran == {"call_a": 1}
    assert _shape(snap.values["messages"]) == [*ASKED, ("tool", "call_a")]

    # the other in the next process, which finishes the run
    out, snap = _run(url, build, Command(resume={asked["call_b"]: "yes"}), config, use_async)
    assert _shape(out["messages"]) == WHOLE
    assert _shape(snap.values["messages"]) == WHOLE and snap.next == ()
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "{'order': 'o-1'} yes",
        "{'amount': 5} yes",
    ]
    assert ran == {"call_a": 1, "call_b": 1}


def test_an_edit_of_the_pending_call_as_the_model_node_runs_the_edited_call_only(
    tmp_path: Path,
) -> None:
    ran: Counter[str] = Counter()
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}

    def build(saver: SQLSaver) -> Any:
        return _agent(ran, ask=False).compile(
            checkpointer=saver, interrupt_before=["tool"], interrupt_mode="return"
        )

    _run(url, build, {"messages": [HumanMessage("refund o-1")]}, config, use_async=False)
    # a reviewer replaces the model's two calls by one with other arguments (same message id)
    edited = {"name": "refund", "args": {"amount": 3}, "id": "call_c", "type": "tool_call"}
    saver = SQLSaver(url)
    try:
        app = build(saver)
        app.update_state(
            config, {"messages": AIMessage("", id="ai_call", tool_calls=[edited])}, as_node="model"
        )
        snap = app.get_state(config)
    finally:
        saver.close()
    assert _shape(snap.values["messages"]) == ASKED  # the edit replaced the message by its id
    assert snap.values["messages"][1].tool_calls[0]["args"] == {"amount": 3}
    assert snap.next == ("tool",)  # one task now: the edited call's

    out, _ = _run(url, build, None, config, use_async=False)
    assert _shape(out["messages"]) == [*ASKED, ("tool", "call_c"), ("ai", "done")]
    assert out["messages"][2].content == "{'amount': 3} ok"
    assert ran == {"call_c": 1}  # neither of the model's own calls ran


def test_an_edit_of_the_pending_call_without_as_node_is_refused_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    ran: Counter[str] = Counter()
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}

    def build(saver: SQLSaver) -> Any:
        return _agent(ran, ask=False).compile(
            checkpointer=saver, interrupt_before=["tool"], interrupt_mode="return"
        )

    _run(url, build, {"messages": [HumanMessage("refund o-1")]}, config, use_async=False)
    saver = SQLSaver(url)
    try:
        app = build(saver)
        before = app.get_state(config)
        # LangGraph's way to edit a call: one message, for add_messages to merge by its id
        with pytest.raises(InvalidUpdateError) as info:
            app.update_state(config, {"messages": AIMessage("Bye now", id="ai_call")})
        after = app.get_state(config)
    finally:
        saver.close()
    assert str(info.value) == (
        "update_state without as_node replaces each key with the value given, and state key "
        "'messages' (a list of 2, reducer add_messages) was given AIMessage(content='Bye now', "
        "additional_kwargs={}, response_metadata={}, id='..., which would become its whole "
        "value: pass the whole list, or as_node= the node whose update it is, to merge it with "
        "add_messages (and take the edges after that node again, as LangGraph does)"
    )
    # no checkpoint was written: the conversation and the two pending calls are as they were
    assert after.config == before.config
    assert _shape(after.values["messages"]) == ASKED and after.next == ("tool", "tool")

    # the whole list is a replacement graphs takes as given (the pending calls are kept)
    saver = SQLSaver(url)
    try:
        app = build(saver)
        question, call = after.values["messages"]
        app.update_state(config, {"messages": [question, call]})
        assert app.get_state(config).next == ("tool", "tool")
    finally:
        saver.close()
    out, _ = _run(url, build, None, config, use_async=False)
    assert _shape(out["messages"]) == WHOLE
    assert ran == {"call_a": 1, "call_b": 1}


class _TwoCalls(BaseChatModel):
    """A chat model standing in for a real one: two tool calls, then an answer."""

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage("done", id="ai_final")
        else:
            reply = AIMessage("", id="ai_call", tool_calls=CALLS)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "two-calls"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@pytest.mark.parametrize("pause", ["interrupt_before", "interrupt"])
def test_create_react_agent_v2_resumed_after_a_restart_keeps_every_message(
    tmp_path: Path, pause: str
) -> None:
    ran: Counter[str] = Counter()

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        ran["call_a"] += 1
        return f"{{'order': '{order}'}} ok"

    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        if pause == "interrupt":
            interrupt({"call": "call_b"})
        ran["call_b"] += 1
        return f"{{'amount': {amount}}} ok"

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}

    def build(saver: SQLSaver) -> Any:
        before = ["tools"] if pause == "interrupt_before" else None
        agent = create_react_agent(_TwoCalls(), [lookup, refund], version="v2")
        return agent.builder.compile(
            checkpointer=saver, interrupt_before=before, interrupt_mode="return"
        )

    paused, snap = _run(url, build, {"messages": [HumanMessage("refund o-1")]}, config, False)
    assert _shape(snap.values["messages"])[:2] == ASKED
    assert ("__interrupt__" in paused) == (pause == "interrupt")
    assert ran == ({} if pause == "interrupt_before" else {"call_a": 1})

    resume = None if pause == "interrupt_before" else Command(resume="yes")
    out, snap = _run(url, build, resume, config, False)
    assert _shape(out["messages"]) == WHOLE
    assert _shape(snap.values["messages"]) == WHOLE and snap.next == ()
    assert ran == {"call_a": 1, "call_b": 1}
