"""The checkpoint tables' schema revision, checked before use and brought to head by Alembic."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ...errors import SchemaVersionError
from .alembic import AlembicSchema
from .tables import SCHEMA_REVISION, VERSION_TABLE

if TYPE_CHECKING:
    from ..sql import SQLSaver

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


def _check_revision(saver: SQLSaver, revision: str | None) -> None:
    """Raise `SchemaVersionError` unless the database is at this code's schema revision."""
    if revision == SCHEMA_REVISION:
        return
    if revision is None:
        raise SchemaVersionError(
            f"{saver!r} has no checkpoint tables (schema revision {SCHEMA_REVISION} "
            "expected); call setup() (or asetup()) once to create them",
            db_revision=None,
            code_revision=SCHEMA_REVISION,
        )
    if revision in SCHEMA.known_revisions():
        raise SchemaVersionError(
            f"{saver!r} has checkpoint schema revision {revision!r}, older than this code's "
            f"{SCHEMA_REVISION!r}; call setup() to upgrade it",
            db_revision=revision,
            code_revision=SCHEMA_REVISION,
        )
    raise _newer_schema(saver, revision)


def _newer_schema(saver: SQLSaver, revision: str) -> SchemaVersionError:
    return SchemaVersionError(
        f"{saver!r} has checkpoint schema revision {revision!r}, which this code does not know "
        f"(it knows up to {SCHEMA_REVISION!r}): the database was migrated by a newer signoff. "
        "Upgrade signoff; do not downgrade the database.",
        db_revision=revision,
        code_revision=SCHEMA_REVISION,
    )


def _migrate(conn: Connection, saver: SQLSaver) -> None:
    """Bring the schema to head inside the caller's transaction (which holds the lock)."""
    SCHEMA.lock(conn)
    current = SCHEMA.current(conn)
    if current == SCHEMA_REVISION:
        return
    if current is not None and current not in SCHEMA.known_revisions():
        raise _newer_schema(saver, current)
    SCHEMA.upgrade(conn)
