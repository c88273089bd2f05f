"""Long-term memory shared across threads (LangGraph's `langgraph.store`): `BaseStore`, the
`Item` it holds, and `InMemoryStore`; `graphs.store.sql.SQLStore` keeps the same in SQLite or
PostgreSQL (it needs SQLAlchemy, so this module does not import it).

A store keeps JSON-like dicts under a namespace (a tuple of strings, such as `("users", id)`)
and a key. A graph compiled with `compile(store=...)` hands it to nodes that declare a `store`
parameter (`def node(state, *, store: BaseStore)`), to `get_store()` and to `Runtime.store`;
subgraphs use their parent's. Unlike checkpoints, what a node puts there is not undone when the
node is replayed: write it after an `interrupt()`, or through `once()`.

TTLs are LangGraph's: a store made with `ttl=TTLConfig(default_ttl=..., refresh_on_read=...)`
(minutes) or a `put(..., ttl=minutes)` gives an item a time to live, counted again from each
read that refreshes it (`get`/`search` with `refresh_ttl`, by default `refresh_on_read`, by
default True). An expired item is never returned, nor its namespace listed, even before
`sweep_ttl()` (or the thread of `start_ttl_sweeper()`, or the asyncio task of
`astart_ttl_sweeper()`) deletes it.

Semantic search is LangGraph's: a store made with `index=IndexConfig(embed=..., dims=...,
fields=[...])` embeds the texts at `fields` of each item when it is put (`put(..., index=False)`
or `index=[paths]` for one item), and `search(prefix, query="...")` ranks the items under the
prefix that match `filter` by the cosine similarity of their best vector to the query's,
highest first, with `SearchItem.score` set; the items without a vector come after them,
unscored. A store without an index ignores `query=` (as LangGraph's do): its results are those
of the same search without it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

from ._index import (
    AEmbeddingsFunc,
    EmbeddingsFunc,
    FieldVector,
    IndexConfig,
    _Index,
    ensure_embeddings,
    get_text_at_path,
    rank,
    tokenize_path,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "NOT_PROVIDED",
    "AEmbeddingsFunc",
    "BaseStore",
    "EmbeddingsFunc",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

logger = logging.getLogger(__name__)


class NotProvided:
    """The type of `NOT_PROVIDED`: `put(..., ttl=NOT_PROVIDED)` (the default) takes the
    store's `default_ttl`, where `ttl=None` means no expiry (LangGraph's sentinel)."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()


