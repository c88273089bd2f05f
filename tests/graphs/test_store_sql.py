"""`SQLStore` beyond `InMemoryStore`'s behaviour (which `test_store.py` checks on every store):
what it keeps outlives the process, its table is migrated as the checkpoint tables are, values
are tagged JSON, and it can share a saver's pool.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from graphs import END, START, StateGraph
from graphs.checkpoint.sql import SQLSaver
from graphs.errors import SerializationError
from graphs.store import BaseStore
from graphs.store.sql import SQLStore
from tests.kit.sql_tables import python, rows


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file, or a PostgreSQL schema of the test's own."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[SQLStore]:
    s = SQLStore(url)
    s.setup()
    try:
        yield s
    finally:
        s.close()


# A process that uses the store and prints what it read, as JSON.
_WRITER = """
import sys
from graphs.store.sql import SQLStore
store = SQLStore(sys.argv[1])
store.setup()
store.put(("users", "u1"), "lang", {"value": "fr"})
store.put(("users", "u1"), "lang", {"value": "de"})
store.put(("users", "u2"), "lang", {"value": "en"})
store.put(("users", "u3"), "gone", {"value": "x"})
store.put(("users", "u3"), "gone", None)
item = store.get(("users", "u1"), "lang")
print(item.created_at.isoformat(), item.updated_at.isoformat())
store.close()
"""

_READER = """
import json, sys
from graphs.store.sql import SQLStore
store = SQLStore(sys.argv[1])
found = store.search(("users",))
spaces = store.list_namespaces()
store.put(("users", "u1"), "lang", {"value": "it"})
item = store.get(("users", "u1"), "lang")
print(json.dumps({"found": [i.dict() for i in found], "spaces": spaces, "after": item.dict()}))
store.close()
"""


def test_what_one_process_stores_the_next_one_reads_after_it_exits(url: str) -> None:
    created, updated = python(_WRITER, url).split()
    out = json.loads(python(_READER, url))
    assert [(i["namespace"], i["key"], i["value"]) for i in out["found"]] == [
        (["users", "u1"], "lang", {"value": "de"}),
        (["users", "u2"], "lang", {"value": "en"}),
    ]
    assert out["found"][0]["created_at"] == created
    assert out["found"][0]["updated_at"] == updated
    assert out["spaces"] == [["users", "u1"], ["users", "u2"]]
    # An update by the second process keeps the first one's created_at.
    assert out["after"]["value"] == {"value": "it"}
    assert out["after"]["created_at"] == created
    assert datetime.fromisoformat(out["after"]["updated_at"]) > datetime.fromisoformat(updated)


def test_a_graph_in_a_new_process_reads_what_a_node_stored_before(url: str) -> None:
    code = """
import sys
from typing import TypedDict
from graphs import END, START, StateGraph
from graphs.store.sql import SQLStore

class S(TypedDict, total=False):
    lang: str

def node(state, *, store):
    if sys.argv[2] == "write":
        store.put(("prefs",), "lang", {"value": "fr"})
        return {}
    return {"lang": store.get(("prefs",), "lang").value["value"]}

g = StateGraph(S)
g.add_node(node)
g.add_edge(START, "node")
g.add_edge("node", END)
store = SQLStore(sys.argv[1])
store.setup()
print(g.compile(store=store).invoke({}).get("lang"))
"""
    assert python(code, url, "write").strip() == "None"
    assert python(code, url, "read").strip() == "fr"


def test_values_are_tagged_json_and_come_back_as_they_were_put(store: SQLStore, url: str) -> None:
    when = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    value = {"when": when, "price": Decimal("1.10"), "pair": (1, 2), "raw": b"\x00\xff"}
    store.put(("typed",), "k", value)
    item = store.get(("typed",), "k")
    assert item is not None and item.value == value
    assert isinstance(item.value["pair"], tuple)
    [(text,)] = rows(url, "SELECT value FROM store_items")
    stored = json.loads(text)  # JSON text, with type tags; nothing pickled
    assert '"$t"' in text and stored["d"]["price"] == {"$t": ["decimal", "1.10"]}


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_stored(store: SQLStore) -> None:
    with pytest.raises(SerializationError):
        store.put(("a",), "k", {"obj": object()})
    assert store.get(("a",), "k") is None


def test_a_store_on_a_saver_shares_its_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'both.db'}"
    with SQLSaver.from_conn_string(url) as saver:
        saver.setup()
        store = SQLStore(saver)
        store.setup()

        def node(state: dict[str, Any], *, store: BaseStore) -> dict[str, Any]:
            store.put(("runs",), "last", {"n": state["n"]})
            return {"n": state["n"] + 1}

        g = StateGraph(dict)
        g.add_node("node", node)
        g.add_edge(START, "node")
        g.add_edge("node", END)
        app = g.compile(checkpointer=saver, store=store)
        app.invoke({"n": 1}, {"configurable": {"thread_id": "t"}})
        store.close()  # leaves the saver's pool alone
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    with SQLStore.from_conn_string(url) as reader:
        last = reader.get(("runs",), "last")
    assert last is not None and last.value == {"n": 1}
    with pytest.raises(TypeError, match="options are the saver's"):
        SQLStore(saver, busy_timeout=1)


def test_an_in_memory_sqlite_store_works_in_one_process() -> None:
    async def use(store: SQLStore) -> Any:
        await store.asetup()
        await store.aput(("m",), "k", {"v": 1})
        return await store.asearch(("m",))

    with SQLStore.from_conn_string("sqlite://") as store:
        assert [i.value for i in asyncio.run(use(store))] == [{"v": 1}]
        assert store.list_namespaces() == [("m",)]
