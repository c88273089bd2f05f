"""The small value types of the public API, at the bottom of the runtime: every module of
`graphs` imports them from here; `graphs.types` (LangGraph's `langgraph.types`) re-exports them
with `interrupt`, which is defined above them (`_context`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, NamedTuple, TypedDict

from ._internal._cache import default_cache_key
from ._internal._constants import PULL, PUSH

if TYPE_CHECKING:
    from typing_extensions import TypeVar
else:
    from typing import TypeVar

__all__ = [
    "END",
    "PULL",
    "PUSH",
    "START",
    "CachePolicy",
    "Command",
    "Durability",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "RunConfig",
    "Send",
    "StateSnapshot",
    "StateTask",
    "StateUpdate",
    "StreamMode",
    "StreamWriter",
    "TimeoutPolicy",
    "no_writer",
]

# The node names a `Command` may go to: `-> Command[Literal["a", "b"]]` declares them (and
# `compile` reads them); a bare `Command` goes anywhere. Type checkers know a TypeVar default
# (PEP 696); Python 3.11's TypeVar takes none.
if TYPE_CHECKING:
    N = TypeVar("N", bound=str, default=str)
else:
    N = TypeVar("N", bound=str)

START = "__start__"
"""The virtual node every run begins at: `add_edge(START, "first")`."""

END = "__end__"
"""The virtual node a branch finishes at: `add_edge("last", END)`."""


StreamMode = Literal["values", "updates", "messages", "custom", "debug", "tasks", "checkpoints"]
"""What `stream(stream_mode=...)` yields: see `CompiledGraph.stream`."""


@dataclass(frozen=True, slots=True)
class Overwrite:
    """Write `value` to a reducer key as it is, bypassing the reducer (LangGraph's):
    `return {"messages": Overwrite([summary])}`. The JSON form `{"__overwrite__": value}` does
    the same. Two in one step for one key are refused with `InvalidUpdateError`."""

    value: Any


class StateUpdate(NamedTuple):
    """One update of `bulk_update_state`: `values` written as if node `as_node` returned them."""

    values: dict[str, Any] | None
    as_node: str | None = None
    task_id: str | None = None
    """Accepted for LangGraph's shape; graphs gives the update a task id of its own."""


OVERWRITE_KEY = "__overwrite__"
"""`{"__overwrite__": value}`: the JSON form of `Overwrite(value)`."""

Dialect = Literal["graphs", "langgraph"]
"""Whose semantics a graph follows where seed 000's and LangGraph's differ, chosen by where its
builder was imported from, never by a global: `"graphs"` for the top-level `graphs.StateGraph`
(a pause raises, `update_state` without `as_node` replaces values, input given to a paused thread
is applied before its frontier runs), `"langgraph"` for `graphs.graph.StateGraph` and the other
LangGraph module paths (a pause returns, `update_state` goes through the reducers as the node that
ran last, new input on a paused thread starts over from START). docs/langgraph.md has the table."""

Durability = Literal["sync", "async", "exit"]
"""LangGraph's `durability=` of a run. `"sync"` and `"async"` (and none given): every step is
saved before the next one starts. `"exit"`: as LangGraph, the run's checkpoint and pending writes
are saved only when it exits (completes, pauses or fails), and also, in graphs, before a `once()`
effect begins, so a crash after it never runs it again: see docs/langgraph.md."""

StreamWriter = Callable[[Any], None]
"""Hands a chunk to the `custom` stream mode: `get_stream_writer()`, or a node's `writer`
parameter. When the caller does not stream `custom`, writing does nothing."""


def no_writer(chunk: Any) -> None:
    """The stream writer when nothing streams `custom` (a run whose caller does not ask for it, a
    tool run outside a graph): the chunk goes nowhere."""


class Configurable(TypedDict, total=False):
    thread_id: str
    """The durable key of a conversation. Invocations on one thread accumulate."""
    checkpoint_ns: str
    """An optional namespace within the thread (default `""`)."""
    checkpoint_id: str
    """A specific checkpoint (read-only for `get_state`; runs always continue from the head)."""


class RunConfig(TypedDict, total=False):
    """The `config` argument of `invoke`, `get_state` and friends."""

    configurable: Configurable
    recursion_limit: int
    """The most supersteps one invocation may run (default: the compiled graph's, 25)."""
    metadata: dict[str, Any]
    """Noted in each checkpoint's metadata and in `messages` chunks' metadata, as LangGraph."""
    tags: list[str]
    """Shown in `messages` chunks of chat models (with the model's own tags), as LangGraph."""
    max_concurrency: int
    """Under `ainvoke`/`astream`, at most this many of a step's tasks run at once (default: all
    of them). `invoke` runs a step's tasks one after another anyway."""


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pending pause: what the node asked, and the id a resume answers it by.

    Two are equal when their `value` and `id` are, as LangGraph's (`id` already names the
    node and the call); `node`, `index` and `resumable` are graphs' additions to read."""

    value: Any
    """What was passed to `interrupt(value)` (or `NodeInterrupt(value)`)."""
    id: str
    """Stable across replays; answer it with `Command(resume={id: answer})`."""
    node: str = field(default="", compare=False)
    """The node that paused."""
    index: int = field(default=0, compare=False)
    """Which `interrupt()` call in the node this is (0 for the first); in a `ToolNode`, which
    call of that tool call's `before_call` hook."""
    resumable: bool = field(default=True, compare=False)
    """False for a `NodeInterrupt`: it takes no answer; `invoke(None, config)` re-runs the node."""


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """How a node's results are cached (`add_node(..., cache_policy=CachePolicy(ttl=60))`)."""

    key_func: Callable[..., str | bytes] = default_cache_key
    """Makes the cache key from the node's input (default: a hash of it); an entry is stored
    under a fixed-size hash of what it returns (`entry_key`), however long."""
    ttl: int | None = None
    """Seconds an entry lives; None: until the cache is cleared."""


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's rule for what a `RetryPolicy` retries by default.

    Yes for a `ConnectionError` and for an HTTP error with a 5xx status (httpx's
    `HTTPStatusError`, requests' `HTTPError`, recognised without importing them); no for the
    errors a retry cannot fix (`ValueError`, `TypeError`, `ArithmeticError`, `ImportError`,
    `LookupError`, `NameError`, `SyntaxError`, `RuntimeError`, `ReferenceError`,
    `StopIteration`, `StopAsyncIteration`, `OSError`); yes for anything else.
    """
    if isinstance(exc, ConnectionError):
        return True
    if type(exc).__module__.partition(".")[0] in ("httpx", "requests") and hasattr(exc, "response"):
        status = getattr(exc.response, "status_code", None)
        if isinstance(status, int):
            return 500 <= status < 600
        return True
    return not isinstance(exc, _NOT_RETRIED)


_NOT_RETRIED = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a node's failed attempt is retried, within the same step (`add_node(retry_policy=)`).

    The wait before retry `n` (1 for the first) is `min(max_interval, initial_interval *
    backoff_factor ** (n - 1))`, plus up to a second at random with `jitter`. A pause
    (`interrupt()`) is never retried; the error of the last attempt is what the step fails with.
    """

    initial_interval: float = 0.5
    """Seconds to wait before the first retry. Default 0.5."""
    backoff_factor: float = 2.0
    """What the wait is multiplied by after each retry. Default 2.0."""
    max_interval: float = 128.0
    """The longest wait between two attempts, in seconds. Default 128.0."""
    max_attempts: int = 3
    """Attempts in all, the first included. Default 3."""
    jitter: bool = True
    """Add a random 0 to 1 second to each wait. Default True."""
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )
    """The exception classes to retry, or a predicate on the exception. Default:
    `default_retry_on` (connection errors, HTTP 5xx and other errors that are not
    programming errors)."""

    def retries(self, exc: Exception) -> bool:
        """Whether `exc` is one this policy retries."""
        on = self.retry_on
        if isinstance(on, type):
            return isinstance(exc, on)
        if isinstance(on, Sequence):
            return isinstance(exc, tuple(on))
        return bool(on(exc))

    def delay(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failed attempt (1 for the first)."""
        wait = min(self.max_interval, self.initial_interval * self.backoff_factor ** (failures - 1))
        return wait + random.uniform(0, 1) if self.jitter else wait


def _seconds(value: float | timedelta | None, *, field: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"{field} must be greater than 0")
    return seconds


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """How long one attempt of an async node, `@task` or `@entrypoint` may run (their
    `timeout=`; `add_node(timeout=)`, `set_node_defaults(timeout=)`).

    Past it, the attempt is cancelled and `NodeTimeoutError` is raised in it, which its
    `retry_policy` may retry (the default rule does). A number or `timedelta` given as
    `timeout=` is a `run_timeout`. Only async code can be timed out: a thread running sync code
    cannot be stopped, so `timeout=` on a sync function is refused when it is decorated, on
    a sync node when the graph is compiled, and a `Send(timeout=)` to a sync node when its task
    runs.
    """

    run_timeout: float | timedelta | None = None
    """Seconds an attempt may run in all, whatever it does."""
    idle_timeout: float | timedelta | None = None
    """Seconds an attempt may go without progress: a `runtime.heartbeat()`, and (with
    `refresh_on="auto"`) a chunk written to the stream writer, a `@task` call it makes, a
    `push_message()`, a langchain_core callback event of its code (a model's tokens), a node
    starting or a chunk streamed in a subgraph it runs."""
    refresh_on: Literal["auto", "heartbeat"] = "auto"
    """What counts as progress for `idle_timeout`: `"auto"` (the default) the signals above,
    `"heartbeat"` only `runtime.heartbeat()`."""

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """`timeout=` as a policy of seconds (None for no timeout).

        Raises:
            ValueError: a timeout of 0 or less, or an unknown `refresh_on`.
        """
        if value is None:
            return None
        if not isinstance(value, TimeoutPolicy):
            value = cls(run_timeout=value)
        if value.refresh_on not in ("auto", "heartbeat"):
            raise ValueError("refresh_on must be 'auto' or 'heartbeat'")
        run = _seconds(value.run_timeout, field="run_timeout")
        idle = _seconds(value.idle_timeout, field="idle_timeout")
        if run is None and idle is None:
            return None
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=value.refresh_on)


@dataclass(frozen=True, slots=True, repr=False)
class Send:
    """Run `node` once in the next superstep with `arg` as its input state (map-reduce fan-out).

    Return a list of them from a conditional edge's router (or as `Command(goto=...)`): each runs
    the node once, with its own `arg` in place of the graph's state; their writes are merged into
    the state through its reducers, like any node's.
    """

    node: str
    """The node to run."""
    arg: Any
    """Its input: passed to the node instead of the state. Must be storable in a checkpoint."""
    timeout: TimeoutPolicy | None = None
    """How long each attempt of this one task may run, in place of the node's own `timeout=`
    (None: the node's), as LangGraph's `Send(timeout=)`: seconds or a `timedelta` (a
    `run_timeout`), or a `TimeoutPolicy`, kept as a coerced policy. It is saved with the pending
    `Send`, so a resumed or recovered run times the task the same. The node must be async: a
    sync node sent one fails with a `ValueError` when the task runs (see docs/langgraph.md)."""

    def __init__(
        self, node: str, arg: Any, *, timeout: float | timedelta | TimeoutPolicy | None = None
    ) -> None:
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "arg", arg)
        object.__setattr__(self, "timeout", TimeoutPolicy.coerce(timeout))

    def __repr__(self) -> str:
        """LangGraph's: `Send(node='n', arg=1)`, with `timeout=...` only when one is given."""
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"


@dataclass(frozen=True, slots=True)
class Command(Generic[N]):
    """An instruction in place of an input (`resume`, `update`) or of a node's return (`update`, `goto`).

    `invoke(Command(resume=answer), config)` answers the one pending `interrupt()`;
    `Command(resume={interrupt_id: answer, ...})` answers several by id. Returned by a node of a
    subgraph with `graph=Command.PARENT`, its `update` and `goto` apply in the parent graph, as
    if the parent's node that runs the subgraph had returned them.
    """

    PARENT: ClassVar[str] = "__parent__"
    """`graph=Command.PARENT`: the command is for the graph that runs this one as a subgraph."""

    resume: Any = None
    """The value the pending `interrupt()` returns. A dict keyed by interrupt ids answers several."""
    update: Mapping[str, Any] | None = None
    """State update applied (through reducers) before the paused tasks run, or as a node's write."""
    goto: str | Send | Sequence[str | Send] = ()
    """From a node: the node(s) (or `Send`s) to run next, in addition to its edges."""
    graph: str | None = None
    """Which graph the command is for: None, the one the node is in; `Command.PARENT`, its parent."""
    _has_resume: bool = field(default=False, repr=False, compare=False)

    def __init__(
        self,
        *,
        resume: Any = ...,
        update: Mapping[str, Any] | None = None,
        goto: str | Send | Sequence[str | Send] = (),
        graph: str | None = None,
        _has_resume: bool | None = None,
    ) -> None:
        # `_has_resume` is given only by `dataclasses.replace`, which passes every field.
        if _has_resume is None:
            _has_resume = resume is not ...
        object.__setattr__(self, "resume", None if resume is ... else resume)
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "_has_resume", _has_resume)
        object.__setattr__(self, "update", update)
        object.__setattr__(self, "goto", goto)

    @property
    def has_resume(self) -> bool:
        """True when `resume=` was given (even `resume=None`)."""
        return self._has_resume

    def __repr__(self) -> str:
        """The fields given, in LangGraph's order and form: `Command(goto=Send(node='2',
        arg=3))`. LangGraph leaves out every falsy field; a `resume` given as `None`, `False`
        or `0` is shown here, since it answers a pause as much as any other value."""
        given = (
            ("graph", self.graph, self.graph is not None),
            ("update", self.update, self.update is not None),
            ("resume", self.resume, self._has_resume),
            ("goto", self.goto, bool(self.goto)),
        )
        return f"Command({', '.join(f'{k}={v!r}' for k, v, shown in given if shown)})"


@dataclass(frozen=True, slots=True)
class StateTask:
    """A task of the pending frontier, as `get_state` shows it.

    Its fields are LangGraph's `PregelTask`'s, in its order (so `PregelTask(id, name, path,
    error)` built positionally is one), then graphs' `done`, by keyword. Equality compares
    LangGraph's fields only: `done` follows from them (a finished task has its `result`)."""

    id: str
    name: str
    path: tuple[str | int | bool, ...]
    """Where the task comes from, as LangGraph gives it: `(PULL, node)` for a node an edge,
    a router or a `Command(goto=node)` triggered, `(PUSH, i, False)` for the frontier's i-th
    `Send` (counted from 0)."""
    error: str | None = None
    """The error it failed with on the last attempt, if it failed: the exception's `repr`, as
    LangGraph's (`ConnectionError('gateway down')`)."""
    interrupts: tuple[Interrupt, ...] = ()
    """Its unanswered pauses."""
    state: RunConfig | StateSnapshot | None = None
    """For a task that runs a subgraph: the config of the subgraph's checkpoints (its
    `checkpoint_ns`), or, from `get_state(config, subgraphs=True)`, the subgraph's own snapshot."""
    result: Any = None
    """For a task that finished in a step that did not complete (`done`): what it wrote, by
    state key (the value itself in a root-channel graph). None for the others: graphs keeps a
    completed step's writes in the next checkpoint's state, not task by task."""
    done: bool = field(default=False, kw_only=True, compare=False)
    """It finished in a step that did not complete (its writes are kept; it will not run again)."""


PregelTask = StateTask
"""LangGraph's name for a task of `StateSnapshot.tasks`."""


@dataclass(frozen=True, slots=True)
class StateSnapshot:
    """A read-only view of one checkpoint."""

    values: dict[str, Any]
    """The state, without internal channels (names starting with `__`)."""
    next: tuple[str, ...]
    """The nodes that run when the thread is resumed (a tuple, as LangGraph's); empty when the
    run finished.

    A node that finished in a step that did not complete is not listed: it will not run again
    (its task is in `tasks`, with `done=True`)."""
    config: RunConfig
    """Points at this checkpoint (includes `checkpoint_id`)."""
    metadata: dict[str, Any]
    """`step` (the superstep number within the thread) and `source` (`input`, `loop`, `update`)."""
    created_at: str | None
    """ISO-8601 time of the checkpoint."""
    parent_config: RunConfig | None
    """The checkpoint before this one."""
    tasks: tuple[StateTask, ...] = ()
    """The pending frontier, with interrupts and errors."""
    interrupts: tuple[Interrupt, ...] = ()
    """Every unanswered `Interrupt` of the frontier."""

    def _replace(self, **changes: Any) -> StateSnapshot:
        """A copy with the fields given replaced (LangGraph's `StateSnapshot` is a NamedTuple,
        and code built on it copies one this way)."""
        return replace(self, **changes)
