"""The `@task` calls one attempt of a node makes (`graphs.func`), as the task running the node
sees them: how it waits for the ones it did not wait for, and gathers the pauses of those that
paused into its own. Below the task (`_task.py`), which holds an attempt's `Calls`; the calls
themselves (`TaskFunction`) are `graphs.func._call`'s, their results to come (`TaskFuture`) here."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
from collections.abc import Generator
from typing import Any, Generic, TypeVar

from ._context import Pause

__all__ = ["Calls", "TaskFuture", "await_for", "gathered", "wait_for"]

T = TypeVar("T")


class TaskFuture(Generic[T]):
    """The result of a `@task` call, to come: `.result()` waits for it (in sync code), `await`
    it in async code. Raises what the task raised."""

    __slots__ = ("_future",)

    def __init__(self, future: concurrent.futures.Future[T] | asyncio.Future[T]) -> None:
        self._future = future

    @classmethod
    def of(cls, value: T) -> TaskFuture[T]:
        """A future that already holds `value` (a saved result)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(value)
        return cls(future)

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> T:
        future = self._future
        if isinstance(future, asyncio.Future):
            if not future.done():
                raise RuntimeError(
                    "this @task call runs on the event loop and has not finished: `await` it "
                    "instead of calling .result()"
                )
            return future.result()
        return future.result(timeout)

    def __await__(self) -> Generator[Any, None, T]:
        future = self._future
        if isinstance(future, asyncio.Future):
            return future.__await__()
        return asyncio.wrap_future(future).__await__()


class Calls:
    """The `@task` calls one attempt of a node (or one running task) makes."""

    __slots__ = ("counter", "futures")

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.futures: list[TaskFuture[Any]] = []


def wait_for(calls: Calls | None) -> None:
    """Let the calls a node made and did not wait for finish (their results are saved)."""
    if calls is None:
        return
    for future in calls.futures:
        inner = future._future
        if isinstance(inner, concurrent.futures.Future):
            concurrent.futures.wait([inner])


async def await_for(calls: Calls | None) -> None:
    """Async form of `wait_for`."""
    if calls is None:
        return
    pending = [f._future for f in calls.futures if not f.done()]
    for inner in pending:
        await asyncio.wait(
            [inner if isinstance(inner, asyncio.Future) else asyncio.wrap_future(inner)]
        )


def gathered(pause: Pause, calls: Calls | None) -> Pause:
    """The pause of a node that stopped in `pause` (it waited for a call that paused, or
    paused itself), with the pauses of its other calls that paused meanwhile: each call runs
    on its own, so two that pause at once are both asked in one pause, as LangGraph asks them,
    in the order the calls were made. Call it once the calls have settled (`wait_for`)."""
    if calls is None:
        return pause
    found: dict[str, Any] = {}
    for future in calls.futures:
        inner = future._future
        if inner.done() and not inner.cancelled():
            error = inner.exception()
            if isinstance(error, Pause):
                found.update((i.id, i) for i in error.interrupts)
    found.update((i.id, i) for i in pause.interrupts if i.id not in found)
    if len(found) == len(pause.interrupts):
        return pause
    return Pause(tuple(found.values()))
