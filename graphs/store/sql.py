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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from ..checkpoint import serde
from ..checkpoint._sql.alembic import AlembicSchema
from ..checkpoint._sql.engine import _Tx
from ..checkpoint._sql.statements import _DIALECTS
from ..checkpoint._sql.tableset import SQLTableSet
from ..checkpoint.sql import SQLSaver
from . import (
    NOT_PROVIDED,
    Item,
    NotProvided,
    SearchItem,
    TTLConfig,
    _check_namespace,
    _matches,
    _pick_namespaces,
    _TTLStore,
)
from ._tables import SCHEMA_REVISION, VERSION_TABLE

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
    namespace, key, value, created, updated, _ = row
    return Item(serde.loads_record(value), key, _split(namespace), _time(created), _time(updated))


def _found(row: Any) -> SearchItem:
    namespace, key, value, created, updated, _ = row
    return SearchItem(
        _split(namespace), key, serde.loads_record(value), _time(created), _time(updated)
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
) -> None:
    at = {"ns": ns, "key": key, "now": now}
    tx.run(sql["drop_expired"], at)  # an expired item is gone: this put makes a new one
    expires = None if minutes is None else now + minutes * 60
    tx.run(sql["put"], {**at, "value": value, "expires": expires, "minutes": minutes})


def _refresh_tx(tx: _Tx, sql: dict[str, str], timed: _Timed, now: float) -> None:
    tx.many(sql["refresh"], [{**at, "now": now} for at in timed])


def _delete_tx(tx: _Tx, sql: dict[str, str], ns: str, key: str) -> None:
    tx.run(sql["delete"], {"ns": ns, "key": key})


def _sweep_tx(tx: _Tx, sql: dict[str, str], now: float) -> int:
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
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] | None = None,
        **options: Any,
    ) -> None:
        SQLTableSet.__init__(self, url, **options)
        _TTLStore.__init__(self, ttl, clock)

    def close(self) -> None:
        """Stop the TTL sweeper, and close the pooled connections (not a shared saver's: its
        owner closes those)."""
        self.stop_ttl_sweeper()
        super().close()

    async def aclose(self) -> None:
        self.stop_ttl_sweeper()
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
        ttl: float | None | NotProvided,
    ) -> tuple[str, str, str, float | None, float]:
        _check_namespace(namespace, "put")
        if not isinstance(value, Mapping):
            raise TypeError(f"put({namespace!r}, {key!r}): the value must be a dict, got {value!r}")
        minutes = self._ttl_minutes(ttl, f"put({namespace!r}, {key!r})")
        text = serde.dumps_record(dict(value))
        return ".".join(namespace), key, text, minutes, self._clock()

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Any = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
        **_: Any,
    ) -> None:
        """Store `value` (a dict) under `namespace` and `key`; `value=None` deletes it.

        `ttl`: minutes it lives from now (and from each refreshing read); not given: the
        store's `default_ttl`; None: no expiry.
        """
        if value is None:
            _check_namespace(namespace, "put")
            self.delete(namespace, key)
            return
        self._run(_put_tx, *self._put_args(namespace, key, value, ttl))

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Any = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
        **_: Any,
    ) -> None:
        if value is None:
            _check_namespace(namespace, "put")
            await self.adelete(namespace, key)
            return
        await self._arun(_put_tx, *self._put_args(namespace, key, value, ttl))

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
        refresh_ttl: bool | None = None,
        **_: Any,
    ) -> list[SearchItem]:
        """The items under `namespace_prefix` whose value matches `filter`, `limit` of them
        from `offset`, in the order they were first put (not those that have expired)."""
        prefix = self._search_args(namespace_prefix, query)
        if prefix is None:
            return []
        now = self._clock()
        found, timed = self._run(_search_tx, prefix, filter, limit, offset, now, read=True)
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
        prefix = self._search_args(namespace_prefix, query)
        if prefix is None:
            return []
        now = self._clock()
        args = (prefix, filter, limit, offset, now)
        found, timed = await self._arun(_search_tx, *args, read=True)
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
