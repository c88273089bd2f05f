"""`AsyncPostgresSaver`: LangGraph's `langgraph.checkpoint.postgres.aio` path, on `SQLSaver`.

```python
async with AsyncPostgresSaver.from_conn_string("postgresql://user:pw@host/db") as saver:
    await saver.setup()  # once, as LangGraph's asks
    graph = builder.compile(checkpointer=saver)
```

`PostgresSaver` with LangGraph's async `setup()` and async `from_conn_string`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..sql import SQLSaver
from . import PostgresSaver

__all__ = ["AsyncPostgresSaver"]


class AsyncPostgresSaver(PostgresSaver):
    """Checkpoints in PostgreSQL for async graphs; `await setup()` first."""

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> AsyncIterator[AsyncPostgresSaver]:
        """`async with AsyncPostgresSaver.from_conn_string(url) as saver:`; closed on exit."""
        saver = cls(conn_string, **options)
        try:
            yield saver
        finally:
            await saver.aclose()

    async def setup(self) -> None:  # type: ignore[override]
        """Create or upgrade the tables (LangGraph's is a coroutine)."""
        await SQLSaver.asetup(self)
