"""`SQLStore`: the store (`graphs.store`) kept in SQLite or PostgreSQL, so it outlives the process.

```python
store = SQLStore("sqlite:///signoff.db")    # or postgresql://user@host/db
store.setup()                               # create or upgrade its table (idempotent)
graph = builder.compile(checkpointer=saver, store=store)
```

It behaves as `InMemoryStore` (same methods, same results, same order: items in the order they
were first put), on the engines of `graphs.checkpoint.sql.SQLSaver`: the same URLs and drivers,
SQLite in WAL mode with `BEGIN IMMEDIATE` writes and this process's write gate, PostgreSQL
pooled and pinged, a connection dropped mid-use retried once. Give it a saver
(`SQLStore(saver)`) to share that saver's pool; it then leaves closing to the saver's owner.

Its table (`store_items`) is migrated by Alembic as the checkpoint tables are, with a version
table (`store_schema_version`) and a migration lock of its own: `setup()` before first use,
from any number of processes at once. Values are stored as graphs' tagged JSON (nothing is
pickled), so a value must be what a checkpoint could hold. Every call is one transaction,
committed before it returns (a read that refreshes TTLs writes them in a second one). TTLs
(`ttl=TTLConfig(...)`, `put(..., ttl=minutes)`) run on the wall clock, which every process
shares: an expired item is never returned, and `sweep_ttl()` (or `start_ttl_sweeper()`)
deletes the expired rows. `search(filter=...)` reads the items under the prefix in order
and tests the filter in Python, as `InMemoryStore` does; without a filter, `limit`/`offset`
are the database's.

Semantic search (`index=IndexConfig(...)`) is `InMemoryStore`'s: a put embeds the item's texts
(once, before its transaction) and keeps the vectors in `store_vectors` (migration `s0003`),
replacing the item's earlier ones; a delete and a TTL sweep remove them. `search(query=...)`
embeds the query, reads the live items under the prefix that match `filter` and their vectors,
and ranks them in Python by cosine similarity. Every process that opens the database with an
index of the same embedding finds what the others put; a store made without `index=` puts items
without vectors, and ignores `query=`.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.engine import URL

from ..checkpoint import serde
from ..checkpoint._sql.alembic import AlembicSchema
from ..checkpoint._sql.engine import _Tx
from ..checkpoint._sql.statements import _DIALECTS
from ..checkpoint._tableset import SQLTableSet
from ..checkpoint.sql import SQLSaver
from ._index import FieldVector, rank
from ._tables import SCHEMA_REVISION, VERSION_TABLE
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

__all__ = ["SQLStore"]

SCHEMA = AlembicSchema(
    migrations=Path(__file__).parent / "migrations",
    version_table=VERSION_TABLE,
    head=SCHEMA_REVISION,
    lock_name="signoff.store.migrations",
)
"""The store table's migrations, version table and lock."""

_COLUMNS = "namespace, key, value, created_at, updated_at, ttl_minutes"
# The namespaces under a prefix: itself, and the range of those that go on with "." (parts
# hold no "."; "/" is the character after it, and both databases compare bytes).
_UNDER = "(namespace = :ns OR (namespace >= :lo AND namespace < :hi))"
_LIVE = "(expires_at IS NULL OR expires_at > :now)"  # not expired at :now
_SQL = {
    "get": f"""SELECT {_COLUMNS} FROM store_items
        WHERE namespace = :ns AND key = :key AND {_LIVE}""",
    "drop_expired": """DELETE FROM store_items
        WHERE namespace = :ns AND key = :key AND expires_at <= :now""",
    "put": """
        INSERT INTO store_items
            (namespace, key, value, created_at, updated_at, expires_at, ttl_minutes)
        VALUES (:ns, :key, :value, :now, :now, :expires, :minutes)
        ON CONFLICT (namespace, key) DO UPDATE
        SET value = excluded.value, updated_at = excluded.updated_at,
            expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes""",
    "refresh": """UPDATE store_items SET expires_at = :now + ttl_minutes * 60
        WHERE namespace = :ns AND key = :key AND ttl_minutes IS NOT NULL AND expires_at > :now""",
    "delete": "DELETE FROM store_items WHERE namespace = :ns AND key = :key",
    "sweep": "DELETE FROM store_items WHERE expires_at <= :now",
    "search_all": f"SELECT {_COLUMNS} FROM store_items WHERE {_LIVE} ORDER BY seq",
    "search_under": f"""SELECT {_COLUMNS} FROM store_items WHERE {_UNDER} AND {_LIVE}
        ORDER BY seq""",
    "page_all": f"""SELECT {_COLUMNS} FROM store_items WHERE {_LIVE} ORDER BY seq
        LIMIT :limit OFFSET :offset""",
    "page_under": f"""
        SELECT {_COLUMNS} FROM store_items WHERE {_UNDER} AND {_LIVE} ORDER BY seq
        LIMIT :limit OFFSET :offset""",
    "spaces_all": f"SELECT DISTINCT namespace FROM store_items WHERE {_LIVE}",
    "spaces_under": f"SELECT DISTINCT namespace FROM store_items WHERE {_UNDER} AND {_LIVE}",
    # the vectors of an item go with it: replaced by a put, removed by a delete and a sweep
    "vectors_delete": "DELETE FROM store_vectors WHERE namespace = :ns AND key = :key",
    "vectors_put": """INSERT INTO store_vectors (namespace, key, field, text_sha256, embedding)
        VALUES (:ns, :key, :field, :sha, :embedding)""",
    "vectors_sweep": """DELETE FROM store_vectors WHERE EXISTS (
        SELECT 1 FROM store_items i WHERE i.namespace = store_vectors.namespace
        AND i.key = store_vectors.key AND i.expires_at <= :now)""",
    "vectors_all": "SELECT namespace, key, embedding FROM store_vectors",
    "vectors_under": f"SELECT namespace, key, embedding FROM store_vectors WHERE {_UNDER}",
}
_RENDERED = {name: {k: d.render(v) for k, v in _SQL.items()} for name, d in _DIALECTS.items()}

