"""create_react_agent with models that are not chat models: an object with only `invoke`, a
plain function, a coroutine function; each run synchronously and asynchronously."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from graphs.prebuilt import create_react_agent


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order}: shipped"


def _reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """First a tool call, then an answer quoting the tool's result."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return AIMessage("", tool_calls=[{"name": "lookup", "args": {"order": "A1"}, "id": "c1"}])
    return AIMessage(f"done: {results[-1].content}")


class InvokeOnlyModel:
    """A model object with `invoke` and nothing else (no `ainvoke`, not callable)."""

    def __init__(self) -> None:
        self.configs: list[Any] = []
        self.threads: list[int] = []

    def invoke(self, messages: Sequence[BaseMessage], config: Any = None) -> AIMessage:
        self.configs.append(config)
        self.threads.append(threading.get_ident())
        return _reply(messages)


def _answer(result: dict[str, Any]) -> str:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return str(last.content)


def test_invoke_only_model_runs_sync() -> None:
    model = InvokeOnlyModel()
    agent = create_react_agent(model, [lookup])
    result = agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert _answer(result) == "done: A1: shipped"
    assert len(model.configs) == 2


def test_invoke_only_model_runs_async_off_the_event_loop() -> None:
    model = InvokeOnlyModel()
    agent = create_react_agent(model, [lookup])

    async def run() -> tuple[dict[str, Any], int]:
        result = await agent.ainvoke(
            {"messages": [HumanMessage("where is A1?")]}, {"configurable": {"who": "me"}}
        )
        return result, threading.get_ident()

    result, loop_thread = asyncio.run(run())
    assert _answer(result) == "done: A1: shipped"
    assert len(model.configs) == 2
    assert all(c["configurable"]["who"] == "me" for c in model.configs)
    assert loop_thread not in model.threads  # the event loop was not blocked by the model


@pytest.mark.parametrize("kind", ["function", "coroutine"])
def test_callable_models_run_async(kind: str) -> None:
    async def areply(messages: Sequence[BaseMessage]) -> AIMessage:
        return _reply(messages)

    model = _reply if kind == "function" else areply
    agent = create_react_agent(model, [lookup])
    result = asyncio.run(agent.ainvoke({"messages": [HumanMessage("where is A1?")]}))
    assert _answer(result) == "done: A1: shipped"
