"""Saving a run: the next checkpoint made from its state (its values, versions and frontier, each
task with its id and each `Send` with its argument), written through the driver (`save`), or
written keeping the frontier and its pending writes (`carry_over`: an input, an update, a
resume's answers).

Functions over a `Run` (`_run.py`); they yield the `PutCheckpoint` and `PutWrites` requests of
`_io.py`, and stream the `checkpoints`/`debug` modes' payload of what they saved.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._algo import task_id_of
from ._io import Loop, PutCheckpoint, PutWrites
from ._run import ONCE_CHANNEL, SEND_TIMEOUTS_CHANNEL, SENDS_CHANNEL
from ._stream import checkpoint_payload, trace
from ._types import START, RunConfig, Send, TimeoutPolicy
from .checkpoint.base import (
    BRANCH_HEAD,
    ONCE,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    checkpoint_seq,
    new_checkpoint,
    new_checkpoint_id,
)
from .errors import SideEffectUnknownError

if TYPE_CHECKING:
    from ._run import Run

__all__ = [
    "START_CHANNEL",
    "branch",
    "carry_over",
    "checkpoint",
    "clear_sends",
    "frontier_names",
    "save",
    "set_send_timeouts",
]

START_CHANNEL = START
"""The input an input checkpoint holds (a dict of state keys), until its `__start__` task
applies it (LangGraph's `__start__` channel)."""


_SECOND: tuple[int, str, str] = (-1, "", "")
"""The last second a checkpoint was stamped in: (its Unix time, its ISO-8601 date and time of
day, the same with the UTC offset)."""


def _now() -> str:
    """The time now as `datetime.now(UTC).isoformat()` gives it, the date and time of day
    formatted once per second."""
    global _SECOND
    second, fraction = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _SECOND
    if cached[0] != second:
        whole = dt.datetime.fromtimestamp(second, dt.UTC).isoformat()
        cached = _SECOND = (second, whole.removesuffix("+00:00"), whole)
    if fraction:
        return f"{cached[1]}.{fraction:06d}+00:00"
    return cached[2]


def checkpoint(
    run: Run,
    names: Sequence[str | Send],
    paused: list[str],
    appended: dict[str, int],
    new_versions: dict[str, int],
) -> Checkpoint:
    """The next checkpoint, whose frontier is `names` (each with a new task id)."""
    checkpoint_id = new_checkpoint_id(max(checkpoint_seq(run.head_id), run.tip_seq) + 1)
    if names and type(names[-1]) is not str or SENDS_CHANNEL in run.internal:
        set_frontier(run, names, checkpoint_id, new_versions)
    else:  # no Send (they come last): the hot path
        run.frontier = [
            (n, task_id_of(run.thread_id, run.ns, checkpoint_id, n))  # type: ignore[misc, arg-type]
            for n in names
        ]
    return _checkpoint(run, checkpoint_id, paused, appended)


def set_frontier(
    run: Run, names: Sequence[str | Send], checkpoint_id: str | None, new_versions: dict[str, int]
) -> None:
    """Give each node of the next frontier its task id; note what each `Send` runs on."""
    if not names or type(names[-1]) is str:  # no Send (they come last)
        run.frontier = [
            (
                n,
                n if checkpoint_id is None else task_id_of(run.thread_id, run.ns, checkpoint_id, n),  # type: ignore[arg-type]
            )  # type: ignore[misc]
            for n in names
        ]
        clear_sends(run, new_versions)
        return
    frontier: list[tuple[str, str]] = []
    sends: dict[str, Any] = {}
    timeouts: dict[str, TimeoutPolicy] = {}
    for i, n in enumerate(names):
        if isinstance(n, str):
            frontier.append(
                (
                    n,
                    n
                    if checkpoint_id is None
                    else task_id_of(run.thread_id, run.ns, checkpoint_id, n),
                )
            )
            continue
        key = f"{n.node}\x00send\x00{i}"
        task_id = (
            key if checkpoint_id is None else task_id_of(run.thread_id, run.ns, checkpoint_id, key)
        )
        frontier.append((n.node, task_id))
        sends[task_id] = n.arg
        if n.timeout is not None:
            timeouts[task_id] = n.timeout
    run.frontier = frontier
    run.internal[SENDS_CHANNEL] = sends
    run.versions[SENDS_CHANNEL] = new_versions[SENDS_CHANNEL] = (
        run.versions.get(SENDS_CHANNEL, 0) + 1
    )
    set_send_timeouts(run, timeouts, new_versions)


def set_send_timeouts(
    run: Run, timeouts: dict[str, TimeoutPolicy], new_versions: dict[str, int]
) -> None:
    """Note the `Send(timeout=)` of each frontier task sent one (a channel saved only
    while some pending `Send` has a timeout)."""
    if not timeouts and not run.internal.get(SEND_TIMEOUTS_CHANNEL):
        return
    run.internal[SEND_TIMEOUTS_CHANNEL] = timeouts
    run.versions[SEND_TIMEOUTS_CHANNEL] = new_versions[SEND_TIMEOUTS_CHANNEL] = (
        run.versions.get(SEND_TIMEOUTS_CHANNEL, 0) + 1
    )


def clear_sends(run: Run, new_versions: dict[str, int]) -> None:
    """The frontier has no `Send` any more: empty the channel that held their args."""
    if run.internal.get(SENDS_CHANNEL):
        run.internal[SENDS_CHANNEL] = {}
        run.versions[SENDS_CHANNEL] = new_versions[SENDS_CHANNEL] = (
            run.versions.get(SENDS_CHANNEL, 0) + 1
        )
    set_send_timeouts(run, {}, new_versions)


def _checkpoint(
    run: Run, checkpoint_id: str, paused: list[str], appended: dict[str, int]
) -> Checkpoint:
    """The run as it stands (values, versions, frontier) as a checkpoint."""
    values = {**run.values, **run.internal}
    if run.graph.untracked:
        leave_untracked(run, values)
    return new_checkpoint(
        checkpoint_id,
        _now(),
        values,
        dict(run.versions),
        [[n, t] for n, t in run.frontier],
        paused,
        appended,
    )


def leave_untracked(run: Run, values: dict[str, Any]) -> None:
    """Take the `UntrackedValue` keys out of a checkpoint's `values`, and out of the dict
    arguments of the `Send`s it saves (the tasks of this run have them as they were)."""
    untracked = run.graph.untracked
    for key in untracked:
        values.pop(key, None)
    start = values.get(START_CHANNEL)
    if start:
        values[START_CHANNEL] = {k: v for k, v in start.items() if k not in untracked}
    sends = values.get(SENDS_CHANNEL)
    if sends:
        values[SENDS_CHANNEL] = {
            task_id: {k: v for k, v in arg.items() if k not in untracked}
            if type(arg) is dict
            else arg
            for task_id, arg in sends.items()
        }


def move_on(
    run: Run, names: Sequence[str | Send], new_versions: dict[str, int], paused: list[str]
) -> None:
    """A run without a saver finished a step: the next frontier, each task's id its node's
    name (or its `Send`'s key), with nothing to save."""
    run.step += 1
    run.pending = {}
    run.paused = list(paused)
    if names and type(names[-1]) is not str or SENDS_CHANNEL in run.internal:
        set_frontier(run, names, None, new_versions)
    else:  # no Send (they come last): the hot path
        run.frontier = [(n, n) for n in names]  # type: ignore[misc]


def save(
    run: Run,
    source: str,
    names: Sequence[str | Send],
    new_versions: dict[str, int],
    appended: dict[str, int],
    paused: list[str],
    forked_from: dict[str, str] | None = None,
) -> Loop[None]:
    """Write the next checkpoint (or, without a saver, just move the frontier: `move_on`)."""
    if run.saver is None:
        move_on(run, names, new_versions, paused)
        return
    run.step += 1
    run.pending = {}
    run.paused = list(paused)
    if START_CHANNEL in run.internal and not (names and names[0] == START):
        # The input it held is applied, or replaced (a fork of an input checkpoint keeps it
        # for the `__start__` task that applies it).
        drop_start(run, new_versions)
    cp = checkpoint(run, names, paused, appended, new_versions)
    parent = run.head_config or {
        "configurable": {"thread_id": run.thread_id, "checkpoint_ns": run.ns}
    }
    metadata: CheckpointMetadata = {
        "source": source,
        "step": run.step,
        "parents": run.parents,
    }
    if forked_from is not None:
        metadata["forked_from"] = forked_from
    if run.task_mark is not None:
        metadata["task"] = run.task_mark
    if run.noted:
        metadata.update(run.noted)  # type: ignore[typeddict-item]
    if run.branch_head is not None:
        run.head_config = yield branch_put(run, parent, cp, metadata)
    elif run.put_now is not None:  # the sync driver's hot path
        run.head_config = run.put_now(parent, cp, metadata, new_versions)
    else:
        run.head_config = yield PutCheckpoint(parent, cp, metadata, new_versions)
    run.head_id = cp["id"]
    if run.trace:
        payload = checkpoint_payload(run, run.saved_parent(parent), metadata)
        yield from trace(run, "checkpoints", payload, run.step)


def drop_start(run: Run, new_versions: dict[str, int]) -> None:
    """The input the head held is applied (or an update replaced it): empty its channel."""
    del run.internal[START_CHANNEL]
    version = run.versions.get(START_CHANNEL, 0) + 1
    run.versions[START_CHANNEL] = new_versions[START_CHANNEL] = version


def carry_over(
    run: Run,
    source: str,
    new_versions: dict[str, int],
    appended: dict[str, int],
    *,
    start: bool = False,
) -> Loop[None]:
    """Save a checkpoint that keeps the frontier, its task ids and their pending writes;
    `start`: an input checkpoint, whose frontier begins with the `__start__` task."""
    if run.saver is None:
        return
    pending = run.pending
    run.step += 1
    checkpoint_id = new_checkpoint_id(max(checkpoint_seq(run.head_id), run.tip_seq) + 1)
    if start:
        run.frontier = [
            (START, task_id_of(run.thread_id, run.ns, checkpoint_id, START)),
            *run.frontier,
        ]
    elif START_CHANNEL in run.internal and all(n != START for n, _ in run.frontier):
        drop_start(run, new_versions)
    cp = _checkpoint(
        run,
        checkpoint_id,
        # An update leaves a static pause in place; input given on resume lifts it.
        list(run.paused) if source == "update" else [],
        appended,
    )
    # A new thread has no parent: a config without checkpoint_id (not an empty id).
    parent = run.head_config or {
        "configurable": {"thread_id": run.thread_id, "checkpoint_ns": run.ns}
    }
    metadata: CheckpointMetadata = {
        "source": source,
        "step": run.step,
        "parents": run.parents,
    }
    if run.task_mark is not None:
        metadata["task"] = run.task_mark
    if run.noted:
        metadata.update(run.noted)  # type: ignore[typeddict-item]
    if run.branch_head is None:
        head: RunConfig = yield PutCheckpoint(parent, cp, metadata, new_versions)
    else:
        head = yield branch_put(run, parent, cp, metadata)
    run.head_config = head
    run.head_id = cp["id"]
    if run.trace:
        payload = checkpoint_payload(run, run.saved_parent(parent), metadata)
        yield from trace(run, "checkpoints", payload, run.step)
    for task_id, writes in pending.items():
        yield PutWrites(head, writes, task_id)


def frontier_names(run: Run) -> list[str | Send]:
    """The run's frontier as the names `save` takes, each `Send` with its argument (and
    timeout): the same tasks under the new checkpoint's ids."""
    sends = run.internal.get(SENDS_CHANNEL) or {}
    timeouts = run.internal.get(SEND_TIMEOUTS_CHANNEL) or {}
    return [
        Send(name, sends[task_id], timeout=timeouts.get(task_id)) if task_id in sends else name
        for name, task_id in run.frontier
    ]


def branch(run: Run, past: CheckpointTuple, head: CheckpointTuple) -> None:
    """LangGraph's time travel inside a thread: the run goes on from `past`, a checkpoint
    before the thread's head `head`, and its first checkpoint branches from it over that head
    (`branch_put`), so the new checkpoints are the thread's head and the old ones stay in
    history.

    The tasks `past` waited on run again from their top: their pending writes there (answers
    given, finished writes, pauses) are not carried, so an `interrupt()` asks again. What the
    thread recorded of `once()` effects is: the head's results (and its pending "done"
    records) join `past`'s, so an effect that ran is not run again on the branch. Every
    channel is numbered past the versions the thread used, so the branch's values never
    collide with the old ones in the saver."""
    refuse_unknown_effects(run, head)
    run.values, run.internal = {}, {}
    run.restore(past)
    run.pending = {}
    tip = head.checkpoint["channel_versions"]
    run.versions = {
        channel: max(run.versions.get(channel, 0), tip.get(channel, 0)) + 1
        for channel in {*run.versions, *tip}
    }
    once = dict(head.checkpoint["channel_values"].get(ONCE_CHANNEL) or {})
    for _, channel, value in head.pending_writes:
        if channel == ONCE and value[1] == "done":
            once.setdefault(value[0], value[2])
    once.update(run.once_results)
    if once:
        run.internal[ONCE_CHANNEL] = once
        run.versions.setdefault(ONCE_CHANNEL, 1)  # (never written on the thread before)
    run.branch_head = head.checkpoint["id"]
    run.tip_seq = checkpoint_seq(run.branch_head)


def refuse_unknown_effects(run: Run, head: CheckpointTuple) -> None:
    """Time travel is refused while the thread's head holds a `once()` effect started with no
    outcome recorded: its task would run under a new id on the branch, where nothing says the
    effect may have happened, and it could run again unseen. Resuming the head raises
    `SideEffectUnknownError` until someone checks the effect (`once(..., retry_unknown=True)`)."""
    last: dict[tuple[str, str], str] = {}
    for task_id, channel, value in head.pending_writes:
        if channel == ONCE:
            last[(task_id, value[0])] = value[1]
    done = head.checkpoint["channel_values"].get(ONCE_CHANNEL) or {}
    for (_, key), state in last.items():
        if state == "started" and key not in done:
            error = SideEffectUnknownError(run.thread_id, key)
            error.add_note(
                "time travel refused: the thread's head has this effect started with no "
                "outcome, and a replay or a fork from a past checkpoint could run it again; "
                "resume the thread first and settle the effect"
            )
            raise error


def branch_put(
    run: Run, parent: RunConfig, cp: Checkpoint, metadata: CheckpointMetadata
) -> PutCheckpoint:
    """The first checkpoint of a branch (`branch`): its parent the past checkpoint, written
    over the head the run read (`BRANCH_HEAD`, which the savers compare the head with), every
    channel stored whole under its new version."""
    configurable = {**parent["configurable"], BRANCH_HEAD: run.branch_head}
    run.branch_head = None
    cp["appended"] = {}
    return PutCheckpoint(
        {**parent, "configurable": configurable},  # type: ignore[typeddict-item]
        cp,
        metadata,
        dict(run.versions),
    )
