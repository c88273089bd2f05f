"""`SqliteSaver`: LangGraph's `langgraph.checkpoint.sqlite` path, on `SQLSaver` (SQLite).

```python
with SqliteSaver.from_conn_string("checkpoints.sqlite") as saver:  # or ":memory:"
    graph = builder.compile(checkpointer=saver)  # no setup(): the tables come on first use
```

As LangGraph's, it creates its tables on first use (`setup()` still works, and is idempotent);
`SqliteSaver(sqlite3.connect(path))` takes a connection as LangGraph's does. It is `SQLSaver`
on that file (its own pooled connections, WAL, one writer at a time, the same tables as
`SQLSaver("sqlite:///path")`), so the connection given only names the file (a `:memory:` one: a
database of the saver's own) and stays the caller's to close. LangGraph's `serde=` is not taken:
values are stored as tagged JSON (`graphs.checkpoint.serde`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sqlalchemy.engine import URL

from ..sql import SQLSaver

__all__ = ["SqliteSaver", "sqlite_url"]

_T = TypeVar("_T")


def sqlite_url(conn: sqlite3.Connection | str) -> URL | str:
    """The `SQLSaver` URL of a sqlite3 connection's main database, or of a path (`:memory:`,
    `sqlite:///...` as they are)."""
    if isinstance(conn, str):
        if conn.startswith("sqlite:"):
            return conn
        return "sqlite://" if conn in ("", ":memory:") else URL.create("sqlite", database=conn)
    if isinstance(conn, sqlite3.Connection):
        files = {row[1]: row[2] for row in conn.execute("PRAGMA database_list")}
        path = files.get("main") or ""
        return URL.create("sqlite", database=path) if path else "sqlite://"
    raise TypeError(
        f"a SQLite saver takes a sqlite3.Connection or a path, not {type(conn).__qualname__}"
    )


class SqliteSaver(SQLSaver):
    """Checkpoints in a SQLite file, tables created on first use (LangGraph's constructor).

    Args:
        conn: a `sqlite3.Connection` (its main database's file is used) or a path.
        serde: LangGraph's serializer option; only None is taken.
        **options: `SQLSaver`'s (`sqlite_synchronous`, `busy_timeout`, ...).
    """

    def __init__(self, conn: sqlite3.Connection | str, *, serde: Any = None, **options: Any):
        if serde is not None:
            raise TypeError(
                f"{type(self).__name__}(serde=...): graphs stores checkpoints as tagged JSON and "
                "takes no serializer; leave serde out (the classes your state schema names are "
                "stored as they are; register others with graphs.checkpoint.serde.register_type)"
            )
        super().__init__(sqlite_url(conn), **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url.render_as_string(hide_password=True)!r})"

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> Iterator[SqliteSaver]:
        """`with SqliteSaver.from_conn_string("checkpoints.sqlite") as saver:` (a path, or
        `":memory:"`); the saver's connections are closed on exit."""
        saver = cls(conn_string, **options)
        try:
            yield saver
        finally:
            saver.close()

    # The tables on first use: the first operation migrates (once, then checks nothing more).
    def _check_schema(self) -> None:
        SQLSaver.setup(self)

    async def _arun(
        self,
        fn: Callable[..., _T],
        *args: Any,
        read: bool = False,
        retry: bool = True,
        schema: bool = True,
    ) -> _T:
        if schema and not self._schema_ok and not self._memory:
            await SQLSaver.asetup(self)
        return await super()._arun(fn, *args, read=read, retry=retry, schema=schema)
