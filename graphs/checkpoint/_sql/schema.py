"""The checkpoint tables' schema revision, checked before use and brought to head by Alembic."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .alembic import AlembicSchema
from .tables import SCHEMA_REVISION, VERSION_TABLE

MIGRATIONS_DIR = Path(__file__).parent.parent / "migrations"
SCHEMA = AlembicSchema(
    migrations=MIGRATIONS_DIR,
    version_table=VERSION_TABLE,
    head=SCHEMA_REVISION,
    lock_name="signoff.checkpoint.migrations",
)
"""The checkpoint tables' migrations, version table and lock."""


def _schema_revision(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return None
    revision = conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalar()
    conn.rollback()
    return revision


def _check_revision(saver: object, revision: str | None) -> None:
    """Raise `SchemaVersionError` unless the database is at this code's schema revision
    (`saver` is named in its message)."""
    if revision != SCHEMA_REVISION:
        raise SCHEMA.version_error(saver, revision, "checkpoint tables")


def _migrate(conn: Connection, saver: object) -> None:
    """Bring the schema to head inside the caller's transaction (which holds the lock)."""
    SCHEMA.migrate(conn, saver, "checkpoint tables")
