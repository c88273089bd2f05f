"""`create_react_agent`: a model and its tools in a loop (LangGraph's
`langgraph.prebuilt.chat_agent_executor`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import BaseTool

from ..builder import StateGraph
from ..checkpoint.base import BaseCheckpointSaver
from ..compiled import CompiledGraph
from ..graph.message import MessagesState
from ..store import BaseStore
from ..types import END, START, RunConfig
from .tool_node import BeforeCall, ToolNode, tools_condition

__all__ = ["AgentState", "Prompt", "create_react_agent"]

AgentState = MessagesState
"""The agent's state: `messages`, merged with `add_messages`."""

Prompt: TypeAlias = "str | SystemMessage | Callable[[Any], Sequence[BaseMessage]] | Any"
"""A system prompt (a string or a `SystemMessage`, put before the messages), a function of the
state returning the messages to send, or a Runnable doing the same."""


def _prompt(prompt: Prompt | None) -> Callable[[Any, RunConfig], Any]:
    if prompt is None:
        return lambda state, config: state["messages"]
    if isinstance(prompt, str):
        prompt = SystemMessage(prompt)
    if isinstance(prompt, SystemMessage):
        system = prompt
        return lambda state, config: [system, *state["messages"]]
    invoke = getattr(prompt, "invoke", None)
    if callable(invoke) and not callable(prompt):
        return lambda state, config: invoke(state, config)
    if callable(prompt):
        fn = prompt
        return lambda state, config: fn(state)
    raise TypeError(
        f"create_react_agent: prompt must be a str, a SystemMessage, a function or a Runnable, "
        f"got {prompt!r}"
    )


class _ModelNode:
    """The agent node: the prompt's messages to the model, its reply appended."""

    def __init__(self, model: Any, tools: Sequence[BaseTool], prompt: Prompt | None) -> None:
        bind = getattr(model, "bind_tools", None)
        self.model = model
        if tools and callable(bind):
            try:
                self.model = bind(list(tools))
            except NotImplementedError:  # a chat model that takes no tools (a fake, say)
                pass
        self.prompt = _prompt(prompt)
        self.name = "agent"

    def invoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        config = config or {}
        messages = self.prompt(state, config)
        invoke = getattr(self.model, "invoke", None)
        reply = invoke(messages, config) if callable(invoke) else self.model(messages)
        return {"messages": [_checked(reply)]}

    async def ainvoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        config = config or {}
        messages = self.prompt(state, config)
        ainvoke = getattr(self.model, "ainvoke", None)
        invoke = getattr(self.model, "invoke", None)
        if callable(ainvoke):
            reply = await ainvoke(messages, config)
        elif callable(invoke):  # a sync-only model: in a thread, as a sync node runs
            reply = await asyncio.to_thread(invoke, messages, config)
        else:
            reply = self.model(messages)
            if hasattr(reply, "__await__"):
                reply = await reply
        return {"messages": [_checked(reply)]}


def _checked(reply: Any) -> BaseMessage:
    if not isinstance(reply, BaseMessage):
        raise TypeError(
            f"create_react_agent: the model returned {type(reply).__name__} {reply!r:.80}; "
            "expected a message (an AIMessage)"
        )
    return reply


def create_react_agent(
    model: Any,
    tools: Sequence[BaseTool | Callable[..., Any]] | ToolNode,
    *,
    prompt: Prompt | None = None,
    state_schema: type[Any] | None = None,
    context_schema: type[Any] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    interrupt_before: Sequence[Literal["agent", "tools"]] | None = None,
    interrupt_after: Sequence[Literal["agent", "tools"]] | None = None,
    before_call: BeforeCall | None = None,
    name: str | None = None,
) -> CompiledGraph:
    """A graph that calls `model` on the messages, runs the tools it asks for, and loops until
    it answers without tool calls.

    Nodes: `"agent"` (the model) and `"tools"` (a `ToolNode`). The graph ends after a
    tool marked `return_direct` ran.

    Args:
        model: a langchain_core chat model (given the tools with `bind_tools`), or any
            Runnable or function taking the messages and returning an `AIMessage`.
        tools: the tools (see `ToolNode`), or a `ToolNode` of them.
        prompt: a system prompt before the messages, or a function (or Runnable) of the
            state returning the messages to send.
        state_schema: the state (a TypedDict with `messages`); default `AgentState`.
        context_schema: what `context=` holds (see `StateGraph`).
        checkpointer: where the thread is saved (needed to pause and resume).
        store: the graph's store (what `InjectedStore` tools and `runtime.store` get).
        interrupt_before, interrupt_after: `"agent"` and/or `"tools"`, to pause there.
        before_call: the `ToolNode`'s pause before a call (ignored when `tools` is a ToolNode,
            which has its own).
        name: accepted for LangGraph compatibility; graphs do not carry a name yet.
    """
    del name
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        tool_node = ToolNode(tools, before_call=before_call)
    tool_list = list(tool_node.tools_by_name.values())
    graph = StateGraph(state_schema or AgentState, context_schema)
    graph.add_node("agent", _ModelNode(model, tool_list, prompt))
    graph.add_edge(START, "agent")
    if not tool_list:
        graph.add_edge("agent", END)
        return graph.compile(
            checkpointer,
            interrupt_before=interrupt_before or (),
            interrupt_after=interrupt_after or (),
            store=store,
        )
    graph.add_node("tools", tool_node)
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    direct = {t.name for t in tool_list if t.return_direct}
    if direct:

        def after_tools(state: Any) -> str:
            for message in reversed(state["messages"]):
                if isinstance(message, AIMessage):
                    break
                if getattr(message, "name", None) in direct:
                    return END
            return "agent"

        graph.add_conditional_edges("tools", after_tools, {"agent": "agent", END: END})
    else:
        graph.add_edge("tools", "agent")
    return graph.compile(
        checkpointer,
        interrupt_before=interrupt_before or (),
        interrupt_after=interrupt_after or (),
        store=store,
    )
