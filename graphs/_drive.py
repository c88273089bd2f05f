"""The two drivers that perform the loop's I/O requests (`_io.py`).

`drive_sync` performs the requests with the saver's sync methods and runs a step's tasks
concurrently in threads; `drive_async` uses the async methods and runs them concurrently on the
event loop. Both report each task as it ends (`_loop.finish`, driven like the loop), yield what the
loop emits and end with what it returns, so `invoke` and `ainvoke` share every rule of the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

from ._io import (
    Await,
    Batch,
    Emit,
    FindCheckpoint,
    GetCheckpoint,
    GetHead,
    Loop,
    PutCheckpoint,
    PutWrites,
    RunTasks,
)
from ._loop import finish
from ._task import run_async, run_sync

if TYPE_CHECKING:
    from ._run import Run, Task

__all__ = [
    "drive_async",
    "drive_run_async",
    "drive_run_sync",
    "drive_sync",
    "run_step_async",
]

R = TypeVar("R")
_DONE: Any = object()


def drive_run_sync(run: Run, gen: Loop[R]) -> Generator[Emit, None, R]:
    """`drive_sync` for a run's whole invocation: under `durability="exit"`, what it holds
    unsaved is saved as it exits."""
    unsaved = run.unsaved
    if unsaved is None:
        return (yield from drive_sync(run, gen))
    try:
        result = yield from drive_sync(run, gen)
    except BaseException:
        unsaved.save_sync(run.saver)
        raise
    if run.saves_at_exit(result):
        unsaved.save_sync(run.saver)
    return result


async def drive_run_async(run: Run, gen: Loop[R], out: list[R]) -> AsyncGenerator[Emit, None]:
    """Async form of `drive_run_sync`."""
    unsaved = run.unsaved
    if unsaved is None:
        async with contextlib.aclosing(drive_async(run, gen, out)) as chunks:
            async for chunk in chunks:
                yield chunk
        return
    try:
        async with contextlib.aclosing(drive_async(run, gen, out)) as chunks:
            async for chunk in chunks:
                yield chunk
    except BaseException:
        await unsaved.save_async(run.saver)
        raise
    if run.saves_at_exit(out[-1]):
        await unsaved.save_async(run.saver)


def drive_sync(run: Run, gen: Loop[R]) -> Generator[Emit, None, R]:
    """Perform the loop's requests with the sync saver; yield emitted chunks; return its result."""
    batch = _batch_for(run)
    if batch is None:
        return (yield from _drive_sync(run, gen, None))
    try:
        return (yield from _drive_sync(run, gen, batch))
    finally:
        if batch.ops:  # the loop ended or failed right after its input checkpoint
            batch.send()


def _batch_for(run: Run) -> Batch | None:
    saver = run.saver
    if saver is None or run.unsaved is not None:
        return None
    takes = getattr(saver, "_takes_batch", None)
    return Batch(saver) if takes is not None and takes() else None


def _drive_sync(run: Run, gen: Loop[R], batch: Batch | None) -> Generator[Emit, None, R]:
    saver = run.saver
    live = run.live
    if batch is None and not live and run.graph.step_timeout is None:
        # A task alone in its step is run by the loop itself, as `RunTasks` would run it here
        # (no batch can be held then, nothing streams while it runs).
        run.run_alone = run_sync
    if batch is None and saver is not None and run.unsaved is None:
        run.put_now = saver.put  # (as a `PutCheckpoint` is put below)
    result: Any = None
    while True:
        try:
            request = gen.send(result)
        except StopIteration as stop:
            value: R = stop.value
            return value
        result = None
        if batch is not None and batch.ops:
            if type(request) is PutWrites:
                batch.hold(request)
                continue
            if isinstance(request, PutCheckpoint):  # (the most frequent request first)
                result = batch.hold(request)
                batch.send()
                continue
            batch.send()  # before anything else the loop asks
        if isinstance(request, PutCheckpoint):  # (the most frequent request first)
            assert saver is not None
            if run.unsaved is not None:
                result = run.unsaved.hold_checkpoint(request)
            elif batch is not None and Batch.opens(request):
                result = batch.hold(request)
            else:
                result = saver.put(*request)
        elif isinstance(request, RunTasks):
            tasks = request.tasks
            if len(tasks) == 1 and not live and run.graph.step_timeout is None:
                run_sync(tasks[0])  # (the loop reports it: `_loop.finish`)
            else:
                yield from _run_threads(run, tasks)
        elif isinstance(request, PutWrites):
            assert saver is not None
            if run.unsaved is not None:
                run.unsaved.hold_writes(request)
            else:
                saver.put_writes(*request)
        elif isinstance(request, GetHead):
            assert saver is not None
            ns = run.ns if request.ns is None else request.ns
            result = saver.get_tuple(
                {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ns}}
            )
        elif isinstance(request, GetCheckpoint):
            assert saver is not None
            result = saver.get_tuple(request.config)
        elif isinstance(request, FindCheckpoint):
            assert saver is not None
            result = next(filter(request.pick, saver.list(request.config)), None)
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
    batch = _batch_for(run)
    try:
        async with contextlib.aclosing(_drive_async(run, gen, out, batch)) as chunks:
            async for chunk in chunks:
                yield chunk
    finally:
        if batch is not None and batch.ops:
            await batch.asend()


