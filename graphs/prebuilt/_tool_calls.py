"""What a `ToolNode`'s hooks and wrappers are handed and return (internal; public through
`tool_node.py`): a `before_call` hook's answers (`Rejected`, `Edited`, a call, a message), a
`wrap_tool_call` wrapper's `ToolCallRequest`, and the stored form of a call's result in its
`once()` record."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from .._types import Command, RunConfig
from ._injection import ToolRuntime

__all__ = [
    "AsyncToolCallWrapper",
    "BeforeCall",
    "Edited",
    "Rejected",
    "RunsAfter",
    "ToolCallRequest",
    "ToolCallWrapper",
]


@dataclass(frozen=True, slots=True)
class Rejected:
    """What a `before_call` hook returns to refuse a call: the model gets `reason` as an error
    `ToolMessage` for that call, and the tool does not run."""

    reason: str
    """The message's content: who refused and why, for the model to read."""


@dataclass(frozen=True, slots=True)
class Edited:
    """What a `before_call` hook returns to run a call with other arguments and say so: the
    tool runs with `call` (same `id`), and its `ToolMessage` starts with `note`."""

    call: ToolCall
    """The call to run instead (a `ToolCall` with the original's `id`)."""
    note: str
    """Put before the tool's result (a text content), for the model to read."""


@dataclass(frozen=True, slots=True)
class RunsAfter:
    """What a `before_call` hook returns for a call that may run only once other calls of the
    same node ran without an error (a customer email after the refund it announces): the node
    runs those first, and this one only if each of them ran and its `ToolMessage` is not an
    error; otherwise the model gets an error `ToolMessage` saying which call it waited on and
    why that one did not run. A call it names that is not among the node's calls is not
    waited on (`create_react_agent(version="v2")` runs each call in a task of its own)."""

    calls: tuple[str, ...]
    """The ids of the calls it runs after."""
    then: Edited | ToolCall | None = None
    """What the hook decided of the call itself: run it as it is (None), as a replacement call,
    or `Edited`."""


@dataclass
class ToolCallRequest:
    """What a `wrap_tool_call` wrapper is handed for one call."""

    tool_call: ToolCall
    """The call (the model's, or the one a `before_call` hook put in its place)."""
    tool: BaseTool | None
    """The tool it names; None if the node has no such tool (`execute` then answers with
    `INVALID_TOOL_NAME_ERROR_TEMPLATE`)."""
    state: Any
    """The state the node runs on."""
    runtime: ToolRuntime[Any, Any]
    """What a `runtime: ToolRuntime` parameter gets."""

    def override(self, **changes: Any) -> ToolCallRequest:
        """A copy with `tool_call`, `tool` or `state` replaced (this one is left as it is)."""
        return replace(self, **changes)


ToolCallWrapper: TypeAlias = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], "ToolMessage | Command[Any]"]],
    "ToolMessage | Command[Any]",
]
"""`wrapper(request, execute)`: runs the call by `execute(request)` (any number of times, with
changed requests: retries, edits) or answers it itself, and returns the `ToolMessage` or
`Command`."""

AsyncToolCallWrapper: TypeAlias = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable["ToolMessage | Command[Any]"]]],
    Awaitable["ToolMessage | Command[Any]"],
]
"""The async form of `ToolCallWrapper` (`ainvoke`)."""


BeforeCall: TypeAlias = Callable[[ToolCall, Any, RunConfig], Any]
"""`hook(call, state, config)` returning `None`, a replacement `ToolCall`, an `Edited`, a
`RunsAfter`, a `ToolMessage` or a `Rejected` (or an awaitable of one, under `ainvoke`)."""


def _noted(out: Any, note: str) -> Any:
    """The tool's `ToolMessage` with `note` before its content (an `Edited` call's)."""
    if not isinstance(out, ToolMessage):
        return out  # a Command: its own messages say what they say
    content = out.content
    if isinstance(content, str):
        noted: str | list[Any] = f"{note}\n\n{content}" if content else note
    else:
        noted = [{"type": "text", "text": note}, *content]
    return out.model_copy(update={"content": noted})


# the stored form of a tool's `Command` in a `once()` record (a `Command` is not storable)
def _store(output: Any) -> Any:
    if isinstance(output, Command):
        command = [dict(output.update or {}), _gotos(output.goto)]
        if output.graph is not None:  # for the parent graph (a handoff)
            command.append(output.graph)
        return {"$command": command}
    return output


def _load(stored: Any) -> Any:
    if isinstance(stored, dict) and "$command" in stored:
        update, goto, *graph = stored["$command"]
        return Command(graph=graph[0] if graph else None, update=update, goto=goto)
    return stored


def _gotos(goto: Any) -> list[Any]:
    if isinstance(goto, (str,)) or not isinstance(goto, Sequence):
        return [goto] if goto else []
    return list(goto)