class TTLConfig(TypedDict, total=False):
    """A store's TTL settings (LangGraph's `TTLConfig`), given as `ttl=` when it is made."""

    refresh_on_read: bool
    """Whether `get` and `search` count an item's TTL again from the read when they are not
    told (`refresh_ttl=None`). Default True."""
    omit_expired: bool
    """LangGraph's; graphs' stores always omit expired items, so it changes nothing."""
    default_ttl: float | None
    """Minutes an item lives from its last put or refreshing read when `put` is not given a
    `ttl`. Default None: no expiry."""
    sweep_interval_minutes: int | None
    """Minutes between the sweeps of `start_ttl_sweeper()` (default 5)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One stored value, with where it is and when it was written."""

    value: dict[str, Any]
    key: str
    namespace: tuple[str, ...]
    created_at: datetime
    updated_at: datetime

    def dict(self) -> dict[str, Any]:
        """As LangGraph's `Item.dict()`: the fields, with ISO timestamps."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True, init=False)
class SearchItem(Item):
    """An `Item` found by `search`; `score` is its cosine similarity to a semantic `query=`
    (None without one, or for an item that has no vector).

    Made as LangGraph's is, `SearchItem(namespace, key, value, created_at, updated_at,
    score=None)`: positionally, the namespace comes first (where `Item`'s fields begin with
    `value`).
    """

    score: float | None

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float | None = None,
    ) -> None:
        for name, field in (
            ("value", value),
            ("key", key),
            ("namespace", tuple(namespace)),
            ("created_at", created_at),
            ("updated_at", updated_at),
            ("score", score),
        ):
            object.__setattr__(self, name, field)

    def dict(self) -> dict[str, Any]:
        return {**Item.dict(self), "score": self.score}


class GetOp(NamedTuple):
    """`batch`: read the item at `namespace` and `key` (its result: the `Item`, or None)."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True
    """Count the item's TTL again from this read (if it has one)."""


class SearchOp(NamedTuple):
    """`batch`: `search(namespace_prefix, filter=, limit=, offset=, query=)` (its result: the
    list of `SearchItem`)."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True
    """Count the TTL of each item returned again from this read (those that have one)."""


NamespacePath = tuple[str, ...]
"""A namespace in a `MatchCondition`, where `"*"` matches any one part."""

NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    """A `ListNamespacesOp` condition: the namespace begins (`"prefix"`) or ends (`"suffix"`)
    with `path`."""

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """`batch`: `list_namespaces` where every one of `match_conditions` holds (its result: the
    list of namespaces)."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """`batch`: store `value` at `namespace` and `key`, or delete it when `value` is None (its
    result: None)."""

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]  # LangGraph names it so
    ttl: float | None = None
    """Minutes the item lives from this put (and from each refreshing read); None: no expiry.
    Refused by a store whose `supports_ttl` is False."""


Op = GetOp | SearchOp | PutOp | ListNamespacesOp
Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


def _check_namespace(namespace: Any, what: str) -> tuple[str, ...]:
    if not isinstance(namespace, tuple) or not all(
        isinstance(p, str) and p and "." not in p for p in namespace
    ):
        raise ValueError(
            f"{what}: a namespace is a tuple of non-empty strings without '.', such as "
            f"('users', 'u1'), got {namespace!r}"
        )
    return namespace


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """`filter` holds for `value`: each key equals, or passes its `{"$gt": 3, ...}` operators."""
    for key, want in filter.items():
        have = value.get(key)
        if isinstance(want, Mapping) and want and all(k in _OPS for k in want):
            if not all(_OPS[op](have, arg) for op, arg in want.items()):
                return False
        elif isinstance(want, Mapping) and isinstance(have, Mapping):
            if not _matches(have, want):
                return False
        elif have != want:
            return False
    return True


class BaseStore:
    """What a store offers nodes (LangGraph's `BaseStore` methods, sync and async).

    A subclass implements the sync methods; the async ones call them (override them for a
    store whose I/O is async). A store that keeps TTLs sets `supports_ttl` and takes `ttl=`
    in `put` and `refresh_ttl=` in `get` and `search`.
    """

    supports_ttl: bool = False
    ttl_config: TTLConfig | None = None
    index_config: IndexConfig | None = None
    """The store's `index=` (LangGraph's attribute), None without semantic search."""
    embeddings: Embeddings | None = None
    """The `Embeddings` of its index (its `embed`, as `ensure_embeddings` made it)."""
    _index: _Index | None = None

    def get(self, namespace: tuple[str, ...], key: str, **_: Any) -> Item | None:
        raise NotImplementedError

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any = None,
        **_: Any,
    ) -> None:
        raise NotImplementedError

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        raise NotImplementedError

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        **_: Any,
    ) -> list[SearchItem]:
        raise NotImplementedError

    def list_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        raise NotImplementedError

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order and return one result for each (LangGraph's `batch`): reads see
        what the store held before the batch, and its puts are applied after them, the last
        put of a key winning, as in LangGraph.

        Raises:
            ValueError: an op is not a `GetOp`, `SearchOp`, `PutOp` or `ListNamespacesOp`; it
                is raised before anything is read or written.
        """
        ops = _checked_ops(ops, self)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self.get(op.namespace, op.key, **self._refresh_kw(op)))
            elif isinstance(op, SearchOp):
                results.append(self.search(op.namespace_prefix, **self._search_kw(op)))
            elif isinstance(op, ListNamespacesOp):
                results.append(_list_by_conditions(self.list_namespaces(limit=2**62), op))
            else:
                results.append(None)
        for op in _last_puts(ops):
            if op.value is None:
                self.delete(op.namespace, op.key)
            else:
                self.put(op.namespace, op.key, op.value, op.index, **self._ttl_kw(op))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async form of `batch` (it awaits the async methods)."""
        ops = _checked_ops(ops, self)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self.aget(op.namespace, op.key, **self._refresh_kw(op)))
            elif isinstance(op, SearchOp):
                results.append(await self.asearch(op.namespace_prefix, **self._search_kw(op)))
            elif isinstance(op, ListNamespacesOp):
                spaces = await self.alist_namespaces(limit=2**62)
                results.append(_list_by_conditions(spaces, op))
            else:
                results.append(None)
        for op in _last_puts(ops):
            if op.value is None:
                await self.adelete(op.namespace, op.key)
            else:
                await self.aput(op.namespace, op.key, op.value, op.index, **self._ttl_kw(op))
        return results

    # A store without TTLs is not given the TTL arguments (its methods may not take them).

    def _refresh_kw(self, op: GetOp | SearchOp) -> dict[str, Any]:
        return {"refresh_ttl": op.refresh_ttl} if self.supports_ttl else {}

    def _search_kw(self, op: SearchOp) -> dict[str, Any]:
        kw: dict[str, Any] = {"filter": op.filter, "limit": op.limit, "offset": op.offset}
        if op.query is not None:
            kw["query"] = op.query
        return {**kw, **self._refresh_kw(op)}

    def _ttl_kw(self, op: PutOp) -> dict[str, Any]:
        return {"ttl": op.ttl} if self.supports_ttl else {}

    async def aget(self, namespace: tuple[str, ...], key: str, **kw: Any) -> Item | None:
        return self.get(namespace, key, **kw)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any = None,
        **kw: Any,
    ) -> None:
        self.put(namespace, key, value, index, **kw)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        self.delete(namespace, key)

    async def asearch(self, namespace_prefix: tuple[str, ...], /, **kw: Any) -> list[SearchItem]:
        return self.search(namespace_prefix, **kw)

    async def alist_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        return self.list_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )


class _TTLStore(BaseStore):
    """A store that keeps TTLs: `ttl_config`, its reading of `put`'s `ttl` and of
    `refresh_ttl`, and the sweeper thread over its `sweep_ttl()`."""

    supports_ttl = True

    def __init__(self, ttl: TTLConfig | None, clock: Callable[[], float] | None) -> None:
        if ttl is not None:
            _check_ttl_config(ttl)
        self.ttl_config = ttl
        self._clock: Callable[[], float] = clock or time.time
        self._sweeper: threading.Thread | None = None
        self._sweep_stop = threading.Event()
        self._asweeper: asyncio.Task[None] | None = None
        self._asweep_stop: asyncio.Event | None = None

    def _ttl_minutes(self, ttl: float | None | NotProvided, where: str) -> float | None:
        """The minutes `put(..., ttl=ttl)` gives an item (None: no expiry)."""
        if isinstance(ttl, NotProvided):
            return (self.ttl_config or {}).get("default_ttl")
        if ttl is not None:
            _check_minutes(ttl, where)
        return ttl

    def _refreshes(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return (self.ttl_config or {}).get("refresh_on_read", True)

    def sweep_ttl(self) -> int:
        """Delete the expired items now; the number deleted."""
        raise NotImplementedError

    async def asweep_ttl(self) -> int:
        """Async form of `sweep_ttl`."""
        return self.sweep_ttl()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """Run `sweep_ttl()` every `sweep_interval_minutes` (default: the `TTLConfig`'s, or 5)
        on a daemon thread, until `stop_ttl_sweeper()` or the returned future is cancelled.

        Without a `TTLConfig` nothing is started (the future is already done), as in
        LangGraph; a sweeper already running is left running.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config:
            future.set_result(None)
            return future
        future.add_done_callback(lambda f: self._sweep_stop.set() if f.cancelled() else None)
        if self._sweeper is not None and self._sweeper.is_alive():
            return future
        minutes = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        _check_minutes(minutes, "start_ttl_sweeper")
        self._sweep_stop.clear()

        def sweep() -> None:
            while not self._sweep_stop.wait(float(minutes) * 60):
                try:
                    if swept := self.sweep_ttl():
                        logger.info("store TTL sweep deleted %d expired items", swept)
                except Exception:  # keeps sweeping: the database may be back next time
                    logger.exception("store TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(target=sweep, daemon=True, name="store-ttl-sweeper")
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread, waiting up to `timeout` seconds (None: until it stops);
        True if it stopped or was not running."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._sweep_stop.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> asyncio.Task[None]:
        """Run `asweep_ttl()` every `sweep_interval_minutes` (default: the `TTLConfig`'s, or 5)
        in an asyncio task of the running loop, until `astop_ttl_sweeper()` or the task is
        cancelled: the async form of `start_ttl_sweeper`, LangGraph's `start_ttl_sweeper` of
        its async stores (`AsyncSqliteStore`, `AsyncPostgresStore`).

        Without a `TTLConfig` nothing is started (the task returned does nothing), as in
        LangGraph; while a sweeper task is running, that task is returned.
        """
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._asweeper is not None and not self._asweeper.done():
            return self._asweeper
        minutes = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        _check_minutes(minutes, "astart_ttl_sweeper")
        stop = self._asweep_stop = asyncio.Event()

        async def sweep() -> None:
            while True:
                try:
                    await asyncio.wait_for(stop.wait(), float(minutes) * 60)
                    return
                except TimeoutError:
                    pass
                try:
                    if swept := await self.asweep_ttl():
                        logger.info("store TTL sweep deleted %d expired items", swept)
                except Exception:  # keeps sweeping: the database may be back next time
                    logger.exception("store TTL sweep failed")

        self._asweeper = asyncio.create_task(sweep(), name="store-ttl-sweeper")
        return self._asweeper

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task, waiting up to `timeout` seconds (None: until it stops); True
        if it stopped or was not running (LangGraph's async `stop_ttl_sweeper`)."""
        task = self._asweeper
        if task is None or task.done():
            self._asweeper = None
            return True
        if self._asweep_stop is not None:
            self._asweep_stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            return False
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        self._asweeper = None
        return True


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


def _init_index(store: BaseStore, index: IndexConfig | None) -> None:
    """Set a store's `index_config` and `embeddings` (LangGraph's attributes) from `index=`."""
    checked = _Index(index) if index is not None else None
    store._index = checked
    store.index_config = checked.config if checked is not None else None
    store.embeddings = checked.embeddings if checked is not None else None


def _check_minutes(minutes: Any, where: str) -> None:
    if (
        isinstance(minutes, bool)
        or not isinstance(minutes, int | float)
        or not math.isfinite(minutes)
        or minutes <= 0
    ):
        raise ValueError(f"{where}: a TTL is a positive number of minutes, got {minutes!r}")


def _check_ttl_config(config: Mapping[str, Any]) -> None:
    known = {"refresh_on_read", "omit_expired", "default_ttl", "sweep_interval_minutes"}
    if not isinstance(config, Mapping) or set(config) - known:
        raise ValueError(f"ttl: a TTLConfig takes {sorted(known)}, got {config!r}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        if config.get(name) is not None:
            _check_minutes(config[name], f"TTLConfig {name}")


def _pick_namespaces(
    spaces: Iterable[tuple[str, ...]],
    prefix: tuple[str, ...] | None,
    suffix: tuple[str, ...] | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[tuple[str, ...]]:
    """`list_namespaces` of a store holding items under `spaces`."""

    def fits(ns: tuple[str, ...], part: tuple[str, ...], at_end: bool) -> bool:
        if len(part) > len(ns):
            return False
        seen = ns[len(ns) - len(part) :] if at_end else ns[: len(part)]
        return all(p in ("*", s) for p, s in zip(part, seen, strict=True))

    out = {
        ns[:max_depth] if max_depth is not None else ns
        for ns in spaces
        if (prefix is None or fits(ns, prefix, False))
        and (suffix is None or fits(ns, suffix, True))
    }
    return sorted(out)[offset : offset + limit]


def _checked_ops(ops: Iterable[Op], store: BaseStore) -> list[Op]:
    ops = list(ops)
    for op in ops:
        if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
            raise ValueError(  # noqa: TRY004 (LangGraph raises ValueError)
                f"batch: an op is a GetOp, SearchOp, PutOp or ListNamespacesOp, got {op!r}"
            )
        if isinstance(op, PutOp) and op.ttl is not None:
            if not store.supports_ttl:
                raise NotImplementedError(
                    f"PutOp({op.namespace!r}, {op.key!r}, ttl={op.ttl!r}): TTL is not "
                    f"supported by {type(store).__name__}; give ttl=None, or use a store "
                    "that keeps TTLs (InMemoryStore, SQLStore)"
                )
            if op.value is not None:
                _check_minutes(op.ttl, f"PutOp({op.namespace!r}, {op.key!r})")
    return ops


def _last_puts(ops: list[Op]) -> list[PutOp]:
    """The batch's puts, one per (namespace, key): the last, in the order first seen."""
    last: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if isinstance(op, PutOp):
            last[(tuple(op.namespace), op.key)] = op
    return list(last.values())


def _list_by_conditions(
    spaces: Iterable[tuple[str, ...]], op: ListNamespacesOp
) -> list[tuple[str, ...]]:
    """`ListNamespacesOp`'s answer from every namespace the store holds: each condition's
    prefix or suffix (`"*"` any one part) holds, cut to `max_depth`, sorted, paged."""
    picked: Iterable[tuple[str, ...]] = spaces
    for cond in op.match_conditions or ():
        if cond.match_type not in ("prefix", "suffix"):
            raise ValueError(
                f"MatchCondition: match_type is 'prefix' or 'suffix', got {cond.match_type!r}"
            )
        at_end = cond.match_type == "suffix"
        picked = _pick_namespaces(
            picked,
            None if at_end else tuple(cond.path),
            tuple(cond.path) if at_end else None,
            None,
            2**62,
            0,
        )
    return _pick_namespaces(picked, None, None, op.max_depth, op.limit, op.offset)
