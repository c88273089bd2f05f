"""Running a task (`_run.Task`): its node function (sync, async, or a sync node off the event loop
under `ainvoke`) with the running task in a `ContextVar`, so that `interrupt()` and `once()` can
find it; retried under its `RetryPolicy`, timed under its `timeout=`, cached under its
`CachePolicy`, handed to its error handler when it fails. It catches a pause or an error instead
of letting it escape, for the loop to decide what to keep.
"""

from __future__ import annotations

import asyncio
import sys
import time
from contextvars import Token
from typing import TYPE_CHECKING, Any

from ._calls import await_for, gathered, wait_for
from ._context import Pause, _current
from ._events import node_config, task_async, task_sync
from ._run import Task, refreshed_by_events
from ._timeout import Clock, enclosing_progress, progress_handler, refuse_sync, timed
from ._types import Command, RunConfig
from .cache import entry_key
from .checkpoint.base import FAILED
from .errors import NodeError, ParentCommand

if TYPE_CHECKING:
    from ._specs import NodeSpec
    from .checkpoint.base import BaseCheckpointSaver

__all__ = ["cache_key", "run_async", "run_sync"]

sleep = time.sleep
"""How a sync node waits between retries (tests replace it)."""
asleep = asyncio.sleep
"""How an async node waits between retries (tests replace it)."""


def _reset(task: Task) -> None:
    if task.run.parent is not None:  # a subgraph's node starting: its parents progress
        enclosing_progress(task.run)
    task.cached = False
    task.interrupt_count = 0
    task.scope_id = task.id
    task.pause = None
    task.error = None
    task.subgraphs = 0
    task.kept_ns = False
    task.calls = None


def run_sync(task: Task) -> None:
    if task.run.chain is not None:
        task_sync(task, _retry_sync)
    else:
        _retry_sync(task)
    if task.run.node_finished is not None:
        _report_finished(task)


def _report_finished(task: Task) -> None:
    """Call the run's `configurable[CONFIG_KEY_NODE_FINISHED]` (`Run.node_finished`) with the
    node's name once it finished: not after an error, a pause, a cache hit or a
    `Command.PARENT` (which leaves its graph), as LangGraph's runner calls it."""
    if task.error is not None or task.pause is not None or task.cached:
        return
    result = task.result
    if isinstance(result, Command) and result.graph == Command.PARENT:
        return
    hook = task.run.node_finished
    if hook is not None:
        hook(task.name)


def _retry_sync(task: Task) -> None:
    if task.failure is None:
        if task.spec.retry is None and task.send_timeout is None:
            _attempt_sync(task)  # the hot path: one attempt, nothing to refuse
        else:
            _attempts_sync(task)
        if task.error is None or not _fails_over(task):  # (no call on the hot path)
            return
        _record_failure_sync(task)
    task.node_error = task.failure
    _attempt_sync(task)  # the error handler, once (its failure fails the run)


def _fails_over(task: Task) -> bool:
    """The node failed and has an error handler: the handler takes its place."""
    handler = task.spec.handler
    if handler is None or not task.failed:
        return False
    assert task.error is not None
    task.failure = NodeError(task.name, task.error)
    task.spec, task.name = handler, handler.name
    return True


def _failure_write(
    task: Task,
) -> tuple[BaseCheckpointSaver, RunConfig, list[tuple[str, Any]]] | None:
    run, failure = task.run, task.failure
    if run.saver is None or failure is None:
        return None
    assert run.head_config is not None
    error = failure.error
    return run.saver, run.head_config, [(FAILED, [type(error).__name__, str(error)])]


def _record_failure_sync(task: Task) -> None:
    """Save the failure before the handler runs: a resume then runs the handler again."""
    found = _failure_write(task)
    if found is not None:
        saver, config, writes = found
        saver.put_writes(config, writes, task.id)


