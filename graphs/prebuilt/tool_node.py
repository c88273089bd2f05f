"""`ToolNode` and `tools_condition` (LangGraph's `langgraph.prebuilt.tool_node`).

A `ToolNode` runs the tool calls of the last `AIMessage` of the state (or those of its input: a
list of calls, or LangGraph's `ToolCallWithContext` payload) and returns one
`ToolMessage` per call (under `ainvoke`, the calls run concurrently). Tools are langchain_core
`BaseTool`s, `@tool` functions or plain callables (converted with langchain_core's `tool()`).

The pause before a call
-----------------------
`ToolNode(tools, before_call=hook)` calls `hook(call, state, config)` for each call before any
tool runs. The hook returns `None` (run the call as it is), a replacement call (a `ToolCall`
dict with the same `id`: run it with those arguments), an `Edited` (run the replacement, and
put a note before the tool's result so that the model knows what ran), a `ToolMessage` or a
`Rejected` (do not run it: hand the model that message). The hook may call `interrupt()` so that a person decides:

- each call's hook pauses on its own: a turn with several gated calls pauses once per call, every
  pause answered by its own interrupt id, in any order, in one resume or several;
- no tool of the node's calls runs until every hook has settled, so a call that needed no
  decision is not run twice either (`create_react_agent(version="v2")` gives the node one call
  per task, so there each call runs as soon as its own hook settles);
- a call the hook let through runs inside `once()` keyed by its `tool_call_id`: at most once per
  thread, across replays, crashes and restarts. Tool call ids must therefore be unique within a
  thread (models make them so); a repeated id gets the stored result;
- a `wrap_tool_call` wrapper (LangGraph's: retries, caching, changed arguments) runs inside that
  `once()`, after the hook: a call let through is run, wrapper and all, at most once per thread.
- a hook that returns `RunsAfter(ids, then)` holds the call until the calls `ids` of the node have
  run, and runs it only if each ran without an error (an email after the refund it announces);
  otherwise the model is told which call it waited on. The other calls run as they come.

What a tool is handed besides the model's arguments
---------------------------------------------------
A tool parameter annotated `Annotated[dict, InjectedState]` gets the node's state,
`Annotated[T, InjectedState("key")]` one key of it, `Annotated[BaseStore, InjectedStore()]` the
graph's store, `Annotated[str, InjectedToolCallId]` (langchain_core's) the call's id, and a
parameter `runtime: ToolRuntime` all of these at once (with the config, the run's context and
stream writer). langchain_core leaves these parameters out of the schema the model is shown;
the node fills them when the call runs, after the hook has seen the call (the hook, and an
approval card, see only what the model asked for), and drops any value the model put under
those names.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeAlias

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool
from pydantic import ValidationError

from .._context import Pause, _current, scope
from .._once import aonce, once
from .._types import Command, Interrupt, RunConfig, Send, no_writer
from ..errors import GraphInterrupt
from ..graph.message import REMOVE_ALL_MESSAGES
from ..runtime import task_runtime
from ._injection import (
    InjectedState,
    InjectedStore,
    ToolRuntime,
    _injections,
    _passing_commands,
    _Returned,
)
from ._order import run_in_order, run_in_order_async
from ._tool_calls import (
    AsyncToolCallWrapper,
    BeforeCall,
    Edited,
    Rejected,
    RunsAfter,
    ToolCallRequest,
    ToolCallWrapper,
    _gotos,
    _load,
    _noted,
    _store,
)
from ._tool_errors import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_CALL_ERROR_TEMPLATE,
    ErrorHandling,
    ToolInvocationError,
    _default_errors,
    _error_content,
    _handled_types,
    _handles_own_errors,
)

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "AsyncToolCallWrapper",
    "BeforeCall",
    "Edited",
    "InjectedState",
    "InjectedStore",
    "Rejected",
    "RunsAfter",
    "ToolCallRequest",
    "ToolCallWrapper",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "tools_condition",
]


def _is_calls(input: Any) -> bool:
    """A list of tool calls (`[{"name": ..., "args": ..., "id": ...}]`), not of messages."""
    return (
        isinstance(input, list)
        and bool(input)
        and isinstance(input[-1], dict)
        and "args" in input[-1]
    )


def _content(output: Any) -> str | list[Any]:
    """A tool's return value as a message content: strings and content-block lists as they
    are, anything else as JSON (or `str()` where JSON cannot say it)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(
        isinstance(x, str) or (isinstance(x, dict) and "type" in x) for x in output
    ):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(output)


