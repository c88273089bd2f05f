"""`graphs.types`: LangGraph's `langgraph.types`, the value types node code and callers use
(`Command`, `Send`, `Interrupt`, `RetryPolicy`, `CachePolicy`, `StateSnapshot`, ...) with
`interrupt`.

The types themselves are `graphs._types`, at the bottom of the runtime, where its own modules
import them from; `interrupt` is defined with the other functions node code calls
(`graphs._context`), above them. This module, which holds both, sits on top.
"""

from ._context import interrupt
from ._types import (
    END,
    OVERWRITE_KEY,
    PULL,
    PUSH,
    START,
    CachePolicy,
    Command,
    Configurable,
    Dialect,
    Durability,
    Interrupt,
    Overwrite,
    PregelTask,
    RetryPolicy,
    RunConfig,
    Send,
    StateSnapshot,
    StateTask,
    StateUpdate,
    StreamMode,
    StreamWriter,
    TimeoutPolicy,
    default_retry_on,
)

__all__ = [
    "END",
    "OVERWRITE_KEY",
    "PULL",
    "PUSH",
    "START",
    "CachePolicy",
    "Command",
    "Configurable",
    "Dialect",
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
    "default_retry_on",
    "interrupt",
]
