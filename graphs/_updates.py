"""`update_state`, `bulk_update_state` and `fork`: a checkpoint written on a thread as if nodes
had run (or its input had been given), without running any.

Generators over a `Run` (`_run.py`) like the loop's `execute`: they yield the same I/O requests
(`_io.py`), the drivers perform them, and they share the step's pure functions (`_algo.py`).
Where seed 000's dialect and LangGraph's differ (`graphs.types.Dialect`), `update_state` without
`as_node` replaces keys in the first and goes through the reducers as the node that ran last
in the second (`last_ran`); an `update_state` given a past checkpoint is refused in the first and
forks from it inside the thread in the second (`branch_at`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._algo import apply_writes, expire, is_overwrite, overwrite_value, static_pause
from ._input import save_input, update_gotos
from ._io import GetCheckpoint, GetHead, Loop, PutWrites
from ._routing import next_frontier
from ._run import ONCE_CHANNEL, Run
from ._save import branch, carry_over, frontier_names, refuse_unknown_effects, save
from ._types import END, START, Command, RunConfig, Send
from .checkpoint.base import DONE, ONCE, CheckpointTuple, checkpoint_config
from .errors import InvalidUpdateError, short

__all__ = ["fork", "update", "update_step"]

INPUT = "__input__"
"""`update_state(as_node="__input__")`: the values are written as a run's input is."""


def update(run: Run, values: Any, as_node: str | None) -> Loop[RunConfig]:
    return (yield from update_step(run, [(values, as_node)]))


def update_step(run: Run, updates: Sequence[tuple[Any, str | None]]) -> Loop[RunConfig]:
    """One checkpoint of `update_state`s: `(values, as_node)` pairs, as if those nodes had
    run in one step (several need `as_node` each)."""
    tup = yield GetHead()
    if run.enclosing:
        yield from check_enclosing(run, tup)
    if tup is not None:
        run.restore(tup)
        if (
            run.requested_id is not None
            and run.requested_id != run.head_id
            and run.graph.dialect == "langgraph"
            and not run.enclosing
        ):
            tup = yield from branch_at(run, tup)
        elif run.requested_id is not None and run.requested_id != run.head_id:
            raise InvalidUpdateError(
                f"update_state on thread {run.thread_id!r} names checkpoint "
                f"{run.requested_id}, which is not the thread's latest ({run.head_id}): an "
                "update goes on the latest checkpoint only. To change a past checkpoint, "
                "fork it into a new thread: graph.fork(config, thread_id, values=...); to "
                "update the latest, drop checkpoint_id from the config"
            )
    if run.graph.dialect == "langgraph" and len(updates) == 1 and updates[0][1] in (None, END):
        values, as_node = updates[0]
        if as_node == END and values is None and tup is not None:
            return (yield from clear(run, tup))
        if as_node is None:
            updates = [(values, (yield from last_ran(run, tup)))]
    return (yield from amend_step(run, updates))


def clear(run: Run, head: CheckpointTuple) -> Loop[RunConfig]:
    """LangGraph's dialect: `update_state(config, None, as_node=END)` ends the thread's run
    where it stands, as LangGraph: the writes of the head's finished tasks are applied, the
    tasks still to run (pauses with them) are dropped, and the new checkpoint has nothing
    next. The `once()` effects the dropped tasks recorded are kept, so they never run again on
    the thread; a thread whose head holds an effect started with no outcome is refused."""
    refuse_unknown_effects(run, head)
    step: list[tuple[str, list[tuple[str, Any]]]] = []
    once = dict(run.once_results)
    for name, task_id in run.frontier:
        writes = run.pending.get(task_id, ())
        if (DONE, True) in writes:
            step.append((name, [(c, v) for c, v in writes if c in run.graph.channels]))
        once.update((v[0], v[2]) for c, v in writes if c == ONCE and v[1] == "done")
    new_versions, appended = apply_writes(run.graph.channels, run.values, run.versions, step)
    if once != run.once_results:
        run.internal[ONCE_CHANNEL] = once
        run.versions[ONCE_CHANNEL] = new_versions[ONCE_CHANNEL] = (
            run.versions.get(ONCE_CHANNEL, 0) + 1
        )
    yield from save(run, "update", [], new_versions, appended, [])
    assert run.head_config is not None
    return run.head_config


def branch_at(run: Run, head: CheckpointTuple) -> Loop[CheckpointTuple]:
    """LangGraph's dialect: `update_state` given a past checkpoint forks from it, inside the
    thread (`_save.branch`): the update's checkpoint is the past one's child and the thread's
    new head. Returns the past checkpoint."""
    assert run.requested_id is not None
    past: CheckpointTuple | None = yield GetCheckpoint(
        checkpoint_config(run.thread_id, run.ns, run.requested_id)
    )
    if past is None:
        raise InvalidUpdateError(
            f"update_state on thread {run.thread_id!r} names checkpoint {run.requested_id}, "
            "which the thread does not have: pick one from get_state_history(config)"
        )
    branch(run, past, head)
    return past


