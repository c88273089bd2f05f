"""`get_graph()`: the compiled graph as a langchain_core `Graph`, which draws it
(`draw_mermaid()`, `to_json()`, ...) as LangGraph's does.

LangGraph finds the edges by a dry run: it runs the graph's triggers without running any node,
each node "writing" only what its edges declare, and draws an edge wherever a write triggers a
node. Its quirks are what users see in their drawings, so this module does the same dry run on
graphs' own description of the graph:

- a plain edge writes its target's trigger; a join edge writes its barrier, which triggers the
  target once every source has written (a deferred node's trigger, and a barrier to it, only
  when nothing else is to run);
- what a node or router only *may* do is declared once, the first time it runs in the dry run:
  a router's `path_map` (or the `Literal[...]` its return annotation names) and a node's
  `Command(goto=...)` destinations (`destinations=`, `-> Command[Literal[...]]`). Those edges
  are dashed ("conditional"), labelled with the path_map key when it is not the target's name
  (or the label `destinations={"node": "label"}` gives);
  a router that declares nothing is not drawn;
- a node triggered in a step where no edge into it was written gets dashed edges from every node
  of the step before;
- a node that is only ever a target gets a solid edge to END; without one, a last step of one
  node gets a dashed edge to END, unless an edge to END was drawn already. `add_edge(node, END)`
  draws nothing by itself.

Edges are ordered as LangGraph sorts them (by source, target, kind and label; the END edges of
the last rule last). `xray=True` (or a depth) draws each subgraph's nodes in place of its node,
named `node:inner`. A node's data, which `to_json()` names by class, is LangGraph's in LangGraph's
dialect (`_stand_in`), so a drawing's JSON is LangGraph's; in seed 000's dialect it is None (graphs' nodes are not Runnables).
langchain_core is imported only here.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from ._shape import GraphShape
from ._subgraph import graph_called_by
from ._types import END, START

if TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph


Edge = tuple[str, str, bool, str | None]
"""(source, target, conditional, label)."""
Source = tuple[str, bool, str | None]
"""What a node wrote, as (channel, conditional, label), or who wrote a channel: (node, ...)."""

LIMIT = 250
"""The most steps of the dry run (LangGraph's)."""


def _router_ends(router: Any) -> dict[Any, str] | None:
    """The names a router's `-> Literal["a", "b"]` return annotation declares, if any."""
    try:
        hint = typing.get_type_hints(inspect.unwrap(router)).get("return")
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return None
    if get_origin(hint) is Literal:
        return {a: a for a in get_args(hint)}
    return None


def _to(node: str) -> str:
    return f"to:{node}"


class _Trigger:
    """A trigger channel of the dry run: a node's own (set by an edge to it, for the next step
    only, or kept until nothing else runs for a deferred node), or a join's barrier."""

    def __init__(self, names: frozenset[str] | None, after_finish: bool) -> None:
        self.names = names
        self.after_finish = after_finish
        self.seen: set[str] = set()
        self.value = False
        self.finished = False

    def _full(self) -> bool:
        return self.seen == self.names if self.names is not None else self.value

    def available(self) -> bool:
        return self._full() and (self.finished or not self.after_finish)

    def update(self, values: list[Any]) -> bool:
        if self.names is not None:
            new = {v for v in values if v not in self.seen}
            self.seen |= new
            return bool(new)
        if not values:  # a new step: a plain trigger lasts one step
            if self.after_finish or not self.value:
                return False
            self.value = False
            return True
        self.value, self.finished = True, False
        return True

    def consume(self) -> bool:
        if self.after_finish and not self.finished:
            return False
        if self.names is not None:
            if self.seen != self.names:
                return False
            self.seen = set()
        elif not self.after_finish:
            return False
        self.value = self.finished = False
        return True

    def finish(self) -> bool:
        if not self.after_finish or self.finished or not self._full():
            return False
        self.finished = True
        return True


class _DryRun:
    def __init__(self, graph: GraphShape) -> None:
        nodes = graph.nodes
        self.order = [START, *nodes]
        self.channels: dict[str, _Trigger] = {START: _Trigger(None, False)}
        self.triggers: dict[str, list[str]] = {START: [START]}
        for name, spec in nodes.items():
            self.channels[_to(name)] = _Trigger(None, spec.defer)
            self.triggers[name] = [_to(name)]
        self.writes: dict[str, list[tuple[str, Any]]] = {n: [] for n in self.order}
        for source, targets in graph.edges.items():
            self.writes[source] += [(_to(t), None) for t in targets if t != END]
        for joins in graph.joins.values():
            for join in joins:
                if join.key in self.channels or join.target == END:  # (a join to END: none)
                    continue
                self.channels[join.key] = _Trigger(join.sources, nodes[join.target].defer)
                self.triggers[join.target].append(join.key)
                for source in join.sources:
                    self.writes[source].append((join.key, source))
        # What each node declares it may write, once: (channel or END, label) per destination.
        self.declared: dict[str, list[list[tuple[str, str | None]]]] = {n: [] for n in self.order}
        for name, spec in nodes.items():
            if spec.destinations:
                labels = spec.labels or {}
                self.declared[name].append(
                    [(_channel(d), labels.get(d)) for d in spec.destinations]
                )
        for source, branches in graph.branches.items():
            for br in branches:
                ends = br.path_map if br.path_map is not None else _router_ends(br.router)
                if ends:
                    self.declared[source].append([(_channel(t), str(k)) for k, t in ends.items()])
        self.versions: dict[str, int] = {}
        self.seen: dict[str, dict[str, int]] = defaultdict(dict)
        self.clock = 0

    def apply(self, tasks: dict[str, list[tuple[str, Any]]], new_step: bool) -> set[str]:
        """A step's writes, as LangGraph applies them; returns the channels now available."""
        for name in tasks:
            triggers = self.triggers.get(name, ())
            self.seen[name].update({c: self.versions[c] for c in triggers if c in self.versions})
        self.clock += 1
        for chan in {c for name in tasks for c in self.triggers.get(name, ())}:
            if self.channels[chan].consume():
                self.versions[chan] = self.clock
        grouped: dict[str, list[Any]] = defaultdict(list)
        for writes in tasks.values():
            for chan, value in writes:
                if chan in self.channels:
                    grouped[chan].append(value)
        updated: set[str] = set()

        def bump(chan: str, changed: bool) -> None:
            if changed:
                self.versions[chan] = self.clock
                if self.channels[chan].available():
                    updated.add(chan)

        for chan, values in grouped.items():
            bump(chan, self.channels[chan].update(values))
        if new_step:
            for chan, ch in self.channels.items():
                if ch.available() and chan not in updated:
                    bump(chan, ch.update([]))
            if not updated:  # nothing else is to run: deferred triggers fire
                for chan, ch in self.channels.items():
                    bump(chan, ch.finish())
        return updated

    def next_tasks(self, updated: set[str]) -> list[str]:
        names: Iterable[str] = self.order
        if updated:
            names = sorted({n for n in self.order for c in self.triggers[n] if c in updated})
        return [
            n
            for n in names
            if any(
                self.channels[c].available() and self.versions.get(c, 0) > self.seen[n].get(c, 0)
                for c in self.triggers[n]
            )
        ]

    def run(self) -> tuple[set[Edge], dict[str, set[Source]]]:
        """The edges found, and what the last step's nodes wrote."""
        edges: set[Edge] = set()
        declared_once: set[tuple[str, int]] = set()
        declared: dict[str, set[Source]] = defaultdict(set)
        sources: dict[str, set[Source]] = {}
        step_sources: dict[str, set[Source]] = {}
        tasks = self.next_tasks(self.apply({"": [(START, {})]}, new_step=False))
        for _ in range(-1, LIMIT):
            if not tasks:
                break
            conditional: dict[tuple[str, str], str | None] = {}
            writes: dict[str, list[tuple[str, Any]]] = {}
            for name in tasks:
                writes[name] = list(self.writes[name])
                for i, entries in enumerate(self.declared[name]):
                    if (name, i) in declared_once:
                        continue
                    declared_once.add((name, i))
                    for chan, label in entries:
                        if chan == END:
                            edges.add((name, END, True, label))
                            continue
                        conditional[(name, chan)] = label
                        declared[name].add((chan, True, label))
                        writes[name].append((chan, None))
            step_sources = {}
            for name in tasks:
                wrote = {
                    (c, True, conditional[(name, c)])
                    if v is None and (name, c) in conditional
                    else (c, False, None)
                    for c, v in writes[name]
                }
                step_sources[name] = wrote | declared[name]
            sources.update(step_sources)
            writers: dict[str, set[Source]] = defaultdict(set)
            for src, wrote in sources.items():
                for chan, cond, label in wrote:
                    writers[chan].add((src, cond, label))
            tasks = self.next_tasks(self.apply(writes, new_step=True))
            for name in tasks:
                from_this_step = False
                for trigger in self.triggers[name]:
                    for src, cond, label in writers[trigger]:
                        edges.add((src, name, cond, label))
                        if (trigger, cond, label) in step_sources.get(src, ()):
                            from_this_step = True
                        else:  # an older write: not an edge again
                            sources[src].discard((trigger, cond, label))
                if not from_this_step:
                    edges.update((src, name, True, None) for src in step_sources)
        return edges, step_sources


def _channel(target: str) -> str:
    return END if target == END else _to(target)


@functools.cache
def _stand_in_class(module: str, name: str) -> type:
    """A langchain_core Runnable class under the module and name of LangGraph's class for a
    node, so `to_json()` names it as LangGraph's does. It only stands for the node in the
    drawing: the node runs from the compiled graph, never through it."""
    from langchain_core.runnables import Runnable

    def invoke(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"node {self.name!r} of a get_graph() drawing only stands for the node: "
            "run the compiled graph instead"
        )

    return type(name, (Runnable,), {"__module__": module, "__qualname__": name, "invoke": invoke})


def _stand_in(name: str, spec: Any) -> Any:
    """A node's data in LangGraph's dialect, what LangGraph's drawing holds for it: a
    langchain_core Runnable given to `add_node` is itself; a compiled graph stands as LangGraph's
    `CompiledStateGraph`, a prebuilt node (`ToolNode`) as LangGraph's class of the same path, and
    anything else (a function, START) as the `RunnableCallable` LangGraph wraps it in."""
    from langchain_core.runnables import Runnable

    given = None if spec is None else spec.runnable
    prebuilt = type(given).__module__.startswith("graphs.prebuilt.")
    if isinstance(given, Runnable) and not prebuilt:  # (`ToolNode` is one too)
        return given
    module, cls = "langgraph._internal._runnable", "RunnableCallable"
    if isinstance(given, GraphShape):
        module, cls = "langgraph.graph.state", "CompiledStateGraph"
    elif prebuilt:
        module, cls = "langgraph" + type(given).__module__[6:], type(given).__name__
    node = _stand_in_class(module, cls)()
    node.name = name
    return node


def draw(graph: GraphShape, xray: bool | int = False) -> Graph:
    from langchain_core.runnables.graph import Graph, Node

    subgraphs: dict[str, Graph] = {}
    if xray:
        deeper = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
        for name, spec in graph.nodes.items():
            child = graph_called_by(spec.fn)
            if child is not None:
                subgraphs[name] = draw(child, deeper)

    edges, last_step = _DryRun(graph).run()
    out = Graph()
    for name in (START, *graph.nodes):
        metadata: dict[str, Any] = {}
        if name in graph.deferred:
            metadata["defer"] = True
        where = [
            w
            for w, names in (("before", graph.interrupt_before), ("after", graph.interrupt_after))
            if name in names
        ]
        if where:
            metadata["__interrupt"] = ",".join(where)
        data = None
        if graph.dialect == "langgraph":
            node = graph.nodes.get(name)
            data = _stand_in(name, node)
            tools = getattr(node and node.runnable, "tools_by_name", None)  # a ToolNode's
            if isinstance(tools, dict) and tools:
                metadata["__tools"] = list(tools)
        out.add_node(data, name, metadata=metadata or None)

    def add_edge(source: str, target: str, label: str | None, conditional: bool) -> None:
        if any(e.source == source and e.target == target for e in out.edges):
            return
        if target == END and END not in out.nodes:
            out.add_node(None, END)
        out.add_edge(out.nodes[source], out.nodes[target], label, conditional)

    for source, target, cond, label in sorted(
        edges, key=lambda e: (e[0], e[1], e[2], e[3] is not None, e[3] or "")
    ):
        add_edge(source, target, label if label != target else None, cond)
    termini = {t for _, t, _, _ in edges if t != END} - {s for s, _, _, _ in edges}
    if termini:
        for source in sorted(termini):
            add_edge(source, END, None, False)
    elif len(last_step) == 1 and not any(t == END for _, t, _, _ in edges):
        add_edge(next(iter(last_step)), END, None, True)

    for name, sub in subgraphs.items():
        if len(sub.nodes) > 1 and name in out.nodes and sub.first_node() and sub.last_node():
            sub.trim_first_node()
            sub.trim_last_node()
            out.nodes.pop(name)
            first, last = out.extend(sub, prefix=name)
            assert isinstance(first, Node) and isinstance(last, Node)  # sub has both ends
            for i, e in enumerate(out.edges):
                if e.source == name:
                    e = e.copy(source=last.id)
                if e.target == name:
                    e = e.copy(target=first.id)
                out.edges[i] = e
    return out
