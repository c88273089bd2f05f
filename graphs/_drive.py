"""The loop's I/O requests, and the two drivers that perform them.

`Run.execute` and `Run.update` (in `_loop.py`) are generators that never do I/O: each yields a
request, one small immutable tuple per kind below, and is sent the reply. `drive_sync` performs
the requests with the saver's sync methods and runs tasks one after another; `drive_async`
uses the async methods and runs a step's tasks concurrently. Both yield what the loop emits and
end with what it returns, so `invoke` and `ainvoke` share every rule of the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .checkpoint.base import Checkpoint, CheckpointMetadata
from .types import RunConfig

if TYPE_CHECKING:
    from ._loop import Run
    from ._task import Task

__all__ = [
    "Await",
    "Emit",
    "GetHead",
    "Loop",
    "PutCheckpoint",
    "PutWrites",
    "Request",
    "RunTasks",
    "drive_async",
    "drive_sync",
]

R = TypeVar("R")

LIVE_MODES = frozenset({"custom", "messages"})
"""Stream modes whose chunks node code writes while it runs: the step's tasks then run beside
a consumer that hands each chunk on as it comes (`_run_live_sync`, `_run_live_async`); so do
they when subgraphs stream into the graph's stream (`Run.live`)."""
_DONE: Any = object()


class GetHead(NamedTuple):
    """Load the thread's head checkpoint. Reply: its `CheckpointTuple`, or None if it has none."""


class PutCheckpoint(NamedTuple):
    """Save a checkpoint as the thread's new head (`saver.put`). Reply: the `RunConfig` of it."""

    parent: RunConfig
    """Points at the parent checkpoint (no `checkpoint_id` for a new thread)."""
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: dict[str, int]
    """The channels that changed in this step, with their new versions."""


class PutWrites(NamedTuple):
    """Save pending writes of one task on the head checkpoint (`saver.put_writes`). Reply: None."""

    config: RunConfig
    """Points at the checkpoint the writes belong to."""
    writes: Sequence[tuple[str, Any]]
    task_id: str


class RunTasks(NamedTuple):
    """Run these tasks of the step (each records its result, pause or error). Reply: None."""

    tasks: list[Task]


class Await(NamedTuple):
    """Await an async router's coroutine (only `drive_async` can). Reply: what it returned."""

    coro: Any
    what: str
    """Which router it is, for the error `drive_sync` raises."""
    note: str
    """Added to an error the router raises."""


class Emit(NamedTuple):
    """Hand a stream chunk to the caller. Reply: None."""

    mode: str
    """The stream mode it belongs to: `values` or `updates`."""
    chunk: Any
    ns: tuple[str, ...] = ()
    """Where it comes from: `()` for the graph itself, `("node:task_id", ...)` for a subgraph."""


Request = GetHead | PutCheckpoint | PutWrites | RunTasks | Await | Emit
"""What the loop can ask of its driver."""

Loop = Generator[Request, Any, R]
"""The loop as its drivers see it: requests out, replies in (see each request), `R` at the end."""