def last_ran(run: Run, tup: CheckpointTuple | None) -> Loop[str]:
    """LangGraph's dialect: the node an `update_state` without `as_node` is written as, the
    one whose step made the state `tup` holds, so the update goes through the reducers as
    that node's would and the edges after it are taken again (an edited message replaces
    the one with its id, and the pending tool call sees it). Found by walking back from
    `tup` past updates, forks and inputs to the last step that ran nodes (or `"__start__"`
    where none ran yet). Raises `InvalidUpdateError` when that step ran several nodes, or when
    the checkpoint before it was not saved (`durability="exit"`), so which ran is not known."""
    while tup is not None:
        parent = tup.parent_config
        origin = tup.metadata.get("forked_from")
        if parent is None and origin is not None:  # a fork's first checkpoint: its source's
            source = checkpoint_config(origin["thread_id"], run.ns, origin["checkpoint_id"])
            tup = yield GetCheckpoint(source)
            continue
        if parent is None:
            if tup.metadata.get("source") == "loop" and tup.metadata.get("step", -1) >= 0:
                raise InvalidUpdateError(
                    f"update_state on thread {run.thread_id!r}: which node made its latest "
                    "state is not recorded (the run saved no checkpoint before it, as under "
                    "durability='exit'): pass as_node= the node whose update it is"
                )
            break
        before: CheckpointTuple | None = yield GetCheckpoint(parent)
        if tup.metadata.get("source") == "loop" and before is not None:
            ran = list(dict.fromkeys(name for name, _ in before.checkpoint["next_tasks"]))
            if len(ran) == 1:
                return ran[0]
            raise InvalidUpdateError(
                f"update_state on thread {run.thread_id!r}: nodes {ran} ran in the step "
                "that made its latest state, so which node the update comes from is "
                "ambiguous (LangGraph's 'Ambiguous update, specify as_node'): pass "
                "as_node= the node whose update it is"
            )
        tup = before
    return START


def check_enclosing(run: Run, tup: CheckpointTuple | None) -> Loop[None]:
    """An update of a subgraph's state goes on only where resuming its parent reads it:
    the subgraph has a checkpoint there, and each enclosing graph's head still waits on
    the task that runs it (pending, not finished), so the update is never written to a
    subgraph run that is over. The update's checkpoint notes those heads as its `parents`
    (and a `checkpointer=True` subgraph's, the task its head noted)."""
    where = f"update_state on thread {run.thread_id!r}, checkpoint_ns {run.ns!r}"
    if tup is None:
        raise InvalidUpdateError(
            f"{where}: no subgraph has run there (no checkpoint); pass the config of a "
            "pending task's subgraph: get_state(config, subgraphs=True).tasks[i].state"
        )
    parents: dict[str, str] = {}
    for ns, segment in run.enclosing:
        head = yield GetHead(ns)
        name, _, task_id = segment.partition(":")
        level = f"namespace {ns!r}" if ns else "the thread"
        waits = head is not None and (
            not task_id  # a `checkpointer=True` subgraph keeps its state between runs
            or (
                any(t == task_id for _, t in head.checkpoint["next_tasks"])
                and not any(t == task_id and c == DONE for t, c, _ in head.pending_writes)
            )
        )
        if not waits:
            raise InvalidUpdateError(
                f"{where}: the task of node {name!r} that ran this subgraph is over (not "
                f"pending at the head of {level}), so no run would read the update; a "
                "subgraph's state is updated while its parent waits on it (paused or failed "
                "inside it): read the head's tasks with get_state(config, subgraphs=True)"
            )
        assert head is not None
        parents[ns] = head.checkpoint["id"]
    run.parents = parents
    if run.graph.persistent:
        run.task_mark = tup.metadata.get("task")


def amend(run: Run, values: Any, as_node: str | None) -> Loop[RunConfig]:
    """Write `values` in a new checkpoint on the head (see `CompiledGraph.update_state`)."""
    return (yield from amend_step(run, [(values, as_node)]))


