"""`SQLCache` (and LangGraph's `SqliteCache`): a cached node's result kept in SQLite or
PostgreSQL, so a graph run by another process, or after a restart, takes it without running
the node; TTLs on the wall clock; `clear`; results as tagged JSON, never pickled."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from graphs import END, START, StateGraph
from graphs.cache import BaseCache
from graphs.cache.sql import SQLCache
from graphs.cache.sqlite import SqliteCache
from graphs.checkpoint.sql import SQLSaver
from graphs.errors import SerializationError
from graphs.types import CachePolicy
from tests.kit.sql_tables import ROOT, python, rows


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file, or a PostgreSQL schema of the test's own."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cache.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def cache(url: str) -> Iterator[SQLCache]:
    c = SQLCache(url)
    c.setup()
    try:
        yield c
    finally:
        c.close()


class S(TypedDict, total=False):
    x: int
    y: int


def _app(cache: BaseCache, calls: list[str], ttl: int | None = None) -> Any:
    def double(state: S) -> dict[str, Any]:
        calls.append(f"double:{state['x']}")
        return {"y": state["x"] * 2}

    def triple(state: S) -> dict[str, Any]:
        calls.append(f"triple:{state['x']}")
        return {"x": state["x"] * 3}

    g = StateGraph(S)
    g.add_node("triple", triple, cache_policy=CachePolicy(ttl=ttl))
    g.add_node("double", double, cache_policy=CachePolicy(ttl=ttl))
    g.add_edge(START, "triple")
    g.add_edge("triple", "double")
    g.add_edge("double", END)
    return g.compile(cache=cache)


# A process that runs a graph with a cached node, which leaves a line in a file when it runs;
# it prints the `updates` chunks as JSON. argv: database ("path:<file>" for SqliteCache), log.
_RUN = """
import json, sys
from typing import TypedDict
from graphs import END, START, StateGraph
from graphs.types import CachePolicy

class S(TypedDict, total=False):
    x: int
    y: int

def slow(state):
    with open(sys.argv[2], "a") as log:
        log.write(f"ran {state['x']}\\n")
    return {"y": state["x"] * 10}

if sys.argv[1].startswith("path:"):
    from graphs.cache.sqlite import SqliteCache
    cache = SqliteCache(path=sys.argv[1][5:])
else:
    from graphs.cache.sql import SQLCache
    cache = SQLCache(sys.argv[1])
    cache.setup()
g = StateGraph(S)
g.add_node("slow", slow, cache_policy=CachePolicy())
g.add_edge(START, "slow")
g.add_edge("slow", END)
print(json.dumps(list(g.compile(cache=cache).stream({"x": 4}))))
"""


def test_a_second_process_takes_the_node_result_the_first_process_cached(
    url: str, tmp_path: Path
) -> None:
    _second_process_hits(url, tmp_path)


def test_a_second_process_takes_what_the_first_cached_through_sqlite_cache(
    tmp_path: Path,
) -> None:
    """LangGraph's constructor, `SqliteCache(path=)`, in two processes."""
    _second_process_hits(f"path:{tmp_path / 'langgraph.db'}", tmp_path)