async def _record_failure_async(task: Task) -> None:
    found = _failure_write(task)
    if found is not None:
        saver, config, writes = found
        await saver.aput_writes(config, writes, task.id)


def _attempts_sync(task: Task) -> None:
    if task.send_timeout is not None and not task.spec.timeable:
        # As LangGraph's `run_with_retry`: refused before any attempt, not retried; an
        # error handler takes it as any failure of the node.
        refused = refuse_sync(task.name, "Node")
        refused.add_note(
            f"It was sent a Send({task.name!r}, ..., timeout={task.send_timeout!r}): a "
            "Send's timeout needs an async node too."
        )
        task.error = refused
        return
    failures = 0
    while True:
        _attempt_sync(task)
        policy, error = task.spec.retry, task.error
        if policy is None or error is None or failures + 1 >= policy.max_attempts:
            return
        if not policy.retries(error):  # type: ignore[arg-type]
            return
        failures += 1
        task.attempt = failures + 1
        task.pushed = None  # what a failed attempt pushed is not written
        sleep(policy.delay(failures))


def _attempt_sync(task: Task) -> None:
    if task.attempt > 1 or task.failure is not None or task.run.parent is not None:
        _reset(task)  # (a task's first attempt starts as `Task()` made it)
    token = _current.set(task)
    lc_token: Token[Any] | None = None
    try:
        spec, run = task.spec, task.run
        state = task.input()
        key = None if spec.cache is None or run.cache is None else cache_key(spec, state)
        if key is not None:
            hit = run.cache.get([key])
            if key in hit:
                task.result, task.cached = hit[key], True
                return
        limit = spec.timeout if task.send_timeout is None else task.limit  # (the hot path)
        if (
            run.messages is not None
            or task.traced is not None
            or (limit is not None and refreshed_by_events(limit))  # (no call on the hot path)
        ):
            lc_token = _models_report_to(task, state)
        else:
            lc_token = _tools_see_config(run)
        config = run.config if task.traced is None else node_config(task)
        args = (state, config) if spec.takes_config else (state,)
        if limit is not None:  # its async code, under the timeout (`compile` checked)
            result = _run_coroutine_sync(_timed(task, state, config), spec.name)
        elif spec.is_async:
            result = _run_coroutine_sync(spec.fn(*args), spec.name)
        else:
            result = spec.fn(*args)
        task.result = result
        if key is not None:
            run.cache.set({key: (result, spec.cache.ttl)})  # type: ignore[union-attr]
        if run.messages is not None:
            run.messages.task_finished(task)
    except Pause as p:
        if task.calls is not None:  # `@task` calls that paused too are asked with it
            wait_for(task.calls)
            p = gathered(p, task.calls)
        task.pause = p.interrupts
    except ParentCommand as c:
        task.result = c.command  # a subgraph's Command(graph=Command.PARENT)
    except Exception as e:  # noqa: BLE001 - every node error is recorded, then re-raised
        task.error = e
    finally:
        _current.reset(token)
        if lc_token is not None:
            lc_token.var.reset(lc_token)


async def run_async(task: Task) -> None:
    if task.run.chain is not None:
        await task_async(task, _retry_async)
    else:
        await _retry_async(task)
    if task.run.node_finished is not None:
        _report_finished(task)


async def _retry_async(task: Task) -> None:
    spec = task.spec
    if not spec.is_async and spec.afn is None:
        # Blocking node code must not stall the event loop (and the other tasks).
        await asyncio.to_thread(_retry_sync, task)
        return
    if task.failure is None:
        await _attempts_async(task)
        if task.error is None or not _fails_over(task):
            return
        await _record_failure_async(task)
    task.node_error = task.failure
    spec = task.spec
    if not spec.is_async and spec.afn is None:
        await asyncio.to_thread(_attempt_sync, task)
    else:
        await _attempt_async(task)


