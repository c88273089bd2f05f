"""`StateGraph`: declare nodes and edges, then `compile()` into a runnable graph."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ._checks import check_shape
from ._nodes import (
    _config_by_name,
    _first_param_schema,
    _goto_annotation,
    _injected,
    _is_async,
    _may_return,
    _takes_config,
    _with_config_by_name,
    _with_injected,
)
from ._schema import (
    ROOT,
    channels_from_schema,
    coercer,
    is_root_schema,
    managed_from_schema,
    root_channel,
    schema_keys,
)
from ._shape import Schemas
from ._specs import Branch, Join, NodeSpec, SupportsInvoke, is_runnable
from ._subgraph import SubgraphNode
from ._types import END, START, Command, Dialect, RetryPolicy, Send, TimeoutPolicy
from .cache import CachePolicy
from .checkpoint._schema_types import allow_schema_types
from .checkpoint.base import BaseCheckpointSaver
from .compiled import CompiledGraph
from .errors import GraphSetupError, InvalidCheckpointerError

if TYPE_CHECKING:
    from .cache import BaseCache
    from .store import BaseStore

__all__ = ["StateGraph"]

DEFAULT_RECURSION_LIMIT = 25


class StateGraph(Schemas):
    """A graph whose nodes read a shared state and return partial updates to it.

    ```python
    class State(TypedDict):
        messages: Annotated[list, operator.add]   # merged through the reducer
        approved: bool                            # overwritten

    g = StateGraph(State)
    g.add_node("draft", draft)
    g.add_edge(START, "draft")
    g.add_edge("draft", END)
    app = g.compile(checkpointer=InMemorySaver())
    ```
    """

    dialect: ClassVar[Dialect] = "graphs"
    """Seed 000's semantics where they differ from LangGraph's; `graphs.graph.StateGraph`, the
    class LangGraph's module path gives, is this class with `"langgraph"` (see `Dialect`)."""

    def __init__(
        self,
        state_schema: type,
        context_schema: type | None = None,
        *,
        input_schema: type | None = None,
        output_schema: type | None = None,
        **deprecated: type,
    ) -> None:
        """`state_schema`: a TypedDict, a dataclass or a pydantic model (nodes and routers then
        receive instances of it, its defaults filling keys not written yet).

        `input_schema`: the keys `invoke` accepts (default: the state's); `output_schema`: the
        keys it returns and `values` streams (default: the state's); both may declare keys the
        state does not have, which are private channels. `context_schema`: what `context=`
        holds (a dict given for a dataclass or pydantic schema is made into one), which nodes
        read as `runtime.context`. LangGraph's older `input=`/`output=` still work, with a
        `DeprecationWarning`.
        """
        for old, new in (("input", "input_schema"), ("output", "output_schema")):
            if old in deprecated:
                warnings.warn(
                    f"StateGraph({old}=...) is deprecated, as in LangGraph: use {new}=",
                    DeprecationWarning,
                    stacklevel=2,
                )
        unknown = set(deprecated) - {"input", "output"}
        if unknown:
            raise GraphSetupError(
                f"StateGraph() got unknown argument(s) {sorted(unknown)}; it takes state_schema, "
                "context_schema, input_schema and output_schema"
            )
        input_schema = input_schema or deprecated.get("input")
        output_schema = output_schema or deprecated.get("output")
        self.node_defaults: dict[str, Any] = {}
        self.node_schemas: list[Any] = []
        """Nodes' own input schemas: `compile` allows the classes they name in checkpoints."""
        """`set_node_defaults(...)`: what `compile` gives the nodes that set none of their own."""
        self.root = is_root_schema(state_schema)
        if self.root:
            if input_schema is not None or output_schema is not None:
                raise GraphSetupError(
                    f"a root-channel graph (state {state_schema!r}) takes no input_schema or "
                    "output_schema: its input and output are the state value itself"
                )
            self._init_root(state_schema, context_schema)
            return
        self.schema = state_schema
        self.context_schema = context_schema
        self.input_schema = input_schema or state_schema
        self.output_schema = output_schema or state_schema
        self.channels = channels_from_schema(state_schema)
        self.managed = managed_from_schema(state_schema)
        self.state_keys = frozenset(self.channels)
        for extra in (input_schema, output_schema):
            if extra is not None and extra is not state_schema:
                self._add_channels(extra)
        self.coerce = coercer(state_schema)
        self.input_keys = frozenset(schema_keys(self.input_schema))
        self.output_keys = frozenset(schema_keys(self.output_schema))
        self.nodes = {}
        self.edges: list[tuple[str, str]] = []
        self.joins: list[tuple[tuple[str, ...], str]] = []
        self.branches: list[Branch] = []

    def _add_channels(self, extra: type) -> None:
        """Add the keys of another schema (an input, output or node schema) as channels: keys
        the state does not have are private channels."""
        self.managed.update(managed_from_schema(extra))
        for key, channel in channels_from_schema(extra).items():
            known = self.channels.setdefault(key, channel)
            if known.reducer is not channel.reducer and channel.reducer is not None:
                raise GraphSetupError(
                    f"state key {key!r} has a different reducer in "
                    f"{extra.__qualname__} than in {self.schema.__qualname__}; give it one"
                )

    def _node_reader(
        self, name: str, fn: Any, input_schema: type | None
    ) -> Callable[[dict[str, Any]], Any] | None:
        """How node `name` reads the state, when it has a schema of its own: `input_schema=`,
        else its first parameter's annotation if that is a schema class (`state: Private`)."""
        if input_schema is None:
            input_schema = _first_param_schema(fn)
            if input_schema is None:
                return None
        elif self.root:
            raise GraphSetupError(
                f"node {name!r}: a root-channel graph's nodes read its one value; they take no "
                "input_schema"
            )
        if input_schema is self.schema or self.root:
            return None
        self.node_schemas.append(input_schema)
        self._add_channels(input_schema)  # raises for what is not a schema class
        keys = tuple(schema_keys(input_schema))
        coerce = coercer(input_schema)

        def read(state: dict[str, Any]) -> Any:
            own = {k: state[k] for k in keys if k in state}
            return own if coerce is None else coerce(own)

        return read

    def _init_root(self, state_schema: Any, context_schema: type | None) -> None:
        self.schema = self.input_schema = self.output_schema = state_schema
        self.context_schema = context_schema
        self.channels = {ROOT: root_channel(state_schema)}
        self.managed = {}

        def coerce(state: dict[str, Any]) -> Any:
            return state.get(ROOT)

        self.coerce = coerce
        self.input_keys = self.output_keys = self.state_keys = frozenset([ROOT])
        self.nodes = {}
        self.edges = []
        self.joins = []
        self.branches = []

    def add_node(
        self,
        name: str | Callable[..., Any] | SupportsInvoke,
        fn: Callable[..., Any] | SupportsInvoke | None = None,
        *,
        destinations: Sequence[str] | Mapping[str, str] | None = None,
        retry_policy: RetryPolicy | None = None,
        input_schema: type | None = None,
        defer: bool = False,
        cache_policy: CachePolicy | None = None,
        error_handler: Callable[..., Any] | SupportsInvoke | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> StateGraph:
        """Add a node: `fn(state)`, `fn(state, config)` or `fn(state, *, config)`, sync or
        async, returning a dict update (or a `Command`). An object with `invoke(state, config)`
        (and `ainvoke`, used under `ainvoke`), such as a LangChain Runnable, is a node too.

        `add_node(fn)` names the node after the function. The state a node receives shares its
        lists and dicts with the run: read it, and return what changes (`{"log": [entry]}`);
        never mutate it in place, or the run goes on with values no checkpoint holds.

        `destinations`: the nodes its `Command(goto=...)` may go to. A return annotation
        `-> Command[Literal["a", "b"]]` says the same. `compile` refuses a node no run can
        reach; a node that may go where it did not declare (no `destinations`, and no return
        annotation such as `-> dict` that rules a `Command` out) may reach any node.
        A dict (`{"a": "approve"}`) also labels each edge in `get_graph()`.

        `retry_policy`: retry a failed attempt within the step (`RetryPolicy()` for
        LangGraph's defaults: 3 attempts, backoff from 0.5 s, not on programming errors).

        `input_schema`: a TypedDict, dataclass or pydantic class the node reads the state as
        (only its keys; an instance for a dataclass or pydantic one). Keys the state schema
        does not have become private channels, which nodes may write and read. A function
        whose first parameter is annotated with such a class (`def node(state: Private)`)
        reads it without `input_schema=`, as in LangGraph.

        `defer=True`: once an edge or a `Command` triggers it, the node waits until no other
        node is to run, then runs once (an aggregator after branches of different lengths).

        `cache_policy`: in a graph compiled with `cache=`, the node runs once per distinct
        input (per `CachePolicy.key_func`, for `ttl` seconds); a later task with the same input
        takes the stored return value without running it. For pure nodes only.

        `error_handler`: runs, in the same step, on the node's input, when the node has failed
        (after its `retry_policy`'s attempts; a pause is not a failure), as LangGraph's. It
        declares `error` to be handed a `NodeError(node, error)`; what it returns is written
        as the node's return would be, and only a `Command(goto=)` it returns routes on (the
        node's own edges do not follow a failure). The failure is saved first: if the handler
        fails or pauses, the resume runs the handler again, not the node. A failing handler
        fails the run.

        `timeout`: seconds (or a `timedelta`) each attempt may run, or a `TimeoutPolicy` with
        a `run_timeout` and an `idle_timeout` that progress refreshes (`runtime.heartbeat()`,
        stream writes, `@task` calls, langchain_core callback events). Past it, the attempt is
        cancelled and fails with `NodeTimeoutError`, which `retry_policy` retries by default
        (each retry has the whole timeout again). Async nodes only, as LangGraph's: `compile`
        refuses a timeout on a sync node with a `ValueError`, since Python cannot stop a
        thread that runs sync code.
        """
        if fn is None:
            if not callable(name) and not is_runnable(name):
                raise GraphSetupError(f"add_node({name!r}) needs a function")
            node: Any = name
            fn, name = node, getattr(node, "__name__", "") or getattr(node, "name", "")
        if not isinstance(name, str) or not name:
            raise GraphSetupError(f"node name must be a non-empty string, got {name!r}")
        if name in (START, END) or name.startswith("__"):
            raise GraphSetupError(f"node name {name!r} is reserved (START, END and '__' names)")
        if name in self.nodes:
            raise GraphSetupError(f"node {name!r} is already in the graph")
        if ":" in name or "|" in name:
            raise GraphSetupError(
                f"node name {name!r} has ':' or '|', which a subgraph's checkpoint namespace "
                "(`node:task_id|...`) uses to separate its parts: choose another name"
            )
        if retry_policy is not None and not isinstance(retry_policy, RetryPolicy):
            raise GraphSetupError(
                f"node {name!r}: retry_policy must be a RetryPolicy, got {retry_policy!r}"
            )
        limit = TimeoutPolicy.coerce(timeout)
        if isinstance(destinations, str):
            destinations = [destinations]
        labels = dict(destinations) if isinstance(destinations, Mapping) else None
        if cache_policy is not None and not isinstance(cache_policy, CachePolicy):
            raise GraphSetupError(
                f"node {name!r}: cache_policy must be a CachePolicy, got {cache_policy!r}"
            )
        given = fn
        if isinstance(fn, CompiledGraph):
            fn = SubgraphNode(fn, self.channels)
        run, afn, is_async, takes_config, dests, routes = self._callable(name, fn, destinations)
        reads = self._node_reader(name, fn, input_schema)
        handler: NodeSpec | None = None
        if error_handler is not None:
            handler = self._handler(
                f"__error_handler__{name}", error_handler, reads, len(self.nodes)
            )
            dests = (*dests, *(d for d in handler.destinations if d not in dests))
            routes = routes or handler.routes
        self.nodes[name] = NodeSpec(
            name,
            run,
            takes_config,
            is_async,
            len(self.nodes),
            dests,
            afn,
            retry_policy,
            reads,
            defer,
            cache_policy,
            routes,
            labels,
            handler,
            given,
            limit,
        )
        return self

    def _handler(
        self, name: str, fn: Any, reads: Callable[[dict[str, Any]], Any] | None, index: int
    ) -> NodeSpec:
        """The spec of an error handler, reading the state as its node does."""
        run, afn, is_async, takes_config, dests, routes = self._callable(name, fn, None)
        return NodeSpec(
            name, run, takes_config, is_async, index, dests, afn, reads=reads, routes=routes
        )

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | None = None,
        cache_policy: CachePolicy | None = None,
        error_handler: Callable[..., Any] | SupportsInvoke | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> StateGraph:
        """Policies for every node that does not set its own in `add_node`, applied when the
        graph is compiled (so before or after the nodes are added), as LangGraph's.

        `error_handler` runs (as `__default_error_handler__`) for any node without one of its
        own; a handler that fails is not handled again. Not inherited by subgraphs.
        `timeout` (as `add_node`'s) applies to every node, error handlers too, as LangGraph's:
        `compile` then refuses a graph with a sync node.
        """
        limit = TimeoutPolicy.coerce(timeout)
        if retry_policy is not None and not isinstance(retry_policy, RetryPolicy):
            raise GraphSetupError(f"retry_policy must be a RetryPolicy, got {retry_policy!r}")
        for key, value in (
            ("retry_policy", retry_policy),
            ("cache_policy", cache_policy),
            ("error_handler", error_handler),
            ("timeout", limit),
        ):
            if value is not None:
                self.node_defaults[key] = value
        return self

    def _with_defaults(self) -> dict[str, NodeSpec]:
        """The nodes, each given `set_node_defaults`' policies where it set none."""
        defaults = self.node_defaults
        if not defaults:
            return dict(self.nodes)
        retry, cache = defaults.get("retry_policy"), defaults.get("cache_policy")
        fallback, limit = defaults.get("error_handler"), defaults.get("timeout")
        nodes: dict[str, NodeSpec] = {}
        for name, spec in self.nodes.items():
            changes: dict[str, Any] = {}
            if retry is not None and spec.retry is None:
                changes["retry"] = retry
            if cache is not None and spec.cache is None:
                changes["cache"] = cache
            if limit is not None and spec.timeout is None:
                changes["timeout"] = limit
            if limit is not None and spec.handler is not None and spec.handler.timeout is None:
                changes["handler"] = dataclasses.replace(spec.handler, timeout=limit)
            if fallback is not None and spec.handler is None:
                handler = self._handler(
                    "__default_error_handler__", fallback, spec.reads, spec.index
                )
                if limit is not None:
                    handler = dataclasses.replace(handler, timeout=limit)
                changes["handler"] = handler
                changes["destinations"] = (
                    *spec.destinations,
                    *(d for d in handler.destinations if d not in spec.destinations),
                )
                changes["routes"] = spec.routes or handler.routes
            nodes[name] = dataclasses.replace(spec, **changes) if changes else spec
        return nodes

    def _callable(
        self,
        name: str,
        fn: Any,
        destinations: Sequence[str] | Mapping[str, str] | None,
    ) -> tuple[Callable[..., Any], Callable[..., Any] | None, bool, bool, tuple[str, ...], bool]:
        """How to call a node's function (or Runnable, or compiled graph): `(run, afn,
        is_async, takes_config, destinations, routes)` as `NodeSpec` holds them."""
        afn: Callable[..., Any] | None = None
        run: Callable[..., Any]
        if isinstance(fn, CompiledGraph):
            fn = SubgraphNode(fn, self.channels)
        if is_runnable(fn):
            runnable: Any = fn
            run, afn = runnable.invoke, getattr(runnable, "ainvoke", None)
            is_async, takes_config = False, True
            dests = tuple(destinations) if destinations is not None else ()
            routes = destinations is None
        elif not callable(fn):
            raise GraphSetupError(
                f"node {name!r}: {fn!r} is neither callable nor an object with invoke()"
            )
        else:
            run = fn
            dests = tuple(destinations) if destinations is not None else _goto_annotation(run)
            routes = not dests and _may_return(run, (Command, Send))
            is_async = _is_async(run)
            takes_config = _takes_config(run, f"node {name!r}")
            injected = _injected(run)
            if injected:
                how: Literal["pos", "kw", "no"] = (
                    ("kw" if _config_by_name(run) else "pos") if takes_config else "no"
                )
                run, takes_config = _with_injected(run, injected, how, is_async), True
            elif takes_config and _config_by_name(run):
                run = _with_config_by_name(run)
        return run, afn, is_async, takes_config, dests, routes

    def add_edge(self, start: str | Sequence[str], end: str) -> StateGraph:
        """`add_edge(a, b)`: b runs after a. `add_edge([a, b], c)`: c runs once both have run."""
        if end == START:
            raise GraphSetupError("START cannot be the end of an edge")
        if isinstance(start, str):
            if start == END:
                raise GraphSetupError(f"END cannot be the start of an edge (END -> {end!r})")
            self.edges.append((start, end))
            return self
        sources = tuple(start)
        if not sources:
            raise GraphSetupError(f"add_edge([], {end!r}): give at least one start node")
        if START in sources or END in sources:
            raise GraphSetupError(f"a join edge cannot start at START or END: {list(sources)}")
        if len(sources) == 1:
            return self.add_edge(sources[0], end)
        self.joins.append((sources, end))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """After `source`, run `path(state)` (or `path(state, config)`) to choose what runs next.

        It returns a node name, `END`, or a list of them; with `path_map`, a key of the map (a
        list `path_map` names the allowed nodes). An async `path` is awaited under
        `ainvoke`/`astream`; `invoke` and `stream` raise `TypeError` when they reach it.
        """
        if source == END:
            raise GraphSetupError("END cannot be the source of conditional edges")
        if not callable(path):
            raise GraphSetupError(f"conditional edges from {source!r}: {path!r} is not callable")
        is_async = _is_async(path)
        sends = _may_return(path, (Send,))
        takes_config = _takes_config(path, f"router of {source!r}")
        if takes_config and _config_by_name(path):
            path = _with_config_by_name(path)
        mapping: dict[Hashable, str] | None
        if path_map is None:
            mapping = None
        elif isinstance(path_map, dict):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        self.branches.append(Branch(source, path, takes_config, mapping, is_async, sends))
        return self

    def set_entry_point(self, name: str) -> StateGraph:
        return self.add_edge(START, name)

    def set_conditional_entry_point(
        self,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """`add_conditional_edges(START, path, path_map)`: the router chooses the first node."""
        return self.add_conditional_edges(START, path, path_map)

    def add_sequence(
        self, nodes: Sequence[Callable[..., Any] | SupportsInvoke | tuple[str, Any]]
    ) -> StateGraph:
        """Add nodes that run one after another, each a function (named after it) or a
        `(name, fn)` pair, with an edge from each to the next (not from START: add that)."""
        if not nodes:
            raise GraphSetupError("add_sequence([]) needs at least one node")
        previous: str | None = None
        for item in nodes:
            if isinstance(item, tuple):
                name, fn = item
                self.add_node(name, fn)
            else:
                self.add_node(item)
                name = list(self.nodes)[-1]
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_finish_point(self, name: str) -> StateGraph:
        return self.add_edge(name, END)

    def compile(
        self,
        checkpointer: BaseCheckpointSaver | bool | None = None,
        *,
        interrupt_before: Sequence[str] | Literal["*"] | None = (),
        interrupt_after: Sequence[str] | Literal["*"] | None = (),
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
        interrupt_mode: Literal["raise", "return"] | None = None,
        name: str | None = None,
        debug: bool = False,
        store: BaseStore | None = None,
        cache: BaseCache | None = None,
    ) -> CompiledGraph:
        """Check the graph and make it runnable.

        Args:
            checkpointer: where state is saved after every superstep. Needed to pause, resume,
                and for `get_state`/`update_state`. A graph compiled without one that runs as a
                subgraph (a node, or called in a node) uses its parent's; `False`: not even
                then (the subgraph cannot pause, and a resumed node runs it again from the
                start); `True`: as a subgraph, use the parent's and keep this graph's state
                across the parent's invocations on a thread (under the namespace of the node
                that runs it), each run going on from where the last one ended.
            interrupt_before: pause just before these nodes run (`"*"`: all; None: none, as
                LangGraph's default).
            interrupt_after: pause just after these nodes ran (`"*"`: all; None: none).
            recursion_limit: the most supersteps one invocation may run.
            interrupt_mode: `"raise"`: a pause raises `GraphInterrupt` (the default of the
                top-level `graphs.StateGraph`). `"return"`: `invoke` returns the state with an
                `"__interrupt__"` key instead (the state alone for an `interrupt_before` or
                `interrupt_after` pause), as LangGraph does (the default of
                `graphs.graph.StateGraph`).
            name: the compiled graph's `name` (LangGraph's; default `"LangGraph"`).
            debug: every run prints its `updates` and `values` chunks as they come (LangGraph's
                `debug`; a run's `print_mode=` picks other modes).
            store: a `graphs.store.BaseStore` (such as `InMemoryStore()`) nodes share across
                threads: handed to a `store` parameter, `get_store()` and `Runtime.store`.
                A subgraph without one uses its parent's.
            cache: a `graphs.cache.BaseCache` (such as `InMemoryCache()`) for the results of
                nodes added with `cache_policy=`; a subgraph without one uses its parent's.

        Raises:
            GraphSetupError: an edge names an unknown node, a node cannot be reached, the graph
                has no entry point, or an option is invalid.
        """
        inherit = checkpointer is not False
        persistent = checkpointer is True
        if checkpointer is False or checkpointer is True:
            checkpointer = None
        if checkpointer is not None and not isinstance(checkpointer, BaseCheckpointSaver):
            raise InvalidCheckpointerError(
                f"Invalid checkpointer provided: checkpointer must be a BaseCheckpointSaver "
                f"(InMemorySaver(), SQLSaver(url)), "
                f"None, True or False, got {type(checkpointer).__module__}.{type(checkpointer).__qualname__} "
                f"{checkpointer!r}"
            )
        nodes = self._with_defaults()
        try:  # the classes the schemas name, in checkpoints: found once, here, not per step
            allow_schema_types(
                self.schema, self.input_schema, self.output_schema, *self.node_schemas
            )
        except ValueError as e:
            raise GraphSetupError(str(e)) from e
        check_shape(self.nodes, nodes, self.edges, self.joins, self.branches)

        before = self._interrupt_nodes(interrupt_before, "interrupt_before")
        after = self._interrupt_nodes(interrupt_after, "interrupt_after")
        if (before or after) and checkpointer is None and not inherit:
            # (Without one, a subgraph saves its pause with its parent's checkpointer.)
            raise GraphSetupError(
                "interrupt_before/interrupt_after need a checkpointer to save the pause: "
                "compile(checkpointer=InMemorySaver(), ...) or SQLSaver(url), or compile it "
                "without checkpointer=False to run it as a subgraph"
            )
        if not isinstance(recursion_limit, int) or recursion_limit < 1:
            raise GraphSetupError(
                f"recursion_limit must be a positive int, got {recursion_limit!r}"
            )
        if interrupt_mode is None:
            interrupt_mode = "return" if self.dialect == "langgraph" else "raise"
        if interrupt_mode not in ("raise", "return"):
            raise GraphSetupError(
                f"interrupt_mode must be 'raise' or 'return', got {interrupt_mode!r}"
            )

        edges: dict[str, list[str]] = {}
        for a, b in self.edges:
            if b not in edges.setdefault(a, []):
                edges[a].append(b)
        joins: dict[str, list[Join]] = {}
        for i, (sources, target) in enumerate(self.joins):
            join = Join(f"__join__:{i}:{target}", frozenset(sources), target)
            for s in set(sources):
                joins.setdefault(s, []).append(join)
        branches: dict[str, list[Branch]] = {}
        for br in self.branches:
            branches.setdefault(br.source, []).append(br)

        graph = CompiledGraph(
            builder=self,
            channels=dict(self.channels),
            nodes=nodes,
            edges=edges,
            joins=joins,
            branches=branches,
            checkpointer=checkpointer,
            inherit=inherit,
            persistent=persistent,
            interrupt_before=before,
            interrupt_after=after,
            recursion_limit=recursion_limit,
            interrupt_mode=interrupt_mode,
        )
        graph.store = store
        graph.cache = cache
        graph.debug = debug
        if name is not None:
            graph.name = name
        return graph

    def _interrupt_nodes(self, names: Sequence[str] | str | None, option: str) -> frozenset[str]:
        if names is None:
            return frozenset()
        if names == "*":
            return frozenset(self.nodes)
        if isinstance(names, str):
            names = [names]
        unknown = [n for n in names if n not in self.nodes]
        if unknown:
            raise GraphSetupError(
                f"{option} names unknown node(s) {unknown}; nodes are: {sorted(self.nodes)}"
            )
        return frozenset(names)
