"""Semantic search on the stores as LangGraph's (`index=IndexConfig(...)`, `put(..., index=)`,
`search(query=...)` scored by cosine similarity), on `InMemoryStore` and on `SQLStore` on a
SQLite file and on PostgreSQL; and the asyncio TTL sweeper (`astart_ttl_sweeper`).

The embedding is local and deterministic: a bag of words hashed into `DIMS` buckets.
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from graphs.checkpoint import serde
from graphs.store import (
    BaseStore,
    InMemoryStore,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)
from graphs.store.base import IndexConfig, ensure_embeddings
from graphs.store.sql import SQLStore
from tests.kit.sql_tables import python, rows, run
from tests.kit.stores import Clock, MakeStore, keys, store_maker, store_url

# the embedding, as source: the child process of a test defines it too
BOW = """
import zlib
DIMS = 64
def bow(texts):
    out = []
    for text in texts:
        v = [0.0] * DIMS
        for word in text.lower().replace('"', ' ').replace(':', ' ').split():
            v[zlib.crc32(word.strip('{},[]').encode()) % DIMS] += 1.0
        out.append(v)
    return out
"""
_ns: dict[str, Any] = {}
exec(BOW, _ns)  # noqa: S102 (the test's own source)
bow: Callable[[Sequence[str]], list[list[float]]] = _ns["bow"]
DIMS: int = _ns["DIMS"]


def cos(a: str, b: str) -> float:
    x, y = bow([a])[0], bow([b])[0]
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    return dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)))


class Counted:
    """`bow`, counting the texts it was given."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return bow(texts)


