"""Long-term memory shared across threads (LangGraph's `langgraph.store`): `BaseStore`, the
`Item` it holds, and `InMemoryStore`; `graphs.store.sql.SQLStore` keeps the same in SQLite or
PostgreSQL (it needs SQLAlchemy, so this module does not import it).

A store keeps JSON-like dicts under a namespace (a tuple of strings, such as `("users", id)`)
and a key. A graph compiled with `compile(store=...)` hands it to nodes that declare a `store`
parameter (`def node(state, *, store: BaseStore)`), to `get_store()` and to `Runtime.store`;
subgraphs use their parent's. Unlike checkpoints, what a node puts there is not undone when the
node is replayed: write it after an `interrupt()`, or through `once()`.

TTLs are LangGraph's: a store made with `ttl=TTLConfig(default_ttl=..., refresh_on_read=...)`
(minutes) or a `put(..., ttl=minutes)` gives an item a time to live, counted again from each
read that refreshes it (`get`/`search` with `refresh_ttl`, by default `refresh_on_read`, by
default True). An expired item is never returned, nor its namespace listed, even before
`sweep_ttl()` (or the thread of `start_ttl_sweeper()`, or the asyncio task of
`astart_ttl_sweeper()`) deletes it.

Semantic search is LangGraph's: a store made with `index=IndexConfig(embed=..., dims=...,
fields=[...])` embeds the texts at `fields` of each item when it is put (`put(..., index=False)`
or `index=[paths]` for one item), and `search(prefix, query="...")` ranks the items under the
prefix that match `filter` by the cosine similarity of their best vector to the query's,
highest first, with `SearchItem.score` set; the items without a vector come after them,
unscored. A store without an index ignores `query=` (as LangGraph's do): its results are those
of the same search without it.

Its code is in modules, re-exported here: the contract and the `batch` ops in `base.py`
(LangGraph's `langgraph.store.base`), `InMemoryStore` in `memory.py` (`langgraph.store.memory`),
the TTL handling the stores share in `_ttl.py`, semantic search's index in `_index.py`.
"""

from .base import (
    NOT_PROVIDED,
    AEmbeddingsFunc,
    BaseStore,
    EmbeddingsFunc,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)
from .memory import InMemoryStore

__all__ = [
    "NOT_PROVIDED",
    "AEmbeddingsFunc",
    "BaseStore",
    "EmbeddingsFunc",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]
