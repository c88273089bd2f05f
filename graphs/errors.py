"""Every error the runtime raises, in one tree.

```
GraphError                        root of everything below
├── GraphSetupError               the graph was built wrong (compile-time), also a ValueError
│   └── InvalidCheckpointerError  compile(checkpointer=) given no saver, also a TypeError
├── InvalidUpdateError            a node or caller wrote a key or value the state cannot take
│   ├── EmptyInputError           a run was given an input with nothing in it (`Command()`)
│   └── MultipleSubgraphsError    one task ran two checkpointer=True subgraphs (one namespace)
├── EmptyChannelError             a channel read before anything was written to it, also a LookupError
├── GraphRecursionError           more supersteps than `recursion_limit`, also a RecursionError
├── GraphInterrupt                the run paused; carries `.interrupts` and `.config`
│   └── NodeInterrupt             raised by node code to pause with a value
├── CheckpointerRequiredError     pausing or resuming without a checkpointer
├── ResumeError                   a resume that matches nothing (unknown thread, not paused, bad id)
│   └── AmbiguousResumeError      a bare answer while several interrupts wait, also a RuntimeError
├── ThreadBusyError               another run holds the thread (one run per thread)
│   ├── CheckpointConflictError   the thread's head moved under us; history never forks
│   └── ThreadLockLostError       the run's hold on the thread ended under it, and another run took it
├── CheckpointFormatError         a stored checkpoint the code can no longer read
│   └── SchemaVersionError        the database's checkpoint schema is not the one this code knows
├── SerializationError            a value the checkpoint format cannot store
├── SideEffectUnknownError        a `once()` effect started but its outcome was never recorded
│   └── SideEffectUnrecordedError an effect ran, but the database stayed down for its record
├── NodeTimeoutError              an async node, task or entrypoint ran past its `timeout=`
├── RecordedNodeError             a node's error read back from a checkpoint (for an error handler)
└── ParentCommand                 carries a subgraph's `Command(graph=Command.PARENT)` to its parent
```

An exception raised by node code is not wrapped: it propagates with its own type, and a note
naming the node and the thread is attached (`BaseException.add_note`).

`ErrorCode` is LangGraph's enum of the troubleshooting codes its messages name (not an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._types import Command, Interrupt, RunConfig

__all__ = [
    "AmbiguousResumeError",
    "CheckpointConflictError",
    "CheckpointFormatError",
    "CheckpointerRequiredError",
    "EmptyChannelError",
    "EmptyInputError",
    "ErrorCode",
    "GraphError",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphSetupError",
    "InvalidCheckpointerError",
    "InvalidUpdateError",
    "MultipleSubgraphsError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "ParentCommand",
    "RecordedNodeError",
    "ResumeError",
    "SchemaVersionError",
    "SerializationError",
    "SideEffectUnknownError",
    "SideEffectUnrecordedError",
    "ThreadBusyError",
    "ThreadLockLostError",
]


class GraphError(Exception):
    """Root of every error raised by `graphs`."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class GraphSetupError(GraphError, ValueError):
    """The graph is built wrong: unknown node, unreachable node, no entry point, bad schema."""


class InvalidCheckpointerError(GraphSetupError, TypeError):
    """`compile(checkpointer=)` was given something that is not a saver (nor None, True or
    False). Also a `TypeError`, the type LangGraph raises for it."""


class InvalidUpdateError(GraphError, ValueError):
    """A node (or `update_state`, or the input) produced an update the state cannot accept."""


class EmptyInputError(InvalidUpdateError):
    """A run was given an input that holds nothing to do: a `Command()` with no `resume`,
    `update` or `goto` (LangGraph's error of the same name, for the same input). Also an
    `InvalidUpdateError`, what graphs raised for it before."""


class EmptyChannelError(GraphError, LookupError):
    """A channel was read before anything was written to it (LangGraph's meaning).

    graphs keeps state in its runs and checkpoints, not in channel objects that can be read
    on their own (`graphs.channels` holds markers only), and a key nothing was written to reads
    as its empty value or is absent, so the runtime itself does not raise it; it is here for
    code written against LangGraph that raises or catches it."""


