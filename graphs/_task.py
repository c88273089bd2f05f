"""`Task`: one node run of a superstep, and what it needs to replay deterministically.

A task runs its node function (sync, async, or a sync node off the event loop under `ainvoke`)
with the running task in a `ContextVar`, so that `interrupt()` and `once()` can find it; it
catches a pause or an error instead of letting it escape, for the loop to decide what to keep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextvars import Token
from typing import TYPE_CHECKING, Any, Literal

from ._calls import await_for, gathered, wait_for
from ._context import RECORD_MAX_PAUSE, Pause, _current
from ._events import node_config, task_async, task_sync
from ._internal._constants import CONFIG_KEY_NODE_FINISHED
from ._io import asave_before_once, save_before_once
from ._timeout import Clock, enclosing_progress, progress_handler, refuse_sync, timed
from ._types import PULL, PUSH, Command, Interrupt, RunConfig, Send, TimeoutPolicy
from .cache import entry_key
from .checkpoint.base import FAILED, ONCE, database_unavailable
from .errors import NodeError, NodeInterrupt, ParentCommand, SideEffectUnrecordedError
from .runtime import ExecutionInfo, Runtime

if TYPE_CHECKING:
    from ._loop import Run
    from ._specs import NodeSpec
    from .checkpoint.base import BaseCheckpointSaver

SENDS_CHANNEL = "__sends__"
"""`{task_id: arg}` of the frontier's `Send` tasks: what each runs on instead of the state."""

SEND_TIMEOUTS_CHANNEL = "__send_timeouts__"
"""`{task_id: TimeoutPolicy}` of the frontier's `Send` tasks sent with `Send(timeout=)` (saved
only while there is one): each times its task in place of its node's `timeout=`."""

STATE: Any = object()
"""`Task.arg` of a task that runs on the graph's state (not a `Send`)."""

sleep = time.sleep
"""How a sync node waits between retries (tests replace it)."""
asleep = asyncio.sleep
"""How an async node waits between retries (tests replace it)."""

RECORD_FIRST_PAUSE = 0.05
"""Seconds before the first retry of a `once()` outcome the database could not take."""
RECORD_POLL_PAUSE = 0.5
"""The longest pause between two reads of a thread whose `once()` effect another run started
and may still be recording (`Task.await_outcome`)."""

OnceState = Literal["started", "done", "failed"]
"""The progress of a `once()` effect, as its pending writes record it."""


def task_paths(
    frontier: Sequence[Sequence[str]], sends: Mapping[str, Any]
) -> list[tuple[str | int | bool, ...]]:
    """The path of each `(name, task_id)` of a frontier, as LangGraph's `PregelTask.path` and
    `langgraph_path` give it: `(PULL, name)`, or `(PUSH, i, False)` for its i-th `Send` (a
    task whose id is in `sends`)."""
    paths: list[tuple[str | int | bool, ...]] = []
    pushed = 0
    for name, task_id in frontier:
        if task_id in sends:
            paths.append((PUSH, pushed, False))
            pushed += 1
        else:
            paths.append((PULL, name))
    return paths


