"""`BaseStore`, `Item`, `TTLConfig` and the `batch` ops under LangGraph's module path
(`langgraph.store.base`)."""

from . import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespaceMatchType,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
]
