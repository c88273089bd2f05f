"""The governance tables' migrations (Alembic, in `migrations/`): the schema they make, and the
two steps `Database.upgrade` takes on a sync connection: refuse a schema newer than this code,
then bring the tables to head."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Connection

from graphs.checkpoint.sql import AlembicSchema
from graphs.errors import SchemaVersionError

from .tables import SCHEMA_REVISION, VERSION_TABLE

__all__ = ["MIGRATIONS_DIR", "SCHEMA", "check_not_newer", "migrate"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

SCHEMA = AlembicSchema(
    MIGRATIONS_DIR, VERSION_TABLE, SCHEMA_REVISION, lock_name="signoff.approvals.migrations"
)
"""The governance tables, as Alembic migrates them."""


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
