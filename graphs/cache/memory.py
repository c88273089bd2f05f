"""`InMemoryCache` under LangGraph's module path (`langgraph.cache.memory`): the cache in this
process's memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ._keys import FullKey, Namespace
from .base import BaseCache

__all__ = ["InMemoryCache"]


class InMemoryCache(BaseCache):
    """A cache in this process's memory; safe to share between threads."""

    def __init__(self) -> None:
        self._entries: dict[FullKey, tuple[Any, float | None]] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        now = time.monotonic()
        out: dict[FullKey, Any] = {}
        with self._lock:
            for key in keys:
                found = self._entries.get(key)
                if found is None:
                    continue
                value, expires = found
                if expires is not None and expires <= now:
                    del self._entries[key]
                else:
                    out[key] = value
        return out

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.monotonic()
        with self._lock:
            for key, (value, ttl) in pairs.items():
                self._entries[key] = (value, None if ttl is None else now + ttl)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._entries.clear()
                return
            drop = set(namespaces)
            for key in [k for k in self._entries if k[0] in drop]:
                del self._entries[key]
