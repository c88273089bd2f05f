"""`SQLSaver` at the saver level, on SQLite and PostgreSQL: storage, schema, status, pruning, locks.

The shared contract (round trip, compare-and-set, write order, list, copies, every runtime
feature) is in test_contract.py; here is what is particular to the SQL saver, with the same
operations replayed on `InMemorySaver` wherever its behaviour is the reference.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest

from graphs import (
    CheckpointConflictError,
    CheckpointFormatError,
    InMemorySaver,
    Interrupt,
    ThreadBusyError,
)
from graphs.checkpoint import Checkpoint
from graphs.checkpoint.base import DONE, ERROR, INTERRUPT, RESUME
from graphs.checkpoint.sql import PausedThread, SQLSaver
from graphs.errors import SchemaVersionError
from tests.kit import sql_worker

WORKER = sql_worker.PATH


def thread(name: str = "t", ns: str = "") -> dict[str, Any]:
    return {"configurable": {"thread_id": name, "checkpoint_ns": ns}}


def checkpoint(
    seq: int,
    values: dict[str, Any],
    versions: dict[str, int],
    *,
    next_tasks: list[list[str]] | None = None,
    paused: list[str] | None = None,
    appended: dict[str, int] | None = None,
) -> Checkpoint:
    return Checkpoint(
        v=1,
        id=f"{seq:012x}-0000000{seq % 10}",
        ts=f"2026-01-01T00:{seq // 60:02d}:{seq % 60:02d}+00:00",
        channel_values=values,
        channel_versions=versions,
        next_tasks=[["node", f"task{seq}"]] if next_tasks is None else next_tasks,
        paused=paused or [],
        appended=appended or {},
    )


def chat(saver: Any, config: dict[str, Any], turns: int, start: int = 0) -> list[dict[str, Any]]:
    """A chat thread: `messages` grows by one item a turn, `turn` changes, `owner` never does."""
    configs, parent = [], config
    messages: list[Any] = []
    for seq in range(start, start + turns):
        if seq:
            messages = [*messages, {"role": "user", "n": seq, "text": "x" * 100}]
        new_versions = {"messages": seq + 1, "turn": seq + 1}
        if seq == 0:
            new_versions["owner"] = 1
        cp = checkpoint(
            seq,
            {"messages": messages, "turn": seq, "owner": "ada"},
            {"messages": seq + 1, "turn": seq + 1, "owner": 1},
            appended={"messages": 1} if seq else {},
        )
        parent = saver.put(parent, cp, {"source": "loop", "step": seq}, new_versions)
        configs.append(parent)
    return configs


def sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the test database, outside the saver."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(statement, params).fetchall()
    import psycopg

    with psycopg.connect(url.replace("postgresql://", "postgresql://", 1), autocommit=True) as conn:
        cur = conn.execute(statement.replace("?", "%s"), params)
        return cur.fetchall() if cur.description else []


# ---- the same observable behaviour as InMemorySaver -----------------------------------------


def test_every_read_matches_the_in_memory_saver(saver: SQLSaver) -> None:
    memory = InMemorySaver()
    for s in (saver, memory):
        chat(s, thread("a"), 12)
        chat(s, thread("a", "sub"), 3)
        configs = chat(s, thread("b"), 5)
        s.put_writes(configs[-1], [("x", 1), ("y", {"deep": [1, 2]})], "task-1")
        s.put_writes(configs[-1], [("x", 2)], "task-2")
        s.put_writes(configs[-1], [("z", (1, "tuple"))], "task-1")
        s.put_writes(configs[1], [(DONE, None)], "old")

    for config in (thread("a"), thread("a", "sub"), thread("b"), thread("nobody")):
        assert saver.get_tuple(config) == memory.get_tuple(config)
        assert list(saver.list(config)) == list(memory.list(config))
        some = list(memory.list(config))
        if some:
            middle = some[len(some) // 2].config
            assert saver.get_tuple(middle) == memory.get_tuple(middle)
            assert list(saver.list(config, before=middle, limit=3)) == list(
                memory.list(config, before=middle, limit=3)
            )
    # list(None): every thread (namespace by namespace, newest first within each)
    assert sorted(saver.list(None), key=_key) == sorted(memory.list(None), key=_key)
    assert len(list(saver.list(None, limit=4))) == 4
    head = saver.get_tuple(thread("b"))
    assert head is not None
    assert [w.task_id for w in head.pending_writes] == ["task-1", "task-1", "task-2", "task-1"]
    assert head.pending_writes[3].value == (1, "tuple")


def _key(t: Any) -> tuple[str, str, str]:
    c = t.config["configurable"]
    return (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])


def test_conflicting_put_names_the_thread_and_writes_nothing(saver: SQLSaver, db_url: str) -> None:
    configs = chat(saver, thread("t"), 3)
    before = list(saver.list(thread("t")))
    stale = checkpoint(
        9, {"messages": [], "turn": 9, "owner": "x"}, {"messages": 9, "turn": 9, "owner": 9}
    )
    with pytest.raises(CheckpointConflictError, match="thread 't' moved on") as err:
        saver.put(configs[0], stale, {}, {"messages": 9, "turn": 9, "owner": 9})
    assert err.value.thread_id == "t"
    with pytest.raises(CheckpointConflictError):  # a second "new thread" with the same id
        saver.put(thread("t"), stale, {}, {"turn": 9})
    assert list(saver.list(thread("t"))) == before
    assert sql(db_url, "SELECT count(*) FROM checkpoint_blobs WHERE version = 9") == [(0,)]


# ---- storage: per channel version, appended lists as deltas ------------------------------


def test_unchanged_channels_are_not_written_again_and_appends_cost_what_was_appended(
    saver: SQLSaver,
    db_url: str,
) -> None:
    turns = 201
    configs = chat(saver, thread("chat"), turns)
    url = db_url
    rows = dict(sql(url, "SELECT channel, count(*) FROM checkpoint_blobs GROUP BY channel"))
    assert rows == {"owner": 1, "turn": turns, "messages": turns}

    final = saver.get_tuple(thread("chat"))
    assert final is not None
    messages = final.checkpoint["channel_values"]["messages"]
    assert len(messages) == turns - 1 and messages[-1]["n"] == turns - 1
    final_size = len(json.dumps(messages, separators=(",", ":")))
    stored = sql(url, "SELECT sum(length(value)) FROM checkpoint_blobs WHERE channel = 'messages'")
    # each message is stored once (O(n)), not once per checkpoint (O(n^2): ~100x here)
    assert stored[0][0] < 1.1 * final_size
    everything = sql(
        url,
        "SELECT (SELECT sum(length(value)) FROM checkpoint_blobs)"
        " + (SELECT sum(length(record) + length(metadata)) FROM checkpoints)",
    )
    assert everything[0][0] < 3 * final_size

    # any checkpoint in the middle reads back exactly
    middle = saver.get_tuple(configs[57])
    assert middle is not None
    assert [m["n"] for m in middle.checkpoint["channel_values"]["messages"]] == list(range(1, 58))
    assert middle.checkpoint["channel_values"]["owner"] == "ada"


def test_a_delta_that_does_not_fit_the_stored_list_is_stored_whole(
    saver: SQLSaver, db_url: str
) -> None:
    parent = saver.put(thread(), checkpoint(0, {"l": [1, 2]}, {"l": 1}), {}, {"l": 1})
    # `appended` claims one new item, but the stored list had 2 and the new one has 5
    cp = checkpoint(1, {"l": [1, 2, 3, 4, 5]}, {"l": 2}, appended={"l": 1})
    saver.put(parent, cp, {}, {"l": 2})
    got = saver.get_tuple(thread())
    assert got is not None and got.checkpoint["channel_values"]["l"] == [1, 2, 3, 4, 5]
    assert sql(db_url, "SELECT prev_version FROM checkpoint_blobs WHERE version = 2") == [(None,)]


def test_a_channel_that_lost_its_value_reads_as_absent(saver: SQLSaver) -> None:
    memory = InMemorySaver()
    for s in (saver, memory):
        parent = s.put(
            thread(), checkpoint(0, {"l": [1], "k": 1}, {"l": 1, "k": 1}), {}, {"l": 1, "k": 1}
        )
        parent = s.put(parent, checkpoint(1, {"k": 2}, {"l": 2, "k": 2}), {}, {"l": 2, "k": 2})
        s.put(
            parent,
            checkpoint(2, {"l": [7], "k": 2}, {"l": 3, "k": 2}, appended={"l": 1}),
            {},
            {"l": 3},
        )
    assert list(saver.list(thread())) == list(memory.list(thread()))


# ---- unreadable data ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [b'{"$t":["no-such-type",1]}', b"not json at all"],
    ids=["unknown-tag", "not-json"],
)
def test_an_unreadable_value_names_the_thread_and_the_channel(
    saver: SQLSaver, db_url: str, bad: bytes
) -> None:
    chat(saver, thread("refund-7"), 3)
    sql(db_url, "UPDATE checkpoint_blobs SET value = ? WHERE channel = 'owner'", bad)
    with pytest.raises(CheckpointFormatError) as err:
        saver.get_tuple(thread("refund-7"))
    assert err.value.thread_id == "refund-7" and err.value.channel == "owner"
    assert "thread 'refund-7', channel 'owner'" in str(err.value)


def test_a_broken_append_chain_names_the_thread_and_the_channel(
    saver: SQLSaver, db_url: str
) -> None:
    chat(saver, thread("c"), 6)
    sql(db_url, "DELETE FROM checkpoint_blobs WHERE channel = 'messages' AND version = 3")
    with pytest.raises(CheckpointFormatError, match="thread 'c', channel 'messages'.*missing"):
        saver.get_tuple(thread("c"))


def test_a_record_of_an_unknown_format_version_is_refused(saver: SQLSaver, db_url: str) -> None:
    chat(saver, thread("c"), 2)
    sql(db_url, "UPDATE checkpoints SET record = ?", b'{"v":99,"d":{}}')
    with pytest.raises(CheckpointFormatError, match="thread 'c'.*format version 99"):
        saver.get_tuple(thread("c"))


# ---- schema ---------------------------------------------------------------------------------


def test_setup_is_idempotent_and_the_revision_is_the_migrations_head(
    saver: SQLSaver, db_url: str
) -> None:
    from alembic.script import ScriptDirectory

    from graphs.checkpoint._sql.tables import SCHEMA_REVISION
    from graphs.checkpoint.sql import MIGRATIONS_DIR

    assert ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head() == SCHEMA_REVISION
    chat(saver, thread(), 2)
    saver.setup()
    with SQLSaver.from_conn_string(saver.url) as other:
        other.setup()
    assert len(list(saver.list(thread()))) == 2
    assert sql(db_url, "SELECT version_num FROM checkpoint_schema_version") == [(SCHEMA_REVISION,)]


def test_the_tables_match_the_migrations(saver: SQLSaver) -> None:
    import sqlalchemy as sa
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from graphs.checkpoint._sql.tables import metadata

    engine = saver._sync_engine()
    assert isinstance(engine, sa.Engine)
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"version_table": "checkpoint_schema_version"}),
            metadata,
        )
    assert diff == []


async def test_asetup_and_async_calls(db_url: str) -> None:
    async with SQLSaver.afrom_conn_string(db_url) as saver:
        await saver.asetup()
        await saver.asetup()
        cp = checkpoint(0, {"l": [1]}, {"l": 1})
        config = await saver.aput(thread("a"), cp, {"step": 0}, {"l": 1})
        cp = checkpoint(1, {"l": [1, 2]}, {"l": 2}, paused=["n"], appended={"l": 1})
        config = await saver.aput(config, cp, {"step": 1}, {"l": 2})
        await saver.aput_writes(config, [("x", 1)], "t1")
        got = await saver.aget_tuple(thread("a"))
        assert got is not None and got.checkpoint["channel_values"] == {"l": [1, 2]}
        assert [w.value for w in got.pending_writes] == [1]
        assert [t.checkpoint["id"] async for t in saver.alist(thread("a"))] == [
            cp["id"],
            "000000000000-00000000",
        ]
        assert [p.thread_id for p in await saver.alist_paused()] == ["a"]
        async with saver.alock_thread(thread("a")):
            with pytest.raises(ThreadBusyError):
                async with saver.alock_thread(thread("a")):
                    pass
        assert await saver.aprune("a", keep_last=1) == 1
        await saver.adelete_thread("a")
        assert await saver.aget_tuple(thread("a")) is None


@pytest.mark.parametrize("one_trip_driver", [True, False])
async def test_async_calls_on_sqlite_with_and_without_the_one_trip_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_trip_driver: bool
) -> None:
    """Where the installed SQLAlchemy or aiosqlite is not the one `_sql.one_trip` is written
    against, the async saver runs on SQLAlchemy's own adapter, with the same results."""
    from graphs.checkpoint._sql import one_trip

    if not one_trip_driver:
        monkeypatch.setattr(one_trip, "_supported", lambda: False)
    async with SQLSaver.afrom_conn_string(f"sqlite:///{tmp_path / 'a.db'}") as saver:
        await saver.asetup()
        dbapi = saver._async_engine().sync_engine.dialect.dbapi
        assert isinstance(dbapi, one_trip._OneTripDBAPI) is one_trip_driver
        cp = checkpoint(0, {"l": [1]}, {"l": 1})
        config = await saver.aput(thread("a"), cp, {"step": 0}, {"l": 1})
        await saver.aput_writes(config, [("x", 1), ("y", 2)], "t1")
        got = await saver.aget_tuple(thread("a"))
        assert got is not None and got.checkpoint["channel_values"] == {"l": [1]}
        assert [w.value for w in got.pending_writes] == [1, 2]
        assert [t.checkpoint["id"] async for t in saver.alist(thread("a"))] == [cp["id"]]


