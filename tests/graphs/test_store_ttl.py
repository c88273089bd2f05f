"""Store TTLs as LangGraph's (`TTLConfig`, `put(..., ttl=)` in minutes, `refresh_ttl`,
`PutOp.ttl`, `sweep_ttl`, the sweeper thread), on `InMemoryStore` and on `SQLStore` on a
SQLite file and on PostgreSQL: an expired item is never returned, even before a sweep.

Time is a clock the test moves (`clock=`), except where the wall clock is the point.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphs.checkpoint import serde
from graphs.store import (
    BaseStore,
    GetOp,
    InMemoryStore,
    Item,
    PutOp,
    SearchOp,
    TTLConfig,
)
from graphs.store.sql import SQLStore
from tests.kit.sql_tables import python, rows, run
from tests.kit.stores import Clock, MakeStore, keys, store_maker, store_url


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """`make(ttl=..., clock=...)`: a store of the kind, on one database for the test."""
    with store_maker(store_url(request.param, request, tmp_path)) as make:
        yield make


def test_an_item_with_a_ttl_is_gone_after_it_even_before_a_sweep(make: MakeStore) -> None:
    clock = Clock()
    store = make(clock=clock)
    assert store.supports_ttl
    store.put(("u",), "short", {"v": 1}, ttl=2)
    store.put(("u",), "forever", {"v": 2})
    store.put(("w",), "short", {"v": 3}, ttl=2)
    clock.minutes(1.9)
    assert store.get(("u",), "short", refresh_ttl=False) is not None
    clock.minutes(0.2)
    assert store.get(("u",), "short") is None
    assert keys(store.search(("u",))) == ["forever"]
    assert keys(store.search((), filter={"v": 3})) == []
    assert store.list_namespaces() == [("u",)]
    assert asyncio.run(store.aget(("w",), "short")) is None
    assert store.get(("u",), "forever") is not None
    assert store.sweep_ttl() == 2
    assert store.sweep_ttl() == 0


def test_a_read_counts_the_ttl_again_unless_told_not_to(make: MakeStore) -> None:
    clock = Clock()
    store = make(clock=clock)
    store.put(("u",), "a", {"v": 1}, ttl=10)
    store.put(("u",), "b", {"v": 2}, ttl=10)
    clock.minutes(8)
    assert store.get(("u",), "a") is not None  # refreshed: now lives to minute 18
    assert store.get(("u",), "b", refresh_ttl=False) is not None
    clock.minutes(4)  # minute 12
    assert store.get(("u",), "a", refresh_ttl=False) is not None
    assert store.get(("u",), "b") is None
    # search refreshes what it returns
    assert keys(store.search(("u",))) == ["a"]  # lives to minute 22
    clock.minutes(9)  # minute 21
    assert keys(store.search(("u",), refresh_ttl=False)) == ["a"]
    clock.minutes(2)  # minute 23
    assert keys(store.search(("u",))) == []


def test_ttl_config_gives_the_default_ttl_and_whether_reads_refresh(make: MakeStore) -> None:
    clock = Clock()
    config: TTLConfig = {"default_ttl": 5, "refresh_on_read": False}
    store = make(ttl=config, clock=clock)
    assert store.ttl_config == config
    store.put(("u",), "default", {"v": 1})
    store.put(("u",), "none", {"v": 2}, ttl=None)  # None: no expiry, as in LangGraph
    store.put(("u",), "own", {"v": 3}, ttl=20)
    clock.minutes(4)
    assert store.get(("u",), "default") is not None  # not refreshed: refresh_on_read False
    assert store.get(("u",), "own", refresh_ttl=True) is not None  # refreshed: to minute 24
    clock.minutes(2)
    assert store.get(("u",), "default") is None
    clock.minutes(17)  # minute 23
    assert keys(store.search(("u",))) == ["none", "own"]


def test_a_put_gives_a_new_ttl_and_a_put_after_expiry_makes_a_new_item(make: MakeStore) -> None:
    clock = Clock()
    store = make(clock=clock)
    store.put(("u",), "k", {"v": 1}, ttl=1)
    store.put(("u",), "other", {"v": 0})
    first = store.get(("u",), "k")
    clock.minutes(0.5)
    store.put(("u",), "k", {"v": 2}, ttl=1)  # lives to minute 1.5
    clock.minutes(0.9)
    kept = store.get(("u",), "k", refresh_ttl=False)
    assert isinstance(kept, Item) and kept.value == {"v": 2}
    assert first is not None and kept.created_at == first.created_at
    store.put(("u",), "k", {"v": 3})  # no ttl: no expiry any more
    clock.minutes(100)
    assert store.get(("u",), "k") is not None
    store.put(("u",), "k", {"v": 4}, ttl=1)
    clock.minutes(2)
    store.put(("u",), "k", {"v": 5})  # the expired one is gone: a new item, put last
    again = store.get(("u",), "k")
    assert again is not None and again.created_at > first.created_at
    assert keys(store.search(("u",))) == ["other", "k"]


def test_batch_takes_put_op_ttls_and_get_and_search_op_refresh(make: MakeStore) -> None:
    clock = Clock()
    store = make(clock=clock)
    store.batch([PutOp(("u",), "a", {"v": 1}, ttl=10), PutOp(("u",), "b", {"v": 2}, ttl=10)])
    clock.minutes(8)
    store.batch(
        [GetOp(("u",), "a", refresh_ttl=True), SearchOp(("u",), {"v": 2}, refresh_ttl=False)]
    )
    clock.minutes(4)
    got = asyncio.run(store.abatch([GetOp(("u",), "a"), GetOp(("u",), "b")]))
    assert isinstance(got[0], Item) and got[1] is None
    with pytest.raises(ValueError, match="positive number of minutes"):
        store.batch([PutOp(("u",), "c", {"v": 1}, ttl=-1)])
    assert store.get(("u",), "c") is None


def test_bad_ttls_are_refused(make: MakeStore) -> None:
    with pytest.raises(ValueError, match="TTLConfig takes"):
        make(ttl={"default": 5})
    with pytest.raises(ValueError, match="positive number of minutes"):
        make(ttl={"default_ttl": 0})
    store = make()
    for bad in (0, -1, float("inf"), "5", True):
        with pytest.raises(ValueError, match="positive number of minutes"):
            store.put(("u",), "k", {"v": 1}, ttl=bad)
    assert store.get(("u",), "k") is None


def test_a_store_without_ttls_refuses_a_put_op_with_one() -> None:
    class Plain(InMemoryStore):
        supports_ttl = False

    with pytest.raises(NotImplementedError, match="TTL is not supported by Plain"):
        Plain().batch([PutOp(("u",), "k", {"v": 1}, ttl=5)])


def _stored(store: BaseStore) -> int:
    """The items the store holds, expired or not."""
    if isinstance(store, InMemoryStore):
        return len(store._items)
    assert isinstance(store, SQLStore)
    url = store.url.render_as_string(hide_password=False)
    return len(rows(url, "SELECT key FROM store_items"))


def test_the_sweeper_thread_deletes_expired_items_on_the_wall_clock(make: MakeStore) -> None:
    store = make(ttl={"sweep_interval_minutes": 1})
    store.put(("u",), "k", {"v": 1}, ttl=0.005)  # 0.3 s
    store.put(("u",), "stays", {"v": 2})
    store.start_ttl_sweeper(sweep_interval_minutes=0.002)  # every ~0.1 s
    deadline = time.monotonic() + 20
    while _stored(store) == 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.stop_ttl_sweeper(timeout=5)
    assert _stored(store) == 1
    assert keys(store.search(("u",))) == ["stays"]
    without = make()  # no TTLConfig: nothing is started, as in LangGraph
    assert without.start_ttl_sweeper().done()


# A process that puts an item with a TTL of 0.3 s; the test reads it from another.
_PUT = """
import sys
from graphs.store.sql import SQLStore
with SQLStore.from_conn_string(sys.argv[1]) as store:
    store.setup()
    store.put(("u",), "k", {"v": 1}, ttl=0.005)
"""


def test_another_process_does_not_read_an_item_once_its_ttl_is_past(
    make: MakeStore, tmp_path: Path
) -> None:
    store = make()
    if not isinstance(store, SQLStore):
        store = SQLStore(f"sqlite:///{tmp_path / 'wall.db'}")
        store.setup()
    url = store.url.render_as_string(hide_password=False)
    python(_PUT, url)
    time.sleep(0.4)
    assert store.get(("u",), "k") is None
    assert store.list_namespaces() == []
    assert store.sweep_ttl() == 1
    store.close()


def test_a_store_table_of_the_first_revision_is_upgraded_with_its_items(
    make: MakeStore, tmp_path: Path
) -> None:
    first = make()
    if not isinstance(first, SQLStore):
        return  # the upgrade is the SQL store's (memory has no schema)
    url = first.url.render_as_string(hide_password=False)
    rows(url, "DROP TABLE store_vectors")
    rows(url, "DROP TABLE store_items")
    rows(url, "DROP TABLE store_schema_version")
    ini = SQLStore.SCHEMA.migrations / "alembic.ini"
    run("-m", "alembic", "-c", str(ini), "-x", f"url={url}", "upgrade", "s0001")
    record = serde.dumps_record({"v": 1})  # as the first revision's code stored it
    rows(
        url,
        "INSERT INTO store_items (namespace, key, value, created_at, updated_at) "
        f"VALUES ('u', 'old', '{record}', 1.0, 2.0)",
    )
    with SQLStore.from_conn_string(url) as store:
        with pytest.raises(Exception, match="older than this code"):
            store.get(("u",), "old")
        store.setup()
        old = store.get(("u",), "old")
        assert old is not None and old.value == {"v": 1} and old.created_at.timestamp() == 1.0
        store.put(("u",), "new", {"v": 2}, ttl=0.005)
        time.sleep(0.4)
        assert keys(store.search(("u",))) == ["old"]