_BATCH = 200  # rows fetched at a time while a filtered search looks for its page


def _joined(namespace: Any) -> str | None:
    """The namespace as stored, or None if no item can be under it (not a tuple of strings
    without ".")."""
    try:
        parts = tuple(namespace)
    except TypeError:
        return None
    if not all(isinstance(p, str) and p and "." not in p for p in parts):
        return None
    return ".".join(parts)


def _under(joined: str) -> dict[str, str]:
    return {"ns": joined, "lo": joined + ".", "hi": joined + "/"}


def _split(joined: str) -> tuple[str, ...]:
    return tuple(joined.split(".")) if joined else ()


def _pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}d", *vector)


def _unpack(data: Any) -> list[float]:
    data = bytes(data)
    return list(struct.unpack(f"<{len(data) // 8}d", data))


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _item(row: Any) -> Item:
    namespace, key, value, created, updated, _ = row
    return Item(serde.loads_record(value), key, _split(namespace), _time(created), _time(updated))


def _found(row: Any, score: float | None = None) -> SearchItem:
    namespace, key, value, created, updated, _ = row
    return SearchItem(
        _split(namespace), key, serde.loads_record(value), _time(created), _time(updated), score
    )


_Timed = list[dict[str, Any]]
"""The items read that have a TTL, as `refresh` parameters (`ns`, `key`)."""


# ---- each operation, as a function of one transaction -----------------------------------


def _get_tx(
    tx: _Tx, sql: dict[str, str], ns: str, key: str, now: float
) -> tuple[Item | None, _Timed]:
    row = tx.one(sql["get"], {"ns": ns, "key": key, "now": now})
    if row is None:
        return None, []
    return _item(row), [] if row[5] is None else [{"ns": ns, "key": key}]


def _put_tx(
    tx: _Tx,
    sql: dict[str, str],
    ns: str,
    key: str,
    value: str,
    minutes: float | None,
    now: float,
    vectors: list[FieldVector],
) -> None:
    at = {"ns": ns, "key": key, "now": now}
    tx.run(sql["drop_expired"], at)  # an expired item is gone: this put makes a new one
    expires = None if minutes is None else now + minutes * 60
    tx.run(sql["put"], {**at, "value": value, "expires": expires, "minutes": minutes})
    tx.run(sql["vectors_delete"], {"ns": ns, "key": key})
    if vectors:
        rows = [
            {"ns": ns, "key": key, "field": field, "sha": sha, "embedding": _pack(vector)}
            for field, sha, vector in vectors
        ]
        tx.many(sql["vectors_put"], rows)


def _refresh_tx(tx: _Tx, sql: dict[str, str], timed: _Timed, now: float) -> None:
    tx.many(sql["refresh"], [{**at, "now": now} for at in timed])


def _delete_tx(tx: _Tx, sql: dict[str, str], ns: str, key: str) -> None:
    tx.run(sql["vectors_delete"], {"ns": ns, "key": key})
    tx.run(sql["delete"], {"ns": ns, "key": key})


