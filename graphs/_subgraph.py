"""Subgraphs as the loop, the stream and the state readers see them: a compiled graph added as a
node (`SubgraphNode`), the graph a node's function calls, and the namespaces their runs keep
their checkpoints under (`parent_ns|node:task_id`, or `node` for a `checkpointer=True` one).

Below the stream and the compiled graph, which both read it; it knows the compiled graph by its
parts (`GraphShape`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from ._shape import GraphShape
from ._types import RunConfig
from .checkpoint.base import config_ns, config_thread_id

if TYPE_CHECKING:
    from ._specs import NodeSpec

__all__ = [
    "SubgraphNode",
    "called_graph",
    "child_config",
    "graph_called_by",
    "is_subgraph",
    "namespace_levels",
    "segment_of",
    "subgraph_node_of",
]


class SubgraphNode:
    """A compiled graph added as a node (`add_node("child", child_graph)`).

    It runs the subgraph on the keys of the parent's state that the subgraph has, and writes
    back the keys of the subgraph's result that the parent has, as LangGraph does.
    """

    def __init__(self, graph: GraphShape, parent_keys: Collection[str]) -> None:
        self.graph = graph
        self.parent_keys = frozenset(parent_keys)

    def _input(self, state: Any) -> Any:
        if isinstance(state, Mapping):
            return {k: v for k, v in state.items() if k in self.graph.channels}
        return state

    def _output(self, result: Any) -> Any:
        if isinstance(result, Mapping):
            return {k: v for k, v in result.items() if k in self.parent_keys}
        return result  # a root-channel subgraph's value: the node's return, as the parent takes it

    def invoke(self, state: Any, config: RunConfig | None = None, /) -> Any:
        return self._output(self.graph.invoke(self._input(state), config))

    async def ainvoke(self, state: Any, config: RunConfig | None = None, /) -> Any:
        return self._output(await self.graph.ainvoke(self._input(state), config))


def child_config(config: RunConfig, segment: str) -> RunConfig:
    """Where the subgraph run by a task (`segment`: see `segment_of`) keeps its checkpoints."""
    ns = config_ns(config)
    thread_id = config_thread_id(config)
    assert thread_id is not None  # the config of a stored checkpoint
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": f"{ns}|{segment}" if ns else segment,
        }
    }


def namespace_levels(ns: str) -> list[tuple[str, str]]:
    """The levels of a subgraph's namespace: each enclosing graph's namespace and the segment
    (`node:task_id`, or `node`) the next level runs under; a numbered segment (`|1`: a task's
    second subgraph run) belongs to the level before it."""
    parts = ns.split("|")
    levels: list[tuple[str, str]] = []
    i = 0
    while i < len(parts):
        j = i + 1
        while j < len(parts) and parts[j].isdigit():
            j += 1
        levels.append(("|".join(parts[:i]), parts[i]))
        i = j
    return levels


def called_graph(spec: NodeSpec | None) -> GraphShape | None:
    """The compiled graph a node runs: the node itself, or the first one its function uses
    (found as LangGraph finds it, among the names the function's code refers to)."""
    if spec is None:
        return None
    return graph_called_by(spec.fn)


def segment_of(nodes: Mapping[str, NodeSpec], name: str, task_id: str) -> str:
    """The namespace segment of the subgraph the task `task_id` of node `name` runs:
    `name:task_id`, or `name` for a node that is a `compile(checkpointer=True)` graph."""
    graph = called_graph(nodes.get(name))
    if graph is not None and graph.persistent:
        return name
    return f"{name}:{task_id}"


def subgraph_node_of(spec: NodeSpec | None) -> SubgraphNode | None:
    """The compiled graph a node is (added with `add_node(name, graph)`), else None."""
    sub = getattr(spec.fn, "__self__", None) if spec is not None else None
    return sub if isinstance(sub, SubgraphNode) else None


def is_subgraph(spec: NodeSpec | None) -> bool:
    return subgraph_node_of(spec) is not None


def graph_called_by(fn: Callable[..., Any]) -> GraphShape | None:
    """The compiled graph a node's function runs: itself (`add_node("child", child)`) or one it
    calls (found as LangGraph does, among the names the function's code uses)."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, SubgraphNode):
        found = [owner.graph]
    elif inspect.isroutine(fn):
        # langchain_core: a dependency loaded only where it is used (see graphs.graph.message)
        from langchain_core.runnables.utils import get_function_nonlocals

        found = [getattr(v, "__self__", v) for v in get_function_nonlocals(inspect.unwrap(fn))]
    else:
        return None
    for value in found:
        # A subgraph compiled with checkpointer=False is not drawn inside (as in LangGraph).
        if isinstance(value, GraphShape) and (value.inherit or value.checkpointer):
            return value
    return None