def _messages(state: Any, key: str, what: str) -> Sequence[Any]:
    if isinstance(state, list):
        return state
    if isinstance(state, Mapping):
        found = state.get(key)
    else:
        found = getattr(state, key, None)
    if found is None:
        raise ValueError(f"{what}: no messages found in the input state under {key!r}")
    return typing.cast(Sequence[Any], found)


def tools_condition(
    state: list[AnyMessage] | dict[str, Any] | Any, messages_key: str = "messages"
) -> Literal["tools", "__end__"]:
    """Route to `"tools"` when the last message has tool calls, else to `END`.

    `add_conditional_edges("agent", tools_condition)` after the node that calls the model; for
    messages under another key, `partial(tools_condition, messages_key="chat")`.

    Raises:
        ValueError: the state has no messages under `messages_key`, or they are empty.
    """
    messages = _messages(state, messages_key, "tools_condition")
    if not messages:
        # as LangGraph's: a router after the model node always has the model's reply to read
        raise ValueError(
            f"tools_condition: the input state's messages (under {messages_key!r}) are empty; "
            "route with it after the node that calls the model (and pass messages_key= when "
            "the messages are under another key)"
        )
    if getattr(messages[-1], "tool_calls", None):
        return "tools"
    return "__end__"


# defined in `_tool_calls.py` and `_tool_errors.py`; this is their public home (LangGraph's)
for _public in (Edited, Rejected, RunsAfter, ToolCallRequest, ToolInvocationError):
    _public.__module__ = __name__
del _public

_Verdict: TypeAlias = "ToolMessage | str | None | Literal[False]"
"""What the hook decided for one call (see `ToolNode._decide`)."""


