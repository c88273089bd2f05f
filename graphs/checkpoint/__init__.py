"""Checkpoint savers: the contract, the in-memory saver, and (imported lazily) `SQLSaver`."""

from typing import TYPE_CHECKING, Any

from .base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata, CheckpointTuple, PendingWrite
from .memory import InMemorySaver, MemorySaver

if TYPE_CHECKING:
    from .sql import SQLSaver

__all__ = [
    "BaseCheckpointSaver",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "InMemorySaver",
    "MemorySaver",
    "PendingWrite",
    "SQLSaver",
]


def __getattr__(name: str) -> Any:
    # SQLAlchemy is imported only by those who use the SQL saver.
    if name == "SQLSaver":
        from .sql import SQLSaver

        return SQLSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