def _second_process_hits(url: str, tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    first = json.loads(python(_RUN, url, str(log)))
    second = json.loads(python(_RUN, url, str(log)))
    assert first == [{"slow": {"y": 40}}]
    assert second == [{"slow": {"y": 40}, "__metadata__": {"cached": True}}]
    assert log.read_text() == "ran 4\n"  # the node ran in the first process only


def test_a_graph_run_twice_runs_each_cached_node_once(cache: SQLCache) -> None:
    calls: list[str] = []
    app = _app(cache, calls)
    assert app.invoke({"x": 1}) == {"x": 3, "y": 6}
    assert app.invoke({"x": 1}) == {"x": 3, "y": 6}
    assert calls == ["triple:1", "double:3"]

    async def arun() -> Any:
        return await app.ainvoke({"x": 1}), await app.ainvoke({"x": 2})

    assert asyncio.run(arun()) == ({"x": 3, "y": 6}, {"x": 6, "y": 12})
    assert calls == ["triple:1", "double:3", "triple:2", "double:6"]


def test_an_entry_is_not_returned_after_its_ttl_and_is_deleted(
    cache: SQLCache, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphs.cache.sql as sql_cache

    now = [1_800_000_000.0]
    monkeypatch.setattr(sql_cache, "_now", lambda: now[0])
    calls: list[str] = []
    app = _app(cache, calls, ttl=60)
    app.invoke({"x": 1})
    now[0] += 59
    app.invoke({"x": 1})
    assert calls == ["triple:1", "double:3"]
    now[0] += 2
    app.invoke({"x": 1})
    assert calls == ["triple:1", "double:3", "triple:1", "double:3"]
    # An expired entry is deleted, by the get that meets it or by the next set.
    cache.set({(("other",), "k"): ("soon gone", 10), (("kept",), "k"): ("kept", None)})
    assert len(rows(url, "SELECT * FROM cache_entries")) == 4
    now[0] += 11
    assert asyncio.run(cache.aget([(("other",), "k"), (("kept",), "k")])) == {
        (("kept",), "k"): "kept"
    }
    here = "test_cache_sql._app.<locals>"
    assert sorted(rows(url, "SELECT namespace, expires_at FROM cache_entries")) == [
        (f'["__pregel_ns_writes","{here}.double","double"]', now[0] - 11 + 60),
        (f'["__pregel_ns_writes","{here}.triple","triple"]', now[0] - 11 + 60),
        ('["kept"]', None),
    ]
    now[0] += 60
    cache.set({(("new",), "k"): (1, None)})  # a set deletes what expired
    assert sorted(rows(url, "SELECT namespace FROM cache_entries")) == [
        ('["kept"]',),
        ('["new"]',),
    ]


def test_clear_drops_the_namespaces_given_or_everything(cache: SQLCache, url: str) -> None:
    calls: list[str] = []
    app = _app(cache, calls)
    app.invoke({"x": 1})
    app.clear_cache(["double"])
    app.invoke({"x": 1})
    assert calls == ["triple:1", "double:3", "double:3"]
    asyncio.run(app.aclear_cache(["triple"]))
    app.invoke({"x": 1})
    assert calls[3:] == ["triple:1"]
    # The cache's own forms: one namespace, several, every one.
    pairs = {((ns,), k): (f"{ns}/{k}", None) for ns in ("a", "b", "c") for k in ("1", "2")}
    cache.set(pairs)
    cache.clear([("a",)])
    asyncio.run(cache.aclear([("b",), ("no such",)]))
    assert cache.get(list(pairs)) == {(("c",), "1"): "c/1", (("c",), "2"): "c/2"}
    cache.clear()
    assert rows(url, "SELECT * FROM cache_entries") == []
    assert asyncio.run(cache.aget(list(pairs))) == {}


def test_a_clear_in_one_process_is_seen_by_the_next(url: str, tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    python(_RUN, url, str(log))
    with SQLCache.from_conn_string(url) as cache:
        cache.clear([("__pregel_ns_writes", "__main__.slow", "slow")])  # LangGraph's namespace
    assert json.loads(python(_RUN, url, str(log))) == [{"slow": {"y": 40}}]
    assert log.read_text() == "ran 4\nran 4\n"


def test_results_are_tagged_json_and_come_back_as_they_were(cache: SQLCache, url: str) -> None:
    from decimal import Decimal

    value = {"price": Decimal("1.10"), "pair": (1, 2), "raw": b"\x00\xff", "tags": {"a"}}
    cache.set({(("n",), "k"): (value, None)})
    assert cache.get([(("n",), "k")]) == {(("n",), "k"): value}
    [(text,)] = rows(url, "SELECT value FROM cache_entries")
    assert json.loads(text)["d"]["price"] == {"$t": ["decimal", "1.10"]}  # JSON, not a pickle


def test_a_long_key_is_stored_as_a_fixed_size_hash_and_distinct_inputs_still_miss(
    cache: SQLCache, url: str
) -> None:
    class Chat(TypedDict, total=False):
        messages: list[str]
        reply: str

    calls: list[int] = []

    def answer(state: Chat) -> dict[str, Any]:
        calls.append(len(state["messages"]))
        return {"reply": f"seen {len(state['messages'])}"}

    # A key_func of the whole message list, as LangGraph's docs show: a long text.
    policy = CachePolicy(key_func=lambda state: json.dumps(state["messages"]))
    g = StateGraph(Chat)
    g.add_node("answer", answer, cache_policy=policy)
    g.add_edge(START, "answer").add_edge("answer", END)
    app = g.compile(cache=cache)
    long = [f"message {i} " + "x" * 1000 for i in range(200)]  # a key of about 200 kB
    assert app.invoke({"messages": long})["reply"] == "seen 200"
    assert app.invoke({"messages": long})["reply"] == "seen 200"  # a hit
    changed = [*long[:-1], long[-1] + "!"]  # differs in the last character only
    assert app.invoke({"messages": changed})["reply"] == "seen 200"
    assert app.invoke({"messages": long[:1]})["reply"] == "seen 1"
    assert calls == [200, 200, 1]
    keys = [key for (key,) in rows(url, "SELECT key FROM cache_entries")]
    assert len(keys) == 3 and len(set(keys)) == 3
    assert all(len(key) == 32 for key in keys)  # 128 bits in hex, whatever the key's length


def test_a_task_s_long_key_is_hashed_too(cache: SQLCache, url: str) -> None:
    from graphs.func import entrypoint, task

    calls: list[int] = []

    @task(cache_policy=CachePolicy(key_func=lambda text: text))
    def count(text: str) -> int:
        calls.append(len(text))
        return len(text)

    @entrypoint(cache=cache)
    def both(texts: list[str]) -> list[int]:
        return [count(t).result() for t in texts]  # one after another: the third is a hit

    long = "y" * 100_000
    assert both.invoke([long, long + "z", long]) == [100_000, 100_001, 100_000]
    assert calls == [100_000, 100_001]
    assert sorted(len(key) for (key,) in rows(url, "SELECT key FROM cache_entries")) == [32, 32]


class Opaque:
    """A class on no allow-list: a checkpoint could not hold it, nor can the cache."""


def test_a_result_a_checkpoint_cannot_hold_is_refused_and_nothing_is_cached(
    cache: SQLCache, url: str
) -> None:
    def make(state: dict[str, Any]) -> dict[str, Any]:
        return {"obj": Opaque()}

    g = StateGraph(dict)
    g.add_node("make", make, cache_policy=CachePolicy())
    g.add_edge(START, "make")
    g.add_edge("make", END)
    app = g.compile(cache=cache)
    message = (
        r"cannot cache the result of 'make' \(key '[0-9a-f]+'\): the SQL cache stores results "
        r"as checkpoints are stored, and cannot store a value of type "
        r"test_cache_sql\.Opaque in a checkpoint"
    )
    with pytest.raises(SerializationError, match=message):
        app.invoke({"x": 1})
    with pytest.raises(SerializationError, match=message):
        asyncio.run(app.ainvoke({"x": 1}))
    with pytest.raises(SerializationError, match="builtins.object"):
        cache.set({(("a",), "ok"): ("fine", None), (("a",), "bad"): (object(), None)})
    assert rows(url, "SELECT * FROM cache_entries") == []  # not even the storable one


# Processes at once on one database: each sets up, then writes and reads its own keys and a
# shared one.
_BUSY = """
import sys
from graphs.cache.sql import SQLCache
cache = SQLCache(sys.argv[1])
cache.setup()
me = sys.argv[2]
for i in range(25):
    cache.set({(("mine", me), str(i)): (i, None), (("shared",), "k"): (me, 3600)})
    assert cache.get([(("mine", me), str(i))]) == {(("mine", me), str(i)): i}
cache.close()
"""


def test_processes_sharing_the_database_at_once_each_keep_their_entries(url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _BUSY, url, str(n)], cwd=ROOT, stderr=subprocess.PIPE
        )
        for n in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with SQLCache.from_conn_string(url) as cache:
        mine = [(("mine", str(n)), str(i)) for n in range(3) for i in range(25)]
        assert len(cache.get(mine)) == 75
        assert cache.get([(("shared",), "k")])[(("shared",), "k")] in {"0", "1", "2"}


def test_sqlite_cache_is_langgraph_s_constructor_with_its_table_ready(tmp_path: Path) -> None:
    path = tmp_path / "lg.db"
    cache = SqliteCache(path=str(path))
    cache.set({(("n",), "k"): ({"y": 1}, None)})
    cache.close()
    reopened = SqliteCache(path=str(path))
    assert reopened.get([(("n",), "k")]) == {(("n",), "k"): {"y": 1}}
    reopened.close()
    memory = SqliteCache(path=":memory:")
    assert asyncio.run(memory.aget([(("n",), "k")])) == {}
    with pytest.raises(TypeError, match="takes no serializer"):
        SqliteCache(path=str(path), serde=object())


def test_a_cache_on_a_saver_shares_its_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'both.db'}"
    calls: list[str] = []
    with SQLSaver.from_conn_string(url) as saver:
        saver.setup()
        cache = SQLCache(saver)
        cache.setup()
        app = _app(cache, calls)
        app.invoke({"x": 2})
        cache.close()  # leaves the saver's pool alone
        assert list(saver.list(None)) == []  # the pool still works
        with pytest.raises(TypeError, match="options are the saver's"):
            SQLCache(saver, busy_timeout=1)
    with SQLCache.from_conn_string(url) as reader:
        _app(reader, calls).invoke({"x": 2})
    assert calls == ["triple:2", "double:6"]


# Two graphs of two programs share one cache file; each names a node "score", for another
# function. argv: the SQLite file, which program ("a" or "b"), a log file.
_SHARED = """
import json, sys
from typing import TypedDict
from graphs import END, START, StateGraph
from graphs.cache.sql import SQLCache
from graphs.types import CachePolicy

class S(TypedDict, total=False):
    x: int
    y: int

def by_ten(state):
    with open(sys.argv[3], "a") as log:
        log.write("by_ten ran\\n")
    return {"y": state["x"] * 10}

def plus_one(state):
    with open(sys.argv[3], "a") as log:
        log.write("plus_one ran\\n")
    return {"y": state["x"] + 1}

cache = SQLCache(sys.argv[1])
cache.setup()
g = StateGraph(S)
g.add_node("score", by_ten if sys.argv[2] == "a" else plus_one, cache_policy=CachePolicy())
g.add_edge(START, "score").add_edge("score", END)
app = g.compile(cache=cache)
out = app.invoke({"x": 4})
if len(sys.argv) > 4:
    app.clear_cache()
print(json.dumps(out))
"""


def test_graphs_sharing_a_cache_file_keep_apart_nodes_of_one_name_and_other_functions(
    tmp_path: Path,
) -> None:
    url, log = f"sqlite:///{tmp_path / 'shared.db'}", tmp_path / "runs.log"
    assert json.loads(python(_SHARED, url, "a", str(log))) == {"x": 4, "y": 40}
    assert json.loads(python(_SHARED, url, "b", str(log))) == {"x": 4, "y": 5}  # not a's 40
    assert json.loads(python(_SHARED, url, "a", str(log))) == {"x": 4, "y": 40}  # a's hit
    assert json.loads(python(_SHARED, url, "b", str(log))) == {"x": 4, "y": 5}  # b's hit
    assert log.read_text() == "by_ten ran\nplus_one ran\n"
    spaces = sorted(ns for (ns,) in rows(url, "SELECT namespace FROM cache_entries"))
    assert spaces == [
        '["__pregel_ns_writes","__main__.by_ten","score"]',
        '["__pregel_ns_writes","__main__.plus_one","score"]',
    ]
    python(_SHARED, url, "b", str(log), "clear")  # clear_cache() drops b's entries only
    assert [ns for (ns,) in rows(url, "SELECT namespace FROM cache_entries")] == [spaces[0]]
