"""`InMemoryStore` under LangGraph's module path (`langgraph.store.memory`)."""

from . import InMemoryStore

__all__ = ["InMemoryStore"]