async def _drive_async(
    run: Run, gen: Loop[R], out: list[R], batch: Batch | None
) -> AsyncGenerator[Emit, None]:
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
        if batch is not None and batch.ops:
            if type(request) is PutWrites:
                batch.hold(request)
                continue
            if isinstance(request, PutCheckpoint):  # (the most frequent request first)
                result = batch.hold(request)
                await batch.asend()
                continue
            await batch.asend()  # before anything else the loop asks
        if isinstance(request, RunTasks):
            tasks = request.tasks
            if len(tasks) == 1 and not live and run.graph.step_timeout is None:
                await run_async(tasks[0])  # (the loop reports it: `_loop.finish`)
            else:
                async with contextlib.aclosing(_run_concurrent_async(run, tasks)) as step:
                    async for chunk in step:
                        yield chunk
        elif isinstance(request, PutCheckpoint):
            assert saver is not None
            if run.unsaved is not None:
                result = run.unsaved.hold_checkpoint(request)
            elif batch is not None and Batch.opens(request):
                result = batch.hold(request)
            else:
                result = await saver.aput(*request)
        elif isinstance(request, PutWrites):
            assert saver is not None
            if run.unsaved is not None:
                run.unsaved.hold_writes(request)
            else:
                await saver.aput_writes(*request)
        elif isinstance(request, GetHead):
            assert saver is not None
            ns = run.ns if request.ns is None else request.ns
            result = await saver.aget_tuple(
                {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ns}}
            )
        elif isinstance(request, GetCheckpoint):
            assert saver is not None
            result = await saver.aget_tuple(request.config)
        elif isinstance(request, FindCheckpoint):
            assert saver is not None
            async for tup in saver.alist(request.config):  # to its end, which closes it
                if result is None and request.pick(tup):
                    result = tup
        elif isinstance(request, Await):
            try:
                result = await request.coro
            except Exception as e:
                e.add_note(request.note)
                raise
        elif _emitted(run, request):
            yield request


class _Ended:
    """A task of the step ended (finished, paused or failed), as its thread or future reports
    it; `bug`: what escaped `_task.run_sync` itself (not a node's error, which the task records)."""

    __slots__ = ("bug", "task")

    def __init__(self, task: Task, bug: BaseException | None = None) -> None:
        self.task = task
        self.bug = bug


