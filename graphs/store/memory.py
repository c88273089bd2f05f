"""`InMemoryStore` under LangGraph's module path (`langgraph.store.memory`): the store in this
process's memory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from ._index import FieldVector, rank
from ._ttl import _TTLStore
from .base import (
    NOT_PROVIDED,
    IndexConfig,
    Item,
    NotProvided,
    SearchItem,
    TTLConfig,
    _check_namespace,
    _init_index,
    _matches,
    _pick_namespaces,
)

__all__ = ["InMemoryStore"]


class InMemoryStore(_TTLStore):
    """A store in this process's memory (tests, and state that may be lost on a restart).

    Safe to share between threads. `search` filters by namespace prefix and by `filter` on the
    value's keys, in the order items were first put; with an `index`, `search(query=...)`
    ranks them by similarity (see the module docstring).

    Args:
        index: LangGraph's `IndexConfig` (`embed`, `dims`, `fields`): semantic search; without
            one, `put`'s `index` and `search`'s `query` are ignored, as in LangGraph.
        ttl: LangGraph's `TTLConfig` (minutes); without one, an item expires only if `put`
            is given a `ttl`.
        clock: seconds since the epoch, read for timestamps and TTLs (default `time.time`).
    """

    def __init__(
        self,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(ttl, clock)
        _init_index(self, index)
        self._items: dict[tuple[tuple[str, ...], str], Item] = {}
        # (namespace, key) -> (expires at, seconds since the epoch; minutes to live), for the
        # items that have a TTL
        self._expiry: dict[tuple[tuple[str, ...], str], tuple[float, float]] = {}
        # (namespace, key) -> the item's vectors, for the items embedded when put
        self._vectors: dict[tuple[tuple[str, ...], str], list[FieldVector]] = {}
        self._lock = threading.Lock()

    def _live(self, at: tuple[tuple[str, ...], str], now: float) -> bool:
        ttl = self._expiry.get(at)
        return ttl is None or ttl[0] > now

    def _read(self, at: tuple[tuple[str, ...], str], now: float, refresh: bool) -> None:
        """(Under the lock) count a live item's TTL again from `now` if `refresh`."""
        ttl = self._expiry.get(at)
        if refresh and ttl is not None:
            self._expiry[at] = (now + ttl[1] * 60, ttl[1])

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> Item | None:
        """The item at `namespace` and `key`, or None (also once it has expired)."""
        at = (tuple(namespace), key)
        refresh = self._refreshes(refresh_ttl)
        with self._lock:
            now = self._clock()
            item = self._items.get(at)
            if item is None or not self._live(at, now):
                return None
            self._read(at, now, refresh)
            return item

    def _texts(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any
    ) -> list[tuple[str, str]]:
        _check_namespace(namespace, "put")
        if not isinstance(value, Mapping):
            raise TypeError(f"put({namespace!r}, {key!r}): the value must be a dict, got {value!r}")
        if self._index is None:
            return []
        return self._index.texts(value, index, f"put({namespace!r}, {key!r})")

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
        **_: Any,
    ) -> None:
        """Store `value` (a dict) under `namespace` and `key`; `value=None` deletes it.

        `index`: with the store's `index`, the paths embedded for this item (None: the index's
        `fields`; False: none, so a query finds it only after those that have vectors).
        `ttl`: minutes it lives from now (and from each refreshing read); not given: the
        store's `default_ttl`; None: no expiry.
        """
        if value is None:
            _check_namespace(namespace, "put")
            self.delete(namespace, key)
            return
        texts = self._texts(namespace, key, value, index)
        minutes = self._ttl_minutes(ttl, f"put({namespace!r}, {key!r})")
        vectors = self._index.vectors(texts) if self._index is not None else []
        self._write(namespace, key, value, minutes, vectors)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
        **_: Any,
    ) -> None:
        """Async form of `put`: the index's async embedding (`aembed_documents`)."""
        if value is None:
            _check_namespace(namespace, "put")
            self.delete(namespace, key)
            return
        texts = self._texts(namespace, key, value, index)
        minutes = self._ttl_minutes(ttl, f"put({namespace!r}, {key!r})")
        vectors = await self._index.avectors(texts) if self._index is not None else []
        self._write(namespace, key, value, minutes, vectors)

    def _write(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        minutes: float | None,
        vectors: list[FieldVector],
    ) -> None:
        at = (namespace, key)
        with self._lock:
            seconds = self._clock()
            now = datetime.fromtimestamp(seconds, UTC)
            old = self._items.get(at)
            if old is not None and not self._live(at, seconds):
                del self._items[at]  # expired: this put makes a new item, last in order
                old = None
            created = now if old is None else old.created_at
            self._items[at] = Item(dict(value), key, namespace, created, now)
            if minutes is None:
                self._expiry.pop(at, None)
            else:
                self._expiry[at] = (seconds + minutes * 60, minutes)
            if vectors:
                self._vectors[at] = vectors
            else:
                self._vectors.pop(at, None)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        at = (tuple(namespace), key)
        with self._lock:
            self._items.pop(at, None)
            self._expiry.pop(at, None)
            self._vectors.pop(at, None)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> list[SearchItem]:
        """The items under `namespace_prefix` whose value matches `filter`, `limit` of them
        from `offset` (not those that have expired): in the order first put, or with a `query`
        (and the store's `index`) by similarity, scored (see the module docstring)."""
        vector = self._index.query(query) if self._index is not None and query else None
        return self._search(namespace_prefix, vector, filter, limit, offset, refresh_ttl)

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> list[SearchItem]:
        """Async form of `search`: the index's async embedding (`aembed_query`)."""
        vector = await self._index.aquery(query) if self._index is not None and query else None
        return self._search(namespace_prefix, vector, filter, limit, offset, refresh_ttl)

    def _search(
        self,
        namespace_prefix: tuple[str, ...],
        vector: list[float] | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
    ) -> list[SearchItem]:
        n = len(namespace_prefix)
        refresh = self._refreshes(refresh_ttl)
        with self._lock:
            now = self._clock()
            items = [
                i
                for at, i in self._items.items()
                if self._live(at, now)
                and i.namespace[:n] == tuple(namespace_prefix)
                and _matches(i.value, filter or {})
            ]
            if vector is None:
                page: list[tuple[Item, float | None]] = [
                    (i, None) for i in items[offset : offset + limit]
                ]
            else:
                candidates = [
                    (i, [v for _, _, v in self._vectors.get((i.namespace, i.key), ())])
                    for i in items
                ]
                page = rank(candidates, vector, limit, offset)
            for i, _ in page:
                self._read((i.namespace, i.key), now, refresh)
        return [
            SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at, score)
            for i, score in page
        ]

    def list_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces that hold items (cut to `max_depth` parts), sorted; `"*"` in
        `prefix` or `suffix` matches any one part."""
        with self._lock:
            now = self._clock()
            spaces = {at[0] for at in self._items if self._live(at, now)}
        return _pick_namespaces(spaces, prefix, suffix, max_depth, limit, offset)

    def sweep_ttl(self) -> int:
        """Delete the expired items now; the number deleted."""
        with self._lock:
            now = self._clock()
            gone = [at for at, (expires, _) in self._expiry.items() if expires <= now]
            for at in gone:
                del self._items[at], self._expiry[at]
                self._vectors.pop(at, None)
        return len(gone)
