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
committed before it returns. `search(filter=...)` reads the items under the prefix in order
and tests the filter in Python, as `InMemoryStore` does; without a filter, `limit`/`offset`
are the database's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..checkpoint import serde
from ..checkpoint._sql.alembic import AlembicSchema
from ..checkpoint._sql.engine import _Tx
from ..checkpoint._sql.statements import _DIALECTS
from ..checkpoint._sql.tableset import SQLTableSet
from . import BaseStore, Item, SearchItem, _check_namespace, _matches, _pick_namespaces
from ._tables import SCHEMA_REVISION, VERSION_TABLE

__all__ = ["SQLStore"]

SCHEMA = AlembicSchema(
    migrations=Path(__file__).parent / "migrations",
    version_table=VERSION_TABLE,
    head=SCHEMA_REVISION,
    lock_name="signoff.store.migrations",
)
"""The store table's migrations, version table and lock."""

_COLUMNS = "namespace, key, value, created_at, updated_at"
# The namespaces under a prefix: itself, and the range of those that go on with "." (parts
# hold no "."; "/" is the character after it, and both databases compare bytes).
_UNDER = "(namespace = :ns OR (namespace >= :lo AND namespace < :hi))"
_SQL = {
    "get": f"SELECT {_COLUMNS} FROM store_items WHERE namespace = :ns AND key = :key",
    "put": """
        INSERT INTO store_items (namespace, key, value, created_at, updated_at)
        VALUES (:ns, :key, :value, :now, :now)
        ON CONFLICT (namespace, key) DO UPDATE
        SET value = excluded.value, updated_at = excluded.updated_at""",
    "delete": "DELETE FROM store_items WHERE namespace = :ns AND key = :key",
    "search_all": f"SELECT {_COLUMNS} FROM store_items ORDER BY seq",
    "search_under": f"SELECT {_COLUMNS} FROM store_items WHERE {_UNDER} ORDER BY seq",
    "page_all": f"SELECT {_COLUMNS} FROM store_items ORDER BY seq LIMIT :limit OFFSET :offset",
    "page_under": f"""
        SELECT {_COLUMNS} FROM store_items WHERE {_UNDER} ORDER BY seq
        LIMIT :limit OFFSET :offset""",
    "spaces_all": "SELECT DISTINCT namespace FROM store_items",
    "spaces_under": f"SELECT DISTINCT namespace FROM store_items WHERE {_UNDER}",
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


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _item(row: Any) -> Item:
    namespace, key, value, created, updated = row
    return Item(serde.loads_record(value), key, _split(namespace), _time(created), _time(updated))


def _found(row: Any) -> SearchItem:
    namespace, key, value, created, updated = row
    return SearchItem(
        serde.loads_record(value), key, _split(namespace), _time(created), _time(updated)
    )


# ---- each operation, as a function of one transaction -----------------------------------


def _get_tx(tx: _Tx, sql: dict[str, str], ns: str, key: str) -> Item | None:
    row = tx.one(sql["get"], {"ns": ns, "key": key})
    return None if row is None else _item(row)


def _put_tx(tx: _Tx, sql: dict[str, str], ns: str, key: str, value: str, now: float) -> None:
    tx.run(sql["put"], {"ns": ns, "key": key, "value": value, "now": now})


def _delete_tx(tx: _Tx, sql: dict[str, str], ns: str, key: str) -> None:
    tx.run(sql["delete"], {"ns": ns, "key": key})


def _search_tx(
    tx: _Tx,
    sql: dict[str, str],
    prefix: str,
    filter: Mapping[str, Any] | None,
    limit: int,
    offset: int,
) -> list[SearchItem]:
    where = "all" if prefix == "" else "under"
    params: dict[str, Any] = {} if prefix == "" else _under(prefix)
    if not filter:
        rows = tx.all(sql[f"page_{where}"], {**params, "limit": limit, "offset": offset})
        return [_found(row) for row in rows]
    found: list[SearchItem] = []
    cur = tx.run(sql[f"search_{where}"], params)
    while len(found) < offset + limit and (rows := cur.fetchmany(_BATCH)):
        for row in rows:
            item = _found(row)
            if _matches(item.value, filter):
                found.append(item)
    return found[offset : offset + limit]


def _spaces_tx(tx: _Tx, sql: dict[str, str], prefix: str | None) -> set[tuple[str, ...]]:
    if prefix is None:
        rows = tx.all(sql["spaces_all"])
    else:
        rows = tx.all(sql["spaces_under"], _under(prefix))
    return {_split(row[0]) for row in rows}


# ---- the store --------------------------------------------------------------------------


class SQLStore(SQLTableSet, BaseStore):
    """`InMemoryStore`'s methods on a SQLite or PostgreSQL database; see the module docstring.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db`, or a `SQLSaver` whose
            engines (and pool) the store then shares.
        **options: for a URL, passed to `SQLSaver` (`busy_timeout`, `sqlite_synchronous`,
            `pool_size`, `max_overflow`, `ping_after`, engine options).

    Raises:
        SchemaVersionError: (from any call before `setup()`) the database has no store table,
            or one of another revision.
    """

    SCHEMA = SCHEMA
    WHAT = "store table"
    STATEMENTS = _RENDERED

    # ---- the store's methods ------------------------------------------------------------

    def get(self, namespace: tuple[str, ...], key: str, **_: Any) -> Item | None:
        ns = _joined(namespace)
        return None if ns is None else self._run(_get_tx, ns, key, read=True)

    async def aget(self, namespace: tuple[str, ...], key: str, **_: Any) -> Item | None:
        ns = _joined(namespace)
        return None if ns is None else await self._arun(_get_tx, ns, key, read=True)

    def _put_args(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]
    ) -> tuple[str, str, str, float]:
        _check_namespace(namespace, "put")
        if not isinstance(value, Mapping):
            raise TypeError(f"put({namespace!r}, {key!r}): the value must be a dict, got {value!r}")
        return ".".join(namespace), key, serde.dumps_record(dict(value)), _now()

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Any = None,
        **_: Any,
    ) -> None:
        """Store `value` (a dict) under `namespace` and `key`; `value=None` deletes it."""
        if value is None:
            _check_namespace(namespace, "put")
            self.delete(namespace, key)
            return
        self._run(_put_tx, *self._put_args(namespace, key, value))

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Any = None,
        **_: Any,
    ) -> None:
        if value is None:
            _check_namespace(namespace, "put")
            await self.adelete(namespace, key)
            return
        await self._arun(_put_tx, *self._put_args(namespace, key, value))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _joined(namespace)
        if ns is not None:
            self._run(_delete_tx, ns, key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _joined(namespace)
        if ns is not None:
            await self._arun(_delete_tx, ns, key)

    def _search_args(self, namespace_prefix: Any, query: str | None) -> str | None:
        if query is not None:
            raise NotImplementedError(
                "SQLStore has no semantic search (LangGraph's index= embeddings): search "
                "with filter= and the namespace prefix instead"
            )
        return _joined(namespace_prefix)

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
        from `offset`, in the order they were first put."""
        prefix = self._search_args(namespace_prefix, query)
        if prefix is None:
            return []
        return self._run(_search_tx, prefix, filter, limit, offset, read=True)

    async def asearch(
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
        prefix = self._search_args(namespace_prefix, query)
        if prefix is None:
            return []
        return await self._arun(_search_tx, prefix, filter, limit, offset, read=True)

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
        spaces = self._run(_spaces_tx, _fixed_prefix(prefix), read=True)
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
        spaces = await self._arun(_spaces_tx, _fixed_prefix(prefix), read=True)
        return _pick_namespaces(spaces, prefix, suffix, max_depth, limit, offset)


def _fixed_prefix(prefix: tuple[str, ...] | None) -> str | None:
    """The parts of a `list_namespaces` prefix before its first `"*"`, as stored (the database
    narrows to those; the rest is matched in Python). None: every namespace."""
    if not prefix:
        return None
    fixed = tuple(prefix[: prefix.index("*")] if "*" in prefix else prefix)
    return _joined(fixed) if fixed else None


def _now() -> float:
    return datetime.now(UTC).timestamp()
