"""What node code can ask about the run it is in: `get_config()` (LangGraph's `langgraph.config`)."""

from __future__ import annotations

from ._context import _task
from .types import RunConfig

__all__ = ["get_config"]


def get_config() -> RunConfig:
    """The config of the running invocation (`configurable.thread_id`, ...), as the node sees it.

    Raises:
        RuntimeError: called outside a running node.
    """
    return _task("get_config").run.config
