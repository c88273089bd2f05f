"""`BaseStore` and `Item` under LangGraph's module path (`langgraph.store.base`)."""

from . import BaseStore, Item, SearchItem

__all__ = ["BaseStore", "Item", "SearchItem"]
