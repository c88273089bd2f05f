"""`PostgresSaver`: LangGraph's `langgraph.checkpoint.postgres` path, on `SQLSaver`.

```python
with PostgresSaver.from_conn_string("postgresql://user:pw@host/db") as saver:
    saver.setup()  # once: create or upgrade the tables, as LangGraph's asks
    graph = builder.compile(checkpointer=saver)
```

As LangGraph's, it needs `setup()` before use: without it, the first operation fails and says
so. It is `SQLSaver` on that database (its own pooled psycopg connections, one run per thread,
the same tables as `SQLSaver("postgresql://...")`); a psycopg connection or pool given to the
constructor only names the database (host, port, user, password, database) and stays the
caller's. LangGraph's `serde=` is not taken: values are stored as tagged JSON.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sqlalchemy.engine import URL

from ..sql import SQLSaver

__all__ = ["PostgresSaver", "postgres_url"]


def postgres_url(conn: Any) -> URL | str:
    """The `SQLSaver` URL of a psycopg connection, a psycopg pool, or a connection string
    (`postgresql://...` or libpq's `host=... dbname=...`)."""
    if isinstance(conn, (str, URL)):
        if isinstance(conn, URL) or "://" in conn:
            return conn
        return _from_params(_conninfo_dict(conn))
    info = getattr(conn, "info", None)  # a psycopg connection
    if info is not None and hasattr(info, "get_parameters"):
        return _from_params({**info.get_parameters(), "password": info.password})
    conninfo = getattr(conn, "conninfo", None)  # a psycopg_pool pool
    if isinstance(conninfo, str):
        return postgres_url(conninfo)
    raise TypeError(
        "a PostgreSQL saver takes a connection string, a psycopg connection or pool, not "
        f"{type(conn).__qualname__}"
    )


def _conninfo_dict(conninfo: str) -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict  # psycopg: the PostgreSQL driver SQLSaver uses

    return dict(conninfo_to_dict(conninfo))


def _from_params(params: dict[str, Any]) -> URL:
    """libpq's parameters as a URL: the others (`options`, `sslmode`, ...) in its query."""
    params = {k: str(v) for k, v in params.items() if v not in (None, "")}
    port = params.pop("port", None)
    return URL.create(
        "postgresql",
        username=params.pop("user", None),
        password=params.pop("password", None),
        host=params.pop("host", None),
        port=int(port) if port else None,
        database=params.pop("dbname", None),
        query=params,
    )


class PostgresSaver(SQLSaver):
    """Checkpoints in PostgreSQL, `setup()` first (LangGraph's constructor); see the module.

    Args:
        conn: a connection string, a psycopg connection or a psycopg pool.
        serde: LangGraph's serializer option; only None is taken.
        **options: `SQLSaver`'s (`pool_size`, `max_overflow`, `ping_after`, ...).
    """

    def __init__(self, conn: Any, *, serde: Any = None, **options: Any) -> None:
        if serde is not None:
            raise TypeError(
                f"{type(self).__name__}(serde=...): graphs stores checkpoints as tagged JSON and "
                "takes no serializer; leave serde out (the classes your state schema names are "
                "stored as they are; register others with graphs.checkpoint.serde.register_type)"
            )
        super().__init__(postgres_url(conn), **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url.render_as_string(hide_password=True)!r})"

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> Iterator[PostgresSaver]:
        """`with PostgresSaver.from_conn_string(url) as saver:`; closed on exit."""
        saver = cls(conn_string, **options)
        try:
            yield saver
        finally:
            saver.close()
