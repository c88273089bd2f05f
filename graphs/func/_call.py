"""`@task`: a function whose calls, made inside a running node, are durable.

A call runs the function in the background (a thread, or the event loop for an async function
called from async code) and returns a `TaskFuture`. Its result is saved at once as a pending
write (`CALL`) of the node's task, under a key made from the call's position: the how-manieth
call of the node (or of the task that made it, for a task called inside a task) and the task's
name. When the node runs again (a resume after `interrupt()`, or after a crash or an error),
a call whose key has a saved result returns it without running the function again; calls that
had not finished run again. So, as with `interrupt()`, make the calls in the same order on
every run of the node.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import hashlib
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._calls import Calls, TaskFuture
from .._context import _current
from .._run import Task
from .._timeout import Clock, timed, watch_events
from .._types import RetryPolicy
from ..cache import entry_key, task_namespace
from ..checkpoint.base import CALL

if TYPE_CHECKING:
    from .._types import TimeoutPolicy
    from ..cache import BaseCache, CachePolicy

T = TypeVar("T")

sleep = time.sleep
"""How a sync task waits between retries (tests replace it)."""
asleep = asyncio.sleep
"""How an async task waits between retries (tests replace it)."""


class CallTask(Task):
    """What `interrupt()`, `get_config()` and nested calls see while a task call runs: its
    node's task, with ids of its own (its pauses and its subgraph's namespace are the call's)."""

    __slots__ = ("key", "owner")

    def __init__(self, owner: Task, key: str, name: str) -> None:
        for slot in Task.__slots__:
            if slot != "__weakref__":
                setattr(self, slot, getattr(owner, slot))
        self.owner = owner
        """The node's task: where the call's result and its `once()` records are saved."""
        self.key = key
        self.name = name
        raw = f"{owner.id}\x00{key}".encode()
        self.id = hashlib.blake2b(raw, digest_size=8).hexdigest()
        self.scope_id = f"{owner.id}/{key}"
        self.interrupt_count = 0
        self.subgraphs = 0
        self.calls = Calls()

    @property
    def home(self) -> Task:
        return self.owner.home


