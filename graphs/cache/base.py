"""The cache's contract under LangGraph's module path (`langgraph.cache.base`): `BaseCache`,
the `FullKey` and `Namespace` it is keyed by, and `CachePolicy`, how a node's results are
cached."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._types import CachePolicy
from ._keys import FullKey, Namespace

__all__ = ["BaseCache", "CachePolicy", "FullKey", "Namespace"]


class BaseCache:
    """What a cache offers the graph (LangGraph's `BaseCache` methods)."""

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        raise NotImplementedError

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        raise NotImplementedError

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        raise NotImplementedError

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)
