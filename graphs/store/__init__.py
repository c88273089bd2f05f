"""Long-term memory shared across threads (LangGraph's `langgraph.store`): `BaseStore`, the
`Item` it holds, and `InMemoryStore`; `graphs.store.sql.SQLStore` keeps the same in SQLite or
PostgreSQL (it needs SQLAlchemy, so this module does not import it).

A store keeps JSON-like dicts under a namespace (a tuple of strings, such as `("users", id)`)
and a key. A graph compiled with `compile(store=...)` hands it to nodes that declare a `store`
parameter (`def node(state, *, store: BaseStore)`), to `get_store()` and to `Runtime.store`;
subgraphs use their parent's. Unlike checkpoints, what a node puts there is not undone when the
node is replayed: write it after an `interrupt()`, or through `once()`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

__all__ = [
    "BaseStore",
    "GetOp",
    "InMemoryStore",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
]


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


@dataclass(frozen=True, slots=True)
class SearchItem(Item):
    """An `Item` found by `search`; `score` is for a semantic query, which graphs has not."""

    score: float | None = None

    def dict(self) -> dict[str, Any]:
        return {**Item.dict(self), "score": self.score}


class GetOp(NamedTuple):
    """`batch`: read the item at `namespace` and `key` (its result: the `Item`, or None)."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True
    """LangGraph's; graphs' stores keep no TTLs yet, so it changes nothing."""


class SearchOp(NamedTuple):
    """`batch`: `search(namespace_prefix, filter=, limit=, offset=, query=)` (its result: the
    list of `SearchItem`)."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True
    """LangGraph's; graphs' stores keep no TTLs yet, so it changes nothing."""


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
    """LangGraph's minutes to live; graphs' stores refuse one (no TTLs yet)."""


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
    store whose I/O is async).
    """

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
        ops = _checked_ops(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self.get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(self.search(op.namespace_prefix, **_search_kw(op)))
            elif isinstance(op, ListNamespacesOp):
                results.append(_list_by_conditions(self.list_namespaces(limit=2**62), op))
            else:
                results.append(None)
        for op in _last_puts(ops):
            _refuse_ttl(op)
            if op.value is None:
                self.delete(op.namespace, op.key)
            else:
                self.put(op.namespace, op.key, op.value, op.index)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async form of `batch` (it awaits the async methods)."""
        ops = _checked_ops(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self.aget(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(await self.asearch(op.namespace_prefix, **_search_kw(op)))
            elif isinstance(op, ListNamespacesOp):
                spaces = await self.alist_namespaces(limit=2**62)
                results.append(_list_by_conditions(spaces, op))
            else:
                results.append(None)
        for op in _last_puts(ops):
            _refuse_ttl(op)
            if op.value is None:
                await self.adelete(op.namespace, op.key)
            else:
                await self.aput(op.namespace, op.key, op.value, op.index)
        return results

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


class InMemoryStore(BaseStore):
    """A store in this process's memory (tests, and state that may be lost on a restart).

    Safe to share between threads. `search` filters by namespace prefix and by `filter` on the
    value's keys, in the order items were first put; a semantic `query=` (LangGraph's `index=`
    embeddings) is refused.
    """

    def __init__(self) -> None:
        self._items: dict[tuple[tuple[str, ...], str], Item] = {}
        self._lock = threading.Lock()

    def get(self, namespace: tuple[str, ...], key: str, **_: Any) -> Item | None:
        return self._items.get((tuple(namespace), key))

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Any = None,
        **_: Any,
    ) -> None:
        """Store `value` (a dict) under `namespace` and `key`; `value=None` deletes it."""
        _check_namespace(namespace, "put")
        if value is None:
            self.delete(namespace, key)
            return
        if not isinstance(value, Mapping):
            raise TypeError(f"put({namespace!r}, {key!r}): the value must be a dict, got {value!r}")
        now = datetime.now(UTC)
        with self._lock:
            old = self._items.get((namespace, key))
            created = now if old is None else old.created_at
            self._items[(namespace, key)] = Item(dict(value), key, namespace, created, now)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        with self._lock:
            self._items.pop((tuple(namespace), key), None)

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
        """The items under `namespace_prefix` whose value matches `filter`, `limit` of them
        from `offset`."""
        if query is not None:
            raise NotImplementedError(
                "InMemoryStore has no semantic search (LangGraph's index= embeddings): search "
                "with filter= and the namespace prefix instead"
            )
        n = len(namespace_prefix)
        with self._lock:
            items = list(self._items.values())
        found = [
            SearchItem(i.value, i.key, i.namespace, i.created_at, i.updated_at)
            for i in items
            if i.namespace[:n] == tuple(namespace_prefix) and _matches(i.value, filter or {})
        ]
        return found[offset : offset + limit]

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
            spaces = {ns for ns, _ in self._items}
        return _pick_namespaces(spaces, prefix, suffix, max_depth, limit, offset)


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


def _checked_ops(ops: Iterable[Op]) -> list[Op]:
    ops = list(ops)
    for op in ops:
        if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
            raise ValueError(  # noqa: TRY004 (LangGraph raises ValueError)
                f"batch: an op is a GetOp, SearchOp, PutOp or ListNamespacesOp, got {op!r}"
            )
    return ops


def _search_kw(op: SearchOp) -> dict[str, Any]:
    kw: dict[str, Any] = {"filter": op.filter, "limit": op.limit, "offset": op.offset}
    if op.query is not None:
        kw["query"] = op.query
    return kw


def _last_puts(ops: list[Op]) -> list[PutOp]:
    """The batch's puts, one per (namespace, key): the last, in the order first seen."""
    last: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if isinstance(op, PutOp):
            last[(tuple(op.namespace), op.key)] = op
    return list(last.values())


def _refuse_ttl(op: PutOp) -> None:
    if op.ttl is not None:
        raise NotImplementedError(
            f"PutOp({op.namespace!r}, {op.key!r}, ttl={op.ttl!r}): graphs' stores keep no "
            "TTLs yet; give ttl=None and delete the item when it should go"
        )


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
