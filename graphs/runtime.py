"""`Runtime`: what a node that declares a `runtime` parameter is handed (LangGraph's
`langgraph.runtime`), and `get_runtime()` for code that cannot take the parameter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from ._context import _task
from ._run import Task
from ._types import StreamWriter, no_writer

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from .store import BaseStore
else:
    from typing import TypeVar

__all__ = ["ExecutionInfo", "Runtime", "get_runtime"]

# PEP 696 default: `Runtime` alone means `Runtime[None]`, as in LangGraph.
if TYPE_CHECKING:
    ContextT = TypeVar("ContextT", default=None)
else:
    ContextT = TypeVar("ContextT")


def _no_heartbeat() -> None:
    """Nothing to refresh: the code runs under no `idle_timeout`."""


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where the node runs."""

    checkpoint_id: str | None
    """The checkpoint the node's step starts from (None without a checkpointer)."""
    checkpoint_ns: str
    """The checkpoint namespace of the run (`""` at the top)."""
    task_id: str
    """The id of this node's task (stable across replays of the step)."""
    thread_id: str
    """The run's thread."""
    node_attempt: int = 1
    """Which attempt of the node this is, under a `RetryPolicy` (1 for the first)."""


@dataclass(frozen=True, slots=True)
class Runtime(Generic[ContextT]):
    """Run-scoped things a node can ask for: `def node(state, runtime: Runtime[Ctx]): ...`."""

    context: ContextT = field(default=None)  # type: ignore[assignment]
    """What `invoke(..., context=...)` was given (made into the `context_schema` when a dict
    was given for a dataclass or pydantic schema); None if nothing was."""
    store: BaseStore | None = None
    """The graph's store (`compile(store=)`), or None if it was given none."""
    stream_writer: StreamWriter = no_writer
    """Writes to the `custom` stream mode (does nothing when it is not streamed)."""
    previous: Any = None
    """In an `@entrypoint` function (`graphs.func`): what the last finished run on the thread
    returned or saved; None in a `StateGraph` node."""
    execution_info: ExecutionInfo | None = None
    """The thread, task and checkpoint the node runs in."""
    heartbeat: Callable[[], None] = _no_heartbeat
    """Records progress for the `idle_timeout` of the async node, `@task` or `@entrypoint` it
    runs in (`timeout=TimeoutPolicy(idle_timeout=...)`); does nothing elsewhere."""


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The `Runtime` of the running node (`context_schema` only narrows the type).

    Raises:
        RuntimeError: called outside a running node.
    """
    return task_runtime(_task("get_runtime"))


def task_runtime(task: Task) -> Runtime[Any]:
    """The `Runtime` handed to the node `task` runs, when it declares a `runtime` parameter."""
    run = task.run
    info = ExecutionInfo(run.head_id, run.ns, task.id, run.thread_id, task.attempt)
    clock = task.clock
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
