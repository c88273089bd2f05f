"""What node code can call while it runs: `interrupt()`, `once()` and `aonce()`.

Replay rules, stated once
-------------------------
A node that pauses in `interrupt()` is run again *from its top* when the thread is resumed:
that is how `interrupt()` can return the answer. Everything before the `interrupt()` call runs
again. So, in node code:

- Do not send, write or charge anything before an `interrupt()`. Put side effects after it, or
  in a node of their own after the approval.
- If code before an `interrupt()` must have an effect (draft an email with a model, reserve an
  id), wrap it in `once(key, fn, ...)`: it runs once per thread; its result is stored in the
  checkpoint and returned on every replay.
- Make each `interrupt()` call happen in the same order on every replay: answers are matched by
  the call's position within the node (and every pause has a stable id derived from it).

These functions work only inside a running node; elsewhere they raise `RuntimeError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ._types import Interrupt
from .checkpoint import serde
from .errors import CheckpointerRequiredError, SideEffectUnknownError

if TYPE_CHECKING:
    from ._task import Task

__all__ = ["aonce", "interrupt", "once"]

T = TypeVar("T")

_current: ContextVar[Task | None] = ContextVar("graphs_current_task", default=None)

RECORD_MAX_PAUSE = 2.0
"""The longest pause between two tries of an effect's outcome record (`Task.record_once`): a
restarted PostgreSQL is back in a second or two, and the record should follow soon after."""

RECORD_WAIT = 30.0
"""Seconds `once()` keeps trying to record an effect's outcome while the database is
unavailable, by default (`record_wait=`): a PostgreSQL restart or failover, a SQLite file
locked by a long writer, fit in it."""


class Pause(BaseException):
    """Raised by `interrupt()` to leave the node.

    A `BaseException`, so that `except Exception:` in node code cannot swallow a pause. It
    carries one interrupt, or several when code that runs independent parts of a node (the
    prebuilt `ToolNode`, one part per tool call) gathers their pauses into one.
    """

    def __init__(self, interrupts: tuple[Interrupt, ...]) -> None:
        super().__init__(interrupts)
        self.interrupts = interrupts


@contextmanager
def scope(key: str) -> Iterator[None]:
    """Number the `interrupt()` calls made inside from 0, under ids of their own.

    For a node that runs independent parts (one per tool call, `key` being the call's id):
    each part's pauses keep their ids and answers whatever the other parts do on a replay.
    Outside a running node it does nothing.
    """
    task = _current.get()
    if task is None:
        yield
        return
    saved = task.scope_id, task.interrupt_count
    task.scope_id, task.interrupt_count = f"{task.id}/{key}", 0
    try:
        yield
    finally:
        task.scope_id, task.interrupt_count = saved


def interrupt_id(thread_id: str, ns: str, task_id: str, index: int) -> str:
    """The id of the `index`-th `interrupt()` of a task: stable across replays, unique per thread."""
    raw = f"{thread_id}\x00{ns}\x00{task_id}\x00{index}".encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _task(fn_name: str) -> Task:
    task = _current.get()
    if task is None:
        raise RuntimeError(f"{fn_name}() can only be called inside a graph node while it runs")
    return task


def interrupt(value: Any = None) -> Any:
    """Pause the run and hand `value` to the caller; return the answer once resumed.

    The first time, this raises out of the node: the run stops, the pause is saved, and the
    caller sees an `Interrupt(value, id)`. When the thread is resumed with
    `invoke(Command(resume=answer), config)`, the node runs again from its top and this call
    returns `answer`. Several calls in one node are answered one after another.

    Raises:
        CheckpointerRequiredError: the graph has no checkpointer, so it cannot pause (in
            LangGraph's dialect, as in LangGraph, the run returns the pause unsaved instead).
        RuntimeError: called outside a running node.
    """
    task = _task("interrupt")
    index = task.interrupt_count
    task.interrupt_count += 1
    iid = interrupt_id(task.run.thread_id, task.run.ns, task.scope_id, index)
    if iid in task.answers:
        return task.answers[iid]
    if task.run.saver is None and task.run.graph.dialect != "langgraph":
        # LangGraph's dialect pauses unsaved, as LangGraph does: the run returns the pause,
        # and nothing can resume it.
        raise CheckpointerRequiredError(
            f"node {task.name!r} called interrupt(), but the graph was compiled without a "
            "checkpointer, so it cannot pause: compile(checkpointer=InMemorySaver()) for "
            "tests, or SQLSaver(url) to survive restarts"
        )
    serde.dumps(value)  # a payload that cannot be stored must fail here, in the node
    raise Pause((Interrupt(value, iid, task.name, index),))


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
    task = _task("once")
    record = _once_lookup(task, key)
    if record is not None and record[0] == "started" and not retry_unknown:
        until, since = _outcome_deadline(task, record[1]), time.monotonic()
        record = None if until is None else task.await_outcome(key, until)
        if record is None:
            raise _unknown(task, key, None if until is None else since)
    if record is not None and record[0] == "done":
        # What `fn` returned on an earlier attempt, read back from the checkpoint.
        return cast(T, record[1])
    task.record_once(key, "started", _started(record_wait))
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:
        task.record_once(key, "failed", wait=_failed_wait(e, record_wait))
        raise
    task.record_once(key, "done", result, wait=record_wait)
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
    task = _task("aonce")
    record = _once_lookup(task, key)
    if record is not None and record[0] == "started" and not retry_unknown:
        until, since = _outcome_deadline(task, record[1]), time.monotonic()
        record = None if until is None else await task.aawait_outcome(key, until)
        if record is None:
            raise _unknown(task, key, None if until is None else since)
    if record is not None and record[0] == "done":
        # What `fn` returned on an earlier attempt, read back from the checkpoint.
        return cast(T, record[1])

    async def effect() -> T:
        await task.arecord_once(key, "started", _started(record_wait))
        try:
            result = await fn(*args, **kwargs)
        except BaseException as e:
            await task.arecord_once(key, "failed", wait=_failed_wait(e, record_wait))
            raise
        await task.arecord_once(key, "done", result, wait=record_wait)
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
