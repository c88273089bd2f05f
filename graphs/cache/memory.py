"""`InMemoryCache` under LangGraph's module path (`langgraph.cache.memory`)."""

from . import InMemoryCache

__all__ = ["InMemoryCache"]