class ErrorCode(Enum):
    """LangGraph's troubleshooting codes: the page a kind of error is explained on
    (`https://docs.langchain.com/oss/python/langgraph/errors/<value>`)."""

    GRAPH_RECURSION_LIMIT = "GRAPH_RECURSION_LIMIT"
    """More supersteps than the recursion limit (`GraphRecursionError`)."""
    INVALID_CONCURRENT_GRAPH_UPDATE = "INVALID_CONCURRENT_GRAPH_UPDATE"
    """Two writes to a key without a reducer in one step (`InvalidUpdateError`)."""
    INVALID_GRAPH_NODE_RETURN_VALUE = "INVALID_GRAPH_NODE_RETURN_VALUE"
    """A node returned something that is not an update (`InvalidUpdateError`)."""
    MULTIPLE_SUBGRAPHS = "MULTIPLE_SUBGRAPHS"
    """One task ran two subgraphs that keep state under one namespace
    (`MultipleSubgraphsError`)."""
    INVALID_CHAT_HISTORY = "INVALID_CHAT_HISTORY"
    """A chat history whose tool calls have no tool messages answering them."""


class MultipleSubgraphsError(InvalidUpdateError):
    """A node ran a second `compile(checkpointer=True)` subgraph in one task.

    Such a subgraph keeps its state under its node's name (no task id), so two in one task
    would share it. (Default subgraphs may run several times in one task: each run has a
    namespace of its own, numbered in call order.) Run the other in a node of its own, or
    compile it without `checkpointer=True`.
    """


class GraphRecursionError(GraphError, RecursionError):
    """The run needed more supersteps than `recursion_limit` allows.

    Attributes:
        limit: the limit in force for this run.
        current: how many supersteps this run had completed when it stopped.
    """

    def __init__(self, limit: int, current: int, thread_id: str | None = None) -> None:
        where = f" on thread {thread_id!r}" if thread_id else ""
        super().__init__(
            f"Recursion limit of {limit} supersteps reached{where} after {current} steps "
            "without hitting END. Raise it with compile(recursion_limit=...) or "
            'config["recursion_limit"], or check the graph for a loop that never exits.'
        )
        self.limit = limit
        self.current = current
        self.thread_id = thread_id


class GraphInterrupt(GraphError):
    """The run paused. Resume it with `invoke(Command(resume=...), config)` or `invoke(None, config)`.

    Attributes:
        interrupts: the pending `Interrupt`s (empty for a static `interrupt_before/after` pause).
        config: the config of the saved checkpoint; it names the thread to resume.
    """

    def __init__(
        self,
        interrupts: Sequence[Interrupt] | Any = (),
        config: RunConfig | None = None,
    ) -> None:
        if isinstance(interrupts, (list, tuple)):
            self.interrupts: tuple[Any, ...] = tuple(interrupts)
        else:
            self.interrupts = (interrupts,)
        self.config = config
        super().__init__(self.interrupts)

    def __str__(self) -> str:
        thread = (self.config or {}).get("configurable", {}).get("thread_id")
        where = f"thread {thread!r}" if thread else "the run"
        if not self.interrupts:
            return f"{where} paused at a static interrupt point"
        return f"{where} paused: " + ", ".join(repr(i) for i in self.interrupts)


class NodeInterrupt(GraphInterrupt):
    """Raise inside a node to pause the run with `value`; `invoke(None, config)` re-runs the node."""

    def __init__(self, value: Any = None) -> None:
        self.value = value
        super().__init__(())

    def __str__(self) -> str:
        return f"NodeInterrupt({self.value!r})"


class CheckpointerRequiredError(GraphError, RuntimeError):
    """A pause or resume was asked of a graph compiled without a checkpointer."""


