"""LangGraph's functional API (`langgraph.func`): `@entrypoint` and `@task`.

```python
@task
def draft(topic: str) -> str:
    return model_writes_about(topic)          # runs once: its result is saved

@entrypoint(checkpointer=SQLSaver(url))
def review(topic: str) -> dict:
    text = draft(topic).result()
    verdict = interrupt({"draft": text})      # pauses; resumed with Command(resume=...)
    return {"draft": text, "verdict": verdict}
```

An entrypoint is a one-node graph of graphs' runtime (`invoke`, `stream`, `get_state`, ...
as a compiled `StateGraph`'s): a run saves its input, runs the function as one task, and saves
its return. A `@task` call made inside it (or inside a `StateGraph` node, or another task) runs
in the background and returns a future; its result is saved as soon as it finishes, so when
the function runs again from its top (a resume after `interrupt()`, or after a crash), that
call returns the saved result instead of running again. Make task calls and `interrupt()`
calls in the same order on every run of the function.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, overload

from .._calls import TaskFuture
from .._schema import ROOT
from .._timeout import refuse_sync
from .._types import END, START, Dialect, RetryPolicy, TimeoutPolicy
from ..builder import StateGraph
from ..cache import CachePolicy
from ..errors import GraphSetupError
from ._call import TaskFunction
from ._entry import Entrypoint, Final, channels, make_node, read_input

if TYPE_CHECKING:
    from ..cache import BaseCache
    from ..checkpoint.base import BaseCheckpointSaver
    from ..store import BaseStore

__all__ = ["Entrypoint", "TaskFunction", "TaskFuture", "entrypoint", "task"]


class _EntrypointGraph(StateGraph):
    """An `@entrypoint`'s one-node graph. `graphs.func` is LangGraph's module path, so the graph
    speaks LangGraph's dialect (`graphs.types.Dialect`): a pause returns `__interrupt__`, new
    input on a paused thread starts a new run."""

    dialect: ClassVar[Dialect] = "langgraph"


T = TypeVar("T")
ContextT = TypeVar("ContextT")


@overload
def task(
    func: None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
) -> Callable[[Callable[..., Any]], TaskFunction[Any]]: ...


@overload
def task(func: Callable[..., Awaitable[T]]) -> TaskFunction[T]: ...


@overload
def task(func: Callable[..., T]) -> TaskFunction[T]: ...


def task(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
) -> TaskFunction[Any] | Callable[[Callable[..., Any]], TaskFunction[Any]]:
    """Make a function a task: `@task` or `@task(name=, retry_policy=, cache_policy=, timeout=)`.

    Calling it (only inside a running entrypoint, `StateGraph` node or task) starts it in the
    background and returns a `TaskFuture`: `.result()` waits for the result in sync code,
    `await` it in async code. Its arguments are passed as they are; its result must be
    storable in a checkpoint (JSON-like, as state is). A failed attempt is retried under the
    first `retry_policy` that retries the error; with `cache_policy` and the graph's
    `cache=`, a result is reused for the same arguments (per `key_func`) across runs
    (`my_task.clear_cache(cache)` forgets them). With `timeout=` (seconds, a `timedelta` or a
    `TimeoutPolicy`; async functions only, a sync one is refused with a `ValueError`), an
    attempt that runs past it is cancelled and fails with `NodeTimeoutError`, which
    `retry_policy` may retry.
    """
    limit = TimeoutPolicy.coerce(timeout)
    policies: Sequence[RetryPolicy]
    if retry_policy is None:
        policies = ()
    elif isinstance(retry_policy, RetryPolicy):
        policies = (retry_policy,)
    else:
        policies = tuple(retry_policy)

    def decorate(fn: Callable[..., Any]) -> TaskFunction[Any]:
        if not callable(fn):
            raise TypeError(f"@task decorates a function, got {type(fn).__name__} {fn!r}")
        if limit is not None and not inspect.iscoroutinefunction(fn):
            raise refuse_sync(str(name or getattr(fn, "__name__", type(fn).__name__)), "Task")
        return TaskFunction(
            fn, name=name, retry_policy=policies, cache_policy=cache_policy, timeout=limit
        )

    return decorate if func is None else decorate(func)


class entrypoint(Generic[ContextT]):  # LangGraph's name, a class in lower case
    """Make a function a graph: `@entrypoint(checkpointer=InMemorySaver())`.

    The function takes one parameter, its input (any value; a dict to pass several), and may
    declare, by name: `previous` (what the last finished run on the thread returned, or
    saved with `entrypoint.final`; None on a new thread), `config`, `runtime`, `store`,
    `writer`. The result is an `Entrypoint` graph named after the function: `invoke(input,
    config)` returns what the function returns; `stream` shows each task as
    `{task_name: result}` and then `{function_name: result}` (its default mode is
    `"updates"`). `interrupt()` inside pauses the run (saved: a checkpointer is needed, or a
    parent graph's); `invoke(Command(resume=answer), config)` runs the function again from
    its top, finished task calls returning their saved results.

    Args:
        checkpointer: where runs are saved (needed for `previous`, pauses and resumes). None,
            called inside a graph's node, the entrypoint runs as a subgraph on the parent's.
        store: the `BaseStore` the function and its tasks get.
        cache: a `BaseCache` for tasks with a `cache_policy`.
        context_schema: what `invoke(..., context=)` holds (`runtime.context`).
        cache_policy: with `cache`, a run with the same input (per its `key_func`, of the
            input alone) returns the cached result without calling the function (its
            `updates` chunk marked `"__metadata__": {"cached": True}`); `clear_cache()` on
            the graph forgets them.
        timeout: seconds, a `timedelta` or a `TimeoutPolicy` each attempt of an async
            function may run (a sync one is refused with a `ValueError`): past it the attempt
            is cancelled and fails with `NodeTimeoutError`, which `retry_policy` may retry.
        retry_policy: how a failed run of the function is retried (graphs' `RetryPolicy`).
        interrupt_mode: as `StateGraph.compile`'s: `"return"` (the default: `graphs.func` is
            LangGraph's path, and speaks LangGraph's dialect) or `"raise"`.
    """

    final = Final
    """`return entrypoint.final(value=..., save=...)`: return `value`; the next run on the
    thread gets `save` as `previous`."""

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver | None = None,
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
        context_schema: type[ContextT] | None = None,
        cache_policy: CachePolicy | None = None,
        retry_policy: RetryPolicy | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        *,
        interrupt_mode: str | None = None,
    ) -> None:
        if callable(checkpointer) and not hasattr(checkpointer, "put_writes"):
            raise GraphSetupError(
                f"@entrypoint was given the function {getattr(checkpointer, '__name__', '')!r} "
                "as its checkpointer: write @entrypoint() (or @entrypoint(checkpointer=...)), "
                "with parentheses"
            )
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        self.cache_policy = cache_policy
        self.retry_policy = retry_policy
        self.timeout = TimeoutPolicy.coerce(timeout)
        self.interrupt_mode = interrupt_mode

    def __call__(self, func: Callable[..., Any]) -> Entrypoint:
        if not callable(func):
            raise GraphSetupError(f"@entrypoint decorates a function, got {func!r}")
        name = getattr(func, "__name__", None)
        if not name or name == "<lambda>":
            raise GraphSetupError(
                "@entrypoint needs a named function (its name is the graph's node name)"
            )
        if self.timeout is not None and not inspect.iscoroutinefunction(func):
            raise refuse_sync(name, "Node")
        builder = _EntrypointGraph(object, self.context_schema)
        builder.channels.update(channels())
        cache = self.cache_policy
        if cache is not None:  # keyed by the input alone, as LangGraph's (not `previous`)
            key_func = cache.key_func
            cache = CachePolicy(key_func=lambda state: key_func(state[0]), ttl=cache.ttl)
        node = make_node(func)
        builder.add_node(
            name, node, retry_policy=self.retry_policy, cache_policy=cache, timeout=self.timeout
        )
        spec = builder.nodes[name]
        # Its `runnable.func` and cache namespace are the user's function, as in LangGraph.
        builder.nodes[name] = dataclasses.replace(spec, reads=read_input, given=func)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
        options: dict[str, Any] = {"store": self.store, "cache": self.cache, "name": name}
        if self.interrupt_mode is not None:
            options["interrupt_mode"] = self.interrupt_mode
        graph = builder.compile(self.checkpointer, **options)
        assert ROOT in graph.channels
        return Entrypoint(graph, func)
