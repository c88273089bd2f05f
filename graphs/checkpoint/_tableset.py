"""`SQLTableSet`: a set of tables of its own on a `SQLSaver`'s engines (internal).

`SQLStore` (`graphs.store.sql`) and `SQLCache` (`graphs.cache.sql`) are each one: tables beside
the checkpoint tables, migrated by Alembic with a version table and a migration lock of their
own (`AlembicSchema`), checked once before first use ("call setup() first"), their operations
run by the saver (`SQLSaver._run`: the write gate, the retry of a dropped connection) without
the saver's check of the checkpoint tables. Made from a URL (it then owns a saver and closes
it) or from a saver (whose pool it shares; the saver's owner closes it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar, Self, TypeVar

from sqlalchemy.engine import URL, Connection

from ._sql.alembic import AlembicSchema
from .sql import SQLSaver

__all__ = ["SQLTableSet"]

_T = TypeVar("_T")


class SQLTableSet:
    """The common part of `SQLStore` and `SQLCache`; a subclass sets the class attributes."""

    SCHEMA: ClassVar[AlembicSchema]
    """Its tables' migrations, version table and lock."""
    WHAT: ClassVar[str]
    """Its tables in messages, such as "store table"."""
    STATEMENTS: ClassVar[dict[str, dict[str, str]]]
    """Its statements, rendered for each dialect (`_DIALECTS` name -> name -> SQL)."""

    def __init__(self, url: str | URL | SQLSaver, **options: Any) -> None:
        if isinstance(url, SQLSaver):
            if options:
                raise TypeError(
                    f"{type(self).__name__}({url!r}, ...): options are the saver's when it is "
                    f"given; set them on the saver instead of {sorted(options)}"
                )
            self._saver, self._owns = url, False
        else:
            self._saver, self._owns = SQLSaver(url, **options), True
        self.url: URL = self._saver.url
        self._d = self._saver._d
        self._sql = self.STATEMENTS[self._d.name]
        self._schema_ok = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url.render_as_string(hide_password=True)!r})"

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, url: str | URL, **options: Any) -> Iterator[Self]:
        """`with cls.from_conn_string(url) as it:`; its connections are closed on exit."""
        it = cls(url, **options)
        try:
            yield it
        finally:
            it.close()

    @classmethod
    @contextlib.asynccontextmanager
    async def afrom_conn_string(cls, url: str | URL, **options: Any) -> AsyncIterator[Self]:
        """`async with cls.afrom_conn_string(url) as it:`; closed on exit."""
        it = cls(url, **options)
        try:
            yield it
        finally:
            await it.aclose()

    def close(self) -> None:
        """Close the pooled connections (not a shared saver's: its owner closes those)."""
        if self._owns:
            self._saver.close()

    async def aclose(self) -> None:
        if self._owns:
            await self._saver.aclose()

    # ---- schema -------------------------------------------------------------------------

    def setup(self) -> None:
        """Create or upgrade the tables (Alembic migrations). Idempotent, and safe from
        several processes at once (an advisory lock on PostgreSQL, the write lock on SQLite).

        Raises:
            SchemaVersionError: the database was migrated by newer code than this.
        """
        guard = self._saver._memory_guard if self._saver._memory else contextlib.nullcontext()
        with guard, self._saver._sync_engine().begin() as conn:
            self._migrate(conn)
        self._schema_ok = True

    async def asetup(self) -> None:
        """Async form of `setup`."""
        if self._saver._memory:
            await asyncio.to_thread(self.setup)
            return
        async with self._saver.write_gate(), self._saver._async_engine().begin() as conn:
            await conn.run_sync(self._migrate)
        self._schema_ok = True

    def _migrate(self, conn: Connection) -> None:
        self.SCHEMA.migrate(conn, self, self.WHAT)

    def _accept(self, revision: str | None) -> None:
        if revision != self.SCHEMA.head:
            raise self.SCHEMA.version_error(self, revision, self.WHAT)
        self._schema_ok = True

    def _check(self) -> None:
        if self._schema_ok:
            return
        guard = self._saver._memory_guard if self._saver._memory else contextlib.nullcontext()
        with guard, self._saver._sync_engine(read=True).connect() as conn:
            self._accept(self.SCHEMA.current(conn))

    async def _acheck(self) -> None:
        if self._schema_ok:
            return
        if self._saver._memory:
            await asyncio.to_thread(self._check)
            return
        async with self._saver._async_engine(read=True).connect() as conn:
            self._accept(await conn.run_sync(self.SCHEMA.current))

    def _run(self, fn: Callable[..., _T], *args: Any, read: bool = False) -> _T:
        """`fn(tx, statements, *args)` in one transaction, once the tables are checked."""
        self._check()
        return self._saver._run(fn, self._sql, *args, read=read, schema=False)

    async def _arun(self, fn: Callable[..., _T], *args: Any, read: bool = False) -> _T:
        await self._acheck()
        return await self._saver._arun(fn, self._sql, *args, read=read, schema=False)
