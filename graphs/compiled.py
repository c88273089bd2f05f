"""`CompiledGraph`: run a graph (`invoke`, `ainvoke`, `stream`, `astream`) and read or amend its
saved state (`get_state`, `get_state_history`, `update_state`, `fork` into a new thread)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Iterator,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from ._context import Pause, _current
from ._described import Described
from ._drive import drive_run_async, drive_run_sync
from ._events import astream_events, start_async, start_sync, traced
from ._io import Emit, Unsaved
from ._loop import execute
from ._run import Paused, Run
from ._runnable import RunnableMethods, merge_configs
from ._saved_state import SavedState
from ._schema import is_typed_class
from ._stream import open_messages, print_chunk, stream_item, stream_modes
from ._subgraph import (
    SubgraphNode,
)
from ._types import (
    Command,
    Durability,
    RunConfig,
    StreamMode,
)
from .checkpoint.base import (
    config_checkpoint_id,
    config_thread_id,
)
from .errors import (
    CheckpointerRequiredError,
    GraphInterrupt,
    MultipleSubgraphsError,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from pydantic import BaseModel

    from ._run import Task

    # What a run takes: state keys (a dict, or an instance of a dataclass or pydantic state
    # schema), a `Command`, or None to continue.
    Input: TypeAlias = dict[str, Any] | Command | DataclassInstance | BaseModel | None

__all__ = ["CompiledGraph", "SubgraphNode"]


class CompiledGraph(SavedState, Described, RunnableMethods):
    """A checked, runnable graph. Made by `StateGraph.compile()`; safe to share between threads."""

    debug: bool = False
    """`compile(debug=True)`: every run prints its `updates` and `values` chunks (as a run's
    `debug=True`)."""

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
            if self.checkpointer is not None and self.dialect == "langgraph" and parent is None:
                # LangGraph's dialect: as LangGraph, a run that would be saved names its thread
                # (a resume that forgot it must not start a new thread unnoticed).
                raise ValueError(
                    "Checkpointer requires one or more of the following 'configurable' keys: "
                    "thread_id, checkpoint_ns, checkpoint_id (this graph has a checkpointer: "
                    "give config={'configurable': {'thread_id': ...}})"
                )
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
        open_messages(run)
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
        return open_messages(
            self.run_class(
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
            print_chunk(mode, chunk, ns, subgraphs)
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
        return stream_modes(print_mode)[0]

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
            result = yield from drive_run_sync(run, execute(run, input))
        out.append(self._finish(run, result))

    def _traced_sync(self, run: Run, input: Any, out: list[dict[str, Any]]) -> Iterator[Emit]:
        """The run, reported to the config's langchain_core callbacks (`_events.py`)."""
        run.chain = start_sync(run, input)
        try:
            with self._lock(run):
                result = yield from drive_run_sync(run, execute(run, input))
            out.append(self._finish(run, result))
        except BaseException as e:
            run.chain.on_chain_error(e)
            raise
        run.chain.on_chain_end(_reported(out[-1]))

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
                print_chunk(mode, chunk, ns, subgraphs)
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
                contextlib.aclosing(drive_run_async(run, execute(run, input), got)) as gen,
            ):
                async for chunk in gen:
                    yield chunk
            out.append(self._finish(run, got[0]))
        except BaseException as e:
            if run.chain is not None:
                await run.chain.on_chain_error(e)
            raise
        if run.chain is not None:
            await run.chain.on_chain_end(_reported(out[-1]))

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
        modes, tagged = stream_modes(stream_mode)
        printed = self._printed(print_mode, debug)
        chunks = self._stream(input, config, modes | printed, [], subgraphs, context, durability)
        for mode, chunk, ns in chunks:
            if mode in printed:
                print_chunk(mode, chunk, ns, subgraphs)
            if mode in modes:
                yield stream_item(mode, chunk, ns, tagged, subgraphs)

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
        modes, tagged = stream_modes(stream_mode)
        printed = self._printed(print_mode, debug)
        # Closing this stream closes the run's own, which releases the thread.
        chunks = self._astream(input, config, modes | printed, [], subgraphs, context, durability)
        async with contextlib.aclosing(chunks):
            async for mode, chunk, ns in chunks:
                if mode in printed:
                    print_chunk(mode, chunk, ns, subgraphs)
                if mode in modes:
                    yield stream_item(mode, chunk, ns, tagged, subgraphs)

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
        return astream_events(self.astream, input, config, version, filters, kwargs)

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


def _check_durability(durability: object) -> None:
    if durability is not None and durability not in ("sync", "async", "exit"):
        raise ValueError(
            f"durability must be 'sync', 'async' or 'exit' (LangGraph's modes), got {durability!r}"
        )


def _reported(output: Any) -> Any:
    """What the graph's chain run ends with for its callbacks: the output, without the pause
    a returned `__interrupt__` shows (as LangGraph reports the state a paused run ends at)."""
    if isinstance(output, dict) and "__interrupt__" in output:
        return {k: v for k, v in output.items() if k != "__interrupt__"}
    return output