def drive_sync(run: Run, gen: Loop[R]) -> Generator[Emit, None, R]:
    """Perform the loop's requests with the sync saver; yield emitted chunks; return its result."""
    saver = run.saver
    live = run.live
    result: Any = None
    while True:
        try:
            request = gen.send(result)
        except StopIteration as stop:
            value: R = stop.value
            return value
        result = None
        if isinstance(request, RunTasks):
            if live:
                yield from _run_live_sync(run, request.tasks)
            else:
                run_step_sync(run, request.tasks)
        elif isinstance(request, PutCheckpoint):
            assert saver is not None
            result = saver.put(*request)
        elif isinstance(request, PutWrites):
            assert saver is not None
            saver.put_writes(*request)
        elif isinstance(request, GetHead):
            assert saver is not None
            result = saver.get_tuple(
                {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": run.ns}}
            )
        elif isinstance(request, Await):
            request.coro.close()
            raise TypeError(
                f"the {request.what} is async, so it can only run under the async API: use "
                "`await graph.ainvoke(...)` or `graph.astream(...)` (or make the router a plain "
                "function)"
            )
        elif _emitted(run, request):
            yield request


def _emitted(run: Run, emit: Emit) -> bool:
    """Whether the caller of this run wants `emit`; a subgraph's run also hands it, as it is
    made, to the stream of the top graph (`stream(..., subgraphs=True)`), whose driver is
    yielding what its step's tasks stream while they run."""
    if run.parent is None:
        return True
    if emit.mode in run.forward:
        sink = run.top.sink
        if sink is not None:
            sink(emit._replace(ns=run.path))
    return emit.mode in run.asked


async def drive_async(run: Run, gen: Loop[R], out: list[R]) -> AsyncGenerator[Emit, None]:
    """The async twin of `drive_sync`; the loop's result is appended to `out`."""
    saver = run.saver
    live = run.live
    result: Any = None
    while True:
        try:
            request = gen.send(result)
        except StopIteration as stop:
            out.append(stop.value)
            return
        result = None
        if isinstance(request, RunTasks):
            tasks = request.tasks
            if live:
                async for chunk in _run_live_async(run, tasks):
                    yield chunk
            elif len(tasks) == 1 and run.graph.step_timeout is None:
                await tasks[0].run_async()
            else:
                await run_step_async(run, tasks)
        elif isinstance(request, PutCheckpoint):
            assert saver is not None
            result = await saver.aput(*request)
        elif isinstance(request, PutWrites):
            assert saver is not None
            await saver.aput_writes(*request)
        elif isinstance(request, GetHead):
            assert saver is not None
            result = await saver.aget_tuple(
                {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": run.ns}}
            )
        elif isinstance(request, Await):
            try:
                result = await request.coro
            except Exception as e:
                e.add_note(request.note)
                raise
        elif _emitted(run, request):
            yield request


def run_step_sync(run: Run, tasks: list[Task]) -> None:
    """Run a step's tasks one after another. A running sync node cannot be stopped, so the
    graph's `step_timeout` is checked between tasks: once it has run out, the tasks not yet
    started are not run (they are cancelled, and run on resume) and the step fails with
    `TimeoutError`; what the tasks that ran wrote is kept."""
    timeout = run.graph.step_timeout
    if timeout is None:
        for task in tasks:
            task.run_sync()
        return
    deadline = time.monotonic() + timeout
    for i, task in enumerate(tasks):
        task.run_sync()
        if time.monotonic() > deadline:
            late = tasks[i + 1 :]
            for t in late:
                t.cancelled = True
            run.step_error = TimeoutError(
                f"step {run.step + 1} did not finish within the graph's step_timeout of "
                f"{timeout} s: node(s) {[t.name for t in late]} had not started, and were "
                "not run (invoke runs a step's tasks one after another)"
            )
            return


async def run_step_async(run: Run, tasks: list[Task]) -> None:
    """Run a step's tasks concurrently, at most `max_concurrency` (of the run's config) at once.

    As in LangGraph, a task that fails (not one that pauses) cancels the step's other tasks at
    once, and so does the graph's `step_timeout` running out (the step then fails with
    `TimeoutError`, in `run.step_error`). A cancelled task has not finished: it keeps no writes
    and runs again when the step is resumed. A sync node (run in a thread) cannot be stopped:
    the step waits for it, and keeps what it wrote if it finished. A `once()` effect that had
    begun is not cut short either: it ends and is recorded before the cancellation takes effect.
    """
    limit = run.top.config.get("max_concurrency")
    gate = asyncio.Semaphore(limit) if limit is not None and limit < len(tasks) else None

    async def one(task: Task) -> None:
        if gate is None:
            await task.run_async()
        else:
            async with gate:
                await task.run_async()

    running: dict[asyncio.Future[None], Task] = {asyncio.ensure_future(one(t)): t for t in tasks}
    timeout = run.graph.step_timeout
    clock = asyncio.get_running_loop().time
    deadline = None if timeout is None else clock() + timeout
    try:
        pending = set(running)
        while pending:
            left = None if deadline is None else max(0.0, deadline - clock())
            done, pending = await asyncio.wait(
                pending, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            for fut in done:
                if not fut.cancelled() and (exc := fut.exception()) is not None:
                    raise exc  # not a node's error (those are recorded on the task): a bug
            if not done:
                late = [running[f].name for f in pending]
                run.step_error = TimeoutError(
                    f"step {run.step + 1} did not finish within the graph's step_timeout of "
                    f"{timeout} s: node(s) {late} were still running, and were cancelled"
                )
                await _cancel(running, pending)
                return
            if any(running[f].failed for f in done):
                await _cancel(running, pending)
                return
    except BaseException:  # this run itself was cancelled (a closed stream, a timeout)
        for fut in running:
            fut.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


async def _cancel(
    running: dict[asyncio.Future[None], Task], pending: set[asyncio.Future[None]]
) -> None:
    """Cancel the step's unfinished async tasks and wait for them, and for its sync ones (which
    cannot be stopped); a task that ended cancelled is marked so (it did not finish)."""
    for fut in pending:
        if running[fut].cancellable:
            fut.cancel()
    for fut in pending:
        try:
            await fut
        except asyncio.CancelledError:
            if not fut.cancelled():
                raise  # this run itself is being cancelled
            task = running[fut]
            task.cancelled = True
            task.error = None  # (an earlier attempt's, when cancelled between retries)


def _run_live_sync(run: Run, tasks: list[Task]) -> Generator[Emit, None, None]:
    """Run the step's tasks (one after another, as `drive_sync` does) in a worker thread, and
    yield what they write to the stream as it comes.

    If the consumer stops early, the tasks still finish before the run lets go of its thread.
    """
    chunks: queue.SimpleQueue[Any] = queue.SimpleQueue()
    run.sink = chunks.put

    def work() -> None:
        try:
            run_step_sync(run, tasks)
        finally:
            chunks.put(_DONE)

    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(work,), name="graphs-step", daemon=True
    )
    worker.start()
    try:
        while (item := chunks.get()) is not _DONE:
            yield item
    finally:
        worker.join()
        run.sink = None


async def _run_live_async(run: Run, tasks: list[Task]) -> AsyncGenerator[Emit, None]:
    """Run the step's tasks concurrently and yield what they write to the stream as it comes
    (from the event loop, or from the thread a sync node runs in)."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[Any] = asyncio.Queue()
    loop_thread = threading.get_ident()

    def sink(emit: Emit) -> None:
        if threading.get_ident() == loop_thread:
            chunks.put_nowait(emit)
        else:
            loop.call_soon_threadsafe(chunks.put_nowait, emit)

    run.sink = sink
    step = asyncio.ensure_future(run_step_async(run, tasks))
    # Scheduled after every chunk a task wrote before it finished.
    step.add_done_callback(lambda _: chunks.put_nowait(_DONE))
    try:
        while (item := await chunks.get()) is not _DONE:
            yield item
    except BaseException:
        step.cancel()
        raise
    finally:
        run.sink = None
    step.result()
