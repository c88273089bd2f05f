"""`get_graph()`: the compiled graph as a langchain_core `Graph`, which draws it
(`draw_mermaid()`, ...) as LangGraph's does.

LangGraph finds the edges by a dry run of its channels; graphs knows them from the builder:
plain and join edges are solid; conditional edges (a router's destinations: its `path_map`,
or the `Literal[...]` its return annotation names; a router with neither is not drawn) and
`Command(goto=...)` destinations are dashed, labelled with the path_map key when it differs
from the node's name. A node with no other way out gets a solid edge to END (as in LangGraph,
an `add_edge(node, END)` beside other edges is not drawn). langchain_core is imported only here.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from .types import END, START

if TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph

    from .compiled import CompiledGraph


def _router_ends(router: Any) -> list[str] | None:
    """The names a router's `-> Literal["a", "b"]` return annotation declares, if any."""
    try:
        hint = typing.get_type_hints(router).get("return")
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return None
    if get_origin(hint) is Literal:
        return [a for a in get_args(hint) if isinstance(a, str)]
    return None


def draw(graph: CompiledGraph) -> Graph:
    from langchain_core.runnables.graph import Graph

    edges: list[tuple[str, str, str | None, bool]] = []  # (source, target, label, conditional)

    def edge(source: str, target: str, label: Any = None, conditional: bool = False) -> None:
        text = None if label is None or str(label) == target else str(label)
        if all((s, t) != (source, target) for s, t, _, _ in edges):
            edges.append((source, target, text, conditional))

    for source, targets in graph.edges.items():
        for target in targets:
            if target != END:  # as LangGraph: END is drawn only from nodes with no way out
                edge(source, target)
    seen_joins = set()
    for joins in graph.joins.values():
        for join in joins:
            if join.key not in seen_joins:
                seen_joins.add(join.key)
                for source in sorted(join.sources, key=lambda n: graph.nodes[n].index):
                    edge(source, join.target)
    for source, branches in graph.branches.items():
        for br in branches:
            if br.path_map is not None:
                for key, target in br.path_map.items():
                    edge(source, target, key, True)
                continue
            # A router that declares nothing is not drawn (as in LangGraph).
            for target in _router_ends(br.router) or ():
                edge(source, target, None, True)
    for spec in graph.nodes.values():
        for target in spec.destinations:
            edge(spec.name, target, None, True)

    sources = {s for s, _, _, _ in edges}
    for name in graph.nodes:
        if name not in sources:
            edge(name, END)

    # As LangGraph orders them: START's edges first, then by source, target, kind and label.
    edges.sort(key=lambda e: (e[0] != START, e[0], e[1], e[3], e[2] or ""))
    out = Graph()
    nodes = {START: out.add_node(None, START)}
    for name in graph.nodes:
        where = [
            w
            for w, names in (("before", graph.interrupt_before), ("after", graph.interrupt_after))
            if name in names
        ]
        metadata = {"__interrupt": ",".join(where)} if where else None
        nodes[name] = out.add_node(None, name, metadata=metadata)
    nodes[END] = out.add_node(None, END)
    for source, target, label, conditional in edges:
        out.add_edge(nodes[source], nodes[target], label, conditional)
    return out