def test_a_database_without_tables_asks_for_setup(db_url: str) -> None:
    with SQLSaver.from_conn_string(db_url) as saver:
        with pytest.raises(SchemaVersionError, match=r"call setup\(\)") as err:
            saver.get_tuple(thread())
        assert err.value.db_revision is None and err.value.code_revision == "0001"


def test_a_newer_schema_is_refused_naming_both_revisions(saver: SQLSaver, db_url: str) -> None:
    sql(db_url, "UPDATE checkpoint_schema_version SET version_num = '9999'")
    for attempt in (lambda s: s.setup(), lambda s: s.get_tuple(thread())):
        with (
            SQLSaver.from_conn_string(saver.url) as fresh,
            pytest.raises(SchemaVersionError) as err,
        ):
            attempt(fresh)
        assert (err.value.db_revision, err.value.code_revision) == ("9999", "0001")
        assert "'9999'" in str(err.value) and "'0001'" in str(err.value)
        assert "newer signoff" in str(err.value)


def test_setup_from_two_processes_at_once_on_a_fresh_database(db_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, "setup", db_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [r[1].decode()[-2000:] for r in results]
    with SQLSaver.from_conn_string(db_url) as saver:
        chat(saver, thread(), 2)  # no setup() here: the schema is there
        assert len(list(saver.list(thread()))) == 2


# ---- thread status: what is paused, since when, waiting on what -------------------------


def test_connections_opening_at_once_on_a_fresh_file_all_get_in(tmp_path: Path) -> None:
    """Switching a fresh SQLite file to WAL takes an exclusive lock, and when two connections
    try at once SQLite answers one of them "database is locked" at once, busy timeout or not
    (waiting would deadlock). Opening a connection must retry that, not fail: a bot and a
    worker started together on a new file, or a pool opening several at once, failed now and
    then (about one run in four with four connections, measured)."""
    for attempt in range(20):
        url = f"sqlite:///{tmp_path / f'fresh-{attempt}.db'}"
        savers = [SQLSaver(url) for _ in range(4)]
        engines = [saver._sync_engine() for saver in savers]  # built before the start line
        start = threading.Barrier(len(engines))
        failures: list[BaseException] = []

        def connect(
            engine: Any, start: threading.Barrier = start, failures: list[BaseException] = failures
        ) -> None:
            start.wait()
            try:
                engine.connect().close()  # the connection's pragmas, WAL among them
            except Exception as e:  # noqa: BLE001 -- collected for the assertion
                failures.append(e)

        workers = [threading.Thread(target=connect, args=(engine,)) for engine in engines]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        for saver in savers:
            saver.close()
        assert failures == [], f"attempt {attempt}: {failures[0]!r}"


def interrupt_(value: Any, id: str, node: str = "ask") -> Interrupt:
    return Interrupt(value, id, node)


def test_list_paused_follows_what_the_runtime_writes(saver: SQLSaver) -> None:
    # static pause
    static = saver.put(thread("static"), checkpoint(0, {}, {}, paused=["act"]), {}, {})
    # interrupt() pause, two questions
    asked = saver.put(thread("asked"), checkpoint(0, {}, {}), {}, {})
    saver.put_writes(asked, [(INTERRUPT, interrupt_({"amount": 42}, "i1"))], "task0")
    saver.put_writes(asked, [(INTERRUPT, interrupt_("sure?", "i2"))], "task0")
    # finished, failed, running
    saver.put(thread("done"), checkpoint(0, {}, {}, next_tasks=[]), {}, {})
    failed = saver.put(thread("failed"), checkpoint(0, {}, {}), {}, {})
    saver.put_writes(failed, [(ERROR, "ValueError: boom")], "task0")
    saver.put(thread("running"), checkpoint(0, {}, {}), {}, {})

    paused = saver.list_paused()
    assert [p.thread_id for p in paused] == ["static", "asked"]
    assert paused[0] == PausedThread(
        "static", "", static["configurable"]["checkpoint_id"], paused[0].paused_since, (), ("act",)
    )
    assert paused[1].interrupts == (interrupt_({"amount": 42}, "i1"), interrupt_("sure?", "i2"))
    assert paused[1].checkpoint_id == asked["configurable"]["checkpoint_id"]
    assert abs(paused[1].paused_since - datetime.now(UTC)) < timedelta(minutes=1)
    assert paused[1].config == thread("asked")
    statuses = {
        t: saver.get_status(thread(t)) for t in ("static", "asked", "done", "failed", "running")
    }
    assert statuses == {
        "static": "paused",
        "asked": "paused",
        "done": "done",
        "failed": "failed",
        "running": "running",
    }
    assert saver.get_status(thread("nobody")) is None

    # one answer: still paused, since the same moment, on the other question
    since = paused[1].paused_since
    saver.put_writes(asked, [(RESUME, ["i1", {"approved": True}])], "task0")
    (still,) = [p for p in saver.list_paused() if p.thread_id == "asked"]
    assert still.interrupts == (interrupt_("sure?", "i2"),) and still.paused_since == since
    # the last answer: running; a write to an older checkpoint changes nothing
    saver.put_writes(asked, [(RESUME, ["i2", "yes"])], "task0")
    assert saver.get_status(thread("asked")) == "running"
    saver.put_writes(static, [(INTERRUPT, interrupt_("old", "i9"))], "x")
    assert saver.get_status(thread("static")) == "paused"
    # the static pause goes on with a new checkpoint
    saver.put(static, checkpoint(1, {}, {}, next_tasks=[]), {}, {})
    assert [p.thread_id for p in saver.list_paused()] == []

    assert saver.list_paused(paused_before=datetime(2000, 1, 1, tzinfo=UTC)) == []


def test_list_paused_is_one_query_on_the_status_index(saver: SQLSaver, db_url: str) -> None:
    url = db_url
    query = (
        "SELECT thread_id FROM checkpoint_threads WHERE status = 'paused' AND paused_since < 1e300 "
        "ORDER BY paused_since LIMIT 10"
    )
    if url.startswith("sqlite"):
        plan = " ".join(str(r) for r in sql(url, "EXPLAIN QUERY PLAN " + query))
        assert "ix_checkpoint_threads_paused" in plan and "SCAN checkpoint_threads" not in plan
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + query))
        assert "ix_checkpoint_threads_paused" in plan