class BowEmbeddings(Embeddings):
    """A langchain_core `Embeddings` over `bow`, recording which of its methods ran."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append("embed_documents")
        return bow(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls.append("embed_query")
        return bow([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append("aembed_documents")
        return bow(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.calls.append("aembed_query")
        return bow([text])[0]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(kind, request, tmp_path)


@pytest.fixture
def make(url: str) -> Iterator[MakeStore]:
    """`make(index=..., ttl=..., clock=...)`: a store of the kind, on one database."""
    with store_maker(url) as make:
        yield make


DOCS = {
    "tea": "green tea with jasmine",
    "coffee": "black coffee beans roasted",
    "cake": "chocolate cake with tea",
}


def test_a_query_ranks_items_by_cosine_similarity_and_scores_them(make: MakeStore) -> None:
    store = make(index={"dims": DIMS, "embed": bow, "fields": ["text"]})
    for key, text in DOCS.items():
        store.put(("docs",), key, {"text": text})
    store.put(("docs",), "plain", {"text": "green tea"}, index=False)
    store.put(("other",), "far", {"text": "green tea with jasmine"})
    found = store.search(("docs",), query="green tea")
    assert keys(found) == ["tea", "cake", "coffee", "plain"]
    assert [i.score for i in found[:3]] == pytest.approx(
        [cos("green tea", DOCS[k]) for k in ("tea", "cake", "coffee")]
    )
    assert found[2].score == 0.0 and found[3].score is None  # not embedded: last, unscored
    [by_op] = store.batch([SearchOp(("docs",), query="green tea", limit=2)])
    assert keys(by_op) == ["tea", "cake"]  # type: ignore[arg-type]
    exact = store.search(("docs",), query=DOCS["coffee"], limit=1)
    assert keys(exact) == ["coffee"] and exact[0].score == pytest.approx(1.0)
    # without a query: the order first put, unscored
    assert [(i.key, i.score) for i in store.search(("docs",))] == [
        ("tea", None), ("coffee", None), ("cake", None), ("plain", None)
    ]  # fmt: skip


def test_fields_paths_and_the_per_put_index(make: MakeStore) -> None:
    store = make(index={"dims": DIMS, "embed": bow, "fields": ["title", "tags[*].name"]})
    store.put(("d",), "a", {"title": "astronomy", "body": "stars and tea"})
    store.put(("d",), "b", {"title": "cooking", "tags": [{"name": "oven"}, {"name": "tea"}]})
    store.put(("d",), "c", {"title": "gardens", "body": "tea plants"}, index=["body"])
    found = store.search(("d",), query="tea")
    # b by its second tag (max over its vectors), c by its body; a's body is not embedded
    assert keys(found) == ["b", "c", "a"]
    assert found[0].score == pytest.approx(1.0)
    assert found[1].score == pytest.approx(cos("tea", "tea plants"))
    assert found[2].score == pytest.approx(0.0)
    assert get_text_at_path({"a": [{"b": 1}, {"b": "x"}]}, "a[*].b") == ["1", "x"]
    assert get_text_at_path({"a": [1, 2, 3]}, "a[-1]") == ["3"]
    assert get_text_at_path({"b": 2, "a": 1}, "$") == ['{"a": 1, "b": 2}']
    assert tokenize_path("a[*].b.{c,d}") == ["a", "[*]", "b", "{c,d}"]


def test_filter_limit_and_offset_apply_with_a_query(make: MakeStore) -> None:
    store = make(index={"dims": DIMS, "embed": bow, "fields": ["text"]})
    for i in range(6):
        store.put(("n",), f"k{i}", {"text": "tea " * (i + 1) + "cup " * (6 - i), "odd": i % 2})
    every = keys(store.search(("n",), query="tea", limit=100))
    assert every == ["k5", "k4", "k3", "k2", "k1", "k0"]
    pages = [keys(store.search(("n",), query="tea", limit=2, offset=o)) for o in (0, 2, 4)]
    assert [k for page in pages for k in page] == every
    odd = store.search(("n",), query="tea", filter={"odd": 1}, limit=2, offset=1)
    assert keys(odd) == ["k3", "k1"] and all(i.score is not None for i in odd)


def test_a_put_embeds_once_an_update_re_embeds_and_a_delete_removes(
    make: MakeStore, url: str
) -> None:
    embed = Counted()
    store = make(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    store.put(("u",), "k", {"text": "green tea"})
    store.put(("u",), "other", {"text": "black coffee"})
    assert embed.texts == ["green tea", "black coffee"]
    for _ in range(3):
        store.search(("u",), query="coffee")
    assert embed.texts[2:] == ["coffee"] * 3  # only the query is embedded by a search
    store.put(("u",), "k", {"text": "black coffee beans"})
    assert embed.texts[-1] == "black coffee beans"
    found = store.search(("u",), query="black coffee beans")
    assert keys(found) == ["k", "other"] and found[0].score == pytest.approx(1.0)
    store.put(("u",), "k", {"text": "black coffee beans"}, index=False)  # its vectors replaced
    assert [(i.key, i.score is None) for i in store.search(("u",), query="coffee")] == [
        ("other", False), ("k", True)
    ]  # fmt: skip
    store.delete(("u",), "other")
    assert keys(store.search(("u",), query="coffee")) == ["k"]
    if url:
        assert rows(url, "SELECT count(*) FROM store_vectors") == [(0,)]


def test_an_expired_item_is_not_found_by_a_query_and_a_sweep_removes_its_vectors(
    make: MakeStore, url: str
) -> None:
    clock = Clock()
    store = make(index={"dims": DIMS, "embed": bow, "fields": ["text"]}, clock=clock)
    store.put(("t",), "short", {"text": "green tea"}, ttl=1)
    store.put(("t",), "long", {"text": "tea"})
    assert keys(store.search(("t",), query="green tea")) == ["short", "long"]
    clock.now += 120
    assert keys(store.search(("t",), query="green tea")) == ["long"]
    assert store.sweep_ttl() == 1
    if url:
        assert rows(url, "SELECT key FROM store_vectors") == [("long",)]
    store.put(("t",), "short", {"text": "green tea"})  # a new item, embedded again
    assert keys(store.search(("t",), query="green tea")) == ["short", "long"]


async def test_the_async_methods_use_the_async_embedding(make: MakeStore) -> None:
    calls: list[int] = []

    async def aembed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        await asyncio.sleep(0)
        return bow(texts)

    store = make(index={"dims": DIMS, "embed": aembed, "fields": ["text"]})
    await store.aput(("a",), "tea", {"text": "green tea"})
    await store.aput(("a",), "coffee", {"text": "black coffee"})
    found = await store.asearch(("a",), query="coffee")
    assert keys(found) == ["coffee", "tea"] and calls == [1, 1, 1]
    with pytest.raises(ValueError, match="is async: use the async methods"):
        store.put(("a",), "x", {"text": "x"})
    with pytest.raises(ValueError, match="is async"):
        store.search(("a",), query="coffee")

    emb = BowEmbeddings()
    other = make(index={"dims": DIMS, "embed": emb, "fields": ["text"]})
    await other.aput(("b",), "tea", {"text": "green tea"})
    assert keys(await other.asearch(("b",), query="tea")) == ["tea"]
    other.put(("b",), "coffee", {"text": "black coffee"})
    assert keys(other.search(("b",), query="coffee")) == ["coffee", "tea"]
    assert emb.calls == ["aembed_documents", "aembed_query", "embed_documents", "embed_query"]


def test_index_errors_say_what_to_give(make: MakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain", None)  # as where langchain is not installed
    with pytest.raises(ValueError, match="'langchain' package .* give 'embed' a langchain_core"):
        make(index={"dims": 3, "embed": "openai:text-embedding-3-small"})
    with pytest.raises(ValueError, match="'embed' must be given"):
        make(index={"dims": 3})
    with pytest.raises(TypeError, match="'embed' is a langchain_core Embeddings"):
        ensure_embeddings(42)
    with pytest.raises(ValueError, match="an IndexConfig takes"):
        make(index={"dims": 3, "embed": bow, "feilds": ["text"]})
    store = make(index={"dims": 3, "embed": bow})
    with pytest.raises(ValueError, match="64 dimensions where the index has dims=3"):
        store.put(("e",), "k", {"text": "tea"})
    assert store.get(("e",), "k") is None  # nothing written
    ok = make(index={"dims": DIMS, "embed": bow})
    with pytest.raises(ValueError, match="index is False, None .* or a list of paths"):
        ok.put(("e",), "k", {"text": "tea"}, index="text")
    config: IndexConfig = {"dims": DIMS, "embed": bow}
    assert make(index=config).index_config == {**config, "fields": ["$"]}


def test_a_second_process_finds_by_query_what_the_first_put(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with SQLStore.from_conn_string(url, index={"dims": DIMS, "embed": bow}) as store:
        store.setup()
        store.put(("s",), "tea", {"text": "green tea"})
        store.put(("s",), "coffee", {"text": "black coffee"})
    child = BOW + (
        "import sys\n"
        "from graphs.store.sql import SQLStore\n"
        "with SQLStore.from_conn_string(sys.argv[1], index={'embed': bow}) as s:\n"
        "    print([i.key for i in s.search(('s',), query='coffee')])\n"
    )
    assert python(child, url).strip() == "['coffee', 'tea']"


def test_an_s0002_store_is_upgraded_with_its_items_and_searched(url: str) -> None:
    if not url:
        return  # the upgrade is the SQL store's (memory has no schema)
    ini = SQLStore.SCHEMA.migrations / "alembic.ini"
    run("-m", "alembic", "-c", str(ini), "-x", f"url={url}", "upgrade", "s0002")
    record = serde.dumps_record({"text": "green tea"})  # as the s0002 code stored it
    rows(
        url,
        "INSERT INTO store_items (namespace, key, value, created_at, updated_at, expires_at, "
        f"ttl_minutes) VALUES ('u', 'old', '{record}', 1.0, 2.0, NULL, NULL)",
    )
    index: IndexConfig = {"dims": DIMS, "embed": bow, "fields": ["text"]}
    with SQLStore.from_conn_string(url, index=index) as store:
        with pytest.raises(Exception, match="older than this code"):
            store.get(("u",), "old")
        store.setup()
        assert rows(url, "SELECT version_num FROM store_schema_version") == [("s0003",)]
        old = store.get(("u",), "old")
        assert old is not None and old.value == {"text": "green tea"}
        store.put(("u",), "new", {"text": "tea"})
        found = store.search(("u",), query="tea")
        assert [(i.key, i.score is None) for i in found] == [("new", False), ("old", True)]
        assert keys(store.search(("u",), filter={"text": "green tea"}, query="tea")) == ["old"]
        store.put(("u",), "old", old.value)  # put anew: now embedded
        assert keys(store.search(("u",), query="green tea")) == ["old", "new"]


async def test_the_async_ttl_sweeper_is_a_task_that_sweeps_until_stopped(
    make: MakeStore,
) -> None:
    clock = Clock()
    store = make(ttl={"sweep_interval_minutes": 1}, clock=clock)
    store.put(("s",), "k", {"v": 1}, ttl=1)
    clock.now += 120
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.001)  # every 0.06 s
    assert isinstance(task, asyncio.Task)
    assert await store.astart_ttl_sweeper() is task  # already running: the same task
    for _ in range(100):
        if not rows_left(store):
            break
        await asyncio.sleep(0.05)
    assert not rows_left(store)
    assert await store.astop_ttl_sweeper(timeout=5) is True
    assert task.done() and await store.astop_ttl_sweeper() is True
    nothing = await make().astart_ttl_sweeper()  # no TTLConfig: nothing to run
    await nothing
    assert nothing.done()


def rows_left(store: BaseStore) -> int:
    if isinstance(store, InMemoryStore):
        return len(store._items)
    return int(
        rows(store.url.render_as_string(hide_password=False), "SELECT count(*) FROM store_items")[
            0
        ][0]
    )