async def _attempts_async(task: Task) -> None:
    spec = task.spec
    failures = 0
    while True:
        await _attempt_async(task)
        policy, error = spec.retry, task.error
        if policy is None or error is None or failures + 1 >= policy.max_attempts:
            return
        if not policy.retries(error):  # type: ignore[arg-type]
            return
        failures += 1
        task.attempt = failures + 1
        task.pushed = None  # what a failed attempt pushed is not written
        await asleep(policy.delay(failures))


async def _attempt_async(task: Task) -> None:
    if task.attempt > 1 or task.failure is not None or task.run.parent is not None:
        _reset(task)
    token = _current.set(task)
    lc_token: Token[Any] | None = None
    try:
        run, spec = task.run, task.spec
        state = task.input()
        key = None if spec.cache is None or run.cache is None else cache_key(spec, state)
        if key is not None:
            hit = await run.cache.aget([key])
            if key in hit:
                task.result, task.cached = hit[key], True
                return
        limit = spec.timeout if task.send_timeout is None else task.limit  # (the hot path)
        if (
            run.messages is not None
            or task.traced is not None
            or (limit is not None and refreshed_by_events(limit))  # (no call on the hot path)
        ):
            lc_token = _models_report_to(task, state)
        else:
            lc_token = _tools_see_config(run)
        config = run.config if task.traced is None else node_config(task)
        if limit is not None:
            coro = _timed(task, state, config)
        elif spec.afn is not None:
            coro = spec.afn(state, config)
        else:
            coro = spec.fn(state, config) if spec.takes_config else spec.fn(state)
        task.result = await coro
        if key is not None:
            await run.cache.aset({key: (task.result, spec.cache.ttl)})  # type: ignore[union-attr]
        if run.messages is not None:
            run.messages.task_finished(task)
    except Pause as p:
        if task.calls is not None:  # `@task` calls that paused too are asked with it
            await await_for(task.calls)
            p = gathered(p, task.calls)
        task.pause = p.interrupts
    except ParentCommand as c:
        task.result = c.command
    except Exception as e:  # noqa: BLE001
        task.error = e
    finally:
        _current.reset(token)
        if lc_token is not None:
            lc_token.var.reset(lc_token)


async def _timed(task: Task, state: Any, config: Any) -> Any:
    """The node's async code, run under its `timeout=`: cancelled once the attempt runs
    past it, with `NodeTimeoutError` raised in its place. The attempt's `Clock` is on the
    task while it runs, where progress (its writer, `runtime.heartbeat()`) reaches it."""
    spec, limit = task.spec, task.limit
    assert limit is not None
    task.clock = Clock(limit)  # before the node's writer and runtime are made
    try:
        if spec.afn is not None:
            coro = spec.afn(state, config)
        else:
            coro = spec.fn(state, config) if spec.takes_config else spec.fn(state)
        return await timed(spec.name, task.clock, coro)
    finally:
        task.clock = None


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
    inherited: Any = {**outer, "configurable": _configurable(outer, task.run), "callbacks": merged}
    return var_child_runnable_config.set(inherited)


def _configurable(outer: Any, run: Any) -> dict[str, Any]:
    """The run's `configurable` over the one langchain_core's context held already."""
    own = run.config.get("configurable") or {}
    held = outer.get("configurable")
    return {**held, **own} if held else own


def _tools_see_config(run: Any) -> Token[Any] | None:
    """Make a langchain_core tool (or model) a node calls without a config read the run's
    `configurable`, as under LangGraph, whose node config is the one they inherit: set in
    langchain_core's context variable, and only where langchain_core is loaded (a node that
    calls a tool has loaded it), so `import graphs` and a run without it pay nothing."""
    module = sys.modules.get("langchain_core.runnables.config")
    if module is None:
        return None
    var = module.var_child_runnable_config
    outer = var.get() or {}
    configurable = _configurable(outer, run)
    if not configurable:
        return None
    inherited: Any = {**outer, "configurable": configurable}
    token: Token[Any] = var.set(inherited)
    return token


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
