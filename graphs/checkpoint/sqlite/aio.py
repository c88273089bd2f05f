"""`AsyncSqliteSaver`: LangGraph's `langgraph.checkpoint.sqlite.aio` path, on `SQLSaver`.

```python
async with AsyncSqliteSaver.from_conn_string("checkpoints.sqlite") as saver:
    graph = builder.compile(checkpointer=saver)  # tables on first use; `await saver.setup()`
```

`SqliteSaver` (tables on first use, a path or `":memory:"`) with LangGraph's async `setup()`.
It takes a path, not an aiosqlite connection: the saver opens its own (aiosqlite, pooled).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..sql import SQLSaver
from . import SqliteSaver

__all__ = ["AsyncSqliteSaver"]


class AsyncSqliteSaver(SqliteSaver):
    """Checkpoints in a SQLite file for async graphs (`ainvoke`, `astream`); see the module."""

    def __init__(self, conn: str, *, serde: Any = None, **options: Any) -> None:
        if not isinstance(conn, str):
            raise TypeError(
                f"AsyncSqliteSaver takes a path (or ':memory:'), not "
                f"{type(conn).__qualname__}: AsyncSqliteSaver.from_conn_string(path) opens it"
            )
        super().__init__(conn, serde=serde, **options)

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> AsyncIterator[AsyncSqliteSaver]:
        """`async with AsyncSqliteSaver.from_conn_string(path) as saver:`; closed on exit."""
        saver = cls(conn_string, **options)
        try:
            yield saver
        finally:
            await saver.aclose()

    async def setup(self) -> None:  # type: ignore[override]
        """Create or upgrade the tables (LangGraph's is a coroutine); done on first use too."""
        if self._memory:
            await asyncio.to_thread(SQLSaver.setup, self)
        else:
            await SQLSaver.asetup(self)
