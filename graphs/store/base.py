"""`BaseStore`, `Item` and the `batch` ops under LangGraph's module path (`langgraph.store.base`)."""

from . import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespaceMatchType,
    NamespacePath,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

__all__ = [
    "BaseStore",
    "GetOp",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
]
