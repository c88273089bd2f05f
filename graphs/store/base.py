"""The store's contract under LangGraph's module path (`langgraph.store.base`): `BaseStore`,
the `Item` and `SearchItem` it holds, `TTLConfig`, the `batch` ops (`GetOp`, `SearchOp`,
`PutOp`, `ListNamespacesOp`) and their results, and the embedding helpers of semantic search
(`IndexConfig`, `ensure_embeddings`, ... from `_index.py`).

Also the checks and the namespace and filter matching every store shares (internal: `_`).
The stores themselves are `memory.py`'s `InMemoryStore` and `sql.py`'s `SQLStore`; the TTL
handling they share is `_ttl.py`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

from ._index import (
    AEmbeddingsFunc,
    EmbeddingsFunc,
    IndexConfig,
    _Index,
    ensure_embeddings,
    get_text_at_path,
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
    "IndexConfig",
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
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]


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
