"""`once()` and `aonce()`: an effect in node code that runs once per thread, its start and its
outcome recorded as pending writes of the task that runs it, its result returned on every replay
(the replay rules are `_context.py`'s).

The records go on the running task's (a `@task` call's go on its node's task, `Task.home`); while
the database is unavailable an outcome is written again, and an attempt that finds an effect
started with no outcome may wait for the run that started it to record it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from ._context import _task
from ._run import Run, Task
from ._types import RunConfig
from .checkpoint.base import ONCE, database_unavailable
from .errors import SideEffectUnknownError, SideEffectUnrecordedError

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver

__all__ = ["aonce", "once"]

T = TypeVar("T")

sleep = time.sleep
"""How a sync node waits between two tries of a record, or two reads of the thread (tests
replace it)."""
asleep = asyncio.sleep
"""How an async node waits between them (tests replace it)."""

RECORD_MAX_PAUSE = 2.0
"""The longest pause between two tries of an effect's outcome record (`record_once`): a
restarted PostgreSQL is back in a second or two, and the record should follow soon after."""

RECORD_WAIT = 30.0
"""Seconds `once()` keeps trying to record an effect's outcome while the database is
unavailable, by default (`record_wait=`): a PostgreSQL restart or failover, a SQLite file
locked by a long writer, fit in it."""

RECORD_FIRST_PAUSE = 0.05
"""Seconds before the first retry of a `once()` outcome the database could not take."""
RECORD_POLL_PAUSE = 0.5
"""The longest pause between two reads of a thread whose `once()` effect another run started
and may still be recording (`await_outcome`)."""

OnceState = Literal["started", "done", "failed"]
"""The progress of a `once()` effect, as its pending writes record it."""


def _runs_from_top(run: Run) -> list[Run]:
    runs = [run]
    while runs[-1].parent is not None:
        runs.append(runs[-1].parent.run)
    return runs[::-1]


def save_before_once(run: Run) -> None:
    """Save what the runs from the top graph's down to `run` hold unsaved, top first (a
    subgraph's namespace is named after its parent's checkpoint)."""
    for r in _runs_from_top(run):
        if r.unsaved is not None and r.saver is not None:
            r.unsaved.save_sync(r.saver)


async def asave_before_once(run: Run) -> None:
    """Async form of `save_before_once`."""
    for r in _runs_from_top(run):
        if r.unsaved is not None and r.saver is not None:
            await r.unsaved.save_async(r.saver)


def _once_write(
    task: Task, key: str, state: OnceState, result: Any
) -> tuple[BaseCheckpointSaver, RunConfig, list[tuple[str, Any]]] | None:
    """Note the progress of a `once()` effect; where to save it durably, if anywhere."""
    task.once[key] = (state, result)
    run = task.run
    if run.saver is None:
        return None
    # Tasks run only after the run's first checkpoint is saved: there is a head to write to.
    assert run.head_config is not None
    return run.saver, run.head_config, [(ONCE, [key, state, result])]


def record_once(
    task: Task, key: str, state: OnceState, result: Any = None, wait: float = 0.0
) -> None:
    """Record that the `once()` effect `key` started, is done (with `result`) or failed.
    Under `durability="exit"`, what the run has not saved is saved before it starts.

    The outcome ("done", "failed") of an effect that ran is written again while the
    database is unavailable, for up to `wait` seconds (see `_record_pause`): writing it
    twice is harmless (the last record of a key is the one read), losing it leaves the
    thread with an effect of unknown outcome."""
    if state == "started" and task.run.saver is not None:
        save_before_once(task.run)
    found = _once_write(task, key, state, result)
    if found is None:
        return
    saver, config, writes = found
    since, tries = time.monotonic(), 0
    while True:
        try:
            saver.put_writes(config, writes, task.id)
            return
        except Exception as e:
            if state == "started" or not database_unavailable(e):
                raise
            tries += 1
            pause = _record_pause(task, key, state, result, e, since, tries, wait)
        sleep(pause)


async def arecord_once(
    task: Task, key: str, state: OnceState, result: Any = None, wait: float = 0.0
) -> None:
    """Async form of `record_once`."""
    if state == "started" and task.run.saver is not None:
        await asave_before_once(task.run)
    found = _once_write(task, key, state, result)
    if found is None:
        return
    saver, config, writes = found
    since, tries = time.monotonic(), 0
    while True:
        try:
            await saver.aput_writes(config, writes, task.id)
            return
        except Exception as e:
            if state == "started" or not database_unavailable(e):
                raise
            tries += 1
            pause = _record_pause(task, key, state, result, e, since, tries, wait)
        await asleep(pause)


def _outcome_written(task: Task, tup: Any, key: str) -> tuple[str, Any] | None:
    """The last outcome ("done", "failed") of `key` among the pending writes of `tup`, the
    run's head read again."""
    found = None
    if tup is not None and tup.checkpoint["id"] == task.run.head_id:
        for task_id, channel, value in tup.pending_writes:
            if task_id == task.id and channel == ONCE and value[0] == key:
                found = (value[1], value[2]) if value[1] != "started" else None
    return found


