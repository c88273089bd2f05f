"""Where the node cache keeps an entry (internal): the namespaces of nodes and tasks
(LangGraph's), and the keys entries are stored under."""

from __future__ import annotations

import hashlib
from typing import Any

from .._internal._cache import default_cache_key

__all__ = [
    "CACHE_NS_WRITES",
    "DYNAMIC",
    "FullKey",
    "Namespace",
    "default_cache_key",
    "entry_key",
    "identifier",
    "node_namespace",
    "task_namespace",
    "whose",
]

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
