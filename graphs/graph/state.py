"""`graphs.graph.state`: LangGraph's `langgraph.graph.state`, its `StateGraph` in LangGraph's
dialect.

The class is the top-level `graphs.StateGraph` with `dialect = "langgraph"`: where seed 000's
semantics and LangGraph's differ, a graph built from it behaves as LangGraph 1.2 does (a pause
returns `__interrupt__`, `update_state` without `as_node` goes through the reducers as the node
that ran last, new input on a paused thread starts a new run from START), so an application ported
from LangGraph by changing its imports does what it did there. `graphs.types.Dialect` and
docs/langgraph.md say where the two differ.
"""

from __future__ import annotations

from typing import ClassVar

from .._types import Dialect
from ..builder import StateGraph as _StateGraph
from ..compiled import CompiledGraph

__all__ = ["CompiledStateGraph", "StateGraph"]

CompiledStateGraph = CompiledGraph
"""LangGraph's name for what `StateGraph.compile()` returns."""


class StateGraph(_StateGraph):
    __doc__ = _StateGraph.__doc__

    dialect: ClassVar[Dialect] = "langgraph"