def _sweep_tx(tx: _Tx, sql: dict[str, str], now: float) -> int:
    tx.run(sql["vectors_sweep"], {"now": now})
    return tx.count(sql["sweep"], {"now": now})


def _search_tx(
    tx: _Tx,
    sql: dict[str, str],
    prefix: str,
    filter: Mapping[str, Any] | None,
    limit: int,
    offset: int,
    now: float,
) -> tuple[list[SearchItem], _Timed]:
    where = "all" if prefix == "" else "under"
    params: dict[str, Any] = {"now": now} if prefix == "" else {**_under(prefix), "now": now}
    if not filter:
        rows = tx.all(sql[f"page_{where}"], {**params, "limit": limit, "offset": offset})
    else:
        matching: list[Any] = []
        cur = tx.run(sql[f"search_{where}"], params)
        while len(matching) < offset + limit and (batch := cur.fetchmany(_BATCH)):
            matching.extend(r for r in batch if _matches(serde.loads_record(r[2]), filter))
        rows = matching[offset : offset + limit]
    timed = [{"ns": r[0], "key": r[1]} for r in rows if r[5] is not None]
    return [_found(row) for row in rows], timed


def _query_tx(
    tx: _Tx,
    sql: dict[str, str],
    prefix: str,
    filter: Mapping[str, Any] | None,
    query: list[float],
    limit: int,
    offset: int,
    now: float,
) -> tuple[list[SearchItem], _Timed]:
    """A search ranked by `query` (a vector): every live item under the prefix that matches
    `filter`, with its vectors, ranked in Python."""
    where = "all" if prefix == "" else "under"
    under = {} if prefix == "" else _under(prefix)
    rows = [
        r
        for r in tx.all(sql[f"search_{where}"], {**under, "now": now})
        if not filter or _matches(serde.loads_record(r[2]), filter)
    ]
    vectors: dict[tuple[str, str], list[list[float]]] = {}
    for ns, key, data in tx.all(sql[f"vectors_{where}"], under):
        vectors.setdefault((ns, key), []).append(_unpack(data))
    page = rank([(r, vectors.get((r[0], r[1]), [])) for r in rows], query, limit, offset)
    timed = [{"ns": r[0], "key": r[1]} for r, _ in page if r[5] is not None]
    return [_found(r, score) for r, score in page], timed


def _spaces_tx(
    tx: _Tx, sql: dict[str, str], prefix: str | None, now: float
) -> set[tuple[str, ...]]:
    if prefix is None:
        rows = tx.all(sql["spaces_all"], {"now": now})
    else:
        rows = tx.all(sql["spaces_under"], {**_under(prefix), "now": now})
    return {_split(row[0]) for row in rows}


# ---- the store --------------------------------------------------------------------------


