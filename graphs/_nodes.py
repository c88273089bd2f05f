"""What a graph's nodes are once added: `NodeSpec` (and `Branch`, `Join` for its edges), which the
builder makes, the compiled graph holds and a task runs; and how a node's function is read (does it
take the config, by which name; which injections it asks for; where its `Command` may go).

Plain data and pure readings of a function: below the builder, the compiled graph and the tasks,
which all import it.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args, get_origin

from ._context import _current
from ._schema import is_root_schema
from ._types import Command, RetryPolicy, TimeoutPolicy
from .cache import CachePolicy, node_namespace
from .errors import GraphSetupError, NodeError

__all__ = ["Branch", "Join", "NodeFunction", "NodeSpec", "SupportsInvoke"]


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
