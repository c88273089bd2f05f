"""Alembic environment for `SQLCache`'s table (`graphs.cache.sql`): `SQLCache.setup()` runs
it on its own connection; `alembic -c <this folder>/alembic.ini -x url=... upgrade head` from
the command line (see `graphs.checkpoint._sql.alembic.run_env`).
"""

from __future__ import annotations

from alembic import context

from graphs.cache._tables import VERSION_TABLE, metadata
from graphs.checkpoint._sql.alembic import run_env

run_env(context, metadata, VERSION_TABLE, "the node cache's table")
