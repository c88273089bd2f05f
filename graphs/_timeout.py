"""`timeout=` of an async `@task` or `@entrypoint`: each attempt runs under a watch that cancels
it once its `TimeoutPolicy` runs out, and raises `NodeTimeoutError` in its place.

The attempt's `Clock` sits on its task (`Task.clock`), where the progress signals reach it:
`runtime.heartbeat()`, and under `refresh_on="auto"` a chunk handed to the stream writer, a
`@task` call made inside it, a `push_message()`, a langchain_core callback event of code it
runs (a model's start, each token, its end; a tool's, a retriever's, a chain's, a custom
event), and a chunk streamed or a node started by a subgraph it runs, as LangGraph's.
"""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from ._types import TimeoutPolicy
from .errors import NodeTimeoutError

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


@functools.cache
def _handler_class() -> type:
    from langchain_core.callbacks import BaseCallbackHandler

    class Progress(BaseCallbackHandler):
        """Every callback event of the code a timed node runs is progress of its attempt."""

        run_inline = True  # in the event's own order, not from a thread pool

        def __init__(self, task: Any) -> None:
            self._task = weakref.ref(task)  # an outliving callback manager keeps no task

        def _touch(self, *args: Any, **kwargs: Any) -> None:
            task = self._task()
            clock = None if task is None else task.clock
            if clock is not None:
                clock.progress()

        on_llm_start = on_chat_model_start = on_llm_new_token = on_llm_end = on_llm_error = _touch
        on_chain_start = on_chain_end = on_chain_error = _touch
        on_tool_start = on_tool_end = on_tool_error = _touch
        on_retriever_start = on_retriever_end = on_retriever_error = _touch
        on_agent_action = on_agent_finish = on_text = on_retry = on_custom_event = _touch

    return Progress


def progress_handler(task: Any) -> Any:
    """A langchain_core callback handler under which each event is progress of `task`'s
    attempt (its `clock`, read when the event comes, so set or not yet)."""
    return _handler_class()(task)


def watch_events(task: Any) -> Any:
    """Make the langchain_core callback events of the code that runs from here on in this
    context (a `@task` call's, in its own context) progress of `task`'s attempt, besides
    whatever handlers the context had (the enclosing node's among them, as LangGraph's
    descendants refresh their ancestors). Returns the token that undoes it."""
    from langchain_core.runnables.config import var_child_runnable_config

    outer = var_child_runnable_config.get() or {}
    callbacks = outer.get("callbacks")
    handler = progress_handler(task)
    if callbacks is None:
        merged: Any = [handler]
    elif isinstance(callbacks, list):
        merged = [*callbacks, handler]
    else:  # a callback manager: its copy, with the handler too
        merged = callbacks.copy()
        merged.add_handler(handler, inherit=True)
    return var_child_runnable_config.set({**outer, "callbacks": merged})


def enclosing_progress(run: Any) -> None:
    """Something happened in `run`, a subgraph's run: progress of each timed task that runs
    it, at every level up."""
    task = run.parent
    while task is not None:
        if task.clock is not None:
            task.clock.progress()
        task = task.run.parent


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
