"""The governance tables' migrations (Alembic, in `migrations/`): the schema they make, and the
steps `Database.upgrade` takes on a sync connection: see in one query whether there is anything
to do (`at_head`: at every start of the bot or a command there is not), else refuse a schema
newer than this code, then bring the tables to head."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from graphs.checkpoint._sql.tables import SCHEMA_REVISION as CHECKPOINT_REVISION
from graphs.checkpoint._sql.tables import VERSION_TABLE as CHECKPOINT_VERSION_TABLE
from graphs.checkpoint.sql import AlembicSchema
from graphs.errors import SchemaVersionError

from .tables import SCHEMA_REVISION, VERSION_TABLE

__all__ = ["MIGRATIONS_DIR", "SCHEMA", "at_head", "check_not_newer", "migrate"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

SCHEMA = AlembicSchema(
    MIGRATIONS_DIR, VERSION_TABLE, SCHEMA_REVISION, lock_name="signoff.approvals.migrations"
)
"""The governance tables, as Alembic migrates them."""


_BOTH_REVISIONS = (
    f"SELECT (SELECT version_num FROM {CHECKPOINT_VERSION_TABLE}), "
    f"(SELECT version_num FROM {VERSION_TABLE})"
)


def at_head(conn: Connection) -> bool:
    """Whether the checkpoint tables and the governance tables are both at this code's
    revisions, read in one query, without Alembic and without a lock (a migration under way
    elsewhere has not committed its revision yet). False when either version table is not
    there yet, or holds another revision (or more than one row): the upgrade then takes the
    locks, and refuses a newer schema or migrates."""
    try:
        found = conn.exec_driver_sql(_BOTH_REVISIONS).one()
    except sa.exc.DBAPIError as e:
        if e.connection_invalidated:
            raise
        return False
    return tuple(found) == (CHECKPOINT_REVISION, SCHEMA_REVISION)


def check_not_newer(conn: Connection, display_url: str) -> str | None:
    """The governance revision in the database; `SchemaVersionError` if this code is older."""
    current = SCHEMA.current(conn)
    if (
        current is not None
        and current != SCHEMA_REVISION
        and current not in SCHEMA.known_revisions()
    ):
        raise SchemaVersionError(
            f"{display_url} has governance schema revision {current!r} (in table "
            f"{VERSION_TABLE}), which this code does not know (it knows up to "
            f"{SCHEMA_REVISION!r}): the database was migrated by a newer signoff. Upgrade "
            "signoff; do not downgrade the database.",
            db_revision=current,
            code_revision=SCHEMA_REVISION,
        )
    return current


def migrate(conn: Connection, display_url: str) -> None:
    """Bring the governance tables to head inside the caller's write transaction."""
    SCHEMA.lock(conn)
    if check_not_newer(conn, display_url) == SCHEMA_REVISION:
        return
    SCHEMA.upgrade(conn)
