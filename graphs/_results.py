"""What a finished task's return becomes: the writes its update makes (`writes_of`), the gotos it
follows, a `Command` for its parent graph (`to_parent`), what its `updates` chunk shows, and the
pending writes that record it finished in a step of several tasks.

Functions over a `Run` and a `Task` (`_run.py`); `to_writes`, which the loop calls as a task
finishes, asks the run first (`Run.writes_returned`: an `@entrypoint`'s own return).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._algo import apply_writes, name_messages, write_order
from ._io import Emit, Loop
from ._schema import ROOT, updates_of
from ._types import END, Command, Interrupt, Send
from .checkpoint.base import DONE, GOTO
from .errors import InvalidUpdateError, ParentCommand, short

if TYPE_CHECKING:
    from ._run import Run, Task

__all__ = [
    "finished_output",
    "finished_updates",
    "finished_writes",
    "to_parent",
    "update_chunk",
    "update_of",
    "writes_of",
]


def update_of(run: Run, task: Task) -> Any:
    """What the `updates` stream shows of a task: its update (the value, for a root
    channel), None if it wrote nothing; a list return shows a list, one per item that
    wrote something, as LangGraph."""
    root = run.graph.root
    writes = task.writes
    if task.split is None:
        if not writes:
            return None
        if root:
            return writes[0][1]
        if len(writes) > 1 and len({c for c, _ in writes}) < len(writes):
            # A key written twice (`push_message()`, then the return): as LangGraph, one
            # update per write, in the order written.
            return [{c: v} for c, v in writes]
        return dict(writes)
    # `push_message()`'s writes come first, each an update of its own, then the items.
    start = len(writes) - sum(task.split)
    shown: list[Any] = [{c: v} for c, v in writes[:start]]
    for n in task.split:
        part = task.writes[start : start + n]
        start += n
        if part:
            shown.append(part[0][1] if root else dict(part))
    return shown or None


def update_chunk(run: Run, task: Task) -> dict[str, Any]:
    """A task's `updates` chunk: `{node: update}`, with `"__metadata__": {"cached": True}`
    when its node's cache gave the result (the node did not run), as LangGraph marks it."""
    if task.cached:
        return {task.name: update_of(run, task), "__metadata__": {"cached": True}}
    return {task.name: update_of(run, task)}


def writes_of(run: Run, task: Task, result: Any) -> tuple[list[tuple[str, Any]], list[Any]] | None:
    """One return value's writes and gotos; None (with `task.error` set) if invalid."""
    goto: Any = ()
    if result is None:
        return [], []
    if isinstance(result, Command):
        update: Any = result.update or {}
        if run.graph.root and result.update is not None:
            update = {ROOT: result.update}
        goto = result.goto
    elif run.graph.root:
        update = {ROOT: result}
    elif isinstance(result, dict):
        update = result
    elif isinstance(result, Mapping):
        update = dict(result)
    elif (typed := updates_of(result)) is not None:
        update = typed
    else:
        task.error = InvalidUpdateError(
            f"node {task.name!r} returned {type(result).__name__} {short(result)}; a node "
            "must return a dict of state updates (or None, or a Command)"
        )
        return None
    if type(update) in (list, tuple) and all(
        type(pair) is tuple and len(pair) == 2 for pair in update
    ):
        update = _Pairs(update)  # LangGraph's `[(key, value), ...]` update
    elif not isinstance(update, Mapping) and (typed := updates_of(update)) is not None:
        update = typed  # a pydantic instance with no field set is an empty update
    channels = run.graph.channels
    managed = run.graph.managed
    if managed and any(key in managed for key in update):
        update = _Pairs((k, v) for k, v in update.items() if k not in managed)
    unknown = [key for key in update if key not in channels]
    if unknown and run.graph.dialect == "langgraph":
        # As LangGraph: a node's update keeps the state's keys and drops the others.
        update = _Pairs((k, v) for k, v in update.items() if k in channels)
    elif unknown:
        task.error = InvalidUpdateError(
            f"node {task.name!r} returned unknown state key {unknown[0]!r}; the state's keys "
            f"are: {sorted(channels)}"
        )
        return None
    if not goto:
        return list(update.items()), []
    names = [goto] if isinstance(goto, (str, Send)) else list(goto)
    bad = [
        n
        for n in names
        if (n.node if isinstance(n, Send) else n) not in run.graph.nodes and n != END
    ]
    if bad:
        task.error = InvalidUpdateError(
            f"node {task.name!r} returned Command(goto={bad}) naming unknown node(s); "
            f"nodes are: {sorted(run.graph.nodes)}"
        )
        return None
    return list(update.items()), names