class _Workers:
    """The threads that run steps' sync tasks, kept once their task ends for the next one
    (starting a thread costs more than a small node's whole run): a job goes to an idle
    worker, or to a new one when none is idle (never waiting for one, so a node that runs a
    subgraph's parallel step inside a worker cannot deadlock); at most `keep` stay idle. The
    threads are daemons, as the ones started per task were; a forked child starts afresh."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[tuple[Callable[[], None], Any]]] = []

    def start(self, job: Callable[[], None]) -> None:
        """Run `job` (which must not raise) in a worker thread; return once it has begun, as
        `Thread.start` does (so a step's tasks begin in the order they are started)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="graphs", daemon=True).start()
        began = threading.Lock()
        began.acquire()
        inbox.put((job, began))
        began.acquire()  # released by the worker as it takes the job

    def _serve(self, inbox: queue.SimpleQueue[tuple[Callable[[], None], Any]]) -> None:
        while True:
            job, began = inbox.get()
            began.release()
            job()
            with self._lock:
                if len(self._idle) >= self._keep:
                    return
                self._idle.append(inbox)

    def forget(self) -> None:
        """In a forked child: the parent's idle workers are not there."""
        self._lock = threading.Lock()
        self._idle = []


_WORKERS = _Workers(keep=32)
os.register_at_fork(after_in_child=_WORKERS.forget)


def _run_threads(run: Run, tasks: list[Task]) -> Generator[Emit, None, None]:
    """Run a step's sync tasks concurrently, one thread each, at most `max_concurrency` (of the
    run's config) at once, as LangGraph's thread pool does; as each ends, in the order they end,
    report it (`_loop.finish`: its writes saved as pending writes, its `updates` chunk) and yield
    what node code streams (`custom`, `messages`, subgraphs' chunks) as it comes.

    Each task runs in a worker thread (`_Workers`, reused from step to step) in a copy of the
    caller's context, so `interrupt()`, `get_config()` and `get_stream_writer()` find their own
    task. A running thread cannot be stopped: after a task
    fails, or once the graph's `step_timeout` has run out, the tasks not yet started are not
    started (they are cancelled, and run when the step is resumed) and the running ones are
    waited for, keeping what they wrote if they finish; a timed-out step then fails with
    `TimeoutError` (in `run.step_error`). If the consumer stops early, the running tasks still
    end before the run lets go of its thread.
    """
    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    if run.live:
        run.sink = events.put
    limit = run.top.config.get("max_concurrency")
    width = len(tasks) if limit is None else max(1, limit)
    timeout = run.graph.step_timeout
    deadline = None if timeout is None else time.monotonic() + timeout
    waiting = tasks[::-1]  # started from the end: frontier order
    running: list[Task] = []
    late: list[str] | None = None
    stopping = False
    bug: BaseException | None = None

    def start(task: Task) -> None:
        context = contextvars.copy_context()  # one copy per thread: its own current task

        def work() -> None:
            thread = threading.current_thread()
            thread.name = f"graphs-{task.name}"
            try:
                context.run(run_sync, task)
            except BaseException as e:  # noqa: BLE001 - handed to the run's own thread
                ended = _Ended(task, e)
            else:
                ended = _Ended(task)
            thread.name = "graphs"
            events.put(ended)  # the last thing the worker does for this task

        running.append(task)
        _WORKERS.start(work)

    try:
        while True:
            while waiting and not stopping and len(running) < width:
                start(waiting.pop())
            if not running:
                break
            wait = None
            if deadline is not None and late is None:
                wait = max(0.0, deadline - time.monotonic())
            try:
                item = events.get(timeout=wait)
            except queue.Empty:
                late = [t.name for t in running]
                stopping = True
                continue
            if type(item) is not _Ended:
                yield item  # a chunk node code streamed
                continue
            running.remove(item.task)
            if item.bug is not None:
                bug, stopping = bug or item.bug, True
                continue
            yield from drive_sync(run, finish(run, item.task))
            stopping = stopping or item.task.failed
    finally:
        while running:  # stopped early (an error, the consumer): the running tasks end first
            item = events.get()
            if type(item) is _Ended:
                running.remove(item.task)
        run.sink = None
    if bug is not None:
        raise bug
    for task in waiting:
        task.cancelled = True
    if late is not None:
        run.step_error = TimeoutError(
            f"step {run.step + 1} did not finish within the graph's step_timeout of {timeout} s: "
            f"node(s) {late} were still running (a sync node cannot be stopped: the step waited "
            f"for them to end and kept what they wrote)"
            + (
                f", and node(s) {[t.name for t in waiting[::-1]]} had not started"
                if waiting
                else ""
            )
        )


async def run_step_async(
    run: Run, tasks: list[Task], ended: Callable[[_Ended], None] | None = None
) -> None:
    """Run a step's tasks concurrently, at most `max_concurrency` (of the run's config) at once;
    `ended` is told of each task that ends (not one cancelled), as it ends.

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
            await run_async(task)
        else:
            async with gate:
                await run_async(task)

    running: dict[asyncio.Future[None], Task] = {}
    for t in tasks:
        started = asyncio.ensure_future(one(t))
        if ended is not None:
            # Added first, so it runs before the step's own wait sees the task done.
            started.add_done_callback(functools.partial(_report, ended, t))
        running[started] = t
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


def _report(ended: Callable[[_Ended], None], task: Task, fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        ended(_Ended(task))


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


async def _run_concurrent_async(run: Run, tasks: list[Task]) -> AsyncGenerator[Emit, None]:
    """Run the step's tasks concurrently (`run_step_async`); as each ends, in the order they
    end, report it (`_loop.finish`), and yield what node code streams as it comes (from the event
    loop, or from the thread a sync node runs in)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()
    loop_thread = threading.get_ident()

    def sink(emit: Emit) -> None:
        if threading.get_ident() == loop_thread:
            events.put_nowait(emit)
        else:
            loop.call_soon_threadsafe(events.put_nowait, emit)

    if run.live:
        run.sink = sink
    step = asyncio.ensure_future(run_step_async(run, tasks, events.put_nowait))
    # Scheduled after every chunk a task wrote, and every task's end.
    step.add_done_callback(lambda _: events.put_nowait(_DONE))
    out: list[None] = []
    try:
        while (item := await events.get()) is not _DONE:
            if type(item) is _Ended:
                async for emit in drive_async(run, finish(run, item.task), out):
                    yield emit
            else:
                yield item
    except BaseException:
        # The stream was closed (or this run cancelled): cancel the step's running tasks, and
        # let them end before the run lets go of its thread.
        step.cancel()
        await asyncio.gather(step, return_exceptions=True)
        raise
    finally:
        run.sink = None
    step.result()
