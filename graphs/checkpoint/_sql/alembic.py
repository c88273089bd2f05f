"""One set of tables migrated by Alembic: its scripts, its own version table and its own lock.

The checkpoint tables are one such set (`schema.py`); an application that keeps tables of its
own beside them migrates them the same way (signoff's governance tables do, through
`graphs.checkpoint.sql.AlembicSchema`). Migrations run programmatically on a connection the
caller opened, inside its transaction, so that the lock, the check of the revision and the
upgrade commit together.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import MetaData, create_engine
from sqlalchemy.engine import Connection

from ...errors import SchemaVersionError
from .engine import sync_url

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

__all__ = ["AlembicSchema", "run_env"]


@dataclass(frozen=True)
class AlembicSchema:
    """Where a set of tables' migrations are, and how they are kept apart from others'."""

    migrations: Path
    """The Alembic script directory (with `env.py`, which takes `config.attributes["connection"]`)."""
    version_table: str
    """Alembic's version table for these tables (never `alembic_version`: the app may use it)."""
    head: str
    """The revision this code's tables are at."""
    lock_name: str
    """Names the PostgreSQL advisory lock held while these tables are migrated."""

    @property
    def lock_key(self) -> int:
        """The advisory lock's key: the first 8 bytes of the SHA-256 of `lock_name`."""
        digest = hashlib.sha256(self.lock_name.encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def script(self) -> ScriptDirectory:
        return _script(str(self.migrations))

    def known_revisions(self) -> set[str]:
        """Every revision of these tables this code knows (older or at head)."""
        return {script.revision for script in self.script().walk_revisions()}

    def lock(self, conn: Connection) -> None:
        """Hold the migration lock until the caller's transaction ends: a PostgreSQL advisory
        lock, or SQLite's write lock (the engine's `BEGIN IMMEDIATE`, on the first statement)."""
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%(k)s)", {"k": self.lock_key})
        else:
            conn.exec_driver_sql("SELECT 1")

    def current(self, conn: Connection) -> str | None:
        """The revision in the database (None: these tables are not there yet)."""
        # lazy, as every alembic import here: a third of a second more to import, for savers
        # that never migrate (SQLSaver reads its own revision without alembic)
        from alembic.runtime.migration import MigrationContext

        context = MigrationContext.configure(conn, opts={"version_table": self.version_table})
        return context.get_current_revision()

    def upgrade(self, conn: Connection) -> None:
        """Run the migrations up to head on `conn`, inside its transaction."""
        from alembic import command  # lazy: alembic (see `current`)
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(self.migrations))
        config.attributes["connection"] = conn
        command.upgrade(config, "head")

    def migrate(self, conn: Connection, owner: object, what: str) -> None:
        """Bring the tables to head inside the caller's transaction: take the lock, and
        upgrade unless they are at head (refused if a newer code migrated them).

        `owner` and `what` name them in the error (`version_error`).
        """
        self.lock(conn)
        current = self.current(conn)
        if current == self.head:
            return
        if current is not None and current not in self.known_revisions():
            raise self.version_error(owner, current, what)
        self.upgrade(conn)

    def version_error(self, owner: object, revision: str | None, what: str) -> SchemaVersionError:
        """The error for a database whose tables are at `revision`, not at head (None: not
        there). `what` names the tables (`"store table"`, `"checkpoint tables"`): its first
        word names their schema, and a plural is created as "them"."""
        kind = what.split()[0]
        if revision is None:
            them = "them" if what.endswith("s") else "it"
            text = (
                f"{owner!r} has no {what} (schema revision {self.head} expected); "
                f"call setup() (or asetup()) once to create {them}"
            )
        elif revision in self.known_revisions():
            text = (
                f"{owner!r} has {kind} schema revision {revision!r}, older than this code's "
                f"{self.head!r}; call setup() to upgrade it"
            )
        else:
            text = (
                f"{owner!r} has {kind} schema revision {revision!r}, which this code does not "
                f"know (it knows up to {self.head!r}): the database was migrated by a newer "
                "signoff. Upgrade signoff; do not downgrade the database."
            )
        return SchemaVersionError(text, db_revision=revision, code_revision=self.head)


@functools.cache
def _script(location: str) -> ScriptDirectory:
    from alembic.script import ScriptDirectory  # lazy: alembic (see `AlembicSchema.current`)

    return ScriptDirectory(location)


def run_env(context: Any, metadata: MetaData, version_table: str, what: str) -> None:
    """The body of a migrations folder's `env.py` (`context` is `alembic.context`).

    Run by `AlembicSchema.upgrade`, the migrations go on the connection it passes in
    `config.attributes["connection"]`, inside its transaction. From the command line
    (`alembic -c <folder>/alembic.ini upgrade head`) the URL comes from `-x url=...` or the
    `SIGNOFF_DATABASE_URL` environment variable. `what` names the tables in messages.
    """

    def configure(connection: Connection) -> None:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table=version_table,
            # SQLite runs DDL inside transactions too (the engines emit their own BEGIN), so
            # both databases get all-or-nothing upgrades.
            transactional_ddl=True,
            render_as_batch=connection.dialect.name == "sqlite",
        )

    if context.is_offline_mode():
        raise SystemExit(f"offline (--sql) mode is not supported for {what}")
    connection = context.config.attributes.get("connection")
    if connection is not None:
        configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get(
        "SIGNOFF_DATABASE_URL"
    )
    if not url:
        raise SystemExit("give the database URL with -x url=... or SIGNOFF_DATABASE_URL")
    engine = create_engine(sync_url(url))
    with engine.begin() as connection:
        configure(connection)
        with context.begin_transaction():
            context.run_migrations()
