"""`StateGraph`: declare nodes and edges, then `compile()` into a runnable graph."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, get_args, get_origin

from ._context import _current
from ._schema import (
    ROOT,
    Channel,
    channels_from_schema,
    coercer,
    is_root_schema,
    managed_from_schema,
    root_channel,
    schema_keys,
)
from ._subgraph import SubgraphNode
from ._timeout import refuse_sync
from .cache import CachePolicy, node_namespace
from .checkpoint.base import BaseCheckpointSaver
from .compiled import CompiledGraph
from .errors import GraphSetupError, InvalidCheckpointerError, NodeError
from .types import END, START, Command, Dialect, RetryPolicy, Send, TimeoutPolicy

if TYPE_CHECKING:
    from .cache import BaseCache
    from .store import BaseStore

__all__ = ["StateGraph"]

DEFAULT_RECURSION_LIMIT = 25


class SupportsInvoke(Protocol):
    """A node given as an object: `invoke(state, config)` (a LangChain Runnable, a `ToolNode`);
    its `ainvoke`, if it has one, runs under `ainvoke`."""

    def invoke(self, input: Any, config: Any = None, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    fn: Callable[..., Any]
    takes_config: bool
    is_async: bool
    index: int
    destinations: tuple[str, ...] = ()
    """Where its `Command(goto=...)` may go (`destinations=`, or `-> Command[Literal[...]]`)."""
    afn: Callable[..., Any] | None = None
    """Its async form `afn(state, config)`, run under `ainvoke` in place of a sync `fn`: a
    Runnable's `ainvoke`."""
    retry: RetryPolicy | None = None
    """How a failed attempt is retried within the step (`add_node(retry_policy=...)`)."""
    reads: Callable[[dict[str, Any]], Any] | None = None
    """Makes the node's input from the state, for a node with a schema of its own
    (`add_node(..., input_schema=)`, or `def node(state: Private)`); None: the state schema's."""
    defer: bool = False
    """Once triggered, it waits until no other node is to run (`add_node(defer=True)`)."""
    cache: CachePolicy | None = None
    """How its results are cached (`add_node(cache_policy=)`, with `compile(cache=)`)."""
    routes: bool = True
    """It may return a `Command(goto=...)` (or `Send`) to a node it did not declare: it has no
    `destinations`, and no return annotation that rules a `Command` out."""
    labels: Mapping[str, str] | None = None
    """The drawing's label of each destination (`destinations={"node": "label"}`)."""
    handler: NodeSpec | None = None
    """What runs in its place, in the same step, once it failed (`add_node(error_handler=)`):
    a spec named `__error_handler__<node>`, reading the state as the node does."""
    given: Any = None
    """What `add_node` was given: the function, the object with `invoke`, or the compiled
    graph (None for a spec graphs made itself; then `fn` is the function)."""
    timeout: TimeoutPolicy | None = None
    """How long each attempt may run (`add_node(timeout=)`, LangGraph's
    `StateNodeSpec.timeout`): past it, the attempt is cancelled and fails with
    `NodeTimeoutError`. Async nodes only."""

    @property
    def cache_namespace(self) -> tuple[str, ...]:
        """Where its results are cached: LangGraph's namespace, its function's identity
        (`"module.qualname"` of what `add_node` was given) and its name."""
        return node_namespace(self.name, self.fn if self.given is None else self.given)

    @property
    def timeable(self) -> bool:
        """Its code can be cancelled: an async function, or an object with `ainvoke`."""
        return self.is_async or self.afn is not None

    @property
    def runnable(self) -> Any:
        """The node as LangGraph's `StateNodeSpec.runnable` shows it, to read: an object given
        with `invoke` (a Runnable, a compiled graph) is itself; a function is wrapped in a
        `NodeFunction`, whose `func` is that function (`builder.nodes["n"].runnable.func`).
        graphs runs the node from the spec, not through this object."""
        given = self.fn if self.given is None else self.given
        if _is_runnable(given):
            return given
        return NodeFunction(self.name, given)

    @property
    def retry_policy(self) -> RetryPolicy | None:
        """`add_node(retry_policy=)` (LangGraph's `StateNodeSpec.retry_policy`)."""
        return self.retry

    @property
    def cache_policy(self) -> CachePolicy | None:
        """`add_node(cache_policy=)` (LangGraph's `StateNodeSpec.cache_policy`)."""
        return self.cache

    @property
    def ends(self) -> tuple[str, ...] | dict[str, str]:
        """`add_node(destinations=)`: the names, or the dict of labels given (LangGraph's
        `StateNodeSpec.ends`)."""
        return dict(self.labels) if self.labels is not None else self.destinations

    def copy(self, update: Mapping[str, Any]) -> NodeSpec:
        """A copy with the fields in `update` replaced (LangGraph's `PregelNode.copy`; the
        keys are this spec's fields, not a Pregel node's channels and writers)."""
        fields = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(k for k in update if k not in fields)
        if unknown:
            raise GraphSetupError(
                f"node {self.name!r}: copy() was given {unknown}, which a node spec does not "
                f"have; its fields are {fields}"
            )
        return dataclasses.replace(self, **update)