class ToolNode(Runnable[Any, Any]):
    """A node that runs the tool calls of the last `AIMessage`.

    A langchain_core `Runnable`, as LangGraph's: `with_fallbacks`, `with_retry`, `with_config`,
    `batch`, `stream` and `|` work on it, and what they make is a node too.

    Args:
        tools: `BaseTool`s, `@tool` functions or plain functions (made tools with
            langchain_core's `tool()`, their docstring and annotations giving the schema).
        name: the node's name when added with `add_node(tool_node)`. Default `"tools"`.
        handle_tool_errors: which errors become an error `ToolMessage` (`status="error"`) for
            the model instead of failing the node. Default (LangGraph's): only a call whose
            arguments the tool refuses. `True`: every error, with `TOOL_CALL_ERROR_TEMPLATE`;
            a string: every error, with that content; an exception class or a tuple of them:
            those; a function `(e) -> str`: the errors its first parameter's annotation names,
            with its result; `False`: none. A call to a tool the node does not have is always
            answered with `INVALID_TOOL_NAME_ERROR_TEMPLATE`.
        messages_key: the state key of the message list (and of the returned messages).
        before_call: the pause before a call (see the module's documentation).
        wrap_tool_call: `wrapper(request, execute)` around each call's run (a
            `ToolCallWrapper`): retries, caching, changed arguments, or an answer without
            running the tool. An error it raises is handled as `handle_tool_errors` says (any
            error, when that is set at all). It runs after `before_call` settled the call,
            inside the call's `once()`: a call the hook let through is still run (wrapper and
            all) at most once per thread.
        awrap_tool_call: its async form, for `ainvoke` (without it, `ainvoke` runs
            `wrap_tool_call` with a sync `execute`).
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = _default_errors,
        messages_key: str = "messages",
        before_call: BeforeCall | None = None,
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        self.name = name
        self.wrap_tool_call = wrap_tool_call
        self.awrap_tool_call = awrap_tool_call
        self.tags = tags
        self.handle_tool_errors = handle_tool_errors
        self.messages_key = messages_key
        self.before_call = before_call
        self.tools_by_name: dict[str, BaseTool] = {}
        for t in tools:
            made = t if isinstance(t, BaseTool) else as_tool(t)
            if not isinstance(made, BaseTool):
                raise TypeError(f"ToolNode: cannot make a tool of {t!r}")
            self.tools_by_name[made.name] = made
        self._injected = {n: _injections(t) for n, t in self.tools_by_name.items()}
        for tool_name, found in self._injected.items():
            made = self.tools_by_name[tool_name]
            if (found is not None and found.call_id) or _handles_own_errors(made):
                self.tools_by_name[tool_name] = _passing_commands(made)
        self._handled = _handled_types(handle_tool_errors)

    # ---- the node -----------------------------------------------------------------

    def invoke(  # type: ignore[override]  # graphs' RunConfig is langchain_core's shape
        self, input: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> Any:
        """Run the calls one after another; return `{messages_key: [ToolMessage, ...]}` (a list
        for a list input, a `Command` when a tool returned one)."""
        config = config or {}
        calls, state, given = self._parsed(input)
        plan, after = self._decide(calls, state, config)
        outputs = run_in_order(
            [call for call, _ in plan],
            after,
            lambda i: self._run_planned(*plan[i], given, config),
        )
        return self._combine(input, outputs)

    async def ainvoke(  # type: ignore[override]
        self, input: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> Any:
        """`invoke`, with the calls run concurrently (a call the hook said `RunsAfter` others
        once they ended)."""
        config = config or {}
        calls, state, given = self._parsed(input)
        plan, after = await self._adecide(calls, state, config)
        outputs = await run_in_order_async(
            [call for call, _ in plan],
            after,
            lambda i: self._arun_planned(*plan[i], given, config),
        )
        return self._combine(input, outputs)

    # ---- the pieces -----------------------------------------------------------------

    def _parsed(self, input: Any) -> tuple[list[ToolCall], Any, Any]:
        """The calls to run, the state the hook sees, and what the tools are run on (the
        input, or the state of LangGraph's `ToolCallWithContext` payload: `{"__type":
        "tool_call_with_context", "tool_call": call, "state": state}`, a `Send`'s)."""
        if isinstance(input, Mapping) and input.get("__type") == "tool_call_with_context":
            state = input.get("state")
            return [typing.cast(ToolCall, input["tool_call"])], state, state
        calls = self._calls(input)
        return calls, (self._state_of(input) if _is_calls(input) else input), input

    def _calls(self, input: Any) -> list[ToolCall]:
        if isinstance(input, list) and _is_calls(input):
            return typing.cast(list[ToolCall], input)  # a list of tool calls
        messages = _messages(input, self.messages_key, "ToolNode")
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return list(message.tool_calls)
        raise ValueError("ToolNode: the input has no AIMessage to run the tool calls of")

    def _verdict(self, call: ToolCall, out: Any) -> tuple[ToolCall, ToolMessage | str | None]:
        if out is None:
            return call, None
        if isinstance(out, Edited):
            replaced, _ = self._verdict(call, out.call)
            return replaced, out.note
        if isinstance(out, Rejected):
            message = ToolMessage(
                content=out.reason, name=call["name"], tool_call_id=call["id"], status="error"
            )
            return call, message
        if isinstance(out, ToolMessage):
            return call, out
        if isinstance(out, dict) and "name" in out and "args" in out:
            if out.get("id") != call["id"]:
                raise ValueError(
                    f"ToolNode before_call returned a call with id {out.get('id')!r} for tool "
                    f"call {call['id']!r}: a replacement keeps the call's id"
                )
            return typing.cast(ToolCall, out), None
        raise TypeError(
            f"ToolNode before_call returned {out!r} for tool call {call['id']!r}; expected None, "
            "a replacement ToolCall, a ToolMessage or a Rejected"
        )

    def _decide(
        self, calls: list[ToolCall], state: Any, config: RunConfig
    ) -> tuple[list[tuple[ToolCall, _Verdict]], dict[str, tuple[str, ...]]]:
        """Each call with what the hook decided: `None` to run it under `once()` (a string: and
        put that note before its result), `False` to run it plainly (no hook), or the message
        that answers it; and the calls each runs after (`RunsAfter`). Pauses are gathered."""
        hook = self.before_call
        if hook is None:
            return [(call, False) for call in calls], {}
        plan: list[tuple[ToolCall, _Verdict]] = []
        after: dict[str, tuple[str, ...]] = {}
        pauses: list[Interrupt] = []
        for call in calls:
            with scope(call["id"] or ""):
                try:
                    out = hook(call, state, config)
                except Pause as p:
                    pauses.extend(p.interrupts)
                    continue
            if inspect.isawaitable(out):
                if inspect.iscoroutine(out):
                    out.close()
                raise TypeError(
                    "ToolNode before_call returned an awaitable under invoke(): use ainvoke(), "
                    "or a sync hook"
                )
            if isinstance(out, RunsAfter):
                after[str(call["id"])], out = out.calls, out.then
            plan.append(self._verdict(call, out))
        if pauses:
            raise Pause(tuple(pauses))
        return plan, after

    async def _adecide(
        self, calls: list[ToolCall], state: Any, config: RunConfig
    ) -> tuple[list[tuple[ToolCall, _Verdict]], dict[str, tuple[str, ...]]]:
        hook = self.before_call
        if hook is None:
            return [(call, False) for call in calls], {}
        plan: list[tuple[ToolCall, _Verdict]] = []
        after: dict[str, tuple[str, ...]] = {}
        pauses: list[Interrupt] = []
        for call in calls:
            with scope(call["id"] or ""):
                try:
                    out = hook(call, state, config)
                    if inspect.isawaitable(out):
                        out = await out
                except Pause as p:
                    pauses.extend(p.interrupts)
                    continue
            if isinstance(out, RunsAfter):
                after[str(call["id"])], out = out.calls, out.then
            plan.append(self._verdict(call, out))
        if pauses:
            raise Pause(tuple(pauses))
        return plan, after

    def _run_planned(self, call: ToolCall, verdict: _Verdict, state: Any, config: RunConfig) -> Any:
        if isinstance(verdict, ToolMessage):
            return verdict
        if verdict is not False and _current.get() is not None:
            key = f"tool_call:{call['id']}"
            out = _load(once(key, lambda: _store(self._run_wrapped(call, state, config))))
        else:
            out = self._run_wrapped(call, state, config)
        return _noted(out, verdict) if isinstance(verdict, str) else out

    async def _arun_planned(
        self, call: ToolCall, verdict: _Verdict, state: Any, config: RunConfig
    ) -> Any:
        if isinstance(verdict, ToolMessage):
            return verdict
        if verdict is not False and _current.get() is not None:

            async def run() -> Any:
                return _store(await self._arun_wrapped(call, state, config))

            out = _load(await aonce(f"tool_call:{call['id']}", run))
        else:
            out = await self._arun_wrapped(call, state, config)
        return _noted(out, verdict) if isinstance(verdict, str) else out

    def _request(self, call: ToolCall, state: Any, config: RunConfig) -> ToolCallRequest:
        return ToolCallRequest(
            tool_call=call,
            tool=self.tools_by_name.get(call["name"]),
            state=state,
            runtime=self._runtime(call, self._state_of(state), config),
        )

    def _wrapper_failed(self, call: ToolCall, e: Exception) -> ToolMessage:
        if not self.handle_tool_errors:
            raise e
        content = _error_content(e, self.handle_tool_errors)
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    def _run_wrapped(self, call: ToolCall, state: Any, config: RunConfig) -> Any:
        wrap = self.wrap_tool_call
        if wrap is None:
            return self._run_one(call, state, config)

        def execute(request: ToolCallRequest) -> Any:
            return self._run_one(request.tool_call, request.state, config)

        try:
            return self._message(call, wrap(self._request(call, state, config), execute))
        except GraphInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 -- handle_tool_errors decides, or it re-raises
            return self._wrapper_failed(call, e)

    async def _arun_wrapped(self, call: ToolCall, state: Any, config: RunConfig) -> Any:
        awrap, wrap = self.awrap_tool_call, self.wrap_tool_call
        if awrap is None and wrap is None:
            return await self._arun_one(call, state, config)
        request = self._request(call, state, config)
        try:
            if awrap is not None:

                async def aexecute(request: ToolCallRequest) -> Any:
                    return await self._arun_one(request.tool_call, request.state, config)

                out = await awrap(request, aexecute)
            else:
                assert wrap is not None

                def execute(request: ToolCallRequest) -> Any:
                    return self._run_one(request.tool_call, request.state, config)

                out = await asyncio.to_thread(wrap, request, execute)
            return self._message(call, out)
        except GraphInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 -- handle_tool_errors decides, or it re-raises
            return self._wrapper_failed(call, e)

    def _unknown(self, call: ToolCall) -> ToolMessage | None:
        if call["name"] in self.tools_by_name:
            return None
        content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=call["name"], available_tools=", ".join(self.tools_by_name)
        )
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    def _run_one(self, call: ToolCall, state: Any, config: RunConfig) -> Any:
        unknown = self._unknown(call)
        if unknown is not None:
            return unknown
        tool = self.tools_by_name[call["name"]]
        tool_input = self._tool_input(tool, call, state, config)
        try:
            try:
                output = tool.invoke(tool_input, typing.cast(Any, config))
            except ValidationError as e:
                raise ToolInvocationError(call["name"], e, call["args"], self._hidden(tool)) from e
            return self._answer(call, output)
        except GraphInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 -- handle_tool_errors decides, or it re-raises
            return self._on_error(call, e)

    async def _arun_one(self, call: ToolCall, state: Any, config: RunConfig) -> Any:
        unknown = self._unknown(call)
        if unknown is not None:
            return unknown
        tool = self.tools_by_name[call["name"]]
        tool_input = self._tool_input(tool, call, state, config)
        try:
            try:
                output = await tool.ainvoke(tool_input, typing.cast(Any, config))
            except ValidationError as e:
                raise ToolInvocationError(call["name"], e, call["args"], self._hidden(tool)) from e
            return self._answer(call, output)
        except GraphInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 -- handle_tool_errors decides, or it re-raises
            return self._on_error(call, e)

    def _hidden(self, tool: BaseTool) -> frozenset[str]:
        injected = self._injected.get(tool.name)
        return injected.hidden if injected is not None else frozenset()

    def _tool_input(self, tool: BaseTool, call: ToolCall, state: Any, config: RunConfig) -> Any:
        """What the tool is invoked with: the model's arguments, or the whole call (with the
        injected arguments added) when the tool takes injections or keeps an artifact."""
        injected = self._injected.get(tool.name)
        if injected is None:
            # A content-and-artifact tool keeps its artifact only when invoked with the call,
            # and a tool handling its own errors answers with an error `ToolMessage` only then
            if tool.response_format == "content_and_artifact" or _handles_own_errors(tool):
                return {**call, "type": "tool_call"}
            return call["args"]
        args = {k: v for k, v in (call["args"] or {}).items() if k not in injected.hidden}
        if injected.state or injected.runtime:
            state = self._state_of(state)
        for param, key in injected.state.items():
            if key is None:
                args[param] = state
            elif isinstance(state, Mapping) and key in state:
                args[param] = state[key]
            elif not isinstance(state, Mapping) and hasattr(state, key):
                args[param] = getattr(state, key)
            elif param not in injected.optional:
                keys = sorted(state) if isinstance(state, Mapping) else type(state).__name__
                raise ValueError(
                    f"ToolNode: tool {tool.name!r} takes state key {key!r} (parameter "
                    f"{param!r}, InjectedState), and the state has none; it has: {keys}"
                )
        runtime = self._runtime(call, state, config)
        store = runtime.store
        if injected.store:
            if store is None:
                raise ValueError(
                    f"ToolNode: tool {tool.name!r} takes the store (parameter "
                    f"{injected.store!r}, InjectedStore), and the graph has none: compile it "
                    "with one, graph.compile(store=InMemoryStore())"
                )
            args[injected.store] = store
        if injected.runtime:
            args[injected.runtime] = runtime
        return {**call, "args": args, "type": "tool_call"}

    def _runtime(self, call: ToolCall, state: Any, config: RunConfig) -> ToolRuntime[Any, Any]:
        task = _current.get()
        run = task_runtime(task) if task is not None else None
        return ToolRuntime(
            state=state,
            context=run.context if run is not None else None,
            config=typing.cast(RunnableConfig, config),
            stream_writer=run.stream_writer if run is not None else no_writer,
            tool_call_id=call["id"],
            store=run.store if run is not None else None,
            tools=list(self.tools_by_name.values()),
            execution_info=run.execution_info if run is not None else None,
        )

    def _state_of(self, state: Any) -> Any:
        """The state a tool is handed: a message list as `{messages_key: list}`; for a list of
        tool calls, the state of the graph the node runs in (empty outside one)."""
        if isinstance(state, list):
            if _is_calls(state):
                task = _current.get()
                return task.run.view() if task is not None else {}
            return {self.messages_key: state}
        return state

    def _on_error(self, call: ToolCall, e: Exception) -> ToolMessage:
        if not self.handle_tool_errors or not isinstance(e, self._handled):
            raise e
        content = _error_content(e, self.handle_tool_errors)
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    @staticmethod
    def _message(call: ToolCall, output: Any) -> ToolMessage | Command[Any]:
        if isinstance(output, _Returned):
            return output.command
        if isinstance(output, (ToolMessage, Command)):
            return output
        return ToolMessage(_content(output), name=call["name"], tool_call_id=call["id"])

    def _answer(self, call: ToolCall, output: Any) -> ToolMessage | Command[Any]:
        """The tool's return as the call's answer. A `Command` for this graph must carry the
        call's `ToolMessage` in its update (named after the tool, as LangGraph names it): the
        model's provider refuses a conversation with an unanswered call."""
        answer = self._message(call, output)
        if not isinstance(answer, Command) or not isinstance(answer.update, Mapping):
            return answer
        messages = convert_to_messages(answer.update.get(self.messages_key) or [])
        if any(isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in messages):
            return answer
        found = False
        for i, m in enumerate(messages):
            if isinstance(m, ToolMessage) and m.tool_call_id == call["id"]:
                messages[i] = m.model_copy(update={"name": call["name"]})
                found = True
        if found:
            update = {**answer.update, self.messages_key: messages}
            return replace(answer, update=update)
        if answer.graph is not None:
            return answer  # for the parent graph, whose own calls it answers
        raise ValueError(
            f"ToolNode: tool {call['name']!r} returned a Command without a ToolMessage for its "
            f"call {call['id']!r} in update[{self.messages_key!r}] (it has {messages!r}); every "
            "tool call needs its ToolMessage: take the call's id with a parameter "
            "`tool_call_id: Annotated[str, InjectedToolCallId]` and return Command(update="
            f"{{{self.messages_key!r}: [ToolMessage('...', tool_call_id=tool_call_id)], ...}})"
        )

    def _combine(self, input: Any, outputs: list[Any]) -> Any:
        messages = [o for o in outputs if isinstance(o, ToolMessage)]
        commands = [o for o in outputs if isinstance(o, Command)]
        if not commands:
            # a message list in, a list out; a state, or a list of tool calls (a `Send`'s),
            # in: an update of the state's messages, as LangGraph
            if isinstance(input, list) and not _is_calls(input):
                return messages
            return {self.messages_key: messages}
        if any(c.graph is not None for c in commands):
            return _to_parent(commands)
        # One Command for the node: the tool messages, then each Command's update and gotos.
        update: dict[str, Any] = {self.messages_key: messages}
        goto: list[Any] = []
        for c in commands:
            for key, value in (c.update or {}).items():
                if key == self.messages_key:
                    update[key] = [*update[key], *value]
                elif key in update:
                    raise ValueError(f"ToolNode: two tools' Commands both update state key {key!r}")
                else:
                    update[key] = value
            goto += _gotos(c.goto)
        return Command(update=update, goto=goto)


def _to_parent(commands: list[Command[Any]]) -> Command[Any]:
    """What the node returns when a tool's `Command` is for the parent graph (a multi-agent
    handoff): as LangGraph's, the node leaves its graph with the first such `Command` (none of
    its own writes, the other calls' messages, is applied in this graph); `Command`s for the
    parent that only `Send` are sent together, as one, when no other is there."""
    parents = [c for c in commands if c.graph is not None]
    for c in parents:
        if not _sends_only(c.goto):
            return c
    return Command(graph=Command.PARENT, goto=[s for c in parents for s in _gotos(c.goto)])


def _sends_only(goto: Any) -> bool:
    return isinstance(goto, list) and all(isinstance(g, Send) for g in goto)
