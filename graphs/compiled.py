"""`CompiledGraph`: run a graph (`invoke`, `ainvoke`, `stream`, `astream`) and read or amend its
saved state (`get_state`, `get_state_history`, `update_state`, `fork` into a new thread)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Generator,
    Iterator,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from . import _updates
from ._algo import task_writes, waiting
from ._context import Pause, _current
from ._draw import draw
from ._drive import drive_async, drive_run_async, drive_run_sync, drive_sync
from ._events import astream_events, start_async, start_sync, traced
from ._io import Emit, Unsaved
from ._jsonschema import context_jsonschema, input_model, output_model, state_jsonschema
from ._loop import Paused, Run, finished_values
from ._runnable import RunnableMethods, merge_configs
from ._schema import EPHEMERAL, ROOT, TOPIC, UNTRACKED, Channel, is_typed_class
from ._stream import MODES
from ._subgraph import (
    SubgraphNode,
    called_graph,
    child_config,
    is_subgraph,
    namespace_levels,
    segment_of,
    subgraph_node_of,
)
from ._task import SENDS_CHANNEL, task_paths
from ._types import (
    START,
    Command,
    Durability,
    Interrupt,
    RunConfig,
    StateSnapshot,
    StateTask,
    StateUpdate,
    StreamMode,
)
from .checkpoint.base import (
    DONE,
    ERROR,
    CheckpointTuple,
    config_checkpoint_id,
    config_ns,
    config_thread_id,
)
from .errors import (
    CheckpointerRequiredError,
    GraphInterrupt,
    InvalidUpdateError,
    MultipleSubgraphsError,
    ResumeError,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from langchain_core.runnables.graph import Graph
    from pydantic import BaseModel

    from ._nodes import Branch, Join, NodeSpec
    from ._task import Task
    from .builder import StateGraph
    from .checkpoint.base import BaseCheckpointSaver

    # What a run takes: state keys (a dict, or an instance of a dataclass or pydantic state
    # schema), a `Command`, or None to continue.
    Input: TypeAlias = dict[str, Any] | Command | DataclassInstance | BaseModel | None

__all__ = ["CompiledGraph", "SubgraphNode"]


class CompiledGraph(RunnableMethods):
    """A checked, runnable graph. Made by `StateGraph.compile()`; safe to share between threads."""

    run_class: type[Run] = Run
    """What one invocation of it is (a `graphs.func` entrypoint's runs are a kind of their own)."""

    debug: bool = False
    """`compile(debug=True)`: every run prints its `updates` and `values` chunks (as a run's
    `debug=True`)."""

    def __init__(
        self,
        *,
        builder: StateGraph,
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

    # ---- running ---------------------------------------------------------------------

    def _run(
        self,
        config: RunConfig | None,
        modes: frozenset[str],
        subgraphs: bool = False,
        context: Any = None,
        nest: bool = True,
    ) -> Run:
        if self.bound_config is not None:
            config = merge_configs(self.bound_config, config)
        parent = _current.get() if nest else None
        if parent is not None and (
            self.checkpointer is None or self._shares_thread(parent.run, config)
        ):
            return self._subgraph_run(parent, config, modes, context)
        if self.checkpointer is None and (self.interrupt_before or self.interrupt_after):
            raise CheckpointerRequiredError(
                "interrupt_before/interrupt_after need a checkpointer to save the pause: "
                "compile(checkpointer=InMemorySaver(), ...) or SQLSaver(url), or run this graph "
                "as a subgraph of a graph that has one"
            )
        if config is None:
            config = {}
        configurable = config.get("configurable")
        if configurable is None:
            configurable = config["configurable"] = {}
        thread_id: Any = configurable.get("thread_id")
        if thread_id is None:
            thread_id = uuid.uuid4().hex
            if self.checkpointer is not None:
                # Written back so the caller can learn the thread it must resume.
                configurable["thread_id"] = thread_id
        elif type(thread_id) is int or isinstance(thread_id, uuid.UUID):
            thread_id = str(thread_id)  # as LangGraph; savers key threads by the string
        elif not isinstance(thread_id, str) or not thread_id:
            raise ValueError(
                f"thread_id must be a non-empty string, an int or a UUID, got {thread_id!r}"
            )
        ns = configurable.get("checkpoint_ns") or ""
        requested = config_checkpoint_id(config)
        given = {**configurable, "thread_id": thread_id}
        if ":" in ns or ns.split("|", 1)[0] in self.nodes:
            # A subgraph's namespace (a pending task's `state`, a subgraph checkpoint's config):
            # as LangGraph, the run is the graph's own, from the thread's head (the checkpoint
            # id, a subgraph's, is dropped too); the parent's run goes on inside the subgraph.
            ns = ""
            given.update(checkpoint_ns="")
            given.pop("checkpoint_id", None)
            requested = None
        run_config: RunConfig = {**config, "configurable": given}  # type: ignore[typeddict-item]
        run = self.run_class(
            self,
            run_config,
            thread_id,
            ns,
            modes=modes,
            subgraphs=subgraphs,
            context=self._context(context),
        )
        run.requested_id = requested
        if run.messages is not None and self.checkpointer is None:
            run.messages.anonymous = configurable.get("thread_id") is None
        return run

    def _shares_thread(self, up: Run, config: RunConfig | None) -> bool:
        """Compiled with the very saver of the graph whose node runs it, and given that
        graph's thread (or none): it runs as a subgraph, as LangGraph's does. (Run by itself on
        that thread it would only find the thread held by its parent: `ThreadBusyError`.)"""
        if self.checkpointer is not up.saver:
            return False
        thread_id = config_thread_id(config)
        return thread_id is None or thread_id == up.thread_id

    def _subgraph_run(
        self, parent: Task, config: RunConfig | None, modes: frozenset[str], context: Any
    ) -> Run:
        """This graph runs as a subgraph of the node `parent` runs: on the parent's thread and
        checkpointer, under the namespace `node:task_id` (after the parent's own), and the
        task's later subgraph runs under `node:task_id|1`, `|2`, ... in the order it runs them
        (LangGraph's numbering), so a resumed task finds each where it stopped."""
        index = parent.subgraphs
        parent.subgraphs += 1
        up = parent.run
        if up.saver is None and (self.interrupt_before or self.interrupt_after):
            raise CheckpointerRequiredError(
                "interrupt_before/interrupt_after of a subgraph need its parent's checkpointer "
                f"to save the pause, and the graph running node {parent.name!r} has none: "
                "compile it with checkpointer=InMemorySaver() or SQLSaver(url)"
            )
        parts: tuple[str, ...]
        if self.persistent:
            # A persistent subgraph's namespace is the same in every step and invocation.
            if parent.kept_ns:
                raise MultipleSubgraphsError(
                    f"node {parent.name!r} ran a second checkpointer=True subgraph in one task; "
                    "such a subgraph keeps its state under its node's name, so a task can run "
                    "one: run the other in a node of its own, or compile it without "
                    "checkpointer=True"
                )
            parent.kept_ns = True
            parts = (parent.name,)
        elif index:
            parts = (f"{parent.name}:{parent.id}", str(index))
        else:
            parts = (f"{parent.name}:{parent.id}",)
        segment = "|".join(parts)
        ns = f"{up.ns}|{segment}" if up.ns else segment
        run_config: RunConfig = {**(config or {})}
        given = dict(run_config.get("configurable") or {})
        given.pop("checkpoint_id", None)
        given.update(thread_id=up.thread_id, checkpoint_ns=ns)
        run_config["configurable"] = given  # type: ignore[typeddict-item]
        return self.run_class(
            self,
            run_config,
            up.thread_id,
            ns,
            modes=modes,
            parent=parent,
            path=(*up.path, *parts),
            forward=up.modes if up.top.subgraphs else frozenset(),
            context=self._context(context) if context is not None else up.context,
        )

    def _context(self, context: Any) -> Any:
        schema = self.context_schema
        if isinstance(context, dict) and schema is not None and is_typed_class(schema):
            return schema(**context)
        return context

    def _lock(self, run: Run) -> contextlib.AbstractContextManager[None]:
        if self.checkpointer is None or run.parent is not None:
            return contextlib.nullcontext()  # a subgraph runs under its parent's hold
        return self.checkpointer.lock_thread(run.config)

    def _finish(self, run: Run, result: dict[str, Any] | Paused) -> dict[str, Any]:
        if isinstance(result, Paused):
            if run.parent is not None:
                raise Pause(result.interrupts)  # the parent's task pauses with the subgraph
            if self.interrupt_mode == "return":
                if not result.interrupts:  # interrupt_before/after: the state, as LangGraph
                    return result.values
                found = list(result.interrupts)
                values = result.values
                if not isinstance(values, dict):  # a root channel's value: as LangGraph
                    return {"__interrupt__": found}
                return {**values, "__interrupt__": found}
            raise GraphInterrupt(result.interrupts, result.config)
        return result

    @overload
    def invoke(  # type: ignore[overload-overlap]  # "values" is also a str sequence
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: Literal["values"] = "values",
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> dict[str, Any]: ...

    @overload
    def invoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: Literal["updates", "messages", "custom", "debug", "tasks", "checkpoints"]
        | Sequence[StreamMode],
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> list[Any]: ...

    def invoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> Any:
        """Run until the graph finishes or pauses; return the final state.

        `input` starts a run (a dict of state keys), answers a pause (`Command(resume=...)`),
        or, as `None`, continues a paused or failed thread from its saved frontier.

        Raises:
            GraphInterrupt: the run paused (unless compiled with `interrupt_mode="return"`).
            ResumeError: there is nothing to resume, or the answer matches no pending pause.
            ThreadBusyError: another run holds this thread.
            GraphRecursionError: more supersteps than the recursion limit.

        `context`: what nodes read as `runtime.context` (see `StateGraph(context_schema=)`).
        `durability`: LangGraph's `"sync"` or `"async"`: every step is saved before the next
        starts; `"exit"`: only the checkpoint the run exits at (completed, paused, failed) is
        saved, and the step of a `once()` effect before the effect begins (see `Durability`).

        `stream_mode`, `subgraphs`: as LangGraph, a mode other than `"values"` returns the list
        of what `stream(input, config, stream_mode, subgraphs=...)` yields instead of the final
        state. `print_mode`, `debug`: as `stream`'s, printing what the run streams.
        """
        _check_durability(durability)
        if stream_mode != "values":
            chunks = self.stream(
                input,
                config,
                stream_mode,
                subgraphs=subgraphs,
                context=context,
                print_mode=print_mode,
                debug=debug,
            )
            return list(chunks)
        out: list[dict[str, Any]] = []
        printed = self._printed(print_mode, debug)
        if not printed:
            for _ in self._stream(
                input, config, frozenset(), out, context=context, durability=durability
            ):
                pass
            return out[0]
        chunks = self._stream(input, config, printed, out, subgraphs, context, durability)
        for mode, chunk, ns in chunks:
            _print_chunk(mode, chunk, ns, subgraphs)
        return out[0]

    def _printed(
        self, print_mode: StreamMode | Sequence[StreamMode], debug: bool | None
    ) -> frozenset[str]:
        """The modes a run prints: `["updates", "values"]` under `debug` (the run's or
        `compile(debug=True)`), else `print_mode`'s."""
        if debug or self.debug:
            return frozenset(["updates", "values"])
        if not print_mode:
            return frozenset()
        return _modes(print_mode)[0]

    def _stream(
        self,
        input: Any,
        config: RunConfig | None,
        modes: frozenset[str],
        out: list[dict[str, Any]],
        subgraphs: bool = False,
        context: Any = None,
        durability: Durability | None = None,
    ) -> Iterator[Emit]:
        run = self._run(config, modes, subgraphs, context)
        if durability == "exit" and run.unsaved is None and run.saver is not None:
            run.unsaved = Unsaved()
        if traced(run):
            yield from self._traced_sync(run, input, out)
            return
        with self._lock(run):
            result = yield from drive_run_sync(run, run.execute(input))
        out.append(self._finish(run, result))

    def _traced_sync(self, run: Run, input: Any, out: list[dict[str, Any]]) -> Iterator[Emit]:
        """The run, reported to the config's langchain_core callbacks (`_events.py`)."""
        run.chain = start_sync(run, input)
        try:
            with self._lock(run):
                result = yield from drive_run_sync(run, run.execute(input))
            out.append(self._finish(run, result))
        except BaseException as e:
            run.chain.on_chain_error(e)
            raise
        run.chain.on_chain_end(out[-1])

    @overload
    async def ainvoke(  # type: ignore[overload-overlap]
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: Literal["values"] = "values",
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> dict[str, Any]: ...

    @overload
    async def ainvoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: Literal["updates", "messages", "custom", "debug", "tasks", "checkpoints"]
        | Sequence[StreamMode],
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> list[Any]: ...

    async def ainvoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
        durability: Durability | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        subgraphs: bool = False,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> Any:
        """Async `invoke`: tasks of one superstep run concurrently."""
        _check_durability(durability)
        if stream_mode != "values":
            stream = self.astream(
                input,
                config,
                stream_mode,
                subgraphs=subgraphs,
                context=context,
                print_mode=print_mode,
                debug=debug,
            )
            return [chunk async for chunk in stream]
        out: list[dict[str, Any]] = []
        printed = self._printed(print_mode, debug)
        if not printed:
            async for _ in self._astream(
                input, config, frozenset(), out, context=context, durability=durability
            ):
                pass
            return out[0]
        chunks = self._astream(input, config, printed, out, subgraphs, context, durability)
        async with contextlib.aclosing(chunks):
            async for mode, chunk, ns in chunks:
                _print_chunk(mode, chunk, ns, subgraphs)
        return out[0]

    async def _astream(
        self,
        input: Any,
        config: RunConfig | None,
        modes: frozenset[str],
        out: list[dict[str, Any]],
        subgraphs: bool = False,
        context: Any = None,
        durability: Durability | None = None,
    ) -> AsyncGenerator[Emit, None]:
        run = self._run(config, modes, subgraphs, context)
        if durability == "exit" and run.unsaved is None and run.saver is not None:
            run.unsaved = Unsaved()
        got: list[dict[str, Any] | Paused] = []
        lock = (
            self.checkpointer.alock_thread(run.config)
            if self.checkpointer is not None and run.parent is None
            else contextlib.nullcontext()
        )
        if traced(run):  # reported to langchain_core callbacks (`_events.py`)
            run.chain = await start_async(run, input)
        try:
            # Closed before the lock is let go: a stream left early ends its step's tasks.
            async with (
                lock,
                contextlib.aclosing(drive_run_async(run, run.execute(input), got)) as gen,
            ):
                async for chunk in gen:
                    yield chunk
            out.append(self._finish(run, got[0]))
        except BaseException as e:
            if run.chain is not None:
                await run.chain.on_chain_error(e)
            raise
        if run.chain is not None:
            await run.chain.on_chain_end(out[-1])

    def stream(
        self,
        input: Input,
        config: RunConfig | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        *,
        subgraphs: bool = False,
        context: Any = None,
        durability: Durability | None = None,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> Iterator[Any]:
        """Like `invoke`, yielding as it goes.

        - `"values"`: the whole state after the input and after every step.
        - `"updates"`: `{node: update}` per node per step; `{"__interrupt__": (...)}` on a pause
          (empty for an `interrupt_before`/`interrupt_after` pause), so a pause is not the end.
        - `"custom"`: what nodes hand to `get_stream_writer()` (or their `writer` parameter),
          as they write it.
        - `"messages"`: `(message, metadata)` for each message a node produces: a langchain_core
          chat model's token chunks as they arrive, and the messages in a node's update it did
          not read; `metadata` has `langgraph_node`, `langgraph_step`, ...
        - `"tasks"`: each task as it starts (`id`, `name`, `input`, `triggers`) and its result
          (`id`, `name`, `error`, `result`, `interrupts`); `"checkpoints"`: each saved
          checkpoint (`config`, `parent_config`, `values`, `metadata`, `next`, `tasks`);
          `"debug"`: both, as `{"step", "timestamp", "type", "payload"}`.

        `stream_mode=None` is the default, `"updates"` (LangGraph's StateGraph's). With a list
        of modes, each item is `(mode, chunk)`. A pause ends the stream (`values` ends with the
        state and its `"__interrupt__"`); in the default interrupt mode it then raises
        `GraphInterrupt`.

        `subgraphs=True`: the chunks of subgraphs too, each item prefixed with the namespace it
        comes from, `(namespace, chunk)` (or `(namespace, mode, chunk)`): `()` for this graph,
        `("node:task_id",)` for a subgraph its node runs, one more element per level. Subgraph
        chunks (`custom` and `messages` too) come as the subgraph makes them, before the chunks
        of the parent's step that ran it. Without it, a subgraph's `custom` chunks and model
        tokens are not streamed; the messages it returns come as its parent node's.

        `print_mode`: modes (as `stream_mode`) whose chunks are also printed to stdout as they
        come, LangGraph's way (`[updates] {'node': {...}}`, `[graph=(namespace)]` after the mode
        for a subgraph's chunk under `subgraphs=True`); what is yielded does not change. `debug=True`
        (or `compile(debug=True)`) prints `updates` and `values`, as LangGraph's.
        """
        _check_durability(durability)
        modes, tagged = _modes(stream_mode)
        printed = self._printed(print_mode, debug)
        chunks = self._stream(input, config, modes | printed, [], subgraphs, context, durability)
        for mode, chunk, ns in chunks:
            if mode in printed:
                _print_chunk(mode, chunk, ns, subgraphs)
            if mode in modes:
                yield _item(mode, chunk, ns, tagged, subgraphs)

    async def astream(
        self,
        input: Input,
        config: RunConfig | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        *,
        subgraphs: bool = False,
        context: Any = None,
        durability: Durability | None = None,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        debug: bool | None = None,
    ) -> AsyncIterator[Any]:
        """Async `stream`.

        The run holds its thread until the stream is closed. Leaving `async for` early does not
        close an async generator at once (Python finalizes it later), so wrap the stream in
        `contextlib.aclosing(graph.astream(...))` when you may stop early and then touch the same
        thread again.
        """
        _check_durability(durability)
        modes, tagged = _modes(stream_mode)
        printed = self._printed(print_mode, debug)
        # Closing this stream closes the run's own, which releases the thread.
        chunks = self._astream(input, config, modes | printed, [], subgraphs, context, durability)
        async with contextlib.aclosing(chunks):
            async for mode, chunk, ns in chunks:
                if mode in printed:
                    _print_chunk(mode, chunk, ns, subgraphs)
                if mode in modes:
                    yield _item(mode, chunk, ns, tagged, subgraphs)

    def astream_events(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        version: Literal["v2"] = "v2",
        include_names: Sequence[str] | None = None,
        include_types: Sequence[str] | None = None,
        include_tags: Sequence[str] | None = None,
        exclude_names: Sequence[str] | None = None,
        exclude_types: Sequence[str] | None = None,
        exclude_tags: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """langchain_core's event stream of a run (`Runnable.astream_events`, version "v2").

        Events, each `{"event", "name", "run_id", "parent_ids", "tags", "metadata", "data"}`:
        `on_chain_start`/`on_chain_stream`/`on_chain_end` for the graph (named
        `compile(name=)`, `"LangGraph"` by default; a `run_id` in `config` is its run id; its
        stream chunks are what `astream` yields, its end's `output` the final state), an
        `on_chain_start`/`on_chain_end` pair for each task (named after its node, tagged
        `graph:step:N`, with `langgraph_*` metadata), and under a task, what langchain_core
        runnables and chat models report (`on_chat_model_stream` for each token). A subgraph's
        run nests under the task that runs it. `kwargs` go to `astream` (`stream_mode`,
        `subgraphs`, `context`, ...); the `include_*`/`exclude_*` filters are langchain_core's.
        Needs langchain_core.
        """
        filters = {
            "include_names": include_names,
            "include_types": include_types,
            "include_tags": include_tags,
            "exclude_names": exclude_names,
            "exclude_types": exclude_types,
            "exclude_tags": exclude_tags,
        }
        return astream_events(self, input, config, version, filters, kwargs)

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Drop the cached results of `nodes` (default: every node) from `compile(cache=)`."""
        if self.cache is not None:
            self.cache.clear(self._cache_namespaces(nodes))

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        if self.cache is not None:
            await self.cache.aclear(self._cache_namespaces(nodes))

    def _cache_namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        """Where the results of `nodes` (default: every node) are cached; a name that is not
        a node of this graph has none, as in LangGraph."""
        names = nodes if nodes is not None else list(self.nodes)
        return [self.nodes[n].cache_namespace for n in names if n in self.nodes]

    def get_graph(self, config: RunConfig | None = None, *, xray: bool | int = False) -> Graph:
        """The graph's shape as a langchain_core `Graph`, with the nodes and edges LangGraph
        draws for it: `get_graph().draw_mermaid()` gives LangGraph's mermaid text (START and
        END, conditional edges dashed and labelled); the object's other drawings
        (`draw_ascii()`, `draw_mermaid_png()`) need their own extra packages, as in LangGraph.

        `xray=True` draws each subgraph (a compiled graph added as a node, or one a node's
        function calls) inside its node, and theirs inside theirs; `xray=n` goes n levels deep.
        `config` is accepted for LangGraph's signature and changes nothing."""
        return draw(self, xray)

    def get_input_jsonschema(self, config: RunConfig | None = None) -> dict[str, Any]:
        """The JSON schema of what `invoke` takes (the `input_schema`, else the state's), as
        LangGraph gives it. `config` is accepted for LangGraph's signature."""
        builder = self.builder
        return state_jsonschema(builder, builder.input_schema, self.get_name("Input"))

    def get_output_jsonschema(self, config: RunConfig | None = None) -> dict[str, Any]:
        """The JSON schema of what `invoke` returns (the `output_schema`, else the state's)."""
        builder = self.builder
        return state_jsonschema(builder, builder.output_schema, self.get_name("Output"))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the `context_schema` (None without one)."""
        return context_jsonschema(self.context_schema)

    @property
    def input_schema(self) -> type:
        """A pydantic model of the input, as LangGraph's: a pydantic `input_schema` itself,
        else a root model (`LangGraphInput`) of it."""
        return input_model(self.builder, self.get_name("Input"))

    @property
    def output_schema(self) -> type:
        """A pydantic model of the output, as LangGraph's: `LangGraphOutput`, each output key
        typed and defaulting to None."""
        return output_model(self.builder, self.get_name("Output"))

    async def aget_graph(
        self, config: RunConfig | None = None, *, xray: bool | int = False
    ) -> Graph:
        """`get_graph`, for async code (drawing does no I/O)."""
        return self.get_graph(config, xray=xray)

    # ---- state -----------------------------------------------------------------------

    def _saver(self, what: str) -> BaseCheckpointSaver:
        if self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"{what} needs a checkpointer: compile(checkpointer=InMemorySaver()) or SQLSaver(url)"
            )
        return self.checkpointer

    def get_state(self, config: RunConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's latest checkpoint (or the one `checkpoint_id` names) as a snapshot.

        An unknown thread gives an empty snapshot (`values={}`, `next=()`). A pending task that
        runs a subgraph has the config of the subgraph's checkpoints in its `state`; with
        `subgraphs=True`, the subgraph's own snapshot (and so on, level by level).
        """
        saver = self._saver("get_state")
        return self._at(config)._read(saver, config, subgraphs, own=True)

    def _at(self, config: RunConfig) -> CompiledGraph:
        """The graph whose checkpoints the config's namespace holds: this one, or the subgraph
        a node runs or its function calls (`"node:task_id|..."`, one segment per level), so
        that a subgraph's snapshots show its own keys and name its own subgraph tasks."""
        ns = config_ns(config)
        graph = self
        for _, segment in namespace_levels(ns) if ns else ():
            found = called_graph(graph.nodes.get(segment.split(":", 1)[0]))
            if found is None:
                return self
            graph = found
        return graph

    def _read(
        self, saver: BaseCheckpointSaver, config: RunConfig, subgraphs: bool, own: bool
    ) -> StateSnapshot:
        tup = saver.get_tuple(config)
        children: dict[str, StateSnapshot] = {}
        if subgraphs and tup is not None:
            for name, task_id in tup.checkpoint["next_tasks"]:
                probe = self._child_probe(tup, name, task_id, own)
                try:
                    child_config = next(probe)
                    while True:
                        graph, mine = self._reader(name, own, child_config)
                        child = graph._read(saver, child_config, True, mine)
                        child_config = probe.send(child)
                except StopIteration as stop:
                    if stop.value is not None:
                        children[task_id] = stop.value
        return self._snapshot(
            config,
            tup,
            children if subgraphs else None,
            own,
            latest=config_checkpoint_id(config) is None,
        )

    async def aget_state(self, config: RunConfig, *, subgraphs: bool = False) -> StateSnapshot:
        saver = self._saver("aget_state")
        return await self._at(config)._aread(saver, config, subgraphs, own=True)

    async def _aread(
        self, saver: BaseCheckpointSaver, config: RunConfig, subgraphs: bool, own: bool
    ) -> StateSnapshot:
        tup = await saver.aget_tuple(config)
        children: dict[str, StateSnapshot] = {}
        if subgraphs and tup is not None:
            for name, task_id in tup.checkpoint["next_tasks"]:
                probe = self._child_probe(tup, name, task_id, own)
                try:
                    child_config = next(probe)
                    while True:
                        graph, mine = self._reader(name, own, child_config)
                        child = await graph._aread(saver, child_config, True, mine)
                        child_config = probe.send(child)
                except StopIteration as stop:
                    if stop.value is not None:
                        children[task_id] = stop.value
        return self._snapshot(
            config,
            tup,
            children if subgraphs else None,
            own,
            latest=config_checkpoint_id(config) is None,
        )

    def _reader(self, name: str, own: bool, child_config: RunConfig) -> tuple[CompiledGraph, bool]:
        """The graph that reads the subgraph checkpoints of `child_config`, which a task of
        node `name` ran, and whether they are that graph's own: the node's compiled graph (or
        the one its function calls), so that its snapshot is the subgraph's own, as LangGraph
        reads it (the head shows its finished tasks' writes). A task's later runs
        (`|1`, `|2`: possibly other graphs) and nodes whose graph is not found are read
        without it."""
        graph = called_graph(self.nodes.get(name)) if own else None
        if graph is None or config_ns(child_config).rsplit("|", 1)[-1].isdigit():
            return self, False
        return graph, True

    def _child_probe(
        self, tup: CheckpointTuple, name: str, task_id: str, own: bool
    ) -> Generator[RunConfig, StateSnapshot, StateSnapshot | None]:
        """Find the subgraph state a pending task of `tup` has, if any: yields the configs to
        read (each read's snapshot is sent back) and returns the one to show.

        A task's subgraph runs are kept under `node:task_id`, `node:task_id|1`, ... (in the
        order the task ran them), a `checkpointer=True` one's under `node` (its checkpoints
        noting the task). The one shown is the run the task stopped in (not finished), else
        its last. `own`: the node is one of this graph's, so a compiled graph as a node (one
        run, its namespace known) is read directly.
        """
        sub = subgraph_node_of(self.nodes.get(name)) if own else None
        if sub is not None and sub.graph.persistent:
            child = yield child_config(tup.config, name)
            return child if child.created_at is not None else None
        found: list[StateSnapshot] = []
        first = child_config(tup.config, f"{name}:{task_id}")
        child = yield first
        while child.created_at is not None:
            found.append(child)
            if sub is not None:
                break  # a compiled graph as a node runs once per task
            child = yield child_config(first, str(len(found)))
        if sub is None:
            kept = yield child_config(tup.config, name)
            if kept.created_at is not None and kept.metadata.get("task") == task_id:
                found.append(kept)
        for child in found:
            if child.next:
                return child
        return found[-1] if found else None

    def get_state_history(
        self, config: RunConfig, *, limit: int | None = None, before: RunConfig | None = None
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first."""
        graph = self._at(config)
        saver = self._saver("get_state_history")
        for tup in saver.list(_own_ns(config), limit=limit, before=before):
            yield graph._snapshot(config, tup)

    async def aget_state_history(
        self, config: RunConfig, *, limit: int | None = None, before: RunConfig | None = None
    ) -> AsyncIterator[StateSnapshot]:
        graph = self._at(config)
        async for tup in self._saver("aget_state_history").alist(
            _own_ns(config), limit=limit, before=before
        ):
            yield graph._snapshot(config, tup)

    def _snapshot(
        self,
        config: RunConfig,
        tup: CheckpointTuple | None,
        children: dict[str, StateSnapshot] | None = None,
        own: bool = True,
        latest: bool = False,
    ) -> StateSnapshot:
        """The snapshot of a checkpoint of this graph (`own`) or of one of its subgraphs;
        `latest`: asked for as the thread's head (no `checkpoint_id` in the config)."""
        if tup is None:
            return StateSnapshot(
                values={}, next=(), config=config, metadata={}, created_at=None, parent_config=None
            )
        cp = tup.checkpoint
        tasks: list[StateTask] = []
        interrupts: list[Interrupt] = []
        paths = task_paths(cp["next_tasks"], cp["channel_values"].get(SENDS_CHANNEL) or {})
        for (name, task_id), path in zip(cp["next_tasks"], paths, strict=True):
            writes = task_writes(tup.pending_writes, task_id)
            pending = waiting(writes)
            done = any(c == DONE for c, _ in writes)
            errors = [v for c, v in writes if c == ERROR]
            state: RunConfig | StateSnapshot | None = (children or {}).get(task_id)
            spec = self.nodes.get(name)
            # A node function's subgraph run is looked for under `subgraphs=True` (`children`
            # given), which leaves it out when that task ran none; else it is named as LangGraph
            # names it, by the graph the function calls.
            if (
                state is None
                and own
                and (is_subgraph(spec) or (children is None and called_graph(spec) is not None))
            ):
                state = child_config(tup.config, segment_of(self.nodes, name, task_id))
            error = errors[-1] if errors and not done else None
            result: Any = None
            if done:  # what it wrote, by state key (LangGraph's `PregelTask.result`)
                result = {c: v for c, v in writes if c in self.channels}
                if self.root:
                    result = result.get(ROOT)
            tasks.append(StateTask(task_id, name, path, error, pending, state, result, done=done))
            interrupts.extend(pending)
        channel_values = cp["channel_values"]
        if latest and own and tup.pending_writes:
            # The head of an incomplete step shows what its finished tasks wrote, as in
            # LangGraph; the checkpoint itself (its id, its history) keeps the state before.
            applied = finished_values(self, tup)
            if applied is not None:
                channel_values = {**channel_values, **applied}
        values: Any = {k: v for k, v in channel_values.items() if not k.startswith("__")}
        for key, make in self.empty.items():  # a reducer key nothing was written to
            if key not in values:
                values[key] = make()
        if self.root:
            values = channel_values.get(ROOT)
        return StateSnapshot(
            values=values,
            # As LangGraph: a finished task of an incomplete step leaves `next` only at the
            # thread's head, whose values show its writes; an input checkpoint's `__start__`
            # task never does (its values are the state before the input).
            next=tuple(t.name for t in tasks if not (t.done and latest) or t.name == START),
            config=tup.config,
            metadata=dict(tup.metadata),
            created_at=cp["ts"],
            parent_config=tup.parent_config,
            tasks=tuple(tasks),
            interrupts=tuple(interrupts),
        )

    def update_state(self, config: RunConfig, values: Any, as_node: str | None = None) -> RunConfig:
        """Amend the thread's state in a new checkpoint (`source="update"`); return its config.

        Without `as_node`, each key is replaced as given (reducers are not applied: pass the whole
        intended value of an `operator.add` list), and the frontier and pending pauses are kept
        (a pending `Send` keeps its argument). A reducer key's list given something that is not a
        list (one message, which LangGraph merges with `add_messages`) is refused with
        `InvalidUpdateError`: it would become the whole value.
        With `as_node="x"`, the values go through the reducers as if node `x` had returned them
        (a `Command(update=, goto=)` too), and the frontier becomes what follows `x`; `START`
        (`"__start__"`) is the input just read: what follows is START's edges (on an input
        checkpoint, the values are its `__start__` task's result, as in LangGraph).
        `as_node="__input__"` saves the input checkpoint `invoke(values)` saves, without running
        anything (`source="input"`, next `("__start__",)`, then, on a paused or failed thread,
        the tasks it keeps): `invoke(None, config)` applies the input and goes on, or
        `as_node="__start__"` writes what it applies.

        An update goes on the thread's latest checkpoint: a config whose `checkpoint_id` names
        an earlier one is refused with `InvalidUpdateError` (history never branches); `fork`
        it into a new thread instead.
        """
        saver = self._saver("update_state")
        run, held = self._amending(config, "update_state")
        run.requested_id = config_checkpoint_id(config)
        with saver.lock_thread(held):
            gen = drive_sync(run, _updates.update(run, values, as_node))
            while True:
                try:
                    next(gen)
                except StopIteration as stop:
                    head: RunConfig = stop.value
                    return head

    def bulk_update_state(
        self, config: RunConfig, supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]]
    ) -> RunConfig:
        """Several `update_state`s, one checkpoint per inner list (LangGraph's): each inner list
        is a step whose `StateUpdate(values, as_node)`s are written together, as if those nodes
        had run in that step (`as_node` is needed on each when there are several)."""
        saver = self._saver("bulk_update_state")
        _check_supersteps(supersteps)
        first, held = self._amending(config, "bulk_update_state")
        head: RunConfig | None = None
        with saver.lock_thread(held):
            for i, step in enumerate(supersteps):
                run = first if i == 0 else self._amending(config, "bulk_update_state")[0]
                pairs = [(u[0], u[1] if len(u) > 1 else None) for u in step]
                gen = drive_sync(run, _updates.update_step(run, pairs))
                while True:
                    try:
                        next(gen)
                    except StopIteration as stop:
                        head = stop.value
                        break
        assert head is not None
        return head

    async def abulk_update_state(
        self, config: RunConfig, supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]]
    ) -> RunConfig:
        """Async `bulk_update_state`."""
        saver = self._saver("abulk_update_state")
        _check_supersteps(supersteps)
        first, held = self._amending(config, "abulk_update_state")
        out: list[RunConfig] = []
        async with saver.alock_thread(held):
            for i, step in enumerate(supersteps):
                run = first if i == 0 else self._amending(config, "abulk_update_state")[0]
                pairs = [(u[0], u[1] if len(u) > 1 else None) for u in step]
                async for _ in drive_async(run, _updates.update_step(run, pairs), out):
                    pass
        return out[-1]

    async def aupdate_state(
        self, config: RunConfig, values: Any, as_node: str | None = None
    ) -> RunConfig:
        saver = self._saver("aupdate_state")
        run, held = self._amending(config, "aupdate_state")
        run.requested_id = config_checkpoint_id(config)
        out: list[RunConfig] = []
        async with saver.alock_thread(held):
            async for _ in drive_async(run, _updates.update(run, values, as_node), out):
                pass
        return out[0]

    def _amending(self, config: RunConfig, what: str) -> tuple[Run, RunConfig]:
        """The run an update of `config`'s thread is written by, and the config of the thread
        it holds meanwhile. For a subgraph's `checkpoint_ns` (`node:task_id|...`, as a pending
        task's `state` gives it), a run of that subgraph on the parent's saver, which holds the
        parent's thread: the update waits for no run and no run starts during it."""
        own = _thread_only(config, what)
        ns = config_ns(config)
        if not ns:
            return (run := self._run(own, frozenset(), nest=False)), run.config
        saver = self._saver(what)
        graph: CompiledGraph = self
        levels = namespace_levels(ns)
        for _, segment in levels:
            name = segment.split(":", 1)[0]
            found = called_graph(graph.nodes.get(name))
            if found is None:
                raise InvalidUpdateError(
                    f"{what}: checkpoint_ns {ns!r} names node {name!r}, which "
                    + (
                        f"is not a node of {graph.name!r} (nodes: {sorted(graph.nodes)})"
                        if name not in graph.nodes
                        else "runs no subgraph that keeps state"
                    )
                    + "; pass the config of a pending task's subgraph: "
                    "get_state(config, subgraphs=True).tasks[i].state"
                )
            graph = found
        thread_id = str(config_thread_id(config))
        run = graph.run_class(graph, own, thread_id, ns)
        run.saver = saver  # a subgraph keeps its checkpoints in its parent's saver
        run.enclosing = levels
        return run, {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}

    def fork(
        self,
        config: RunConfig,
        thread_id: str | None = None,
        *,
        values: dict[str, Any] | None = None,
        as_node: str | None = None,
    ) -> RunConfig:
        """Start a new thread at a copy of a checkpoint, and return the new thread's config.

        `config` names the checkpoint: its thread's latest, or the one its `checkpoint_id` names
        (a `get_state_history` snapshot's `config`). The new thread (`thread_id`, or a fresh id;
        it must not exist yet) starts with that checkpoint's state and frontier: run it on with
        `invoke(None, new_config)` to replay from there, or change it first: `values` and
        `as_node` are applied as `update_state` applies them. The source thread is not changed.

        The frontier's tasks run afresh on the new thread: a pause they had asks again (under
        ids of the new thread) and a subgraph they ran starts over (the state a
        `checkpointer=True` subgraph keeps is not copied); `once()` results made
        before the checkpoint are kept. Its first checkpoint has `source="fork"` and
        `forked_from` (`thread_id`, `checkpoint_id`) in its metadata.

        Raises:
            InvalidUpdateError: the new thread exists already, or `config` is a subgraph's.
            ResumeError: the source has no such checkpoint.
        """
        saver = self._saver("fork")
        run, source = self._fork_run(config, thread_id)
        tup = saver.get_tuple(source)
        with saver.lock_thread(run.config):
            gen = drive_sync(
                run, _updates.fork(run, self._fork_source(tup, source), values, as_node)
            )
            while True:
                try:
                    next(gen)
                except StopIteration as stop:
                    head: RunConfig = stop.value
                    return head

    async def afork(
        self,
        config: RunConfig,
        thread_id: str | None = None,
        *,
        values: dict[str, Any] | None = None,
        as_node: str | None = None,
    ) -> RunConfig:
        """Async `fork`."""
        saver = self._saver("afork")
        run, source = self._fork_run(config, thread_id)
        tup = await saver.aget_tuple(source)
        out: list[RunConfig] = []
        async with saver.alock_thread(run.config):
            gen = _updates.fork(run, self._fork_source(tup, source), values, as_node)
            async for _ in drive_async(run, gen, out):
                pass
        return out[0]

    def _fork_run(self, config: RunConfig, thread_id: str | None) -> tuple[Run, RunConfig]:
        source = _thread_only(config, "fork")
        if config_ns(config):
            raise InvalidUpdateError(
                f"fork: checkpoint_ns {config_ns(config)!r} is a subgraph's; a subgraph's state "
                "forks with its parent's: pass the parent's config (without checkpoint_ns)"
            )
        checkpoint_id = config_checkpoint_id(config)
        if checkpoint_id:
            source["configurable"]["checkpoint_id"] = checkpoint_id
        new: RunConfig = {"configurable": {"thread_id": thread_id or uuid.uuid4().hex}}
        return self._run(new, frozenset(), nest=False), source

    def _fork_source(self, tup: CheckpointTuple | None, source: RunConfig) -> CheckpointTuple:
        if tup is None:
            thread = config_thread_id(source)
            checkpoint_id = config_checkpoint_id(source)
            raise ResumeError(
                f"fork: thread {thread!r} has no checkpoint"
                + (f" {checkpoint_id}" if checkpoint_id else "")
                + "; pass the config of one of its checkpoints (get_state_history)",
                thread,
            )
        return tup


def _thread_only(config: RunConfig, what: str = "update_state") -> RunConfig:
    thread_id = config_thread_id(config)
    if not thread_id:
        raise ValueError(f'{what} needs {{"configurable": {{"thread_id": ...}}}}')
    # An update always goes on top of the thread's latest checkpoint: history never forks.
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": config_ns(config)}}


def _item(mode: str, chunk: Any, ns: tuple[str, ...], tagged: bool, subgraphs: bool) -> Any:
    """One item of `stream`, in LangGraph's shapes."""
    if subgraphs:
        return (ns, mode, chunk) if tagged else (ns, chunk)
    return (mode, chunk) if tagged else chunk


def _print_chunk(mode: str, chunk: Any, ns: tuple[str, ...], subgraphs: bool) -> None:
    """A chunk of a `print_mode`, as LangGraph prints it: the mode in bold, a subgraph's
    namespace in yellow (under `subgraphs=True`), then the chunk's repr."""
    parts = [f"\033[1m[{mode}]\033[0m"]
    if subgraphs and ns:
        parts.append(f"\033[1;30;33m[graph={ns}]\033[0m")
    parts.append(repr(chunk))
    print(" ".join(parts))


def _check_supersteps(supersteps: Sequence[Sequence[Any]]) -> None:
    """Refuse a `bulk_update_state` with no step or an empty step before anything is written."""
    if not supersteps:
        raise InvalidUpdateError(
            "bulk_update_state: No supersteps provided: give a list of steps, each a list of "
            "StateUpdate(values, as_node)"
        )
    empty = [i for i, step in enumerate(supersteps) if not step]
    if empty:
        raise InvalidUpdateError(
            f"bulk_update_state: No updates provided in step(s) {empty} (counted from 0): give "
            "each step at least one StateUpdate(values, as_node)"
        )


def _check_durability(durability: object) -> None:
    if durability is not None and durability not in ("sync", "async", "exit"):
        raise ValueError(
            f"durability must be 'sync', 'async' or 'exit' (LangGraph's modes), got {durability!r}"
        )


def _modes(stream_mode: StreamMode | Sequence[StreamMode] | None) -> tuple[frozenset[str], bool]:
    if stream_mode is None:
        stream_mode = "updates"  # LangGraph's StateGraph default
    if isinstance(stream_mode, str):
        modes, tagged = frozenset([stream_mode]), False
    else:
        modes, tagged = frozenset(stream_mode), True
    unknown = modes - MODES
    if unknown:
        raise ValueError(f"unknown stream_mode {sorted(unknown)}; use any of {sorted(MODES)}")
    return modes, tagged


def _own_ns(config: RunConfig) -> RunConfig:
    """`config` naming its namespace (`""` when it names none): the history of a graph is its
    own namespace's, where a saver's `list` without one lists the subgraphs' too."""
    conf = config.get("configurable") or {}
    if conf.get("checkpoint_ns") is not None:
        return config
    return {**config, "configurable": {**conf, "checkpoint_ns": ""}}