def await_outcome(task: Task, key: str, until: float) -> tuple[str, Any] | None:
    """Read the run's head again until the outcome of `key` is written there, or the clock
    (`time.time()`) passes `until`: another run that started the effect may be recording
    it (see `once()`). The outcome, or None."""
    run, tries = task.run, 0
    assert run.saver is not None and run.head_config is not None
    while True:
        found = _outcome_written(task, run.saver.get_tuple(run.head_config), key)
        left = until - time.time()
        if found is not None or left <= 0:
            return found
        tries += 1
        sleep(min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_POLL_PAUSE, left))


async def aawait_outcome(task: Task, key: str, until: float) -> tuple[str, Any] | None:
    """Async form of `await_outcome`."""
    run, tries = task.run, 0
    assert run.saver is not None and run.head_config is not None
    while True:
        found = _outcome_written(task, await run.saver.aget_tuple(run.head_config), key)
        left = until - time.time()
        if found is not None or left <= 0:
            return found
        tries += 1
        await asleep(min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_POLL_PAUSE, left))


def _record_pause(
    task: Task,
    key: str,
    state: OnceState,
    result: Any,
    error: Exception,
    since: float,
    tries: int,
    wait: float,
) -> float:
    """Seconds to wait before writing the outcome of `key` again, after the database
    refused it `tries` times since `since`: 0.05 s, doubled each time up to 2 s, never
    past `wait` seconds from the first try. Past them, `SideEffectUnrecordedError`."""
    waited = time.monotonic() - since
    left = wait - waited
    if left <= 0:
        raise SideEffectUnrecordedError(
            task.run.thread_id,
            key,
            outcome=state,
            result=result if state == "done" else None,
            waited=waited,
            error=error,
        ) from error
    return min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_MAX_PAUSE, left)


def _once_lookup(task: Task, key: str) -> tuple[str, Any] | None:
    """What the thread holds of the effect `key`: `(state, result)` of its last record, or
    None when it never started."""
    done = task.run.once_results
    if key in done:
        return "done", done[key]
    return task.once.get(key)


def _outcome_deadline(task: Task, started: Any) -> float | None:
    """Until when (`time.time()`) to wait for the outcome of an effect found started with no
    outcome, or None not to wait: the run that started it may still be recording it when the
    saver's thread lock can end while its holder lives (PostgreSQL: a restart, a failover, an
    ended session), and its start record says when it began and how long its run may try to
    record the outcome (`record_wait`), plus one of that run's pauses."""
    saver = task.run.saver
    if saver is None or not saver.lock_may_be_lost or not isinstance(started, dict):
        return None
    at, wait = started.get("at"), started.get("wait")
    if not isinstance(at, (int, float)) or not isinstance(wait, (int, float)):
        return None  # recorded by code older than the wait
    return float(at) + float(wait) + RECORD_MAX_PAUSE


def _unknown(task: Task, key: str, since: float | None) -> SideEffectUnknownError:
    """`since`: when this attempt began waiting for another run's outcome (None: it did not)."""
    waited = None if since is None else time.monotonic() - since
    return SideEffectUnknownError(task.run.thread_id, key, waited=waited)


def _started(record_wait: float) -> dict[str, float]:
    """What the start record of an effect holds: when it began, and for how long its outcome
    will be tried (another run that finds the start alone waits as long for it)."""
    return {"at": time.time(), "wait": record_wait}


