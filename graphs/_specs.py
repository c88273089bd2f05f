"""What a graph's nodes are once added: `NodeSpec` (and `Branch`, `Join` for its edges), which the
builder makes, the compiled graph holds and a task runs.

Plain data, at the bottom of the runtime: the run's state (`_run.py`) holds specs, and how a
node's function is read into one is `_nodes.py`, above it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ._types import RetryPolicy, TimeoutPolicy
from .cache import CachePolicy, node_namespace
from .errors import GraphSetupError

__all__ = ["Branch", "Join", "NodeFunction", "NodeSpec", "SupportsInvoke", "is_runnable"]


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
        if is_runnable(given):
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


def is_runnable(obj: object) -> bool:
    """An object run through its `invoke(input, config)` (a LangChain Runnable, a `ToolNode`),
    not a plain function."""
    return not inspect.isroutine(obj) and callable(getattr(obj, "invoke", None))
