"""`Task`: one node run of a superstep, and what it needs to replay deterministically.

A task runs its node function (sync, async, or a sync node off the event loop under `ainvoke`)
with the running task in a `ContextVar`, so that `interrupt()` and `once()` can find it; it
catches a pause or an error instead of letting it escape, for the loop to decide what to keep.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from ._context import Pause, _current
from .checkpoint.base import ONCE
from .types import Interrupt, RunConfig, Send

if TYPE_CHECKING:
    from ._loop import Run
    from .builder import NodeSpec
    from .checkpoint.base import BaseCheckpointSaver

STATE: Any = object()
"""`Task.arg` of a task that runs on the graph's state (not a `Send`)."""

OnceState = Literal["started", "done", "failed"]
"""The progress of a `once()` effect, as its pending writes record it."""


class Task:
    """One node to run in this step, with what it needs to replay deterministically."""

    __slots__ = (
        "answers",
        "arg",
        "done",
        "error",
        "goto",
        "id",
        "interrupt_count",
        "name",
        "once",
        "pause",
        "recorded",
        "result",
        "run",
        "spec",
        "writes",
    )

    def __init__(self, run: Run, spec: NodeSpec, task_id: str) -> None:
        self.run = run
        self.spec = spec
        self.name = spec.name
        self.id = task_id
        self.answers: dict[int, Any] = {}
        self.arg: Any = STATE
        """What the node runs on: the state (`STATE`), or a `Send`'s arg."""
        self.interrupt_count = 0
        self.once: dict[str, tuple[str, Any]] = {}
        self.recorded: list[Interrupt] = []
        self.done = False
        self.writes: list[tuple[str, Any]] = []
        self.goto: list[str | Send] = []
        self.result: Any = None
        self.pause: Interrupt | None = None
        self.error: BaseException | None = None

    # ---- running --------------------------------------------------------------------

    def _reset(self) -> None:
        self.interrupt_count = 0
        self.pause = None
        self.error = None

    def run_sync(self) -> None:
        self._reset()
        token = _current.set(self)
        try:
            spec, run = self.spec, self.run
            if self.arg is STATE:
                values = run.values
                state = dict(values) if len(values) == run.width else run.view()
            else:
                state = self.arg
            args = (state, run.config) if spec.takes_config else (state,)
            if spec.is_async:
                result = _run_coroutine_sync(spec.fn(*args), spec.name)
            else:
                result = spec.fn(*args)
            self.result = result
        except Pause as p:
            self.pause = p.interrupt
        except Exception as e:  # noqa: BLE001 - every node error is recorded, then re-raised
            self.error = e
        finally:
            _current.reset(token)

    async def run_async(self) -> None:
        if not self.spec.is_async:
            # Blocking node code must not stall the event loop (and the other tasks).
            await asyncio.to_thread(self.run_sync)
            return
        self._reset()
        token = _current.set(self)
        try:
            run = self.run
            state = run.view() if self.arg is STATE else self.arg
            coro = (
                self.spec.fn(state, run.config) if self.spec.takes_config else self.spec.fn(state)
            )
            self.result = await coro
        except Pause as p:
            self.pause = p.interrupt
        except Exception as e:  # noqa: BLE001
            self.error = e
        finally:
            _current.reset(token)

    # ---- once() bookkeeping -----------------------------------------------------------

    def _once_write(
        self, key: str, state: OnceState, result: Any
    ) -> tuple[BaseCheckpointSaver, RunConfig, list[tuple[str, Any]]] | None:
        """Note the progress of a `once()` effect; where to save it durably, if anywhere."""
        self.once[key] = (state, result)
        run = self.run
        if run.saver is None:
            return None
        # Tasks run only after the run's first checkpoint is saved: there is a head to write to.
        assert run.head_config is not None
        return run.saver, run.head_config, [(ONCE, [key, state, result])]

    def record_once(self, key: str, state: OnceState, result: Any = None) -> None:
        """Record that the `once()` effect `key` started, is done (with `result`) or failed."""
        found = self._once_write(key, state, result)
        if found is not None:
            saver, config, writes = found
            saver.put_writes(config, writes, self.id)

    async def arecord_once(self, key: str, state: OnceState, result: Any = None) -> None:
        """Async form of `record_once`."""
        found = self._once_write(key, state, result)
        if found is not None:
            saver, config, writes = found
            await saver.aput_writes(config, writes, self.id)


def _run_coroutine_sync(coro: Any, name: str) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError(
        f"node {name!r} is async and invoke() was called from a running event loop: "
        "use `await graph.ainvoke(...)`"
    )
