"""`CompiledGraph`: run a graph (`invoke`, `ainvoke`, `stream`, `astream`) and read or amend its
saved state (`get_state`, `get_state_history`, `update_state`)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ._drive import drive_async, drive_sync
from ._loop import Paused, Run
from ._schema import Channel, is_typed_class
from ._stream import MODES
from .checkpoint.base import (
    DONE,
    ERROR,
    CheckpointTuple,
    config_checkpoint_id,
    config_ns,
    config_thread_id,
)
from .errors import CheckpointerRequiredError, GraphInterrupt
from .types import Command, Interrupt, RunConfig, StateSnapshot, StateTask, StreamMode

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from langchain_core.runnables.graph import Graph
    from pydantic import BaseModel

    from .builder import Branch, Join, NodeSpec, StateGraph
    from .checkpoint.base import BaseCheckpointSaver

    # What a run takes: state keys (a dict, or an instance of a dataclass or pydantic state
    # schema), a `Command`, or None to continue.
    Input: TypeAlias = dict[str, Any] | Command | DataclassInstance | BaseModel | None

__all__ = ["CompiledGraph"]


class CompiledGraph:
    """A checked, runnable graph. Made by `StateGraph.compile()`; safe to share between threads."""

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
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        recursion_limit: int,
        interrupt_mode: Literal["raise", "return"],
    ) -> None:
        self.builder = builder
        self.channels = channels
        self.empty = {k: c.initial for k, c in channels.items() if c.initial is not None}
        """How to make the empty value of each reducer key (what a node reads before a write)."""
        self.nodes = nodes
        self.edges = edges
        self.joins = joins
        self.branches = branches
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.recursion_limit = recursion_limit
        self.interrupt_mode = interrupt_mode
        self.coerce = builder.coerce
        """Makes a node's state dict an instance of a dataclass/pydantic schema (else None)."""
        typed = builder.input_schema is not builder.schema
        self.input_keys = builder.input_keys if typed else None
        """The keys `invoke` accepts, when an `input_schema` narrows them."""
        typed = builder.output_schema is not builder.schema
        self.output_keys = builder.output_keys if typed else None
        """The keys `invoke` returns and `values` streams, when an `output_schema` narrows them."""
        self.context_schema = builder.context_schema

    # ---- running ---------------------------------------------------------------------

    def _run(self, config: RunConfig | None, modes: frozenset[str], context: Any = None) -> Run:
        if config is None:
            config = {}
        configurable = config.get("configurable")
        if configurable is None:
            configurable = config["configurable"] = {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            thread_id = uuid.uuid4().hex
            if self.checkpointer is not None:
                # Written back so the caller can learn the thread it must resume.
                configurable["thread_id"] = thread_id
        elif not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
        ns = configurable.get("checkpoint_ns") or ""
        run_config: RunConfig = {**config, "configurable": {**configurable, "thread_id": thread_id}}
        run = Run(self, run_config, thread_id, ns, modes=modes, context=self._context(context))
        run.requested_id = config_checkpoint_id(config)
        return run

    def _context(self, context: Any) -> Any:
        schema = self.context_schema
        if isinstance(context, dict) and schema is not None and is_typed_class(schema):
            return schema(**context)
        return context

    def _lock(self, run: Run) -> contextlib.AbstractContextManager[None]:
        if self.checkpointer is None:
            return contextlib.nullcontext()
        return self.checkpointer.lock_thread(run.config)

    def _finish(self, result: dict[str, Any] | Paused) -> dict[str, Any]:
        if isinstance(result, Paused):
            if self.interrupt_mode == "return":
                return {**result.values, "__interrupt__": list(result.interrupts)}
            raise GraphInterrupt(result.interrupts, result.config)
        return result

    def invoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
    ) -> dict[str, Any]:
        """Run until the graph finishes or pauses; return the final state.

        `input` starts a run (a dict of state keys), answers a pause (`Command(resume=...)`),
        or, as `None`, continues a paused or failed thread from its saved frontier.

        Raises:
            GraphInterrupt: the run paused (unless compiled with `interrupt_mode="return"`).
            ResumeError: there is nothing to resume, or the answer matches no pending pause.
            ThreadBusyError: another run holds this thread.
            GraphRecursionError: more supersteps than the recursion limit.

        `context`: what nodes read as `runtime.context` (see `StateGraph(context_schema=)`).
        """
        out: list[dict[str, Any]] = []
        for _ in self._stream(input, config, frozenset(), out, context):
            pass
        return out[0]

    def _stream(
        self,
        input: Any,
        config: RunConfig | None,
        modes: frozenset[str],
        out: list[dict[str, Any]],
        context: Any = None,
    ) -> Iterator[tuple[str, Any]]:
        run = self._run(config, modes, context)
        with self._lock(run):
            result = yield from drive_sync(run, run.execute(input))
        out.append(self._finish(result))

    async def ainvoke(
        self,
        input: Input,
        config: RunConfig | None = None,
        *,
        context: Any = None,
    ) -> dict[str, Any]:
        """Async `invoke`: tasks of one superstep run concurrently."""
        out: list[dict[str, Any]] = []
        async for _ in self._astream(input, config, frozenset(), out, context):
            pass
        return out[0]

    async def _astream(
        self,
        input: Any,
        config: RunConfig | None,
        modes: frozenset[str],
        out: list[dict[str, Any]],
        context: Any = None,
    ) -> AsyncGenerator[tuple[str, Any], None]:
        run = self._run(config, modes, context)
        got: list[dict[str, Any] | Paused] = []
        lock = (
            self.checkpointer.alock_thread(run.config)
            if self.checkpointer is not None
            else contextlib.nullcontext()
        )
        async with lock:
            async for chunk in drive_async(run, run.execute(input), got):
                yield chunk
        out.append(self._finish(got[0]))

    def stream(
        self,
        input: Input,
        config: RunConfig | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        *,
        context: Any = None,
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

        With a list of modes, each item is `(mode, chunk)`. A pause ends the stream; in the
        default interrupt mode it then raises `GraphInterrupt`.
        """
        modes, tagged = _modes(stream_mode)
        for mode, chunk in self._stream(input, config, modes, [], context):
            yield (mode, chunk) if tagged else chunk

    async def astream(
        self,
        input: Input,
        config: RunConfig | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        *,
        context: Any = None,
    ) -> AsyncIterator[Any]:
        """Async `stream`.

        The run holds its thread until the stream is closed. Leaving `async for` early does not
        close an async generator at once (Python finalizes it later), so wrap the stream in
        `contextlib.aclosing(graph.astream(...))` when you may stop early and then touch the same
        thread again.
        """
        modes, tagged = _modes(stream_mode)
        # Closing this stream closes the run's own, which releases the thread.
        chunks = self._astream(input, config, modes, [], context)
        async with contextlib.aclosing(chunks):
            async for mode, chunk in chunks:
                yield (mode, chunk) if tagged else chunk

    def get_graph(self, config: RunConfig | None = None, *, xray: bool | int = False) -> Graph:
        """The graph's shape as a langchain_core `Graph`: `get_graph().draw_mermaid()` gives
        LangGraph's mermaid text (START and END, conditional edges dashed); the object's other
        drawings (`draw_ascii()`, `draw_mermaid_png()`) need their own extra packages, as in
        LangGraph. `config` and `xray` are accepted for LangGraph's signature and change nothing."""
        from ._draw import draw

        return draw(self)

    # ---- state -----------------------------------------------------------------------

    def _saver(self, what: str) -> BaseCheckpointSaver:
        if self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"{what} needs a checkpointer: compile(checkpointer=InMemorySaver()) or SQLSaver(url)"
            )
        return self.checkpointer

    def get_state(self, config: RunConfig) -> StateSnapshot:
        """The thread's latest checkpoint (or the one `checkpoint_id` names) as a snapshot.

        An unknown thread gives an empty snapshot (`values={}`, `next=[]`).
        """
        tup = self._saver("get_state").get_tuple(config)
        return self._snapshot(config, tup)

    async def aget_state(self, config: RunConfig) -> StateSnapshot:
        tup = await self._saver("aget_state").aget_tuple(config)
        return self._snapshot(config, tup)

    def get_state_history(
        self, config: RunConfig, *, limit: int | None = None, before: RunConfig | None = None
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first."""
        for tup in self._saver("get_state_history").list(config, limit=limit, before=before):
            yield self._snapshot(config, tup)

    async def aget_state_history(
        self, config: RunConfig, *, limit: int | None = None, before: RunConfig | None = None
    ) -> AsyncIterator[StateSnapshot]:
        async for tup in self._saver("aget_state_history").alist(
            config, limit=limit, before=before
        ):
            yield self._snapshot(config, tup)

    def _snapshot(self, config: RunConfig, tup: CheckpointTuple | None) -> StateSnapshot:
        if tup is None:
            return StateSnapshot(
                values={}, next=[], config=config, metadata={}, created_at=None, parent_config=None
            )
        cp = tup.checkpoint
        run = self._run({"configurable": tup.config["configurable"].copy()}, frozenset())
        tasks: list[StateTask] = []
        interrupts: list[Interrupt] = []
        for name, task_id in cp["next_tasks"]:
            writes = [(c, v) for t, c, v in tup.pending_writes if t == task_id]
            if name in self.nodes:
                run.pending = {task_id: writes}
                task = run.make_task(name, task_id)
                waiting = tuple(run.unanswered(task))
            else:
                waiting = ()
            done = any(c == DONE for c, _ in writes)
            errors = [v for c, v in writes if c == ERROR]
            tasks.append(
                StateTask(task_id, name, waiting, errors[-1] if errors and not done else None, done)
            )
            interrupts.extend(waiting)
        values = {k: v for k, v in cp["channel_values"].items() if not k.startswith("__")}
        return StateSnapshot(
            values=values,
            next=[t.name for t in tasks if not t.done],
            config=tup.config,
            metadata=dict(tup.metadata),
            created_at=cp["ts"],
            parent_config=tup.parent_config,
            tasks=tuple(tasks),
            interrupts=tuple(interrupts),
        )

    def update_state(
        self, config: RunConfig, values: dict[str, Any], as_node: str | None = None
    ) -> RunConfig:
        """Amend the thread's state in a new checkpoint (`source="update"`); return its config.

        Without `as_node`, each key is replaced as given (reducers are not applied: pass the whole
        intended value of an `operator.add` list), and the frontier and pending pauses are kept.
        With `as_node="x"`, the values go through the reducers as if node `x` had returned them,
        and the frontier becomes what follows `x`.
        """
        saver = self._saver("update_state")
        run = self._run(_thread_only(config), frozenset())
        with saver.lock_thread(run.config):
            gen = drive_sync(run, run.update(values, as_node))
            while True:
                try:
                    next(gen)
                except StopIteration as stop:
                    head: RunConfig = stop.value
                    return head

    async def aupdate_state(
        self, config: RunConfig, values: dict[str, Any], as_node: str | None = None
    ) -> RunConfig:
        saver = self._saver("aupdate_state")
        run = self._run(_thread_only(config), frozenset())
        out: list[RunConfig] = []
        async with saver.alock_thread(run.config):
            async for _ in drive_async(run, run.update(values, as_node), out):
                pass
        return out[0]


def _thread_only(config: RunConfig) -> RunConfig:
    thread_id = config_thread_id(config)
    if not thread_id:
        raise ValueError('update_state needs {"configurable": {"thread_id": ...}}')
    # An update always goes on top of the thread's latest checkpoint: history never forks.
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": config_ns(config)}}


def _modes(stream_mode: StreamMode | Sequence[StreamMode]) -> tuple[frozenset[str], bool]:
    if isinstance(stream_mode, str):
        modes, tagged = frozenset([stream_mode]), False
    else:
        modes, tagged = frozenset(stream_mode), True
    unknown = modes - MODES
    if unknown:
        raise ValueError(f"unknown stream_mode {sorted(unknown)}; use any of {sorted(MODES)}")
    return modes, tagged
