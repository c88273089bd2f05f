"""Alembic environment for the checkpoint tables.

`SQLSaver.setup()` runs these migrations programmatically: it passes an open connection, already
inside a transaction that holds the migration lock, in `config.attributes["connection"]`. Run
from the command line (`alembic -c <this folder>/alembic.ini upgrade head`), the URL comes from
`-x url=...` or the `SIGNOFF_DATABASE_URL` environment variable (`_sql/alembic.py`, `run_env`).
"""

from __future__ import annotations

from alembic import context

from graphs.checkpoint._sql.alembic import run_env
from graphs.checkpoint._sql.tables import VERSION_TABLE, metadata

run_env(context, metadata, VERSION_TABLE, "the checkpoint tables")
