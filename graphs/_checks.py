"""What `StateGraph.compile()` checks of a graph's shape before it runs, as pure functions of
its nodes and edges: every edge, destination and `path_map` names a node, the graph has an entry
and at least one node, every node can be reached from START, and no sync node has a timeout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._specs import Branch, NodeSpec
from ._timeout import refuse_sync
from ._types import END, START
from .errors import GraphSetupError

__all__ = ["check_shape", "reachable"]


def check_shape(
    declared: Mapping[str, NodeSpec],
    nodes: Mapping[str, NodeSpec],
    edges: Sequence[tuple[str, str]],
    joins: Sequence[tuple[tuple[str, ...], str]],
    branches: Sequence[Branch],
) -> None:
    """Raise `GraphSetupError` naming the first thing wrong with the graph's shape.

    Args:
        declared: the nodes as added; `nodes`: the same with `set_node_defaults` applied.
        edges, joins, branches: as the builder holds them.
    """
    known = set(declared)

    def check(name: str, where: str, end: str | None = None) -> None:
        """`end`: "starting" or "ending", for an edge (LangGraph's words for it)."""
        if name not in known and name not in (START, END):
            nodes = sorted(known) or "none"
            if end is None:
                raise GraphSetupError(f"{where} names unknown node {name!r}; nodes are: {nodes}")
            raise GraphSetupError(
                f"Found edge {end} at unknown node {name!r} ({where}); nodes are: {nodes}"
            )

    for a, b in edges:
        check(a, f"edge {a!r} -> {b!r}", "starting")
        check(b, f"edge {a!r} -> {b!r}", "ending")
    for sources, target in joins:
        for s in sources:
            check(s, f"edge {list(sources)!r} -> {target!r}", "starting")
        check(target, f"edge {list(sources)!r} -> {target!r}", "ending")
    for spec in nodes.values():
        for timed in (spec, spec.handler):
            if timed is not None and timed.timeout is not None and not timed.timeable:
                raise refuse_sync(timed.name, "Node")
        for dest in spec.destinations:
            check(dest, f"the destinations of node {spec.name!r}")
    for br in branches:
        check(br.source, f"conditional edges from {br.source!r}", "starting")
        for dest in (br.path_map or {}).values():
            check(dest, f"path_map of conditional edges from {br.source!r}")

    starts = [b for a, b in edges if a == START]
    if not starts and not any(br.source == START for br in branches):
        raise GraphSetupError(
            "the graph has no entry point: add add_edge(START, 'first_node') "
            "(or add_conditional_edges(START, router))"
        )
    if not declared:
        raise GraphSetupError("the graph has no nodes: add_node('name', fn)")

    unreachable = known - reachable(nodes, edges, joins, branches)
    if unreachable:
        raise GraphSetupError(
            f"node(s) {sorted(unreachable)} cannot be reached from START: no edge, "
            "path_map or destinations= leads to them, and no node or router on the way may "
            "route anywhere else: add an edge to them, or remove them"
        )


def reachable(
    nodes: Mapping[str, NodeSpec],
    edges: Sequence[tuple[str, str]],
    joins: Sequence[tuple[tuple[str, ...], str]],
    branches: Sequence[Branch],
) -> set[str]:
    """The nodes a run may reach from START. Once it reaches a node or a router that may
    route where it did not declare (a `Command` without `destinations`, a router without
    a `path_map`, a `Send`), every node counts as reachable, as LangGraph allows."""
    anywhere = {spec.name for spec in nodes.values() if spec.routes}
    anywhere.update(br.source for br in branches if br.path_map is None or br.sends)
    out: dict[str, set[str]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)
    for sources, target in joins:
        for s in sources:
            out.setdefault(s, set()).add(target)
    for br in branches:
        out.setdefault(br.source, set()).update((br.path_map or {}).values())
    for spec in nodes.values():
        out.setdefault(spec.name, set()).update(spec.destinations)
    seen: set[str] = set()
    todo = [START]
    while todo:
        node = todo.pop()
        if node in anywhere:
            return set(nodes)
        for nxt in out.get(node, ()):
            if nxt not in seen and nxt != END:
                seen.add(nxt)
                todo.append(nxt)
    return seen
