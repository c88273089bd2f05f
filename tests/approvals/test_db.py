"""`bot.approvals.db.Database`: upgrade (idempotent, concurrent, refusing newer schemas), transactions,
and a database that cannot be reached, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from bot.approvals import tables
from bot.approvals._migrate import SCHEMA
from bot.approvals.db import MIGRATIONS_DIR, Database, DatabaseUnavailable, SchemaVersionError
from graphs.checkpoint._sql import tables as checkpoint_tables
from graphs.checkpoint._sql.schema import SCHEMA as CHECKPOINT_SCHEMA
from tests.kit.pg import admin_conninfo as _admin_conninfo
from tests.kit.together import run_together

GOVERNANCE = set(tables.metadata.tables)
CHECKPOINTS = set(checkpoint_tables.metadata.tables)


async def table_names(db: Database) -> set[str]:
    async with db.read() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def versions(db: Database, table: str) -> list[str]:
    async with db.read() as conn:
        return list((await conn.exec_driver_sql(f"SELECT version_num FROM {table}")).scalars())


# ---- upgrade ------------------------------------------------------------------------------


def test_schema_revision_is_the_newest_migration() -> None:
    assert ScriptDirectory(str(MIGRATIONS_DIR)).get_heads() == [tables.SCHEMA_REVISION]


async def test_upgrade_creates_both_schemas_and_is_idempotent(db_url: str) -> None:
    async with Database(db_url) as db:
        await db.upgrade()
        await db.upgrade()
        await asyncio.to_thread(db.upgrade_sync)
        names = await table_names(db)
        assert GOVERNANCE | CHECKPOINTS <= names
        assert names - GOVERNANCE - CHECKPOINTS == {
            tables.VERSION_TABLE,
            checkpoint_tables.VERSION_TABLE,
        }
        assert await versions(db, tables.VERSION_TABLE) == [tables.SCHEMA_REVISION]
        assert await versions(db, checkpoint_tables.VERSION_TABLE) == [
            checkpoint_tables.SCHEMA_REVISION
        ]


async def test_migrations_create_exactly_the_tables_in_tables_py(db: Database) -> None:
    def ours(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
        if type_ == "schema":
            return True
        table = name if type_ == "table" else parent_names.get("table_name")
        return table in GOVERNANCE

    def diff(conn: sa.Connection) -> list[object]:
        opts = {"compare_type": True, "include_name": ours}
        return list(compare_metadata(MigrationContext.configure(conn, opts=opts), tables.metadata))

    async with db.read() as conn:
        assert await conn.run_sync(diff) == []


async def test_a_database_of_the_first_revision_is_upgraded_with_its_pending_jobs(
    db_url: str,
) -> None:
    """a0002 replaced the jobs' index (the claim walks the pending jobs by kind): a database
    made by the first release keeps its queue."""
    from alembic import command
    from alembic.config import Config

    def to_first_revision(conn: sa.Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        config.attributes["connection"] = conn
        command.upgrade(config, "a0001")

    def indexes(conn: sa.Connection) -> set[str]:
        return {ix["name"] for ix in sa.inspect(conn).get_indexes("jobs")}

    async with Database(db_url) as db:
        async with db.transaction() as conn:
            await conn.run_sync(to_first_revision)
            assert "ix_jobs_due" in await conn.run_sync(indexes)
            await conn.execute(
                tables.jobs.insert(),
                [
                    {"kind": "event", "key": f"event:{i}", "thread_id": "t1", "payload": "{}",
                     "attempts": 0, "available_at": 0.0, "created_at": 0.0, "done_at": 1.0 if i == 0 else None}
                    for i in range(3)
                ],
            )  # fmt: skip
        await db.upgrade()
        assert await versions(db, tables.VERSION_TABLE) == [tables.SCHEMA_REVISION]
        async with db.read() as conn:
            assert {"ix_jobs_pending", "ix_jobs_thread"} <= await conn.run_sync(indexes)
            assert "ix_jobs_due" not in await conn.run_sync(indexes)
            pending = tables.jobs.c.done_at.is_(None)
            keys = (
                await conn.execute(
                    sa.select(tables.jobs.c.key).where(pending).order_by(tables.jobs.c.id)
                )
            ).scalars()
            assert list(keys) == ["event:1", "event:2"]


def test_upgrade_sync_on_a_fresh_database(db_url: str) -> None:
    db = Database(db_url)
    try:
        db.upgrade_sync()
        db.upgrade_sync()
        with db.sync_engine.connect() as conn:
            assert conn.exec_driver_sql(
                f"SELECT version_num FROM {tables.VERSION_TABLE}"
            ).scalars().all() == [tables.SCHEMA_REVISION]
    finally:
        db.close()


@contextlib.contextmanager
def every_write_lock_held(db: Database) -> Iterator[None]:
    """Another process's hold on what a migration takes: SQLite's write lock (a transaction
    begun IMMEDIATE), or on PostgreSQL both schemas' migration locks."""
    if db.dialect == "sqlite":
        other = sqlite3.connect(db.url.database or "", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.close()
        return
    with psycopg.connect(_admin_conninfo(), autocommit=True) as other:
        for key in (SCHEMA.lock_key, CHECKPOINT_SCHEMA.lock_key):
            other.execute("SELECT pg_advisory_lock(%s)", (key,))
        yield


async def test_a_current_database_is_upgraded_without_waiting_for_anyone(
    db: Database, db_url: str
) -> None:
    """At every start but the first after an upgrade of signoff, both schemas are at head:
    `upgrade` sees it in one read, and neither waits for a lock another process holds nor
    changes anything."""
    with every_write_lock_held(db):
        async with Database(db_url) as other:
            async with asyncio.timeout(5):
                await other.upgrade()
            async with asyncio.timeout(5):
                await asyncio.to_thread(other.upgrade_sync)
            assert await versions(other, tables.VERSION_TABLE) == [tables.SCHEMA_REVISION]


UPGRADE = """
import asyncio
from bot.approvals.db import Database
url, mode = _sys.argv[1], _sys.argv[2]
db = Database(url)
wait_for_go()
if mode == "async":
    async def main():
        await db.upgrade()
        await db.aclose()
    asyncio.run(main())
else:
    db.upgrade_sync()
    db.close()
print("upgraded", flush=True)
"""


async def test_two_processes_upgrade_a_fresh_database_at_once(db_url: str) -> None:
    results = await asyncio.to_thread(run_together, UPGRADE, [[db_url, "async"], [db_url, "sync"]])
    for r in results:
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["upgraded"]
    async with Database(db_url) as db:
        assert await versions(db, tables.VERSION_TABLE) == [tables.SCHEMA_REVISION]
        assert await versions(db, checkpoint_tables.VERSION_TABLE) == [
            checkpoint_tables.SCHEMA_REVISION
        ]
        assert GOVERNANCE | CHECKPOINTS <= await table_names(db)


async def test_a_newer_governance_schema_is_refused(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.exec_driver_sql(f"UPDATE {tables.VERSION_TABLE} SET version_num = 'a9999'")
    expected = (
        f"{db.display_url} has governance schema revision 'a9999' (in table "
        f"signoff_schema_version), which this code does not know (it knows up to '{tables.SCHEMA_REVISION}'): the "
        "database was migrated by a newer signoff. Upgrade signoff; do not downgrade the database."
    )
    with pytest.raises(SchemaVersionError) as info:
        await db.upgrade()
    assert str(info.value) == expected
    assert (info.value.db_revision, info.value.code_revision) == ("a9999", tables.SCHEMA_REVISION)
    with pytest.raises(SchemaVersionError) as info:
        await asyncio.to_thread(db.upgrade_sync)
    assert str(info.value) == expected
    assert await versions(db, tables.VERSION_TABLE) == ["a9999"]


async def test_a_newer_schema_is_refused_before_the_checkpoints_are_touched(db_url: str) -> None:
    async with Database(db_url) as db:
        async with db.transaction() as conn:
            await conn.run_sync(lambda c: tables.metadata.create_all(c, tables=[]))
            await conn.exec_driver_sql(
                f"CREATE TABLE {tables.VERSION_TABLE} (version_num VARCHAR(32) NOT NULL)"
            )
            await conn.exec_driver_sql(f"INSERT INTO {tables.VERSION_TABLE} VALUES ('a9999')")
        with pytest.raises(SchemaVersionError):
            await db.upgrade()
        assert await table_names(db) == {tables.VERSION_TABLE}


# ---- transactions -------------------------------------------------------------------------


async def test_transaction_commits_and_rolls_back(db: Database) -> None:
    effect = {"kind": "refund", "thread_id": "t1", "data": "{}", "at": 1.0}
    async with db.transaction() as conn:
        await conn.execute(tables.effects.insert().values(key="kept", **effect))
    with pytest.raises(RuntimeError, match="boom"):
        async with db.transaction() as conn:
            await conn.execute(tables.effects.insert().values(key="lost", **effect))
            raise RuntimeError("boom")
    async with db.read() as conn:
        keys = (await conn.execute(sa.select(tables.effects.c.key))).scalars().all()
    assert keys == ["kept"]


async def test_read_is_not_blocked_by_a_writer_and_sees_committed_data(db: Database) -> None:
    effect = {"kind": "refund", "thread_id": "t1", "data": "{}", "at": 1.0}
    async with db.transaction() as writer:
        await writer.execute(tables.effects.insert().values(key="pending", **effect))
        async with db.read() as conn:
            count = await conn.execute(sa.select(sa.func.count()).select_from(tables.effects))
            assert count.scalar() == 0


async def test_sqlite_write_transactions_queue_instead_of_failing(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'queue.db'}")
    await db.upgrade()

    async def bump(i: int) -> None:
        async with db.transaction() as conn:
            n = await conn.execute(sa.select(sa.func.count()).select_from(tables.effects))
            count = n.scalar()
            await asyncio.sleep(0.001)  # read-then-write: would race without BEGIN IMMEDIATE
            await conn.execute(
                tables.effects.insert().values(kind="k", key=str(count), data="{}", at=float(i))
            )

    await asyncio.gather(*(bump(i) for i in range(20)))
    async with db.read() as conn:
        keys = (await conn.execute(sa.select(tables.effects.c.key))).scalars().all()
    assert sorted(keys, key=int) == [str(i) for i in range(20)]
    await db.aclose()


def test_urls_the_bot_cannot_use_are_refused() -> None:
    with pytest.raises(ValueError, match="in-memory SQLite database cannot hold"):
        Database("sqlite://")
    with pytest.raises(ValueError, match="unsupported database URL 'mysql://u@h/db'"):
        Database("mysql://u@h/db")


# ---- a database that cannot be reached -----------------------------------------------------


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


async def test_ping_answers_on_a_live_database(db: Database) -> None:
    await db.ping()


async def test_postgres_that_is_down_is_unavailable_everywhere(free_port: int) -> None:
    url = f"postgresql://signoff:secret@127.0.0.1:{free_port}/signoff"
    async with Database(url) as db:
        for attempt in (db.ping, db.upgrade, db.transaction, db.read):
            with pytest.raises(DatabaseUnavailable) as info:
                if attempt in (db.transaction, db.read):
                    async with attempt():  # type: ignore[operator]
                        pass
                else:
                    await attempt()  # type: ignore[operator]
            message = info.value.message
            shown = f"postgresql://signoff:***@127.0.0.1:{free_port}/signoff"
            assert message.startswith(f"cannot reach the database {shown} (")
            assert "Connection refused" in message
            assert message.endswith(
                f"; check that PostgreSQL is running and accepts connections at "
                f"127.0.0.1:{free_port}, that database 'signoff' and user 'signoff' exist, and "
                "that SIGNOFF_DATABASE_URL is right"
            )
            assert "secret" not in message
            assert pickle.loads(pickle.dumps(info.value)).message == message
            assert info.value.url == shown
        with pytest.raises(DatabaseUnavailable, match="cannot reach the database"):
            await asyncio.to_thread(db.upgrade_sync)


async def test_ping_gives_up_on_a_server_that_does_not_answer(silent_server: int) -> None:
    async with Database(f"postgresql://signoff@127.0.0.1:{silent_server}/signoff") as db:
        with pytest.raises(DatabaseUnavailable) as info:
            await db.ping(timeout=0.3)
    assert str(info.value) == (
        f"the database postgresql://signoff@127.0.0.1:{silent_server}/signoff did not answer "
        f"within 0.3 s; check that PostgreSQL is running and accepts connections at "
        f"127.0.0.1:{silent_server}, that database 'signoff' and user 'signoff' exist, and "
        "that SIGNOFF_DATABASE_URL is right"
    )


async def test_sqlite_file_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "signoff.db"
    async with Database(f"sqlite:///{path}") as db:
        with pytest.raises(DatabaseUnavailable) as info:
            await db.ping()
    assert str(info.value) == (
        f"cannot open the database sqlite:///{path} (unable to open database file); check "
        f"that the directory of '{path}' exists and that this user may read and write there, "
        "and that SIGNOFF_DATABASE_URL names the right file"
    )


@pytest.mark.postgres
async def test_a_connection_dropped_mid_transaction_is_unavailable(pg_url: str) -> None:
    async with Database(pg_url) as db:
        with pytest.raises(DatabaseUnavailable, match="cannot reach the database"):
            async with db.transaction() as conn:
                pid = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar()
                with psycopg.connect(_admin_conninfo(), autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                await conn.exec_driver_sql("SELECT 1")
        await db.ping()  # the pool recovers: the next connection is a fresh one
