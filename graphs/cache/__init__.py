"""Node caching (LangGraph's `CachePolicy` and `langgraph.cache`): a node added with
`cache_policy=CachePolicy(...)` in a graph compiled with `cache=InMemoryCache()` runs once per
distinct input; later tasks with the same input take the stored return value instead.

`graphs.cache.sql.SQLCache` keeps the results in SQLite or PostgreSQL, shared by processes and
kept across restarts (`graphs.cache.sqlite.SqliteCache` is LangGraph's name for it); it needs
SQLAlchemy, so this module does not import it.

Cache only pure nodes: a cached node's side effects, `interrupt()` and `once()` calls do not
happen on a hit.

An entry's namespace is LangGraph's: `("__pregel_ns_writes", "module.qualname", node)`, the
node's function identity then its name (`"__dynamic__"` for an object or graph given as a
node), so graphs sharing one cache database do not take each other's results even where they
reuse a node name for another function; a `@task`'s is `("__pregel_ns_writes",
"module.qualname")`. Renaming or moving a cached function starts its cache afresh.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BaseCache", "CachePolicy", "InMemoryCache", "default_cache_key"]

Namespace = tuple[str, ...]
FullKey = tuple[Namespace, str]

CACHE_NS_WRITES = "__pregel_ns_writes"
"""The first part of each namespace graphs caches results under (LangGraph's)."""
DYNAMIC = "__dynamic__"
"""The identity of something without a module and qualified name (an object, a graph)."""


def identifier(obj: Any) -> str | None:
    """`"module.qualname"` of a function (or class), as LangGraph's cache namespaces name it;
    None for what has none (an instance, a compiled graph)."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if not isinstance(name, str) or not isinstance(module, str):
        return None
    return f"{module}.{name}"


def node_namespace(name: str, fn: Any) -> Namespace:
    """Where the node `name`, running `fn` (what `add_node` was given), caches its results."""
    return (CACHE_NS_WRITES, identifier(fn) or DYNAMIC, name)


def task_namespace(fn: Any) -> Namespace:
    """Where a `@task` of the function `fn` caches its results."""
    return (CACHE_NS_WRITES, identifier(fn) or DYNAMIC)


def whose(namespace: Namespace) -> str:
    """What caches under `namespace`, for a message: a node's name, a task's function, or the
    namespace's parts."""
    if namespace[:1] == (CACHE_NS_WRITES,) and len(namespace) in (2, 3):
        return namespace[-1]
    return ".".join(namespace) or "()"


def entry_key(key: Any) -> str:
    """The key an entry is stored under: a 128-bit hash (32 hex digits) of what `key_func`
    returned (its UTF-8 text, its bytes, or the `str` of anything else), as LangGraph hashes
    it (there with xxh3-128), so a key made of a whole input (a message list) is a short row
    key, and distinct inputs still get distinct keys."""
    raw = key if isinstance(key, bytes) else str(key).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def default_cache_key(*args: Any, **kwargs: Any) -> str:
    """A hash of the node's input (pickled; its `repr` if it cannot be pickled)."""
    try:
        raw = pickle.dumps((args, kwargs), protocol=5)
    except Exception:  # noqa: BLE001 -- an unpicklable input is keyed by its repr
        raw = repr((args, kwargs)).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


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
