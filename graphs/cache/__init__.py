"""Node caching (LangGraph's `CachePolicy` and `langgraph.cache`): a node added with
`cache_policy=CachePolicy(...)` in a graph compiled with `cache=InMemoryCache()` runs once per
distinct input; later tasks with the same input take the stored return value instead.

`graphs.cache.sql.SQLCache` keeps the results in SQLite or PostgreSQL, shared by processes and
kept across restarts (`graphs.cache.sqlite.SqliteCache` is LangGraph's name for it); it needs
SQLAlchemy, so this module does not import it.

Cache only pure nodes: a cached node's side effects, `interrupt()` and `once()` calls do not
happen on a hit.

An entry's namespace is LangGraph's: `("__pregel_ns_writes", "module.qualname", node)`, the
node's function identity then its name (`"__dynamic__"` for an object or graph given as a
node), so graphs sharing one cache database do not take each other's results even where they
reuse a node name for another function; a `@task`'s is `("__pregel_ns_writes",
"module.qualname")`. Renaming or moving a cached function starts its cache afresh.

Its code is in modules, re-exported here: `BaseCache` and `CachePolicy` in `base.py` (LangGraph's
`langgraph.cache.base`), `InMemoryCache` in `memory.py` (`langgraph.cache.memory`), the
namespaces and keys of entries in `_keys.py` (the runtime takes `entry_key`, `node_namespace`
and `task_namespace` from here).
"""

# `X as X`: names the runtime takes from here, re-exported outside `__all__`
from ._keys import FullKey as FullKey
from ._keys import Namespace as Namespace
from ._keys import default_cache_key
from ._keys import entry_key as entry_key
from ._keys import identifier as identifier
from ._keys import node_namespace as node_namespace
from ._keys import task_namespace as task_namespace
from ._keys import whose as whose
from .base import BaseCache, CachePolicy
from .memory import InMemoryCache

__all__ = ["BaseCache", "CachePolicy", "InMemoryCache", "default_cache_key"]
