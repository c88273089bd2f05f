"""`SqliteCache` under LangGraph's module path (`langgraph.cache.sqlite`): `SQLCache` on a
SQLite file, made as LangGraph's is, `SqliteCache(path="cache.db")`, with its table ready."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL

from .sql import SQLCache

__all__ = ["SqliteCache"]


class SqliteCache(SQLCache):
    """`SQLCache` on the SQLite file at `path` (`":memory:"`: a database of this process).

    Unlike `SQLCache(url)`, the table is created (or upgraded) here, as LangGraph's
    `SqliteCache` creates its own: no `setup()` call is needed.

    Args:
        path: the database file (created if missing).
        serde: LangGraph's serializer option; only None is taken, since graphs stores
            results as tagged JSON (a result outside its allow-list is refused).
        **options: passed to `SQLSaver` (`busy_timeout`, `sqlite_synchronous`, ...).
    """

    def __init__(self, *, path: str, serde: Any = None, **options: Any) -> None:
        if serde is not None:
            raise TypeError(
                f"SqliteCache(serde={serde!r}): graphs caches results as tagged JSON, as it "
                "stores checkpoints, and takes no serializer; leave serde out (register a type "
                "with graphs.checkpoint.serde.register_type)"
            )
        database = None if path in ("", ":memory:") else path
        super().__init__(URL.create("sqlite", database=database), **options)
        self.setup()
