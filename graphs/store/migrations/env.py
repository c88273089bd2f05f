"""Alembic environment for `SQLStore`'s table (`graphs.store.sql`): `SQLStore.setup()` runs
it on its own connection; `alembic -c <this folder>/alembic.ini -x url=... upgrade head` from
the command line (see `graphs.checkpoint._sql.alembic.run_env`).
"""

from __future__ import annotations

from alembic import context

from graphs.checkpoint._sql.alembic import run_env
from graphs.store._tables import VERSION_TABLE, metadata

run_env(context, metadata, VERSION_TABLE, "the store's table")