class TaskFunction(Generic[T]):
    """A function decorated with `@task`: call it inside a running entrypoint, node or task."""

    def __init__(
        self,
        func: Callable[..., T] | Callable[..., Awaitable[T]],
        *,
        name: str | None,
        retry_policy: Sequence[RetryPolicy],
        cache_policy: CachePolicy | None,
        timeout: TimeoutPolicy | None = None,
    ) -> None:
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", type(func).__name__))
        self.retry_policy = tuple(retry_policy)
        self.cache_policy = cache_policy
        self.timeout = timeout
        """Each attempt's `TimeoutPolicy` (async functions only), or None."""
        self.is_async = asyncio.iscoroutinefunction(func)
        functools.update_wrapper(self, func)
        self.__name__ = self.name

    def __repr__(self) -> str:
        return f"<task {self.name}>"

    def clear_cache(self, cache: BaseCache) -> None:
        """Forget this task's cached results in `cache` (with a `cache_policy`)."""
        if self.cache_policy is not None:
            cache.clear([self._cache_ns()])

    async def aclear_cache(self, cache: BaseCache) -> None:
        """Async form of `clear_cache`."""
        if self.cache_policy is not None:
            await cache.aclear([self._cache_ns()])

    def _cache_ns(self) -> tuple[str, ...]:
        return task_namespace(self.func)

    def __call__(self, *args: Any, **kwargs: Any) -> TaskFuture[T]:
        caller = _current.get()
        if caller is None:
            raise RuntimeError(
                f"@task {self.name!r} was called outside a running graph: call it inside an "
                "@entrypoint function, a StateGraph node, or another task"
            )
        owner = caller.owner if isinstance(caller, CallTask) else caller
        if caller.clock is not None:
            caller.clock.progress()  # a call made counts as progress for an idle timeout
        calls: Calls | None = caller.calls
        if calls is None:
            calls = caller.calls = Calls()
        prefix = f"{caller.key}/" if isinstance(caller, CallTask) else ""
        key = f"{prefix}{next(calls.counter)}:{self.name}"
        saved = owner.call_results
        if saved is None:
            saved = owner.call_results = {}  # here, before any call's thread writes to it
            if owner.shown is None and "updates" in owner.run.modes:
                owner.shown = []  # (the same: the node's first call comes from its own code)
        elif key in saved:
            return TaskFuture.of(saved[key])
        child = CallTask(owner, key, self.name)
        context = contextvars.copy_context()
        context.run(_current.set, child)
        future: TaskFuture[T]
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self.is_async and loop is not None:
            coro = self._arun(child, args, kwargs)
            future = TaskFuture(loop.create_task(coro, context=context))
        else:
            done: concurrent.futures.Future[T] = concurrent.futures.Future()
            thread = threading.Thread(
                target=context.run,
                args=(self._run_in_thread, child, args, kwargs, done),
                name=f"graphs-task-{self.name}",
                daemon=True,
            )
            thread.start()
            future = TaskFuture(done)
        calls.futures.append(future)
        return future

    # ---- running one call -------------------------------------------------------------

    def _cache_key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        policy = self.cache_policy
        assert policy is not None
        return self._cache_ns(), entry_key(policy.key_func(*args, **kwargs))

    def _run_in_thread(
        self,
        child: CallTask,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        done: concurrent.futures.Future[T],
    ) -> None:
        try:
            if self.is_async:
                result = asyncio.run(self._acall(child, args, kwargs))
            else:
                result = self._call(child, args, kwargs)
            self._saved(child, result)
        except BaseException as e:  # noqa: BLE001 - a pause or an error goes to the caller
            done.set_exception(e)
        else:
            done.set_result(result)

    def _call(self, child: CallTask, args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        cache = child.run.cache if self.cache_policy is not None else None
        key = None
        if cache is not None:
            key = self._cache_key(args, kwargs)
            hit = cache.get([key])
            if key in hit:
                return hit[key]  # type: ignore[no-any-return]
        failures = 0
        while True:
            try:
                result: T = self.func(*args, **kwargs)  # type: ignore[assignment]
                break
            except Exception as e:
                policy = self._retrying(e, failures)
                if policy is None:
                    raise
                failures += 1
                sleep(policy.delay(failures))
        if cache is not None:
            cache.set({key: (result, self.cache_policy.ttl)})  # type: ignore[union-attr]
        return result

    async def _acall(self, child: CallTask, args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        cache = child.run.cache if self.cache_policy is not None else None
        key = None
        if cache is not None:
            key = self._cache_key(args, kwargs)
            hit = await cache.aget([key])
            if key in hit:
                return hit[key]  # type: ignore[no-any-return]
        limit = self.timeout
        # Its code's callback events (a model's tokens) are progress of its own attempt.
        token = None
        if limit is not None and limit.idle_timeout is not None and limit.refresh_on == "auto":
            token = watch_events(child)
        try:
            failures = 0
            while True:
                try:
                    if limit is None:
                        result: T = await self.func(*args, **kwargs)  # type: ignore[misc]
                    else:
                        child.clock = Clock(limit)  # this attempt's, seen by its own code
                        result = await timed(self.name, child.clock, self.func(*args, **kwargs))  # type: ignore[arg-type]
                    break
                except Exception as e:
                    policy = self._retrying(e, failures)
                    if policy is None:
                        raise
                    failures += 1
                    await asleep(policy.delay(failures))
        finally:
            if token is not None:
                token.var.reset(token)
        if cache is not None:
            await cache.aset({key: (result, self.cache_policy.ttl)})  # type: ignore[union-attr]
        return result

    async def _arun(self, child: CallTask, args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        result = await self._acall(child, args, kwargs)
        owner = child.owner
        self._remember(child, result)
        run = owner.run
        if run.saver is not None and run.head_config is not None:
            await run.saver.aput_writes(run.head_config, [(CALL, [child.key, result])], owner.id)
        self._show(child, result)
        return result

    def _retrying(self, error: Exception, failures: int) -> RetryPolicy | None:
        """The retry policy that retries `error` after `failures` failed retries, if any."""
        for policy in self.retry_policy:
            if policy.retries(error):
                return policy if failures + 1 < policy.max_attempts else None
        return None

    def _remember(self, child: CallTask, result: Any) -> None:
        results = child.owner.call_results
        assert results is not None  # made by the call
        results[child.key] = result

    def _saved(self, child: CallTask, result: Any) -> None:
        """Keep a finished call's result: durably (before its future resolves), and for a
        later attempt of the node in this run."""
        self._remember(child, result)
        run = child.owner.run
        if run.saver is not None and run.head_config is not None:
            run.saver.put_writes(run.head_config, [(CALL, [child.key, result])], child.owner.id)
        self._show(child, result)

    def _show(self, child: CallTask, result: Any) -> None:
        """`{task: result}` in the `updates` stream, as LangGraph shows a task: at once when
        the step's tasks run beside the consumer, else when the node's task ends (`_loop.finish`
        sends it just before the node's own update)."""
        owner = child.owner
        run = owner.run
        if run.sink is not None:
            run.send("updates", {self.name: result})
        elif (shown := owner.shown) is not None:
            shown.append({self.name: result})
