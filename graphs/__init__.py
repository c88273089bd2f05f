"""graphs: a durable state-graph runtime with interrupts and checkpointers.

Importing `graphs` loads neither SQLAlchemy nor anything of Slack; `SQLSaver` is imported on
first use.
"""

from typing import TYPE_CHECKING, Any

from ._context import interrupt
from ._once import aonce, once
from ._types import (
    END,
    START,
    Command,
    Interrupt,
    RetryPolicy,
    RunConfig,
    Send,
    StateSnapshot,
    StateTask,
)
from .builder import StateGraph
from .checkpoint import BaseCheckpointSaver, CheckpointTuple, InMemorySaver, MemorySaver
from .compiled import CompiledGraph
from .errors import (
    AmbiguousResumeError,
    CheckpointConflictError,
    CheckpointerRequiredError,
    CheckpointFormatError,
    EmptyChannelError,
    EmptyInputError,
    GraphError,
    GraphInterrupt,
    GraphRecursionError,
    GraphSetupError,
    InvalidCheckpointerError,
    InvalidUpdateError,
    MultipleSubgraphsError,
    NodeInterrupt,
    NodeTimeoutError,
    ParentCommand,
    RecordedNodeError,
    ResumeError,
    SchemaVersionError,
    SerializationError,
    SideEffectUnknownError,
    SideEffectUnrecordedError,
    ThreadBusyError,
    ThreadLockLostError,
)

if TYPE_CHECKING:
    from .checkpoint.sql import SQLSaver

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "AmbiguousResumeError",
    "BaseCheckpointSaver",
    "CheckpointConflictError",
    "CheckpointFormatError",
    "CheckpointTuple",
    "CheckpointerRequiredError",
    "Command",
    "CompiledGraph",
    "EmptyChannelError",
    "EmptyInputError",
    "GraphError",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphSetupError",
    "InMemorySaver",
    "Interrupt",
    "InvalidCheckpointerError",
    "InvalidUpdateError",
    "MemorySaver",
    "MultipleSubgraphsError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "ParentCommand",
    "RecordedNodeError",
    "ResumeError",
    "RetryPolicy",
    "RunConfig",
    "SQLSaver",
    "SchemaVersionError",
    "Send",
    "SerializationError",
    "SideEffectUnknownError",
    "SideEffectUnrecordedError",
    "StateGraph",
    "StateSnapshot",
    "StateTask",
    "ThreadBusyError",
    "ThreadLockLostError",
    "aonce",
    "interrupt",
    "once",
]


def __getattr__(name: str) -> Any:
    if name == "SQLSaver":
        from .checkpoint.sql import SQLSaver

        return SQLSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
