"""The next frontier: which nodes run in the step after a step, from the edges, the joins, the
routers (awaited under the async API), the `Send`s and gotos, and the `defer=True` nodes held
back until nothing else is to run.

Functions over a `Run` (`_run.py`): they read its state and its graph's edges, and note a
join's progress and the deferred nodes in its internal channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._io import Await, Loop
from ._types import END, Send
from .errors import InvalidUpdateError

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["DEFER_CHANNEL", "await_routers", "next_frontier", "route"]

DEFER_CHANNEL = "__deferred__"
"""The `defer=True` nodes triggered that wait until no other node is to run."""


def await_routers(run: Run, ran: list[str]) -> Loop[dict[int, Any]]:
    """Run the async routers after `ran` (awaited by the async driver; the sync one
    refuses them): what each returned, by `id` of its branch, for `route`."""
    g = run.graph
    out: dict[int, Any] = {}
    state: Any = None
    for name in dict.fromkeys(ran):
        for br in g.branches.get(name, ()):
            if not br.is_async:
                continue
            if state is None:
                state = run.router_view()
            coro = br.router(state, run.config) if br.takes_config else br.router(state)
            name = getattr(br.router, "__name__", type(br.router).__name__)
            what = f"router {name!r} of the conditional edges from {br.source!r}"
            note = f"while routing after node {br.source!r} on thread {run.thread_id!r}"
            out[id(br)] = yield Await(coro, what, note)
    return out


def next_frontier(
    run: Run, ran: list[str], gotos: list[str | Send], new_versions: dict[str, int]
) -> Loop[Sequence[str | Send]]:
    """`route`, after awaiting the async routers it needs, if the graph has any."""
    awaited = (yield from await_routers(run, ran)) if run.graph.async_routers else None
    return route(run, ran, gotos, new_versions, awaited)


def route(
    run: Run,
    ran: list[str],
    gotos: list[str | Send],
    new_versions: dict[str, int],
    awaited: dict[int, Any] | None = None,
) -> Sequence[str | Send]:
    """The next frontier after `ran` finished: nodes in the order they were added, then
    the `Send`s in the order they were made. `awaited`: what the async routers returned."""
    g = run.graph
    if not gotos and len(ran) == 1 and ran[0] in g.plain_next:  # the hot path
        return [*g.plain_next[ran[0]]]
    sends: list[str | Send] = []
    triggered: set[str] = set()
    if gotos:
        for n in gotos:
            if isinstance(n, str):
                triggered.add(n)
            else:
                sends.append(n)
    state: Any = None
    # A node that ran as several `Send`s routes once.
    for name in ran if len(ran) == 1 else dict.fromkeys(ran):
        triggered.update(g.edges.get(name, ()))
        for join in g.joins.get(name, ()):
            seen = set(run.internal.get(join.key, ()))
            seen.add(name)
            if seen >= join.sources:
                triggered.add(join.target)
                seen = set()
            run.internal[join.key] = sorted(seen)
            version = run.versions.get(join.key, 0) + 1
            run.versions[join.key] = new_versions[join.key] = version
        for br in g.branches.get(name, ()):
            if state is None:
                state = run.router_view()
            for dest in resolve(run, br, state, awaited):
                if isinstance(dest, Send):
                    sends.append(dest)
                else:
                    triggered.add(dest)
    triggered.discard(END)
    if g.deferred:
        hold_deferred(run, triggered, bool(sends), new_versions)
    if sends:
        return [*sorted(triggered, key=lambda n: g.nodes[n].index), *sends]
    if len(triggered) == 1:
        return list(triggered)
    names: list[str] = sorted(triggered, key=lambda n: g.nodes[n].index)
    return names


def resolve(
    run: Run, br: Any, state: dict[str, Any], awaited: dict[int, Any] | None = None
) -> list[str | Send]:
    if awaited is not None and br.is_async:
        out = awaited[id(br)]
    else:
        try:
            out = br.router(state, run.config) if br.takes_config else br.router(state)
        except Exception as e:
            e.add_note(f"while routing after node {br.source!r} on thread {run.thread_id!r}")
            raise
    results = out if isinstance(out, (list, tuple)) else [out]
    dests: list[str | Send] = []
    for r in results:
        if isinstance(r, Send):
            if r.node not in run.graph.nodes:
                raise InvalidUpdateError(
                    f"router after {br.source!r} returned Send({r.node!r}, ...), which is "
                    f"not a node; nodes are: {sorted(run.graph.nodes)}"
                )
            dests.append(r)
            continue
        if br.path_map is not None:
            if r not in br.path_map:
                raise InvalidUpdateError(
                    f"router after {br.source!r} returned {r!r}, which is not in its "
                    f"path_map {sorted(map(str, br.path_map))}"
                )
            r = br.path_map[r]
        if r != END and r not in run.graph.nodes:
            raise InvalidUpdateError(
                f"router after {br.source!r} returned {r!r}, which is not a node; nodes "
                f"are: {sorted(run.graph.nodes)}"
            )
        dests.append(r)
    return dests


def hold_deferred(run: Run, triggered: set[str], sends: bool, new_versions: dict[str, int]) -> None:
    """Keep back the triggered `defer=True` nodes while other nodes (or `Send`s) are to
    run; let them all run once nothing else is (changing `triggered` in place)."""
    held = run.internal.get(DEFER_CHANNEL) or []
    waiting = {n for n in (*triggered, *held) if n in run.graph.deferred}
    triggered.update(waiting)
    if waiting and (sends or len(waiting) < len(triggered)):
        triggered.difference_update(waiting)
    else:
        waiting = set()
    now = sorted(waiting)
    if now != held:
        run.internal[DEFER_CHANNEL] = now
        version = run.versions.get(DEFER_CHANNEL, 0) + 1
        run.versions[DEFER_CHANNEL] = new_versions[DEFER_CHANNEL] = version
