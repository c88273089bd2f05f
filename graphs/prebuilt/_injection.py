"""What a tool is handed besides the model's arguments (`InjectedState`, `InjectedStore`,
langchain_core's `InjectedToolCallId`, `ToolRuntime`), read once per tool from its signature;
`ToolNode` fills them (see its module's documentation)."""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolArg, InjectedToolCallId, StructuredTool
from langchain_core.tools.base import (
    _DirectlyInjectedToolArg,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)

from .._types import Command, StreamWriter
from ..runtime import ExecutionInfo
from ..store import BaseStore

__all__ = ["InjectedState", "InjectedStore", "ToolRuntime"]


class InjectedState(InjectedToolArg):
    """Marks a tool parameter the node fills with its state (`Annotated[dict, InjectedState]`),
    or with one key of it (`Annotated[list, InjectedState("messages")]`); the model does not
    see the parameter."""

    def __init__(self, field: str | None = None) -> None:
        self.field = field
        """The state key to hand the tool; None: the whole state."""


class InjectedStore(InjectedToolArg):
    """Marks a tool parameter the node fills with the graph's store (`compile(store=)`):
    `Annotated[BaseStore, InjectedStore()]`; the model does not see the parameter."""


ContextT = TypeVar("ContextT")
StateT = TypeVar("StateT")


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What a tool parameter `runtime: ToolRuntime` is handed (the model does not see it)."""

    state: StateT
    """The state the node runs on (a dict of keys, or the message list of a list input)."""
    context: ContextT
    """The run's `context=` (None if it was given none, or outside a graph)."""
    config: RunnableConfig
    """The node's config (langchain_core's type, so that pydantic can read the tool's
    signature)."""
    stream_writer: StreamWriter
    """Writes to the `custom` stream mode (does nothing when it is not streamed)."""
    tool_call_id: str | None
    """The id of the call being run."""
    store: BaseStore | None
    """The graph's store, or None."""
    tools: list[BaseTool] = field(default_factory=list)
    """Every tool of the node."""
    execution_info: ExecutionInfo | None = None
    """The thread, task and checkpoint the node runs in (None outside a graph)."""


@dataclass(frozen=True, slots=True)
class _Injections:
    """What one tool is handed besides the model's arguments, read once from its signature."""

    state: dict[str, str | None]
    """Parameter -> the state key it gets (None: the whole state)."""
    optional: frozenset[str]
    """Those of `state` with a default: a missing key leaves them to it."""
    store: str | None
    runtime: str | None
    call_id: bool
    """It takes an `InjectedToolCallId` (langchain_core fills it from the call)."""
    hidden: frozenset[str]
    """Every injected parameter: what the model put under these names is dropped."""


class _Returned(ToolOutputMixin):
    """A tool's `Command`, carried through langchain_core as it is: a tool invoked with its
    call (as one taking an `InjectedToolCallId` must be) has any other return value made into
    a `ToolMessage`, and graphs' `Command` is not langchain_core's (`import graphs` does not
    load langchain_core)."""

    __slots__ = ("command",)

    def __init__(self, command: Command[Any]) -> None:
        self.command = command


def _passing_commands(tool: BaseTool) -> BaseTool:
    """A copy of a function tool whose `Command` returns reach the node (see `_Returned`)."""
    if not isinstance(tool, StructuredTool):
        return tool
    func, coroutine = tool.func, tool.coroutine
    update: dict[str, Any] = {}
    # (`wraps`: langchain_core reads the function's signature for its injected parameters)
    if func is not None:

        @functools.wraps(func)
        def passing(*args: Any, **kwargs: Any) -> Any:
            out = func(*args, **kwargs)
            return _Returned(out) if isinstance(out, Command) else out

        update["func"] = passing
    if coroutine is not None:

        @functools.wraps(coroutine)
        async def apassing(*args: Any, **kwargs: Any) -> Any:
            out = await coroutine(*args, **kwargs)
            return _Returned(out) if isinstance(out, Command) else out

        update["coroutine"] = apassing
    return tool.model_copy(update=update)


def _marker(hint: Any, kind: type) -> Any:
    """The `kind` marker of an annotation (an instance, or the class itself), or None."""
    if isinstance(hint, kind) or (isinstance(hint, type) and issubclass(hint, kind)):
        return hint
    origin = typing.get_origin(hint)
    if isinstance(origin, type) and issubclass(origin, kind):
        return origin
    if origin is typing.Annotated or origin is typing.Union:
        for arg in typing.get_args(hint):
            found = _marker(arg, kind)
            if found is not None:
                return found
    return None


def _injections(tool: BaseTool) -> _Injections | None:
    schema = tool.get_input_schema()
    hints: dict[str, Any] = {}
    fn = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if fn is not None:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # noqa: BLE001 -- an unresolvable hint: the schema's are enough
            hints = {}
    hints = {**hints, **get_all_basemodel_annotations(schema)}
    state: dict[str, str | None] = {}
    optional: set[str] = set()
    store = runtime = None
    call_id = False
    hidden: set[str] = set()
    fields = getattr(schema, "model_fields", {})
    for name, hint in hints.items():
        if name == "return":
            continue
        if _is_injected_arg_type(hint):
            hidden.add(name)
        found = _marker(hint, InjectedState)
        if found is not None:
            key = found.field if isinstance(found, InjectedState) else None
            state[name] = key
            if key and name in fields and not fields[name].is_required():
                optional.add(name)
        if _marker(hint, InjectedStore) is not None:
            store = name
        if _marker(hint, ToolRuntime) is not None:
            runtime = name
        if _marker(hint, InjectedToolCallId) is not None:
            call_id = True
    if not (state or store or runtime or call_id):
        return None
    hidden.update(state)
    hidden.update(n for n in (store, runtime) if n)
    return _Injections(state, frozenset(optional), store, runtime, call_id, frozenset(hidden))