class ResumeError(GraphError, ValueError):
    """A resume that cannot be honoured: no such thread, nothing paused, or an unknown interrupt id.

    Attributes:
        thread_id: the thread the resume was aimed at.
    """

    def __init__(self, message: str, thread_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class AmbiguousResumeError(ResumeError, RuntimeError):
    """A bare `Command(resume=answer)` on a thread paused at several interrupts: which one it
    answers is not known (a `RuntimeError` too, as LangGraph raises)."""


class ThreadBusyError(GraphError, RuntimeError):
    """Another run (in this process or another) is running this thread right now.

    Attributes:
        thread_id: the contested thread.
    """

    def __init__(self, message: str, thread_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class CheckpointConflictError(ThreadBusyError):
    """The thread's latest checkpoint is not the one this run started from.

    Another run wrote to the thread in between. Nothing was written; reload and try again.
    """


class ThreadLockLostError(ThreadBusyError):
    """The run's hold on its thread ended while it ran, and it could not be taken back safely.

    On PostgreSQL a run holds its thread by a lock of its database session; a server restart,
    a failover or an ended session lets go of it while the run goes on. Before it writes again,
    the run takes the lock back; when another run holds the thread by then, or wrote to it in
    between, this run stops here and writes nothing more (the outcome of a `once()` effect that
    ran is still recorded). The thread is not lost: the other run carries it on, or it can be
    resumed as after a crash.
    """


class CheckpointFormatError(GraphError, ValueError):
    """A stored checkpoint cannot be read by this code.

    Attributes:
        thread_id: the thread it belongs to (when known).
        channel: the state key whose value failed (when known).
    """

    def __init__(
        self, message: str, *, thread_id: str | None = None, channel: str | None = None
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.channel = channel


class SchemaVersionError(CheckpointFormatError):
    """The database's checkpoint schema is not the revision this code reads and writes.

    Either the database was migrated by newer code (upgrade signoff; never downgrade the
    database under a running fleet), or the tables were never created (call `setup()`).

    Attributes:
        db_revision: the revision recorded in the database (None: no checkpoint tables).
        code_revision: the newest revision this code knows.
    """

    def __init__(self, message: str, *, db_revision: str | None, code_revision: str) -> None:
        super().__init__(message)
        self.db_revision = db_revision
        self.code_revision = code_revision


class SerializationError(GraphError, TypeError):
    """A value that the checkpoint format cannot store (it would not survive a restart)."""


class SideEffectUnknownError(GraphError, RuntimeError):
    """A `once()` effect was started on an earlier attempt, but its outcome was never recorded.

    The attempt that started it stopped after the effect began and before its result was
    recorded (its process died, or the database stayed down for the record). On PostgreSQL,
    where the run that started it may still be going on elsewhere after losing its thread lock,
    this attempt first waited for that run's outcome (`waited`), and none came. The effect may
    or may not have happened. Check the outside system; if it did not happen, call
    `once(..., retry_unknown=True)` to run it again on purpose (an effect that raised is not
    this error: its failure is recorded and the next attempt simply runs it again).

    Attributes:
        thread_id: the thread.
        key: the `once()` key.
        waited: seconds this attempt waited for another run's outcome (None: it did not wait).
    """

    def __init__(self, thread_id: str | None, key: str, *, waited: float | None = None) -> None:
        if waited is None:
            how = (
                "was started on an earlier attempt and its outcome was never recorded (that "
                "attempt crashed, or the database stayed down for the record)"
            )
        else:
            how = (
                "was started by an earlier attempt or another replica's run, and no outcome "
                f"was recorded in the {waited:.1f}s waited for it (that run stopped, or lost "
                "the database)"
            )
        super().__init__(
            f"Side effect {key!r} on thread {thread_id!r} {how}; check whether it happened, "
            "then rerun with once(..., retry_unknown=True) if it did not."
        )
        self.thread_id = thread_id
        self.key = key
        self.waited = waited


class SideEffectUnrecordedError(SideEffectUnknownError):
    """A `once()` effect ran in this attempt, but its outcome could not be recorded: the
    database stayed unavailable (down, restarting, unreachable, locked) for as long as
    `once(..., record_wait=)` allows (30 s by default), the record being tried again meanwhile.

    The effect is not run again. The thread holds only its start, so once the database is back
    its next attempt raises `SideEffectUnknownError` for the key: a person has to settle it.
    After an effect that returned, do not rerun it with `retry_unknown=True`: it happened.

    Attributes:
        thread_id: the thread.
        key: the `once()` key.
        outcome: `"done"` (the effect returned `result`) or `"failed"` (it raised).
        result: what the effect returned (None when it raised), kept nowhere else.
        waited: seconds the record was tried for.
    """

    def __init__(
        self,
        thread_id: str | None,
        key: str,
        *,
        outcome: str,
        result: Any,
        waited: float,
        error: BaseException,
    ) -> None:
        said = (str(error).strip().splitlines() or [""])[0]
        cause = f"{type(error).__name__}: {said}" if said else type(error).__name__
        if outcome == "done":
            what = (
                "ran, but its result could not be recorded: the database was unavailable for "
                f"{waited:.0f}s ({cause}). It happened and is not run again: do not rerun it "
                "with once(..., retry_unknown=True). Once the database is back, the thread's "
                "next attempt raises SideEffectUnknownError for it; settle it by hand (its "
                "result is this error's `result`)."
            )
        else:
            what = (
                "raised, but that could not be recorded: the database was unavailable for "
                f"{waited:.0f}s ({cause}). Once the database is back, the thread's next attempt "
                "raises SideEffectUnknownError for it: check whether it happened, then rerun "
                "with once(..., retry_unknown=True) if it did not."
            )
        GraphError.__init__(self, f"Side effect {key!r} on thread {thread_id!r} {what}")
        self.thread_id = thread_id
        self.key = key
        self.outcome = outcome
        self.result = result
        self.waited = waited


class ParentCommand(GraphError):
    """A subgraph's node returned `Command(graph=Command.PARENT, ...)`.

    Raised out of the subgraph's run and caught by the parent's task that runs the subgraph,
    which then returns the command (without `graph`) as its own result. Node code that calls a
    subgraph should let it pass. From a graph that is not running as a subgraph it reaches
    the caller of `invoke` (as in LangGraph), after the step is saved as failed.

    Attributes:
        command: the command, for the parent graph.
    """

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(command)
        self.command = command


class NodeTimeoutError(GraphError):
    """An attempt of an async node, `@task` or `@entrypoint` ran past its `timeout=`
    (`TimeoutPolicy`), and was cancelled. Not a `TimeoutError` (an `OSError`, which the default
    retry rule does not retry): a `retry_policy` retries it by default, as LangGraph's.

    Attributes:
        node: the task's or entrypoint's name.
        kind: which timeout ran out, `"run"` or `"idle"`.
        timeout: its seconds.
        run_timeout: the policy's `run_timeout` (None if none).
        idle_timeout: the policy's `idle_timeout` (None if none).
        elapsed: seconds the attempt had run.
    """

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: Literal["idle", "run"],
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        if kind == "idle":
            if idle_timeout is None:
                raise ValueError("idle_timeout is required when kind='idle'")
            timeout = idle_timeout
            message = (
                f"Node '{node}' exceeded its idle timeout of {idle_timeout:.3f}s without making "
                f"progress (elapsed: {elapsed:.3f}s)."
            )
        elif kind == "run":
            if run_timeout is None:
                raise ValueError("run_timeout is required when kind='run'")
            timeout = run_timeout
            message = (
                f"Node '{node}' exceeded its run timeout of {run_timeout:.3f}s "
                f"(elapsed: {elapsed:.3f}s)."
            )
        else:
            raise ValueError("kind must be 'idle' or 'run'")
        super().__init__(message)
        self.node = node
        self.elapsed = elapsed
        self.kind = kind
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout


class RecordedNodeError(GraphError):
    """A node's error as a checkpoint recorded it: its type's name and its message.

    An `add_node(..., error_handler=)` handler that runs again on resume (it failed, or paused,
    the first time) gets this in `NodeError.error`, since the original exception is not
    stored (nothing is pickled). `str(err)` is the original message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name
        """The original exception's class name (`"ValueError"`)."""


@dataclass(frozen=True, slots=True)
class NodeError:  # not an exception, so not in __all__ (which lists the error tree)
    """What an error handler is told of the failure (`add_node(..., error_handler=)`).

    A handler declares a parameter named `error` to be handed it, as LangGraph's:
    `def handler(state, error: NodeError) -> dict | Command`."""

    node: str
    """The node that failed."""
    error: BaseException
    """What it raised (after its `RetryPolicy`'s attempts); a `RecordedNodeError` when the
    handler runs again on a resume, read back from the checkpoint."""


def short(value: Any) -> str:
    """`value` as an error message quotes it: its `repr`, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