@dataclass(frozen=True, slots=True)
class NodeFunction:
    """`NodeSpec.runnable` of a node given as a function, shaped as LangGraph's
    `RunnableCallable` is read: its `name` and the `func` given to `add_node`."""

    name: str
    func: Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Branch:
    source: str
    router: Callable[..., Any]
    takes_config: bool
    path_map: dict[Hashable, str] | None
    is_async: bool = False
    """An async router: awaited under `ainvoke`/`astream`; `invoke` refuses it."""
    sends: bool = True
    """It may return a `Send` (which bypasses a `path_map`): no return annotation rules it out."""


@dataclass(frozen=True, slots=True)
class Join:
    key: str
    """Internal channel that remembers which sources have finished."""
    sources: frozenset[str]
    target: str


def _config_by_name(fn: Callable[..., Any]) -> bool:
    """`fn(state, *, config)`: the config is a keyword-only parameter."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "config" and p.kind is p.KEYWORD_ONLY for p in params)


def _with_config_by_name(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(state: Any, config: Any) -> Any:
        return fn(state, config=config)

    call.__wrapped__ = fn  # type: ignore[attr-defined]  # what get_graph() reads
    return call


def _goto_annotation(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The node names of a `-> Command[Literal["a", "b"]]` return annotation, if it has one."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return ()
    found: list[str] = []
    todo = [hints.get("return")]
    while todo:
        hint = todo.pop()
        origin = get_origin(hint)
        if origin is Command:
            for arg in get_args(hint):
                if get_origin(arg) is Literal:
                    found += [a for a in get_args(arg) if isinstance(a, str)]
        elif origin is not None:  # a union, Optional[...], ...
            todo.extend(get_args(hint))
    return tuple(found)


def _may_return(fn: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `fn` may return one of `kinds` (or a list of them), as far as its return
    annotation tells: yes without one, or with one that does not resolve or says `Any`."""
    if not inspect.isroutine(fn) and callable(fn):
        fn = fn.__call__  # an object with __call__: its method's annotation
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve rules nothing out
        return True
    if "return" not in hints:
        return True
    todo = [hints["return"]]
    while todo:
        hint = todo.pop()
        if hint is Any or hint is object or (isinstance(hint, type) and issubclass(hint, kinds)):
            return True
        origin = get_origin(hint)
        if isinstance(origin, type) and issubclass(origin, kinds):
            return True
        if origin in (typing.Union, types.UnionType, list, tuple, Sequence):
            todo.extend(a for a in get_args(hint) if a is not Ellipsis)  # `X | None`, `list[X]`
        elif origin is typing.Annotated:
            todo.append(get_args(hint)[0])
    return False


INJECTED = ("writer", "runtime", "store", "error")
"""Parameters a node may declare by name to be handed the run's `StreamWriter`, `Runtime` and
store (`compile(store=)`), and, in an error handler, the `NodeError` (None elsewhere)."""


def _is_injected(p: inspect.Parameter) -> bool:
    """An `INJECTED` parameter; `error` only when annotated `NodeError`, as LangGraph's."""
    if p.name != "error":
        return p.name in INJECTED
    note = p.annotation
    return note is NodeError or (isinstance(note, str) and note.endswith("NodeError"))


def _injected(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The `INJECTED` parameters `fn` declares (by keyword, or positionally after the state)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params[1:] if _is_injected(p) and p.kind in kinds)


def _with_injected(
    fn: Callable[..., Any],
    names: tuple[str, ...],
    config: Literal["pos", "kw", "no"],
    is_async: bool,
) -> Callable[..., Any]:
    """`fn` called as `(state, config)`, given what it declared of `writer` and `runtime`."""

    def kwargs(cfg: Any) -> dict[str, Any]:
        task = _current.get()
        assert task is not None  # nodes run inside their task
        out: dict[str, Any] = {}
        if "writer" in names:
            out["writer"] = task.run.writer
        if "runtime" in names:
            out["runtime"] = task.runtime()
        if "store" in names:
            out["store"] = task.run.store
        if "error" in names:
            out["error"] = task.node_error
        if config == "kw":
            out["config"] = cfg
        return out

    if is_async:

        async def acall(state: Any, cfg: Any) -> Any:
            if config == "pos":
                return await fn(state, cfg, **kwargs(cfg))
            return await fn(state, **kwargs(cfg))

        acall.__wrapped__ = fn  # type: ignore[attr-defined]  # what get_graph() reads
        return acall

    def call(state: Any, cfg: Any) -> Any:
        if config == "pos":
            return fn(state, cfg, **kwargs(cfg))
        return fn(state, **kwargs(cfg))

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def _takes_config(fn: Callable[..., Any], what: str) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and not _is_injected(p)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    if len(positional) == 2 or any(p.name == "config" for p in params):
        return True
    if len(positional) > 2:
        raise GraphSetupError(
            f"{what} takes {len(positional)} arguments; it must take (state) or (state, config)"
        )
    return False