def test_an_update_on_a_paused_thread_keeps_it_paused_since_the_same_time(saver: SQLSaver) -> None:
    first = saver.put(thread(), checkpoint(0, {}, {}, paused=["act"]), {}, {})
    (before,) = saver.list_paused()
    time.sleep(0.01)
    saver.put(
        first, checkpoint(1, {"x": 1}, {"x": 1}, paused=["act"]), {"source": "update"}, {"x": 1}
    )
    (after,) = saver.list_paused()
    assert after.paused_since == before.paused_since and after.checkpoint_id != before.checkpoint_id


# ---- pruning --------------------------------------------------------------------------------


def test_prune_keeps_what_the_kept_checkpoints_need(saver: SQLSaver, db_url: str) -> None:
    configs = chat(saver, thread("p"), 20)
    saver.put_writes(configs[-1], [(INTERRUPT, interrupt_("ok?", "i1"))], "task19")
    head_before = saver.get_tuple(thread("p"))
    third = saver.get_tuple(configs[-3])

    assert saver.prune("p", keep_last=3) == 17
    assert saver.prune("p", keep_last=3) == 0
    assert saver.get_tuple(thread("p")) == head_before  # writes, old `owner`, the whole chain
    assert saver.get_tuple(configs[-3]) == third
    assert len(list(saver.list(thread("p")))) == 3
    assert saver.get_tuple(configs[5]) is None
    rows = dict(sql(db_url, "SELECT channel, count(*) FROM checkpoint_blobs GROUP BY channel"))
    assert rows["turn"] == 3 and rows["owner"] == 1
    assert [p.thread_id for p in saver.list_paused()] == ["p"]

    # the thread goes on after pruning, appending to the kept chain
    chat_more = checkpoint(
        20,
        {
            "messages": [*head_before.checkpoint["channel_values"]["messages"], {"n": 20}],
            "turn": 20,
            "owner": "ada",
        },
        {"messages": 21, "turn": 21, "owner": 1},
        appended={"messages": 1},
    )
    saver.put(configs[-1], chat_more, {}, {"messages": 21, "turn": 21})
    got = saver.get_tuple(thread("p"))
    assert got is not None and len(got.checkpoint["channel_values"]["messages"]) == 20
    assert sql(
        db_url,
        "SELECT prev_version FROM checkpoint_blobs WHERE version = 21 AND channel = 'messages'",
    ) == [(20,)]

    with pytest.raises(ValueError, match="keep_last"):
        saver.prune("p", keep_last=0)


