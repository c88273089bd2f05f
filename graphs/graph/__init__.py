"""`graphs.graph`: where LangGraph applications import their graph from (`langgraph.graph`).

`StateGraph` is `graphs.graph.state`'s, in LangGraph's dialect (`graphs.types.Dialect`); `START`
and `END` are the ones of `graphs`; `MessagesState`, `add_messages` and
(deprecated) `MessageGraph` come from `graphs.graph.message`, imported on first use so that this module does not load
langchain_core.
"""

from typing import TYPE_CHECKING, Any

from .._types import END, START
from ..compiled import CompiledGraph
from .state import StateGraph

if TYPE_CHECKING:
    from .message import MessageGraph, MessagesState, add_messages

__all__ = [
    "END",
    "START",
    "CompiledGraph",
    "MessageGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
]

_LAZY = frozenset(["MessageGraph", "MessagesState", "add_messages"])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import message

        return getattr(message, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
