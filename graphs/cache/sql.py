"""`SQLCache`: the node cache (`graphs.cache`) kept in SQLite or PostgreSQL, so that a node's
result outlives the process and is shared by every process on the database.

```python
cache = SQLCache("sqlite:///signoff.db")    # or postgresql://user@host/db, or SQLCache(saver)
cache.setup()                               # create or upgrade its table (idempotent)
graph = builder.compile(cache=cache)        # nodes added with cache_policy=CachePolicy(...)
```

It runs on the engines of `graphs.checkpoint.sql.SQLSaver` (the same URLs and drivers, SQLite
in WAL mode with `BEGIN IMMEDIATE` writes and this process's write gate, PostgreSQL pooled
and pinged, a dropped connection retried once); give it a saver to share that saver's pool,
and it leaves closing to the saver's owner. Its table (`cache_entries`) is migrated by Alembic
as the checkpoint tables are, with a version table (`cache_schema_version`) and a migration
lock of its own: `setup()` before first use, from any number of processes at once.

Results are stored as graphs' tagged JSON (nothing is pickled): a result a checkpoint could
not hold is refused with `SerializationError` (the run fails on it, naming the node). An
entry's TTL runs on the wall clock, which all processes share: an expired entry is never
returned; expired entries are deleted by the next `set`, and by a `get` that met one. Several
processes may set the same key at once: the last write wins, whole.

`graphs.cache.sqlite.SqliteCache(path=...)` is LangGraph's constructor for the same class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..checkpoint import serde
from ..checkpoint._sql.alembic import AlembicSchema
from ..checkpoint._sql.engine import _Tx
from ..checkpoint._sql.statements import _DIALECTS
from ..checkpoint._tableset import SQLTableSet
from ..errors import SerializationError
from ._keys import FullKey, Namespace, whose
from ._tables import SCHEMA_REVISION, VERSION_TABLE
from .base import BaseCache

__all__ = ["SQLCache"]

SCHEMA = AlembicSchema(
    migrations=Path(__file__).parent / "migrations",
    version_table=VERSION_TABLE,
    head=SCHEMA_REVISION,
    lock_name="signoff.cache.migrations",
)
"""The cache table's migrations, version table and lock."""

_SQL = {
    "get": "SELECT value, expires_at FROM cache_entries WHERE namespace = :ns AND key = :key",
    "set": """
        INSERT INTO cache_entries (namespace, key, value, expires_at)
        VALUES (:ns, :key, :value, :expires)
        ON CONFLICT (namespace, key) DO UPDATE
        SET value = excluded.value, expires_at = excluded.expires_at""",
    "purge": "DELETE FROM cache_entries WHERE expires_at <= :now",
    "clear_all": "DELETE FROM cache_entries",
    "clear": "DELETE FROM cache_entries WHERE namespace = :ns",
}
_RENDERED = {name: {k: d.render(v) for k, v in _SQL.items()} for name, d in _DIALECTS.items()}

_Row = tuple[str, str, str, float | None]  # namespace, key, value, expires_at


def _ns(namespace: Namespace) -> str:
    """A namespace as stored: its parts as a JSON list."""
    return serde.compact_json([str(part) for part in namespace])


def _now() -> float:
    return datetime.now(UTC).timestamp()


# ---- each operation, as a function of one transaction -----------------------------------


def _get_tx(
    tx: _Tx, sql: dict[str, str], wanted: list[tuple[FullKey, str, str]], now: float
) -> tuple[dict[FullKey, str], bool]:
    """The stored text of each wanted key that has not expired, and whether one had."""
    found: dict[FullKey, str] = {}
    expired = False
    for full, ns, key in wanted:
        row = tx.one(sql["get"], {"ns": ns, "key": key})
        if row is None:
            continue
        if row[1] is not None and row[1] <= now:
            expired = True
        else:
            found[full] = row[0]
    return found, expired


def _set_tx(tx: _Tx, sql: dict[str, str], rows: list[_Row], now: float) -> None:
    tx.run(sql["purge"], {"now": now})
    tx.many(sql["set"], [{"ns": n, "key": k, "value": v, "expires": e} for n, k, v, e in rows])


def _purge_tx(tx: _Tx, sql: dict[str, str], now: float) -> None:
    tx.run(sql["purge"], {"now": now})


def _clear_tx(tx: _Tx, sql: dict[str, str], spaces: list[str] | None) -> None:
    if spaces is None:
        tx.run(sql["clear_all"])
    elif spaces:
        tx.many(sql["clear"], [{"ns": ns} for ns in spaces])


# ---- the cache --------------------------------------------------------------------------


class SQLCache(SQLTableSet, BaseCache):
    """`BaseCache` on a SQLite or PostgreSQL database; see the module docstring.

    Args:
        url: `sqlite:///path/to/file.db` or `postgresql://user@host/db`, or a `SQLSaver` whose
            engines (and pool) the cache then shares.
        **options: for a URL, passed to `SQLSaver` (`busy_timeout`, `sqlite_synchronous`,
            `pool_size`, `max_overflow`, `ping_after`, engine options).

    Raises:
        SchemaVersionError: (from any call before `setup()`) the database has no cache table,
            or one of another revision.
    """

    SCHEMA = SCHEMA
    WHAT = "cache table"
    STATEMENTS = _RENDERED

    # ---- the cache's methods ------------------------------------------------------------

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The cached values of those `keys` that are stored and have not expired."""
        if not keys:
            return {}
        found, expired = self._run(_get_tx, _wanted(keys), _now(), read=True)
        if expired:
            self._run(_purge_tx, _now())
        return _loaded(found)

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        if not keys:
            return {}
        found, expired = await self._arun(_get_tx, _wanted(keys), _now(), read=True)
        if expired:
            await self._arun(_purge_tx, _now())
        return _loaded(found)

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        """Store each value under its key for its TTL in seconds (None: until cleared).

        Raises:
            SerializationError: a value is not one a checkpoint could hold (nothing is stored).
        """
        if pairs:
            now = _now()
            self._run(_set_tx, _rows(pairs, now), now)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        if pairs:
            now = _now()
            await self._arun(_set_tx, _rows(pairs, now), now)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete the entries of `namespaces` (a node's is `(node_name,)`); None: every entry."""
        self._run(_clear_tx, None if namespaces is None else [_ns(n) for n in namespaces])

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        await self._arun(_clear_tx, None if namespaces is None else [_ns(n) for n in namespaces])


def _wanted(keys: Sequence[FullKey]) -> list[tuple[FullKey, str, str]]:
    return [(full, _ns(full[0]), str(full[1])) for full in keys]


def _loaded(found: dict[FullKey, str]) -> dict[FullKey, Any]:
    return {full: serde.loads_record(text) for full, text in found.items()}


def _rows(pairs: Mapping[FullKey, tuple[Any, int | None]], now: float) -> list[_Row]:
    rows: list[_Row] = []
    for (namespace, key), (value, ttl) in pairs.items():
        try:
            text = serde.dumps_record(value)
        except (SerializationError, ValueError) as e:
            where = whose(namespace)
            raise SerializationError(
                f"cannot cache the result of {where!r} (key {key!r}): the SQL cache stores "
                f"results as checkpoints are stored, and {e}"
            ) from e
        expires = None if ttl is None else now + ttl
        rows.append((_ns(namespace), str(key), text, expires))
    return rows