def amend_step(run: Run, updates: Sequence[tuple[Any, str | None]]) -> Loop[RunConfig]:
    """Write one checkpoint of `(values, as_node)` pairs on the head (see `update_step`)."""
    if not updates:
        raise InvalidUpdateError(
            "bulk_update_state: No updates provided in a step: give each step at least one "
            "StateUpdate(values, as_node)"
        )
    if len(updates) > 1 and any(as_node is None for _, as_node in updates):
        raise InvalidUpdateError(
            "bulk_update_state: a step with several updates needs as_node on each (the "
            "node each update is written as)"
        )
    (values, as_node), *_ = updates
    # `values=None` writes nothing: with `as_node`, it records that node as having run.
    if INPUT in (node for _, node in updates):
        if len(updates) > 1:
            raise InvalidUpdateError(
                "bulk_update_state: an update as_node='__input__' is written as a run's "
                "input, alone in its step: give it a step (an inner list) of its own"
            )
        yield from write_input(run, values)
    elif as_node is None:
        writes = [] if values is None else run.check_input(values, "update_state values")
        check_replacements(run, writes)
        new_versions, appended = apply_writes(
            run.graph.channels,
            run.values,
            run.versions,
            [("update_state", writes)],
            reducers=False,
        )
        yield from carry_over(run, "update", new_versions, {})
    else:
        ran: list[str] = []
        gotos: list[str | Send] = []
        step: list[tuple[str, list[tuple[str, Any]]]] = []
        for values, node in updates:
            assert node is not None
            if node not in run.graph.nodes and node != START:
                raise InvalidUpdateError(
                    f"update_state(as_node={node!r}): no such node; nodes are: "
                    f"{sorted(run.graph.nodes)} (or START, '__start__', as if the input had "
                    "just been read, and '__input__', written as a run's input)"
                )
            if isinstance(values, Command):  # as if the node had returned it
                gotos += update_gotos(run, f"update_state(as_node={node!r})", values.goto)
                values = values.update
            writes = [] if values is None else run.check_input(values, "update_state values")
            step.append((node, writes))
            ran.append(node)
        if run.graph.deferred and run.graph.dialect == "langgraph":
            # As LangGraph, whose deferred node stays triggered until it runs: the head's
            # deferred tasks are still to run after the update.
            gotos += [n for n, _ in run.frontier if n in run.graph.deferred and n not in gotos]
        if run.frontier and run.frontier[0][0] == START and START in ran:
            # As LangGraph: an update as `"__start__"` on an input checkpoint is what its
            # `__start__` task wrote (history shows it as the task's result).
            writes = [w for node, ws in step if node == START for w in ws]
            if run.graph.untracked:
                writes = [(c, v) for c, v in writes if c not in run.graph.untracked]
            yield PutWrites(run.head(), [*writes, (DONE, True)], run.frontier[0][1])
        new_versions, appended = apply_writes(run.graph.channels, run.values, run.versions, step)
        if run.graph.fleeting:  # as if those nodes had run a step
            expire(run.graph.fleeting, run.values, run.versions, new_versions)
        names = yield from next_frontier(run, ran, gotos, new_versions)
        # As if those nodes had run: the next checkpoint pauses where a real step would.
        paused = static_pause(run.graph.interrupt_before, run.graph.interrupt_after, names, ran)
        yield from save(run, "update", names, new_versions, appended, paused)
    assert run.head_config is not None
    return run.head_config


def check_replacements(run: Run, writes: list[tuple[str, Any]]) -> None:
    """`update_state` without `as_node` replaces each key with the value given: refuse a
    reducer key's list replaced by something that is not a list (one message, say, as
    LangGraph's code passes for `add_messages` to merge), which would leave that one thing
    as the key's whole value and lose the rest without a word."""
    channels = run.graph.channels
    for key, given in writes:
        spec = channels[key]
        value = overwrite_value(given) if is_overwrite(given) else given
        current = run.values.get(key)
        if spec.reducer is None or type(current) is not list:
            continue
        if value is None or isinstance(value, list):  # None: cleared on purpose
            continue
        reducer = getattr(spec.reducer, "__name__", type(spec.reducer).__name__)
        raise InvalidUpdateError(
            f"update_state without as_node replaces each key with the value given, and "
            f"state key {key!r} (a list of {len(current)}, reducer {reducer}) was given "
            f"{short(value)}, which would become its whole value: "
            f"pass the whole list, or as_node= the node whose update it is, to merge it "
            f"with {reducer} (and take the edges after that node again, as LangGraph "
            "does)"
        )


def write_input(run: Run, values: Any) -> Loop[None]:
    """`update_state(as_node="__input__")`: save the input checkpoint `invoke(values)`
    would (`save_input`), without running anything: its `__start__` task applies the input
    when the thread is run on (`invoke(None, config)`), or `update_state(values,
    as_node="__start__")` writes what the task would have written."""
    if values is None:
        raise InvalidUpdateError(
            "update_state(as_node='__input__') needs values: the input to write (a dict of "
            "state keys)"
        )
    writes = run.check_input(values, "update_state values", run.graph.input_keys, input=True)
    yield from save_input(run, writes)


def fork(run: Run, source: CheckpointTuple, values: Any, as_node: str | None) -> Loop[RunConfig]:
    """Start this run's thread, which must not exist yet, at a copy of `source` (a
    checkpoint of any thread): its state, and its frontier with task ids of this thread.
    The frontier's tasks run afresh when the new thread is resumed; the source thread is
    not touched. `values` are then written as `update_state` would."""
    if (yield GetHead()) is not None:
        raise InvalidUpdateError(
            f"fork: thread {run.thread_id!r} already exists; a fork starts a new thread: "
            "pass a thread id that has no checkpoint (or none, for a fresh one)"
        )
    run.restore(source)
    run.head_config = None  # the first checkpoint of this thread: no parent
    names = frontier_names(run)
    origin = source.config["configurable"]
    forked_from = {"thread_id": origin["thread_id"], "checkpoint_id": origin["checkpoint_id"]}
    # Every channel is new to this thread's saver.
    yield from save(run, "fork", names, dict(run.versions), {}, run.paused, forked_from)
    if values is not None:
        if as_node is None and run.graph.dialect == "langgraph":
            as_node = yield from last_ran(run, source)
        return (yield from amend(run, values, as_node))
    assert run.head_config is not None
    return run.head_config
