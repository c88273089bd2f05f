"""What node code can ask about the run it is in (LangGraph's `langgraph.config`):
`get_config()` and `get_stream_writer()`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._context import _task
from ._types import RunConfig, StreamWriter

if TYPE_CHECKING:
    from .store import BaseStore

__all__ = ["get_config", "get_store", "get_stream_writer"]


def get_config() -> RunConfig:
    """The config of the running invocation (`configurable.thread_id`, ...), as the node sees it.

    Raises:
        RuntimeError: called outside a running node.
    """
    return _task("get_config").run.config


def get_store() -> BaseStore | None:
    """The running graph's store (`compile(store=)`), or None if it was given none.

    Raises:
        RuntimeError: called outside a running node.
    """
    return _task("get_store").run.store  # type: ignore[no-any-return]


def get_stream_writer() -> StreamWriter:
    """A function that hands a chunk to the caller's `custom` stream mode, as the node runs.

    `writer({"progress": 0.5})` in node code reaches `stream(..., stream_mode="custom")` at
    once; when the caller does not stream `custom`, it does nothing. A node can declare a
    `writer` parameter instead: `def node(state, writer: StreamWriter)`.

    Raises:
        RuntimeError: called outside a running node.
    """
    return _task("get_stream_writer").writer()  # type: ignore[no-any-return]
