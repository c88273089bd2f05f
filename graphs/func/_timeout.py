"""`timeout=` of an async `@task` or `@entrypoint`: each attempt runs under a watch that cancels
it once its `TimeoutPolicy` runs out, and raises `NodeTimeoutError` in its place.

The attempt's `Clock` sits on its task (`Task.clock`), where the progress signals reach it:
`runtime.heartbeat()`, and under `refresh_on="auto"` a chunk handed to the stream writer and a
`@task` call made inside it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from ..errors import NodeTimeoutError
from ..types import TimeoutPolicy

T = TypeVar("T")

SYNC_REFUSED = (
    "Node timeouts are only supported for async nodes because sync Python execution cannot be "
    "safely cancelled in-process."
)
"""LangGraph's words for a `timeout=` on a sync function (followed by which one it is)."""


def _seconds(value: float | timedelta | None) -> float | None:
    return value.total_seconds() if isinstance(value, timedelta) else value


def refuse_sync(name: str, kind: str) -> ValueError:
    return ValueError(f"{SYNC_REFUSED} {kind} {name!r} is sync.")


class Clock:
    """When an attempt last made progress."""

    __slots__ = ("auto", "last", "policy")

    def __init__(self, policy: TimeoutPolicy) -> None:
        self.policy = policy
        self.auto = policy.refresh_on == "auto"
        self.last = time.monotonic()

    def heartbeat(self) -> None:
        """`runtime.heartbeat()`: progress, whatever `refresh_on` says."""
        self.last = time.monotonic()

    def progress(self) -> None:
        """A chunk written or a task called: progress under `refresh_on="auto"`."""
        if self.auto:
            self.last = time.monotonic()

    def writer(self, base: Callable[[object], None]) -> Callable[[object], None]:
        """`base` (the run's stream writer), each write counting as progress."""

        def write(chunk: object) -> None:
            self.progress()
            base(chunk)

        return write


async def timed(name: str, clock: Clock, attempt: Awaitable[T]) -> T:
    """Await `attempt` (a coroutine) until `clock`'s policy runs out: then cancel it, wait for
    it to end, and raise `NodeTimeoutError`. Cancelling this cancels the attempt too."""
    policy = clock.policy  # coerced: its timeouts are seconds
    run = _seconds(policy.run_timeout)
    idle = _seconds(policy.idle_timeout)
    inner = asyncio.ensure_future(attempt)  # a copy of this context: the same current task
    start = time.monotonic()
    try:
        while True:
            kind = "run"
            at = start + run if run is not None else float("inf")
            if idle is not None and clock.last + idle < at:
                kind, at = "idle", clock.last + idle
            left = at - time.monotonic()
            if left <= 0:
                break
            done, _ = await asyncio.wait((inner,), timeout=left)
            if done:
                return inner.result()
    except asyncio.CancelledError:
        inner.cancel()
        await asyncio.gather(inner, return_exceptions=True)
        raise
    inner.cancel()
    await asyncio.gather(inner, return_exceptions=True)
    raise NodeTimeoutError(
        name,
        time.monotonic() - start,
        kind="idle" if kind == "idle" else "run",
        idle_timeout=idle,
        run_timeout=run,
    )
