"""The default key of a node's cache entry (LangGraph's `langgraph._internal._cache`): below
`graphs.types`, whose `CachePolicy` names it as its `key_func`."""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

__all__ = ["default_cache_key"]


def default_cache_key(*args: Any, **kwargs: Any) -> str:
    """A hash of the node's input (pickled; its `repr` if it cannot be pickled)."""
    try:
        raw = pickle.dumps((args, kwargs), protocol=5)
    except Exception:  # noqa: BLE001 -- an unpicklable input is keyed by its repr
        raw = repr((args, kwargs)).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()