class SQLStore(SQLTableSet, _TTLStore):
    """`InMemoryStore`'s methods on a SQLite or PostgreSQL database; see the module docstring.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db`, or a `SQLSaver` whose
            engines (and pool) the store then shares.
        index: LangGraph's `IndexConfig` (`embed`, `dims`, `fields`): semantic search; without
            one, `put`'s `index` and `search`'s `query` are ignored, as in LangGraph.
        ttl: LangGraph's `TTLConfig` (minutes).
        clock: seconds since the epoch, read for timestamps and TTLs (default `time.time`;
            every process on the database should read the same clock).
        **options: for a URL, passed to `SQLSaver` (`busy_timeout`, `sqlite_synchronous`,
            `pool_size`, `max_overflow`, `ping_after`, engine options).

    Raises:
        SchemaVersionError: (from any call before `setup()`) the database has no store table,
            or one of another revision.
    """

    SCHEMA = SCHEMA
    WHAT = "store table"
    STATEMENTS = _RENDERED

    def __init__(
        self,
        url: str | URL | SQLSaver,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] | None = None,
        **options: Any,
    ) -> None:
        _init_index(self, index)
        SQLTableSet.__init__(self, url, **options)
        _TTLStore.__init__(self, ttl, clock)

    def close(self) -> None:
        """Stop the TTL sweepers (the thread, and tell the asyncio task to stop), and close
        the pooled connections (not a shared saver's: its owner closes those)."""
        self.stop_ttl_sweeper()
        task, stop = self._asweeper, self._asweep_stop
        if task is not None and not task.done() and stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop is closed: the task ran out
                task.get_loop().call_soon_threadsafe(stop.set)
        super().close()

    async def aclose(self) -> None:
        self.stop_ttl_sweeper()
        await self.astop_ttl_sweeper()
        await super().aclose()

    # ---- the store's methods ------------------------------------------------------------

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> Item | None:
        """The item at `namespace` and `key`, or None (also once it has expired)."""
        ns = _joined(namespace)
        if ns is None:
            return None
        now = self._clock()
        item, timed = self._run(_get_tx, ns, key, now, read=True)
        if timed and self._refreshes(refresh_ttl):
            self._run(_refresh_tx, timed, now)
        return item

    async def aget(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> Item | None:
        ns = _joined(namespace)
        if ns is None:
            return None
        now = self._clock()
        item, timed = await self._arun(_get_tx, ns, key, now, read=True)
        if timed and self._refreshes(refresh_ttl):
            await self._arun(_refresh_tx, timed, now)
        return item

    def _put_args(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any,
        ttl: float | None | NotProvided,
    ) -> tuple[tuple[str, str, str, float | None], list[tuple[str, str]]]:
        """The row's parameters (but the time), and the texts to embed."""
        _check_namespace(namespace, "put")
        if not isinstance(value, Mapping):
            raise TypeError(f"put({namespace!r}, {key!r}): the value must be a dict, got {value!r}")
        minutes = self._ttl_minutes(ttl, f"put({namespace!r}, {key!r})")
        where = f"put({namespace!r}, {key!r})"
        texts = self._index.texts(value, index, where) if self._index is not None else []
        text = serde.dumps_record(dict(value))
        return (".".join(namespace), key, text, minutes), texts

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
        `fields`; False: none). The texts are embedded before the transaction, once.
        `ttl`: minutes it lives from now (and from each refreshing read); not given: the
        store's `default_ttl`; None: no expiry.
        """
        if value is None:
            _check_namespace(namespace, "put")
            self.delete(namespace, key)
            return
        row, texts = self._put_args(namespace, key, value, index, ttl)
        vectors = self._index.vectors(texts) if self._index is not None else []
        self._run(_put_tx, *row, self._clock(), vectors)

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
            await self.adelete(namespace, key)
            return
        row, texts = self._put_args(namespace, key, value, index, ttl)
        vectors = await self._index.avectors(texts) if self._index is not None else []
        await self._arun(_put_tx, *row, self._clock(), vectors)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _joined(namespace)
        if ns is not None:
            self._run(_delete_tx, ns, key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _joined(namespace)
        if ns is not None:
            await self._arun(_delete_tx, ns, key)

    def sweep_ttl(self) -> int:
        """Delete the expired items now; the number deleted."""
        return self._run(_sweep_tx, self._clock())

    async def asweep_ttl(self) -> int:
        return await self._arun(_sweep_tx, self._clock())

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
        from `offset` (not those that have expired): in the order they were first put, or
        with a `query` (and the store's `index`) by similarity, scored."""
        prefix = _joined(namespace_prefix)
        if prefix is None:
            return []
        vector = self._index.query(query) if self._index is not None and query else None
        now = self._clock()
        if vector is None:
            found, timed = self._run(_search_tx, prefix, filter, limit, offset, now, read=True)
        else:
            args = (prefix, filter, vector, limit, offset, now)
            found, timed = self._run(_query_tx, *args, read=True)
        if timed and self._refreshes(refresh_ttl):
            self._run(_refresh_tx, timed, now)
        return found

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
        prefix = _joined(namespace_prefix)
        if prefix is None:
            return []
        vector = await self._index.aquery(query) if self._index is not None and query else None
        now = self._clock()
        if vector is None:
            args: tuple[Any, ...] = (prefix, filter, limit, offset, now)
            found, timed = await self._arun(_search_tx, *args, read=True)
        else:
            args = (prefix, filter, vector, limit, offset, now)
            found, timed = await self._arun(_query_tx, *args, read=True)
        if timed and self._refreshes(refresh_ttl):
            await self._arun(_refresh_tx, timed, now)
        return found

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
        spaces = self._run(_spaces_tx, _fixed_prefix(prefix), self._clock(), read=True)
        return _pick_namespaces(spaces, prefix, suffix, max_depth, limit, offset)

    async def alist_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        spaces = await self._arun(_spaces_tx, _fixed_prefix(prefix), self._clock(), read=True)
        return _pick_namespaces(spaces, prefix, suffix, max_depth, limit, offset)


def _fixed_prefix(prefix: tuple[str, ...] | None) -> str | None:
    """The parts of a `list_namespaces` prefix before its first `"*"`, as stored (the database
    narrows to those; the rest is matched in Python). None: every namespace."""
    if not prefix:
        return None
    fixed = tuple(prefix[: prefix.index("*")] if "*" in prefix else prefix)
    return _joined(fixed) if fixed else None
