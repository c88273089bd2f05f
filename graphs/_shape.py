"""What a graph is to the code that runs it, as plain data: `Schemas`, the state as the builder
declared it, and `GraphShape`, the compiled graph's parts (its channels, nodes, edges, savers and
limits).

The builder (`StateGraph`) is a `Schemas` and the compiled graph a `GraphShape`; the run, its
tasks, the drawing and the JSON schemas read these, below the classes that build and run graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ._schema import EPHEMERAL, TOPIC, UNTRACKED, Channel
from ._specs import Branch, Join, NodeSpec
from ._types import END, Dialect, RunConfig

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver

__all__ = ["GraphShape", "Schemas"]


class Schemas:
    """A graph's state as its builder declared it: the schemas, and the channels and keys they
    make. `StateGraph` (`builder.py`) sets them."""

    dialect: ClassVar[Dialect]
    """Whose semantics it follows where seed 000's and LangGraph's differ (`Dialect`)."""
    root: bool
    """A root-channel graph: the state is one value (`StateGraph(Annotated[list, add])`),
    which nodes receive and return as it is."""
    schema: type
    context_schema: type | None
    input_schema: type
    output_schema: type
    channels: dict[str, Channel]
    managed: dict[str, Any]
    """Keys computed for each node run (`graphs.managed`), by their `ManagedValue`."""
    state_keys: frozenset[str]
    """The state schema's own keys (not those only an input, output or node schema has)."""
    coerce: Callable[[dict[str, Any]], Any] | None
    """Makes a node's state dict an instance of a dataclass/pydantic schema (else None)."""
    input_keys: frozenset[str]
    output_keys: frozenset[str]
    nodes: dict[str, NodeSpec]


class GraphShape:
    """A compiled graph's parts, as the run, its tasks and its drawing read them.
    `CompiledGraph` (`compiled.py`) is one, with the methods that run it."""

    def __init__(
        self,
        *,
        builder: Schemas,
        channels: dict[str, Channel],
        nodes: dict[str, NodeSpec],
        edges: dict[str, list[str]],
        joins: dict[str, list[Join]],
        branches: dict[str, list[Branch]],
        checkpointer: BaseCheckpointSaver | None,
        inherit: bool = True,
        persistent: bool = False,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        recursion_limit: int,
        interrupt_mode: Literal["raise", "return"],
    ) -> None:
        self.builder = builder
        self.channels = channels
        self.empty = {k: c.initial for k, c in channels.items() if c.initial is not None}
        """How to make the empty value of each reducer key: what a node reads, and what the run's
        output and `get_state` show, before anything wrote it (LangGraph's `typ()`)."""
        self.untracked = frozenset(k for k, c in channels.items() if c.kind == UNTRACKED)
        """`UntrackedValue` keys: what a checkpoint, its pending writes and `Send`s leave out."""
        self.fleeting = frozenset(
            k
            for k, c in channels.items()
            if c.kind == EPHEMERAL or (c.kind == TOPIC and not c.accumulate)
        )
        """Keys a step that does not write them empties (`EphemeralValue`, `Topic`)."""
        self.nodes = nodes
        self.edges = edges
        self.joins = joins
        self.branches = branches
        self.checkpointer = checkpointer
        self.inherit = inherit
        """As a subgraph, without a checkpointer of its own: use the parent's (not
        `compile(checkpointer=False)`)."""
        self.persistent = persistent
        """As a subgraph, keep its state across the parent's invocations
        (`compile(checkpointer=True)`): its namespace is its node's name, without the task id."""
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.recursion_limit = recursion_limit
        self.interrupt_mode = interrupt_mode
        self.dialect = builder.dialect
        """Whose semantics it follows where seed 000's and LangGraph's differ (`Dialect`)."""
        self.coerce = builder.coerce
        self.managed: dict[str, Any] = builder.managed
        """Keys computed for each node run (`graphs.managed`), by their `ManagedValue`."""
        self.root = builder.root
        """A root-channel graph: its state is one value, not a dict of keys."""
        """Makes a node's state dict an instance of a dataclass/pydantic schema (else None)."""
        typed = builder.input_schema is not builder.schema
        self.input_keys = builder.input_keys if typed else None
        """The keys `invoke` accepts, when an `input_schema` narrows them."""
        typed = builder.output_schema is not builder.schema
        private = not builder.output_keys.issuperset(channels)  # a node's own schema's keys
        self.output_keys = builder.output_keys if typed or private else None
        """The keys `invoke` returns and `values` streams, when an `output_schema` narrows them
        (or private channels, which only nodes see, are there)."""
        public = builder.state_keys | builder.input_keys | builder.output_keys
        self.node_keys = frozenset(k for k in channels if k not in public)
        """Keys only nodes' own schemas declare (private channels): not part of the input, so
        an input's value for one is dropped, as LangGraph drops it."""
        self.context_schema = builder.context_schema
        self.async_routers = any(br.is_async for brs in branches.values() for br in brs)
        """Some router is async: the loop awaits it through its driver (`ainvoke` only)."""
        self.deferred = frozenset(n for n, spec in nodes.items() if spec.defer)
        """Nodes added with `defer=True`: they run once no other node is to run."""
        self.plain_next: dict[str, tuple[str, ...]] = {}
        """For a node whose only way out is its plain edges (no join, no router), in a graph
        without deferred nodes: the frontier after it when it ran alone and went to no
        `goto` (its edges' targets in the order the nodes were added, `END` left out)."""
        if not self.deferred:
            for source, targets in edges.items():
                nexts = {t for t in targets if t != END}
                if not joins.get(source) and not branches.get(source) and nexts <= nodes.keys():
                    self.plain_next[source] = tuple(sorted(nexts, key=lambda n: nodes[n].index))
        self.cache: Any = None
        """`compile(cache=...)`: where nodes with a `cache_policy` keep their results."""
        self.store: Any = None
        """`compile(store=...)`: the `BaseStore` its nodes share (a subgraph's: its parent's
        when None)."""
        self.name = "LangGraph"
        """`compile(name=...)`: how LangGraph names the graph (in traces and as a tool)."""
        self.step_timeout: float | None = None
        """Seconds a step's tasks may run under `ainvoke`/`astream` before those still running
        are cancelled and the run fails with `TimeoutError` (LangGraph's attribute of the same
        name; None: no limit). Set it on the compiled graph: `graph.step_timeout = 30`."""

    # What the compiled graph does that code below it calls (a subgraph run as a node):

    def invoke(self, input: Any, config: RunConfig | None = None, /) -> Any:
        """Run the graph to its end or its pause (`CompiledGraph.invoke`)."""
        raise NotImplementedError

    async def ainvoke(self, input: Any, config: RunConfig | None = None, /) -> Any:
        """`invoke` under asyncio (`CompiledGraph.ainvoke`)."""
        raise NotImplementedError