class Task:
    """One node to run in this step, with what it needs to replay deterministically."""

    __slots__ = (
        "__weakref__",
        "answers",
        "arg",
        "attempt",
        "cached",
        "call_results",
        "calls",
        "cancelled",
        "clock",
        "done",
        "ended",
        "error",
        "failure",
        "goto",
        "id",
        "interrupt_count",
        "kept_ns",
        "name",
        "node_error",
        "once",
        "pause",
        "pushed",
        "recorded",
        "result",
        "run",
        "saved",
        "scope_id",
        "send_timeout",
        "shown",
        "spec",
        "split",
        "subgraphs",
        "traced",
        "writes",
    )

    def __init__(self, run: Run, spec: NodeSpec, task_id: str) -> None:
        self.run = run
        self.spec = spec
        self.name = spec.name
        self.id = task_id
        self.answers: dict[str, Any] = {}
        """Answers to its `interrupt()` calls, by interrupt id."""
        self.arg: Any = STATE
        """What the node runs on: the state (`STATE`), or a `Send`'s arg."""
        self.send_timeout: TimeoutPolicy | None = None
        """Its `Send`'s `timeout=`, which times it in place of the node's own."""
        self.interrupt_count = 0
        self.attempt = 1
        """Which attempt of the node runs (1 for the first; more under a `RetryPolicy`)."""
        self.cached = False
        """Its result came from the node's `CachePolicy` cache: the node did not run."""
        self.scope_id = task_id
        """What its interrupt ids derive from: the task id, or the id of a `scope()` within it."""
        self.once: dict[str, tuple[str, Any]] = {}
        self.recorded: list[Interrupt] = []
        self.done = False
        self.ended = False
        """This attempt of it ended and was reported (`Run.finish`)."""
        self.saved = False
        """Its writes were saved as pending writes as it finished (a step of several tasks)."""
        self.writes: list[tuple[str, Any]] = []
        self.split: list[int] | None = None
        """For a list return, how many of `writes` each item gave (the `updates` stream shows
        one update per item, as LangGraph)."""
        self.goto: list[str | Send] = []
        self.result: Any = None
        self.pause: tuple[Interrupt, ...] | None = None
        """The pauses it stopped at on its last attempt (usually one)."""
        self.error: BaseException | None = None
        self.failure: NodeError | None = None
        """The node failed (in this attempt of the step, or one saved earlier) and its error
        handler runs in its place: then `spec` and `name` are the handler's."""
        self.node_error: NodeError | None = None
        """What an error handler running now is handed as its `error` parameter."""
        self.cancelled = False
        self.clock: Any = None
        """The watch of an attempt run under a `timeout=` (`graphs._timeout.Clock`)."""
        self.shown: list[Any] | None = None
        """`{task_name: result}` of the `@task` calls it made that finished, for the `updates`
        stream, held until it ends when the step's tasks do not run beside the consumer."""
        """It was cancelled before it finished, because a sibling failed or the step timed out
        (`_drive.run_step_async`): it keeps no writes and runs again when the step is resumed."""
        self.subgraphs = 0
        """How many subgraph runs this attempt started (the n-th gets namespace suffix `|n`)."""
        self.kept_ns = False
        """This attempt ran a `checkpointer=True` subgraph (its namespace is the node's name)."""
        self.pushed: list[tuple[str, Any]] | None = None
        """Writes `push_message()` made as the node ran, before those of its return value."""
        self.calls: Any = None
        """This attempt's `@task` calls (`graphs.func`), made on its first call."""
        self.call_results: dict[str, Any] | None = None
        """Results of `@task` calls that finished, by call key (saved, or of an earlier attempt)."""
        self.traced: Any = None
        """Its langchain_core chain run, when the run reports to callbacks (`_events.py`)."""

    def runtime(self) -> Any:
        """The `Runtime` handed to a node that declares a `runtime` parameter."""
        run = self.run
        info = ExecutionInfo(run.head_id, run.ns, self.id, run.thread_id, self.attempt)
        clock = self.clock
        if clock is None:
            return Runtime(
                context=run.context, store=run.store, stream_writer=run.writer, execution_info=info
            )
        return Runtime(
            context=run.context,
            store=run.store,
            stream_writer=clock.writer(run.writer),
            execution_info=info,
            heartbeat=clock.heartbeat,
        )

    def writer(self) -> Any:
        """What `get_stream_writer()` gives its code: the run's writer (under a `timeout=`,
        each write counting as progress)."""
        clock = self.clock
        return self.run.writer if clock is None else clock.writer(self.run.writer)

    @property
    def failed(self) -> bool:
        """It ended with an error (a `NodeInterrupt` is a pause, not a failure)."""
        return self.error is not None and not isinstance(self.error, NodeInterrupt)

    @property
    def cancellable(self) -> bool:
        """It runs async code under `ainvoke`, which a failing sibling can cancel (a sync
        node runs in a thread, which nothing can stop)."""
        return self.spec.is_async or self.spec.afn is not None

    @property
    def is_send(self) -> bool:
        """It runs on a `Send`'s arg, not on the state."""
        return self.arg is not STATE

    @property
    def path(self) -> tuple[str | int | bool, ...]:
        """Its path, LangGraph's: `(PULL, name)`, or `(PUSH, i, False)` for the frontier's
        i-th `Send`."""
        if not self.is_send:
            return (PULL, self.name)
        sends = self.run.internal.get(SENDS_CHANNEL) or {}
        frontier = self.run.frontier
        ids = [task_id for _, task_id in frontier]
        at = ids.index(self.id) if self.id in ids else len(ids)
        return (PUSH, sum(1 for t in ids[:at] if t in sends), False)

    # ---- running --------------------------------------------------------------------

    @property
    def limit(self) -> TimeoutPolicy | None:
        """The `timeout=` its attempts run under: its `Send`'s, else its node's (an error
        handler running in its place has its own, as LangGraph's)."""
        sent = self.send_timeout
        return self.spec.timeout if sent is None or self.failure is not None else sent

    @property
    def watched(self) -> bool:
        """It runs under an `idle_timeout` that langchain_core callback events refresh."""
        limit = self.limit
        return limit is not None and limit.idle_timeout is not None and limit.refresh_on == "auto"

    def _reset(self) -> None:
        if self.run.parent is not None:  # a subgraph's node starting: its parents progress
            enclosing_progress(self.run)
        self.cached = False
        self.interrupt_count = 0
        self.scope_id = self.id
        self.pause = None
        self.error = None
        self.subgraphs = 0
        self.kept_ns = False
        self.calls = None

    def run_sync(self) -> None:
        if self.run.chain is not None:
            task_sync(self, self._retry_sync)
        else:
            self._retry_sync()
        self._report_finished()

    def _report_finished(self) -> None:
        """Call the run's `configurable[CONFIG_KEY_NODE_FINISHED]` with the node's name once
        it finished: not after an error, a pause, a cache hit or a `Command.PARENT` (which
        leaves its graph), as LangGraph's runner calls it. A subgraph's run reads the key
        from its parent's config when its own does not have it."""
        if self.error is not None or self.pause is not None or self.cached:
            return
        result = self.result
        if isinstance(result, Command) and result.graph == Command.PARENT:
            return
        run = self.run
        hook: Any = (run.config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
        if hook is None and run.top is not run:
            hook = (run.top.config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
        if hook is not None:
            hook(self.name)

    def _retry_sync(self) -> None:
        if self.failure is None:
            self._attempts_sync()
            if not self._fails_over():
                return
            self._record_failure_sync()
        self.node_error = self.failure
        self._attempt_sync()  # the error handler, once (its failure fails the run)

    def _fails_over(self) -> bool:
        """The node failed and has an error handler: the handler takes its place."""
        handler = self.spec.handler
        if handler is None or not self.failed:
            return False
        assert self.error is not None
        self.failure = NodeError(self.name, self.error)
        self.spec, self.name = handler, handler.name
        return True

    def _failure_write(self) -> tuple[BaseCheckpointSaver, RunConfig, list[tuple[str, Any]]] | None:
        run, failure = self.run, self.failure
        if run.saver is None or failure is None:
            return None
        assert run.head_config is not None
        error = failure.error
        return run.saver, run.head_config, [(FAILED, [type(error).__name__, str(error)])]

    def _record_failure_sync(self) -> None:
        """Save the failure before the handler runs: a resume then runs the handler again."""
        found = self._failure_write()
        if found is not None:
            saver, config, writes = found
            saver.put_writes(config, writes, self.id)

    async def _record_failure_async(self) -> None:
        found = self._failure_write()
        if found is not None:
            saver, config, writes = found
            await saver.aput_writes(config, writes, self.id)

    def _attempts_sync(self) -> None:
        if self.send_timeout is not None and not self.spec.timeable:
            # As LangGraph's `run_with_retry`: refused before any attempt, not retried; an
            # error handler takes it as any failure of the node.
            refused = refuse_sync(self.name, "Node")
            refused.add_note(
                f"It was sent a Send({self.name!r}, ..., timeout={self.send_timeout!r}): a "
                "Send's timeout needs an async node too."
            )
            self.error = refused
            return
        failures = 0
        while True:
            self._attempt_sync()
            policy, error = self.spec.retry, self.error
            if policy is None or error is None or failures + 1 >= policy.max_attempts:
                return
            if not policy.retries(error):  # type: ignore[arg-type]
                return
            failures += 1
            self.attempt = failures + 1
            self.pushed = None  # what a failed attempt pushed is not written
            sleep(policy.delay(failures))

    def input(self) -> Any:
        """What the node runs on: a copy of the state (an instance of a dataclass or pydantic
        state schema), or its `Send`'s arg."""
        if self.arg is not STATE:
            return self.arg
        run = self.run
        values = run.values
        state = dict(values) if len(values) == run.width else run.view()
        managed = run.graph.managed
        if managed:
            left = run.limit - run.steps - 1  # the steps allowed after this one
            for key, kind in managed.items():
                state[key] = kind.get(left)
        reads = self.spec.reads
        if reads is not None:
            return reads(state)
        coerce = run.graph.coerce
        return state if coerce is None else coerce(state)

    def _attempt_sync(self) -> None:
        self._reset()
        token = _current.set(self)
        lc_token: Token[Any] | None = None
        try:
            spec, run = self.spec, self.run
            state = self.input()
            key = None if spec.cache is None or run.cache is None else cache_key(spec, state)
            if key is not None:
                hit = run.cache.get([key])
                if key in hit:
                    self.result, self.cached = hit[key], True
                    return
            if run.messages is not None or self.traced is not None or self.watched:
                lc_token = _models_report_to(self, state)
            config = run.config if self.traced is None else node_config(self)
            args = (state, config) if spec.takes_config else (state,)
            if self.limit is not None:  # its async code, under the timeout (`compile` checked)
                result = _run_coroutine_sync(self._timed(state, config), spec.name)
            elif spec.is_async:
                result = _run_coroutine_sync(spec.fn(*args), spec.name)
            else:
                result = spec.fn(*args)
            self.result = result
            if key is not None:
                run.cache.set({key: (result, spec.cache.ttl)})  # type: ignore[union-attr]
            if run.messages is not None:
                run.messages.task_finished(self)
        except Pause as p:
            if self.calls is not None:  # `@task` calls that paused too are asked with it
                wait_for(self.calls)
                p = gathered(p, self.calls)
            self.pause = p.interrupts
        except ParentCommand as c:
            self.result = c.command  # a subgraph's Command(graph=Command.PARENT)
        except Exception as e:  # noqa: BLE001 - every node error is recorded, then re-raised
            self.error = e
        finally:
            _current.reset(token)
            if lc_token is not None:
                lc_token.var.reset(lc_token)

    async def run_async(self) -> None:
        if self.run.chain is not None:
            await task_async(self, self._retry_async)
        else:
            await self._retry_async()
        self._report_finished()

    async def _retry_async(self) -> None:
        spec = self.spec
        if not spec.is_async and spec.afn is None:
            # Blocking node code must not stall the event loop (and the other tasks).
            await asyncio.to_thread(self._retry_sync)
            return
        if self.failure is None:
            await self._attempts_async()
            if not self._fails_over():
                return
            await self._record_failure_async()
        self.node_error = self.failure
        spec = self.spec
        if not spec.is_async and spec.afn is None:
            await asyncio.to_thread(self._attempt_sync)
        else:
            await self._attempt_async()

    async def _attempts_async(self) -> None:
        spec = self.spec
        failures = 0
        while True:
            await self._attempt_async()
            policy, error = spec.retry, self.error
            if policy is None or error is None or failures + 1 >= policy.max_attempts:
                return
            if not policy.retries(error):  # type: ignore[arg-type]
                return
            failures += 1
            self.attempt = failures + 1
            self.pushed = None  # what a failed attempt pushed is not written
            await asleep(policy.delay(failures))

    async def _attempt_async(self) -> None:
        self._reset()
        token = _current.set(self)
        lc_token: Token[Any] | None = None
        try:
            run, spec = self.run, self.spec
            state = self.input()
            key = None if spec.cache is None or run.cache is None else cache_key(spec, state)
            if key is not None:
                hit = await run.cache.aget([key])
                if key in hit:
                    self.result, self.cached = hit[key], True
                    return
            if run.messages is not None or self.traced is not None or self.watched:
                lc_token = _models_report_to(self, state)
            config = run.config if self.traced is None else node_config(self)
            if self.limit is not None:
                coro = self._timed(state, config)
            elif spec.afn is not None:
                coro = spec.afn(state, config)
            else:
                coro = spec.fn(state, config) if spec.takes_config else spec.fn(state)
            self.result = await coro
            if key is not None:
                await run.cache.aset({key: (self.result, spec.cache.ttl)})  # type: ignore[union-attr]
            if run.messages is not None:
                run.messages.task_finished(self)
        except Pause as p:
            if self.calls is not None:  # `@task` calls that paused too are asked with it
                await await_for(self.calls)
                p = gathered(p, self.calls)
            self.pause = p.interrupts
        except ParentCommand as c:
            self.result = c.command
        except Exception as e:  # noqa: BLE001
            self.error = e
        finally:
            _current.reset(token)
            if lc_token is not None:
                lc_token.var.reset(lc_token)

    async def _timed(self, state: Any, config: Any) -> Any:
        """The node's async code, run under its `timeout=`: cancelled once the attempt runs
        past it, with `NodeTimeoutError` raised in its place. The attempt's `Clock` is on the
        task while it runs, where progress (its writer, `runtime.heartbeat()`) reaches it."""
        spec, limit = self.spec, self.limit
        assert limit is not None
        self.clock = Clock(limit)  # before the node's writer and runtime are made
        try:
            if spec.afn is not None:
                coro = spec.afn(state, config)
            else:
                coro = spec.fn(state, config) if spec.takes_config else spec.fn(state)
            return await timed(spec.name, self.clock, coro)
        finally:
            self.clock = None

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

    def record_once(
        self, key: str, state: OnceState, result: Any = None, wait: float = 0.0
    ) -> None:
        """Record that the `once()` effect `key` started, is done (with `result`) or failed.
        Under `durability="exit"`, what the run has not saved is saved before it starts.

        The outcome ("done", "failed") of an effect that ran is written again while the
        database is unavailable, for up to `wait` seconds (see `_record_pause`): writing it
        twice is harmless (the last record of a key is the one read), losing it leaves the
        thread with an effect of unknown outcome."""
        if state == "started" and self.run.saver is not None:
            save_before_once(self.run)
        found = self._once_write(key, state, result)
        if found is None:
            return
        saver, config, writes = found
        since, tries = time.monotonic(), 0
        while True:
            try:
                saver.put_writes(config, writes, self.id)
                return
            except Exception as e:
                if state == "started" or not database_unavailable(e):
                    raise
                tries += 1
                pause = self._record_pause(key, state, result, e, since, tries, wait)
            sleep(pause)

    async def arecord_once(
        self, key: str, state: OnceState, result: Any = None, wait: float = 0.0
    ) -> None:
        """Async form of `record_once`."""
        if state == "started" and self.run.saver is not None:
            await asave_before_once(self.run)
        found = self._once_write(key, state, result)
        if found is None:
            return
        saver, config, writes = found
        since, tries = time.monotonic(), 0
        while True:
            try:
                await saver.aput_writes(config, writes, self.id)
                return
            except Exception as e:
                if state == "started" or not database_unavailable(e):
                    raise
                tries += 1
                pause = self._record_pause(key, state, result, e, since, tries, wait)
            await asleep(pause)

    def _outcome_written(self, tup: Any, key: str) -> tuple[str, Any] | None:
        """The last outcome ("done", "failed") of `key` among the pending writes of `tup`, the
        run's head read again."""
        found = None
        if tup is not None and tup.checkpoint["id"] == self.run.head_id:
            for task_id, channel, value in tup.pending_writes:
                if task_id == self.id and channel == ONCE and value[0] == key:
                    found = (value[1], value[2]) if value[1] != "started" else None
        return found

    def await_outcome(self, key: str, until: float) -> tuple[str, Any] | None:
        """Read the run's head again until the outcome of `key` is written there, or the clock
        (`time.time()`) passes `until`: another run that started the effect may be recording
        it (see `once()`). The outcome, or None."""
        run, tries = self.run, 0
        assert run.saver is not None and run.head_config is not None
        while True:
            found = self._outcome_written(run.saver.get_tuple(run.head_config), key)
            left = until - time.time()
            if found is not None or left <= 0:
                return found
            tries += 1
            sleep(min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_POLL_PAUSE, left))

    async def aawait_outcome(self, key: str, until: float) -> tuple[str, Any] | None:
        """Async form of `await_outcome`."""
        run, tries = self.run, 0
        assert run.saver is not None and run.head_config is not None
        while True:
            found = self._outcome_written(await run.saver.aget_tuple(run.head_config), key)
            left = until - time.time()
            if found is not None or left <= 0:
                return found
            tries += 1
            await asleep(
                min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_POLL_PAUSE, left)
            )

    def _record_pause(
        self,
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
                self.run.thread_id,
                key,
                outcome=state,
                result=result if state == "done" else None,
                waited=waited,
                error=error,
            ) from error
        return min(RECORD_FIRST_PAUSE * 2.0 ** min(tries - 1, 8), RECORD_MAX_PAUSE, left)


