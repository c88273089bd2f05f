"""What `SQLStore` and `SQLCache` share as tables of their own beside the checkpoint tables:
Alembic migrations with a version table of their own, a call before `setup()` that says to
call it, a newer schema refused, the migration equal to `_tables.py`, the Alembic command line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from graphs.cache import _tables as cache_tables
from graphs.cache.sql import SQLCache
from graphs.checkpoint._tableset import SQLTableSet
from graphs.errors import SchemaVersionError
from graphs.store import _tables as store_tables
from graphs.store.sql import SQLStore
from tests.kit.sql_tables import rows, run


@dataclass(frozen=True)
class Kind:
    cls: type[SQLTableSet]
    what: str
    tables: set[str]
    metadata: sa.MetaData
    version_table: str
    newer: str
    write: Callable[[Any], None]
    awrite: Callable[[Any], Coroutine[Any, Any, None]]
    read: Callable[[Any], Any]
    """What `write` wrote (the value of one key)."""


STORE = Kind(
    SQLStore,
    "store table",
    {"store_items", "store_vectors"},
    store_tables.metadata,
    "store_schema_version",
    "s9999",
    lambda s: s.put(("a",), "k", {"v": 1}),
    lambda s: s.aput(("a",), "k", {"v": 1}),
    lambda s: (item := s.get(("a",), "k")) and item.value,
)
CACHE = Kind(
    SQLCache,
    "cache table",
    {"cache_entries"},
    cache_tables.metadata,
    "cache_schema_version",
    "c9999",
    lambda c: c.set({(("a",), "k"): ({"v": 1}, None)}),
    lambda c: c.aset({(("a",), "k"): ({"v": 1}, None)}),
    lambda c: c.get([(("a",), "k")]).get((("a",), "k")),
)


@pytest.fixture(params=[STORE, CACHE], ids=["store", "cache"])
def kind(request: pytest.FixtureRequest) -> Kind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file, or a PostgreSQL schema of the test's own."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tables.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_every_call_before_setup_says_to_call_it(kind: Kind, url: str) -> None:
    with kind.cls.from_conn_string(url) as it:
        with pytest.raises(SchemaVersionError, match=rf"no {kind.what} .*call setup\(\)") as e:
            kind.read(it)
        assert e.value.db_revision is None and e.value.code_revision == kind.cls.SCHEMA.head
        with pytest.raises(SchemaVersionError, match=r"call setup\(\)"):
            asyncio.run(kind.awrite(it))
        asyncio.run(it.asetup())
        it.setup()  # idempotent
        kind.write(it)
        assert kind.read(it) == {"v": 1}
    assert rows(url, f"SELECT version_num FROM {kind.version_table}") == [(kind.cls.SCHEMA.head,)]


def test_tables_migrated_by_newer_code_are_refused(kind: Kind, url: str) -> None:
    with kind.cls.from_conn_string(url) as it:
        it.setup()
    rows(url, f"UPDATE {kind.version_table} SET version_num = '{kind.newer}'")
    with kind.cls.from_conn_string(url) as fresh:
        with pytest.raises(SchemaVersionError, match="newer signoff") as e:
            fresh.setup()
        assert (e.value.db_revision, e.value.code_revision) == (kind.newer, kind.cls.SCHEMA.head)
        with pytest.raises(SchemaVersionError, match="does not know"):
            kind.read(fresh)


def test_the_head_revision_is_the_newest_migration(kind: Kind) -> None:
    from alembic.script import ScriptDirectory

    schema = kind.cls.SCHEMA
    assert ScriptDirectory(str(schema.migrations)).get_current_head() == schema.head


def test_the_migration_creates_exactly_the_tables_tables_py_describes(kind: Kind, url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    def ours(name: str | None, type_: str, parents: dict[str, str | None]) -> bool:
        table = name if type_ == "table" else parents.get("table_name")
        return type_ == "schema" or table in kind.tables

    with kind.cls.from_conn_string(url) as it:
        it.setup()
        with it._saver._sync_engine(read=True).connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "include_name": ours}
            )
            assert compare_metadata(context, kind.metadata) == []


def test_the_alembic_command_line_sets_the_tables_up(kind: Kind, url: str) -> None:
    ini = kind.cls.SCHEMA.migrations / "alembic.ini"
    run("-m", "alembic", "-c", str(ini), "-x", f"url={url}", "upgrade", "head")
    with kind.cls.from_conn_string(url) as it:  # no setup(): the tables are there
        kind.write(it)
        assert kind.read(it) == {"v": 1}
