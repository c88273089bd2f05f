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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

__all__ = ["AlembicSchema"]


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
        from alembic.runtime.migration import MigrationContext

        context = MigrationContext.configure(conn, opts={"version_table": self.version_table})
        return context.get_current_revision()

    def upgrade(self, conn: Connection) -> None:
        """Run the migrations up to head on `conn`, inside its transaction."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(self.migrations))
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


@functools.cache
def _script(location: str) -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(location)
