"""`ToolNode(wrap_tool_call=)` (and `awrap_tool_call=`): a wrapper around each call's run, as
LangGraph's: retries, changed arguments, answers without the tool, its errors handled as
`handle_tool_errors` says; under the pause before a call, a call let through is run, wrapper
and all, at most once per thread (a SQLite file, a crash, a new saver resuming)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from graphs import Command, interrupt
from graphs.checkpoint.sql import SQLSaver
from graphs.prebuilt import ToolCallRequest, ToolNode, create_react_agent


def _ai(*calls: tuple[str, str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, i, a in calls]
    )


class Flaky:
    """A tool that fails its first `fails` runs."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.runs: list[int] = []

        @tool
        def fetch(n: int) -> str:
            """Fetch."""
            self.runs.append(n)
            if len(self.runs) <= self.fails:
                raise ConnectionError("network down")
            return f"fetched {n}"

        self.tool = fetch


def retry(request: ToolCallRequest, execute: Any) -> Any:
    for attempt in range(3):
        try:
            return execute(request)
        except ConnectionError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def test_a_wrapper_retries_a_failing_call() -> None:
    flaky = Flaky(fails=2)
    node = ToolNode([flaky.tool], wrap_tool_call=retry)
    (msg,) = node.invoke({"messages": [_ai(("fetch", "c1", {"n": 1}))]})["messages"]
    assert (msg.content, msg.tool_call_id, flaky.runs) == ("fetched 1", "c1", [1, 1, 1])


def test_a_wrapper_changes_the_arguments_or_answers_itself() -> None:
    flaky = Flaky(fails=0)
    seen: list[Any] = []

    def wrapper(request: ToolCallRequest, execute: Any) -> Any:
        seen.append((request.tool_call["name"], request.tool, request.runtime.tool_call_id))
        if request.tool is None:  # a tool the node does not have: answered here
            return ToolMessage("no such tool, try fetch", tool_call_id=request.tool_call["id"])
        call = {**request.tool_call, "args": {"n": request.tool_call["args"]["n"] * 10}}
        changed = request.override(tool_call=call)
        assert request.tool_call["args"] == {"n": 2}  # the request itself is unchanged
        return execute(changed)

    node = ToolNode([flaky.tool], wrap_tool_call=wrapper)
    out = node.invoke({"messages": [_ai(("fetch", "c1", {"n": 2}), ("nope", "c2", {}))]})
    assert [(m.tool_call_id, m.content) for m in out["messages"]] == [
        ("c1", "fetched 20"),
        ("c2", "no such tool, try fetch"),
    ]
    assert seen == [("fetch", flaky.tool, "c1"), ("nope", None, "c2")]


def test_a_wrappers_error_follows_handle_tool_errors() -> None:
    def broken(request: ToolCallRequest, execute: Any) -> Any:
        raise ValueError("wrapper broke")

    ai = _ai(("fetch", "c1", {"n": 1}))
    with pytest.raises(ValueError, match="wrapper broke"):
        ToolNode([Flaky(0).tool], wrap_tool_call=broken).invoke({"messages": [ai]})
    node = ToolNode([Flaky(0).tool], wrap_tool_call=broken, handle_tool_errors=True)
    (msg,) = node.invoke({"messages": [ai]})["messages"]
    assert msg.status == "error"
    assert msg.content == "Error: ValueError('wrapper broke')\n Please fix your mistakes."


def test_async_wrappers_and_a_sync_wrapper_under_ainvoke() -> None:
    ai = _ai(("fetch", "c1", {"n": 1}))

    async def aretry(request: ToolCallRequest, execute: Any) -> Any:
        try:
            return await execute(request)
        except ConnectionError:
            return await execute(request)

    flaky = Flaky(fails=1)
    node = ToolNode([flaky.tool], awrap_tool_call=aretry)
    (msg,) = asyncio.run(node.ainvoke({"messages": [ai]}))["messages"]
    assert (msg.content, flaky.runs) == ("fetched 1", [1, 1])

    flaky = Flaky(fails=1)
    node = ToolNode([flaky.tool], wrap_tool_call=retry)
    (msg,) = asyncio.run(node.ainvoke({"messages": [ai]}))["messages"]
    assert (msg.content, flaky.runs) == ("fetched 1", [1, 1])


class ScriptedChatModel(BaseChatModel):
    script: list[AIMessage]

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=self.script[turn])])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def test_a_wrapped_gated_call_runs_at_most_once_across_a_crash(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    refunds: list[int] = []
    wrapped: list[str] = []
    crash = {"on": True}

    @tool
    def refund(amount: int) -> str:
        """Refund."""
        refunds.append(amount)
        return f"refunded {amount}"

    @tool
    def audit(note: str) -> str:
        """Audit; the first time, the process dies here."""
        if crash["on"]:
            raise SystemExit("process died")
        return "audited"

    def gate(call: Any, state: Any, config: Any) -> Any:
        if call["name"] == "refund":
            interrupt({"tool": "refund", "args": call["args"]})
        return None

    def log(request: ToolCallRequest, execute: Any) -> Any:
        wrapped.append(request.tool_call["id"])
        return execute(request)

    def agent(saver: SQLSaver) -> Any:
        model = ScriptedChatModel(
            script=[
                _ai(("refund", "r1", {"amount": 7}), ("audit", "a1", {"note": "refund"})),
                AIMessage("done"),
            ]
        )
        node = ToolNode([refund, audit], before_call=gate, wrap_tool_call=log)
        # v1: both calls in one task, so the audit dies after the approved refund ran
        return create_react_agent(model, node, checkpointer=saver, version="v1")

    config: Any = {"configurable": {"thread_id": "t"}}
    s1 = SQLSaver(url)
    s1.setup()
    assert "__interrupt__" in agent(s1).invoke({"messages": [HumanMessage("refund")]}, config)
    assert wrapped == [] and refunds == []
    with pytest.raises(SystemExit):
        agent(s1).invoke(Command(resume=True), config)
    assert refunds == [7] and wrapped == ["r1", "a1"]
    s1.close()

    crash["on"] = False
    s2 = SQLSaver(url)
    out = agent(s2).invoke(None, config)  # another process resumes the failed step
    s2.close()
    assert refunds == [7] and wrapped == ["r1", "a1", "a1"]  # the refund was not run again
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "refunded 7",
        "audited",
    ]
