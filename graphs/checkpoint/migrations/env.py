"""Alembic environment for the checkpoint tables.

`SQLSaver.setup()` runs these migrations programmatically: it passes an open connection, already
inside a transaction that holds the migration lock, in `config.attributes["connection"]`. Run
from the command line (`alembic -c <this folder>/alembic.ini upgrade head`), the URL comes from
`-x url=...` or the `SIGNOFF_DATABASE_URL` environment variable.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine

from graphs.checkpoint._sql.tables import VERSION_TABLE, metadata

config = context.config


def _configure(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        # SQLite runs DDL inside transactions too (SQLSaver emits its own BEGIN), so both
        # databases get all-or-nothing upgrades.
        transactional_ddl=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get(
        "SIGNOFF_DATABASE_URL"
    )
    if not url:
        raise SystemExit("give the database URL with -x url=... or SIGNOFF_DATABASE_URL")
    from graphs.checkpoint.sql import sync_url

    engine = create_engine(sync_url(url))
    with engine.begin() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) mode is not supported for the checkpoint tables")
run_migrations_online()