def test_prune_every_thread(saver: SQLSaver) -> None:
    for name in ("a", "b"):
        chat(saver, thread(name), 5)
    assert saver.prune(keep_last=2) == 6
    assert [len(list(saver.list(thread(n)))) for n in ("a", "b")] == [2, 2]


def test_prune_finished_removes_only_old_finished_threads(saver: SQLSaver, db_url: str) -> None:
    saver.put(thread("done"), checkpoint(0, {"x": 1}, {"x": 1}, next_tasks=[]), {}, {"x": 1})
    saver.put(thread("paused"), checkpoint(0, {"x": 1}, {"x": 1}, paused=["n"]), {}, {"x": 1})
    saver.put(thread("running"), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
    failed = saver.put(thread("failed"), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
    saver.put_writes(failed, [(ERROR, "boom")], "t")

    assert saver.prune_finished(timedelta(days=1)) == 0
    time.sleep(0.01)
    assert saver.prune_finished(timedelta(0)) == 1
    assert saver.get_tuple(thread("done")) is None
    for name in ("paused", "running", "failed"):
        assert saver.get_tuple(thread(name)) is not None
    assert sql(db_url, "SELECT count(*) FROM checkpoint_blobs") == [(3,)]


# ---- one run per thread, across processes ----------------------------------------------


def test_lock_thread_across_processes_and_released_when_the_holder_is_killed(
    saver: SQLSaver,
    db_url: str,
) -> None:
    url = db_url
    holder = subprocess.Popen(
        [sys.executable, WORKER, "hold", url, "t"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"holding"
        with (
            pytest.raises(
                ThreadBusyError, match="thread 't' is being run by another process"
            ) as err,
            saver.lock_thread(thread("t")),
        ):
            pass
        assert err.value.thread_id == "t"
        # a third process is refused too, and another thread is free
        other = subprocess.run(
            [sys.executable, WORKER, "try", url, "t"], capture_output=True, timeout=60, check=False
        )
        assert other.stdout.strip() == b"busy", other.stderr.decode()[-2000:]
        with saver.lock_thread(thread("u")):
            pass

        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 10
        while True:  # PostgreSQL notices the dead session at once; allow it a moment
            try:
                with saver.lock_thread(thread("t")):
                    break
            except ThreadBusyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        holder.kill()
        holder.communicate()
    # in one process, a second holder is refused too
    with (
        saver.lock_thread(thread("t")),
        SQLSaver.from_conn_string(saver.url) as other,
        pytest.raises(ThreadBusyError),
        other.lock_thread(thread("t")),
    ):
        pass


# ---- misc -----------------------------------------------------------------------------------


def test_importing_graphs_does_not_import_sqlalchemy() -> None:
    code = (
        "import sys, graphs, graphs.checkpoint\n"
        "assert 'sqlalchemy' not in sys.modules\n"
        "graphs.checkpoint.SQLSaver\n"
        "assert 'sqlalchemy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_urls() -> None:
    assert SQLSaver("postgres://u@h/db").url.drivername == "postgresql"
    assert SQLSaver("postgresql+psycopg://u@h/db").url.drivername == "postgresql"
    assert SQLSaver("sqlite+aiosqlite:///x.db").url.drivername == "sqlite"
    with pytest.raises(ValueError, match="unsupported database URL 'mysql://u@h/db'"):
        SQLSaver("mysql://u@h/db")
    with pytest.raises(ValueError, match="unsupported"):
        SQLSaver("postgresql+psycopg2://u@h/db")
    assert "secret" not in repr(SQLSaver("postgresql://u:secret@h/db"))


def test_an_in_memory_database_works_in_one_process() -> None:
    with SQLSaver.from_conn_string("sqlite://") as saver:
        saver.setup()
        chat(saver, thread(), 3)
        assert len(list(saver.list(thread()))) == 3
        assert asyncio.run(saver.aget_tuple(thread())) == saver.get_tuple(thread())


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_a_graph_runs_on_an_in_memory_database(url: str) -> None:
    # The in-memory saver holds its threads with the base class's lock; its own table of lock
    # connections once had the same attribute name, and every run failed taking the lock.
    from graphs import END, START, StateGraph

    class State(TypedDict):
        n: int

    builder = StateGraph(State)
    builder.add_node("inc", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "inc").add_edge("inc", END)
    with SQLSaver.from_conn_string(url) as saver:
        saver.setup()
        app = builder.compile(checkpointer=saver)
        assert app.invoke({"n": 1}, thread("mem")) == {"n": 2}
        assert asyncio.run(app.ainvoke({"n": 5}, thread("amem"))) == {"n": 6}
        assert app.get_state(thread("mem")).values == {"n": 2}


# ---- golden data: what every schema revision stored still reads --------------------------


@pytest.mark.parametrize(
    "golden", sorted(Path(__file__).with_name("golden").glob("sql_rev*.json")), ids=lambda p: p.stem
)
def test_rows_stored_by_each_schema_revision_still_read(saver: SQLSaver, golden: Path) -> None:
    import sqlalchemy as sa

    from graphs.checkpoint import serde
    from graphs.checkpoint._sql.tables import metadata

    data = json.loads(golden.read_text())
    with saver._sync_engine().begin() as conn:
        for table in metadata.sorted_tables:
            binary = {c.name for c in table.columns if isinstance(c.type, sa.LargeBinary)}
            rows = [
                {k: (v.encode() if k in binary and v is not None else v) for k, v in row.items()}
                for row in data["tables"][table.name]
            ]
            if rows:
                conn.execute(table.insert(), rows)
    saver.setup()  # brings the rows up to this code's revision

    head = saver.get_tuple(thread("golden"))
    assert head is not None
    expect = data["expect"]
    assert head.checkpoint["id"] == expect["checkpoint_id"]
    assert head.parent_config is not None
    assert head.parent_config["configurable"]["checkpoint_id"] == expect["parent_id"]
    assert head.checkpoint["channel_values"] == serde.loads(expect["values"])
    assert head.metadata == serde.loads(expect["metadata"])
    assert [list(w) for w in head.pending_writes] == serde.loads(expect["pending_writes"])
    assert [list(p.interrupts) for p in saver.list_paused()] == serde.loads(expect["paused"])
