"""`BaseCache` under LangGraph's module path (`langgraph.cache.base`)."""

from . import BaseCache

__all__ = ["BaseCache"]