def to_parent(run: Run, task: Task, command: Command[Any]) -> None:
    """`Command(graph=Command.PARENT)`: leave this run; the parent's task returns it."""
    if command.graph != Command.PARENT:
        task.error = InvalidUpdateError(
            f"node {task.name!r} returned Command(graph={command.graph!r}); the only graph "
            "a command can name is Command.PARENT"
        )
    elif run.parent is None:
        # As LangGraph: the caller gets it (a node that invoked this graph applies it).
        error = ParentCommand(Command(update=command.update, goto=command.goto))
        error.add_note(
            f"node {task.name!r} returned Command(graph=Command.PARENT), but its graph is "
            "not running as a subgraph, so no parent graph applies it: the caller gets "
            "it as ParentCommand (.command)"
        )
        task.error = error
    else:
        raise ParentCommand(Command(update=command.update, goto=command.goto))


def finished_writes(run: Run, t: Task) -> list[tuple[str, Any]]:
    """The pending writes that record finished task `t`: what it wrote (messages named,
    `UntrackedValue` keys left out), its gotos, and that it is done."""
    name_messages(run.graph.channels, t.writes)
    kept = t.writes
    if run.graph.untracked:  # never stored, so a resumed run does not have them
        kept = [(c, v) for c, v in kept if c not in run.graph.untracked]
    return [*kept, *([(GOTO, t.goto)] if t.goto else []), (DONE, True)]


def finished_updates(
    run: Run, ran: list[Task], asked: dict[str, tuple[Interrupt, ...]]
) -> Loop[None]:
    """The `updates` chunks of an incomplete step's pauses, in frontier order, after the
    chunks of its finished tasks (each streamed as the task finished: `finish`)."""
    for t in ran:
        if t.id in asked:
            yield Emit("updates", {"__interrupt__": asked[t.id]})


def finished_output(run: Run, tasks: list[Task]) -> Any:
    """The run's output with the writes of the step's finished tasks applied, on a copy
    (the saved state stays the one from before the step); None if they wrote no output
    key, or if their writes cannot be merged (the step reports that when it completes)."""
    step = [
        (t.name, t.writes)
        for t in write_order(tasks)
        if t.writes and t.error is None and t.pause is None
    ]
    keys = run.graph.output_keys
    if not step or (keys is not None and not any(c in keys for _, w in step for c, _ in w)):
        return None
    values, versions = run.values, run.versions
    run.values, run.versions = dict(values), dict(versions)
    try:
        apply_writes(run.graph.channels, run.values, run.versions, step)
        return run.output()
    except InvalidUpdateError:
        return None
    finally:
        run.values, run.versions = values, versions


class _Pairs(list):  # type: ignore[type-arg]
    """An update given as `(key, value)` pairs: iterates its keys, `items()` gives the pairs
    (so one key may be written twice, each through the reducer)."""

    def __iter__(self) -> Any:
        return (key for key, _ in super().__iter__())

    def items(self) -> list[tuple[str, Any]]:
        return list(super().__iter__())


def to_writes(run: Run, task: Task) -> None:
    """Turn a finished task's return value into writes, or record why it is invalid.

    A list holding a `Command` is several returns in order (LangGraph's mixed returns):
    their updates are written one after another and their gotos all followed.
    """
    result = task.result
    if result is None:
        return
    if type(result) is dict and not run.graph.root:  # the hot path: a plain update
        channels = run.graph.channels
        for key in result:
            if key not in channels:
                break
        else:
            task.writes = list(result.items())
            return
    own = run.writes_returned(result)  # (None for a dict, whatever the run)
    if own is not None:
        task.writes = own
        return
    parts = (
        list(result)
        if type(result) in (list, tuple) and any(isinstance(r, Command) for r in result)
        else [result]
    )
    writes: list[tuple[str, Any]] = []
    gotos: list[Any] = []
    split: list[int] = []
    for part in parts:
        if isinstance(part, Command) and part.graph is not None:
            to_parent(run, task, part)
            return
        one = writes_of(run, task, part)
        if one is None:
            return
        writes += one[0]
        gotos += one[1]
        split.append(len(one[0]))
    task.writes = writes
    task.split = split if len(split) > 1 else None
    if gotos:
        task.goto = gotos
