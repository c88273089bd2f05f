"""The cache's contract under LangGraph's module path (`langgraph.cache.base`): `BaseCache`,
the `FullKey` and `Namespace` it is keyed by, and `CachePolicy`, how a node's results are
cached."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._keys import FullKey, Namespace, default_cache_key

__all__ = ["BaseCache", "CachePolicy", "FullKey", "Namespace"]


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """How a node's results are cached (`add_node(..., cache_policy=CachePolicy(ttl=60))`)."""

    key_func: Callable[..., str | bytes] = default_cache_key
    """Makes the cache key from the node's input (default: a hash of it); an entry is stored
    under a fixed-size hash of what it returns (`entry_key`), however long."""
    ttl: int | None = None
    """Seconds an entry lives; None: until the cache is cleared."""


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