def cache_key(spec: NodeSpec, state: Any) -> tuple[tuple[str, ...], str]:
    """Where a cached node's result for this input is kept: `(namespace, key)`, the namespace
    LangGraph's (`graphs.cache.node_namespace`: its function's identity and its name)."""
    assert spec.cache is not None
    return spec.cache_namespace, entry_key(spec.cache.key_func(state))


def _models_report_to(task: Task, state: Any) -> Token[Any]:
    """Make langchain_core models called in this node report to the `messages` stream and to
    the task's chain run (when traced): the config they inherit when called without one
    (langchain_core's context variable)."""
    from langchain_core.runnables.config import var_child_runnable_config

    messages = task.run.messages
    handlers: list[Any] = []
    if messages is not None:
        handlers.append(messages.task_started(task, state))
    if task.watched:  # its events refresh the node's idle timeout
        handlers.append(progress_handler(task))
    outer = var_child_runnable_config.get() or {}
    callbacks = outer.get("callbacks") if task.traced is None else task.traced.get_child()
    if callbacks is None:
        merged: Any = handlers
    elif isinstance(callbacks, list):
        merged = [*callbacks, *handlers]
    else:  # a callback manager: its copy, with the stream's handler too
        merged = callbacks.copy()
        for handler in handlers:
            merged.add_handler(handler, inherit=True)
    return var_child_runnable_config.set({**outer, "callbacks": merged})


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
