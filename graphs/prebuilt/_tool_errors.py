"""What a `ToolNode` answers when a call fails (internal; public through `tool_node.py`): the
messages' templates, `ToolInvocationError` for arguments a tool refuses, and the reading of
`handle_tool_errors` (which errors it handles, and the message it makes of one)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeAlias

from langchain_core.tools import BaseTool, ToolException
from pydantic import ValidationError

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "ErrorHandling",
    "ToolInvocationError",
]

INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
"""The content of the `ToolMessage` answering a call to a tool the node does not have."""
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""The content of the `ToolMessage` of a handled error (`handle_tool_errors=True`)."""
TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)
"""The content of the `ToolMessage` answering a call whose arguments the tool refused."""


class ToolInvocationError(ToolException):
    """A tool call's arguments did not match the tool's schema (the model's mistake).

    A langchain_core `ToolException`, as LangGraph's: `handle_tool_errors=(ToolException,)`
    handles it too.

    The message names only what the model sent, as LangGraph's: one `field: problem` line per
    error, those about injected parameters (the state, the store, the runtime) left out, so
    that no state reaches the model through an error.
    """

    def __init__(
        self,
        tool_name: str,
        source: ValidationError,
        tool_kwargs: dict[str, Any],
        hidden: frozenset[str] = frozenset(),
    ):
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        lines = [
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}"
            for e in source.errors()
            if not (e["loc"] and e["loc"][0] in hidden)
        ]
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error="\n".join(lines)
        )
        super().__init__(self.message)


ErrorHandling: TypeAlias = (
    bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
)


def _handles_own_errors(tool: BaseTool) -> bool:
    """The tool was made with `handle_tool_error=` or `handle_validation_error=`: langchain_core
    turns those errors into its answer (an error `ToolMessage`, when invoked with the call, as
    LangGraph invokes every tool), whatever the node's `handle_tool_errors`."""
    return bool(tool.handle_tool_error) or bool(tool.handle_validation_error)


def _default_errors(e: Exception) -> str:
    """LangGraph's default: a call with arguments the tool refuses is answered with the error,
    for the model to fix; an error of the tool itself fails the node."""
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def _handled_types(handler: ErrorHandling) -> tuple[type[Exception], ...]:
    if isinstance(handler, type):
        return (handler,)
    if isinstance(handler, tuple):
        return handler
    if callable(handler) and handler is not _default_errors:
        # `def handle(e: ValueError) -> str` handles only ValueError
        try:
            params = list(inspect.signature(handler).parameters.values())
            hints = typing.get_type_hints(handler)
        except (TypeError, ValueError, NameError):
            return (Exception,)
        if params and params[0].name in ("self", "cls") and len(params) == 2:
            params = params[1:]  # a method taken from its class
        hint = hints.get(params[0].name) if params else None
        if hint is None:
            return (Exception,)
        found = typing.get_args(hint) if typing.get_args(hint) else (hint,)
        if not all(isinstance(t, type) and issubclass(t, Exception) for t in found):
            name = getattr(handler, "__name__", repr(handler))
            raise ValueError(
                f"ToolNode: handle_tool_errors={name} has its error parameter "
                f"{params[0].name!r} annotated {hint!r}, which is not an exception class or a "
                "union of them; annotate it with the errors it handles (`e: ValueError`, "
                "`e: ValueError | TypeError`), or leave it unannotated to handle every error"
            )
        return typing.cast(tuple[type[Exception], ...], found)
    return (Exception,)


def _error_content(e: Exception, handler: ErrorHandling) -> str:
    if isinstance(handler, str):
        return handler
    if callable(handler) and not isinstance(handler, type):
        return handler(e)
    return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