def once(
    key: str,
    fn: Callable[..., T],
    *args: Any,
    retry_unknown: bool = False,
    record_wait: float = RECORD_WAIT,
    **kwargs: Any,
) -> T:
    """Run `fn(*args, **kwargs)` once per thread; on replays return the stored result.

    Use it for work before an `interrupt()` that must not happen twice (a model call, an email
    draft, an id reservation). `key` names the effect within the thread: give each distinct
    effect its own key, and include a loop counter in it if a node runs the effect once per
    iteration. The result must be storable in a checkpoint (JSON-like).

    Before `fn` runs, its start is recorded durably; after, its result. If the process dies in
    between, the outcome is unknown: the next attempt raises `SideEffectUnknownError` instead
    of running it again, unless `retry_unknown=True`. If `fn` raises, nothing is stored and the
    next attempt runs it again.

    If the database is unavailable when the result is to be recorded (a restart, a dropped
    connection, a locked SQLite file), the record is tried again, with pauses from 0.05 s up
    to 2 s, for up to `record_wait` seconds (default 30); `fn` is never run again for it. If
    the database is still down then, `SideEffectUnrecordedError` (a `SideEffectUnknownError`)
    is raised, holding the result, and the thread's next attempt finds the outcome unknown.

    On a saver whose thread lock can end while its run goes on (PostgreSQL: a restart or an
    ended session frees the lock, and another replica may take the thread), an attempt that
    finds the effect started with no outcome first reads the thread again until one is
    written, up to the started record's `record_wait` (plus one retry pause) from its start:
    the run that started it may be recording it. That run, having lost its lock, records the
    outcome and then stops (`ThreadLockLostError`); this one carries the thread on.

    Replaces: calling the effect directly in node code that may be replayed.
    """
    task = _task("once").home  # (a `@task` call's effects are its node's task's)
    record = _once_lookup(task, key)
    if record is not None and record[0] == "started" and not retry_unknown:
        until, since = _outcome_deadline(task, record[1]), time.monotonic()
        record = None if until is None else await_outcome(task, key, until)
        if record is None:
            raise _unknown(task, key, None if until is None else since)
    if record is not None and record[0] == "done":
        # What `fn` returned on an earlier attempt, read back from the checkpoint.
        return cast(T, record[1])
    record_once(task, key, "started", _started(record_wait))
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:
        record_once(task, key, "failed", wait=_failed_wait(e, record_wait))
        raise
    record_once(task, key, "done", result, wait=record_wait)
    return result


def _failed_wait(error: BaseException, record_wait: float) -> float:
    """How long to try to record that an effect raised `error`: not at all when that is the
    run being stopped (a `KeyboardInterrupt`, a cancellation), which must not wait."""
    return record_wait if isinstance(error, Exception) else 0.0


async def aonce(
    key: str,
    fn: Callable[..., Awaitable[T]],
    *args: Any,
    retry_unknown: bool = False,
    record_wait: float = RECORD_WAIT,
    **kwargs: Any,
) -> T:
    """`once()` for a coroutine function, in an async node: `await aonce("draft", make_draft)`.

    Once begun, the effect is not cut short by the node being cancelled (a sibling task failed,
    the step timed out): it runs to its end and its result is recorded, then the cancellation
    goes on. So a cancelled node has either not begun the effect or recorded it (or, with the
    database down past `record_wait`, raised `SideEffectUnrecordedError`, as `once()` does).
    """
    task = _task("aonce").home
    record = _once_lookup(task, key)
    if record is not None and record[0] == "started" and not retry_unknown:
        until, since = _outcome_deadline(task, record[1]), time.monotonic()
        record = None if until is None else await aawait_outcome(task, key, until)
        if record is None:
            raise _unknown(task, key, None if until is None else since)
    if record is not None and record[0] == "done":
        # What `fn` returned on an earlier attempt, read back from the checkpoint.
        return cast(T, record[1])

    async def effect() -> T:
        await arecord_once(task, key, "started", _started(record_wait))
        try:
            result = await fn(*args, **kwargs)
        except BaseException as e:
            await arecord_once(task, key, "failed", wait=_failed_wait(e, record_wait))
            raise
        await arecord_once(task, key, "done", result, wait=record_wait)
        return result

    running = asyncio.ensure_future(effect())
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if running.cancelled():
            raise
        while not running.done():  # the node was cancelled: let the effect end first
            try:
                await asyncio.shield(running)
            except asyncio.CancelledError:
                pass
            except Exception:  # noqa: BLE001 - recorded as failed; the cancellation wins
                break
        raise
