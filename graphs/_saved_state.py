"""A compiled graph's saved state: read (`get_state`, `get_state_history`, a subgraph's by its
namespace, with what a step that did not complete already wrote) and amended (`update_state`,
`bulk_update_state`, `fork` into a new thread), each under the thread's lock.

`SavedState` is mixed into `CompiledGraph` (`compiled.py`); the amending runs are the generators
of `_updates.py`, driven like a run's.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from . import _updates
from ._algo import task_writes, waiting
from ._drive import drive_async, drive_sync
from ._loop import finished_values
from ._run import SENDS_CHANNEL, Run, task_paths
from ._schema import ROOT
from ._shape import GraphShape
from ._subgraph import (
    called_graph,
    child_config,
    is_subgraph,
    namespace_levels,
    segment_of,
    subgraph_node_of,
)
from ._types import PUSH, START, Interrupt, RunConfig, StateSnapshot, StateTask, StateUpdate
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
    InvalidUpdateError,
    ResumeError,
)

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver

__all__ = ["SavedState"]


class SavedState(GraphShape):
    """Mixed into `CompiledGraph`: its saved state read (`get_state`, `get_state_history`, and a
    subgraph's, by namespace) and amended (`update_state`, `bulk_update_state`, `fork`)."""

    run_class: type[Run] = Run
    """What one invocation of it is (a `graphs.func` entrypoint's runs are a kind of their own)."""

    if TYPE_CHECKING:  # what the compiled graph gives it

        def _run(
            self,
            config: RunConfig | None,
            modes: frozenset[str],
            subgraphs: bool = False,
            context: Any = None,
            nest: bool = True,
        ) -> Run: ...

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

    def _at(self, config: RunConfig) -> SavedState:
        """The graph whose checkpoints the config's namespace holds: this one, or the subgraph
        a node runs or its function calls (`"node:task_id|..."`, one segment per level), so
        that a subgraph's snapshots show its own keys and name its own subgraph tasks."""
        ns = config_ns(config)
        graph: SavedState = self
        top = self
        for _, segment in namespace_levels(ns) if ns else ():
            found = called_graph(graph.nodes.get(segment.split(":", 1)[0]))
            if found is None:
                return top
            graph = _saved(found)
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

    def _reader(self, name: str, own: bool, child_config: RunConfig) -> tuple[SavedState, bool]:
        """The graph that reads the subgraph checkpoints of `child_config`, which a task of
        node `name` ran, and whether they are that graph's own: the node's compiled graph (or
        the one its function calls), so that its snapshot is the subgraph's own, as LangGraph
        reads it (the head shows its finished tasks' writes). A task's later runs
        (`|1`, `|2`: possibly other graphs) and nodes whose graph is not found are read
        without it."""
        graph = called_graph(self.nodes.get(name)) if own else None
        if graph is None or config_ns(child_config).rsplit("|", 1)[-1].isdigit():
            return self, False
        return _saved(graph), True

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
        if self.dialect == "langgraph" and len(tasks) > 1:
            # As LangGraph lists them: the `Send` tasks first, then the nodes.
            tasks.sort(key=lambda t: t.path[0] != PUSH)
            interrupts = [i for t in tasks for i in t.interrupts]
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
        graph: SavedState = self
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
            graph = _saved(found)
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


def _own_ns(config: RunConfig) -> RunConfig:
    """`config` naming its namespace (`""` when it names none): the history of a graph is its
    own namespace's, where a saver's `list` without one lists the subgraphs' too."""
    conf = config.get("configurable") or {}
    if conf.get("checkpoint_ns") is not None:
        return config
    return {**config, "configurable": {**conf, "checkpoint_ns": ""}}


def _saved(graph: GraphShape) -> SavedState:
    """A subgraph as the reader of its saved state (every compiled graph is one)."""
    assert isinstance(graph, SavedState), graph
    return graph