def _first_param_schema(fn: Any) -> type | None:
    """The schema class `fn`'s first parameter is annotated with (`def node(state: Private)`),
    if it is one: a TypedDict, a dataclass or a pydantic model."""
    if not inspect.isroutine(fn):
        return None
    try:
        params = list(inspect.signature(fn).parameters)
        hint = typing.get_type_hints(fn).get(params[0]) if params else None
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return None
    if not isinstance(hint, type) or is_root_schema(hint):
        return None
    return hint


def _is_runnable(obj: object) -> bool:
    """An object run through its `invoke(input, config)` (a LangChain Runnable, a `ToolNode`),
    not a plain function."""
    return not inspect.isroutine(obj) and callable(getattr(obj, "invoke", None))


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 -- the method itself: is it async?
    )


class StateGraph:
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
        """`set_node_defaults(...)`: what `compile` gives the nodes that set none of their own."""
        self.root = is_root_schema(state_schema)
        """A root-channel graph: the state is one value (`StateGraph(Annotated[list, add])`),
        which nodes receive and return as it is."""
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
        self.channels: dict[str, Channel] = channels_from_schema(state_schema)
        self.managed: dict[str, Any] = managed_from_schema(state_schema)
        """Keys computed for each node run (`graphs.managed`), by their `ManagedValue`."""
        self.state_keys = frozenset(self.channels)
        """The state schema's own keys (not those only an input, output or node schema has)."""
        for extra in (input_schema, output_schema):
            if extra is not None and extra is not state_schema:
                self._add_channels(extra)
        self.coerce = coercer(state_schema)
        """Makes a node's state dict an instance of a dataclass/pydantic schema (else None)."""
        self.input_keys = frozenset(schema_keys(self.input_schema))
        self.output_keys = frozenset(schema_keys(self.output_schema))
        self.nodes: dict[str, NodeSpec] = {}
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
            if not callable(name) and not _is_runnable(name):
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
        if _is_runnable(fn):
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
        known = set(self.nodes)

        def check(name: str, where: str, end: str | None = None) -> None:
            """`end`: "starting" or "ending", for an edge (LangGraph's words for it)."""
            if name not in known and name not in (START, END):
                nodes = sorted(known) or "none"
                if end is None:
                    raise GraphSetupError(
                        f"{where} names unknown node {name!r}; nodes are: {nodes}"
                    )
                raise GraphSetupError(
                    f"Found edge {end} at unknown node {name!r} ({where}); nodes are: {nodes}"
                )

        for a, b in self.edges:
            check(a, f"edge {a!r} -> {b!r}", "starting")
            check(b, f"edge {a!r} -> {b!r}", "ending")
        for sources, target in self.joins:
            for s in sources:
                check(s, f"edge {list(sources)!r} -> {target!r}", "starting")
            check(target, f"edge {list(sources)!r} -> {target!r}", "ending")
        nodes = self._with_defaults()
        for spec in nodes.values():
            for timed in (spec, spec.handler):
                if timed is not None and timed.timeout is not None and not timed.timeable:
                    raise refuse_sync(timed.name, "Node")
            for dest in spec.destinations:
                check(dest, f"the destinations of node {spec.name!r}")
        for br in self.branches:
            check(br.source, f"conditional edges from {br.source!r}", "starting")
            for dest in (br.path_map or {}).values():
                check(dest, f"path_map of conditional edges from {br.source!r}")

        starts = [b for a, b in self.edges if a == START]
        if not starts and not any(br.source == START for br in self.branches):
            raise GraphSetupError(
                "the graph has no entry point: add add_edge(START, 'first_node') "
                "(or add_conditional_edges(START, router))"
            )
        if not self.nodes:
            raise GraphSetupError("the graph has no nodes: add_node('name', fn)")

        unreachable = known - self._reachable(nodes)
        if unreachable:
            raise GraphSetupError(
                f"node(s) {sorted(unreachable)} cannot be reached from START: no edge, "
                "path_map or destinations= leads to them, and no node or router on the way may "
                "route anywhere else: add an edge to them, or remove them"
            )

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

    def _reachable(self, nodes: Mapping[str, NodeSpec]) -> set[str]:
        """The nodes a run may reach from START. Once it reaches a node or a router that may
        route where it did not declare (a `Command` without `destinations`, a router without
        a `path_map`, a `Send`), every node counts as reachable, as LangGraph allows."""
        anywhere = {spec.name for spec in nodes.values() if spec.routes}
        anywhere.update(br.source for br in self.branches if br.path_map is None or br.sends)
        out: dict[str, set[str]] = {}
        for a, b in self.edges:
            out.setdefault(a, set()).add(b)
        for sources, target in self.joins:
            for s in sources:
                out.setdefault(s, set()).add(target)
        for br in self.branches:
            out.setdefault(br.source, set()).update((br.path_map or {}).values())
        for spec in nodes.values():
            out.setdefault(spec.name, set()).update(spec.destinations)
        seen: set[str] = set()
        todo = [START]
        while todo:
            node = todo.pop()
            if node in anywhere:
                return set(nodes)
            for nxt in out.get(node, ()):
                if nxt not in seen and nxt != END:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen
