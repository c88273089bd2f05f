"""The superstep loop.

One invocation is a `Run`. Its logic is written once, as a generator that *describes* I/O
(load the head, save a checkpoint, save pending writes, run these tasks, emit a chunk: the
requests of `_io.py`) and never performs it; `drive_sync` and `drive_async` (`_drive.py`) perform
each request with the sync or async saver and task runner. So `invoke` and `ainvoke` share
every rule. A task (one node run of a step) is a `Task`, in `_task.py`.

A run's input is saved first, as LangGraph saves it: an input checkpoint (`source="input"`, the
thread's values as they were, the input in the `__start__` channel, the `__start__` task next),
then that task's step applies it (step 0 on a new thread, `source="loop"`).

A superstep:
1. every task of the frontier runs (concurrently: in threads under `invoke`, on the event loop
   under `ainvoke`); a task that finished in an earlier, incomplete attempt of this step is not
   run again: its saved writes are reused. As each task ends, in the order they end, it is
   reported (`finish`): in a step of two or more, a finished task's writes are saved as
   pending writes of the current checkpoint, then its `updates` chunk is streamed;
2. if any task paused or failed, the other finished tasks' writes are saved as pending writes
   of the current checkpoint and the run stops (the step is incomplete; no new checkpoint);
   what they wrote is then shown (returned, in `get_state`) applied to a copy of the state;
3. otherwise all writes are applied in LangGraph's order (`write_order`: the triggered nodes'
   tasks by node name, then the `Send`s in the order they were made), edges and routers
   choose the next frontier, and one checkpoint is saved.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._algo import (
    apply_writes,
    expire,
    name_messages,
    short,
    static_pause,
    task_id_of,
    write_order,
)
from ._context import interrupt_id
from ._input import GO_ON, START_CHANNEL, take_input
from ._io import (
    LIVE_MODES,
    Await,
    Emit,
    Loop,
    PutCheckpoint,
    PutWrites,
    RunTasks,
    Unsaved,
)
from ._schema import ROOT, updates_of
from ._stream import TRACE_MODES, MessagesStream, Sink, checkpoint_payload, no_writer, trace
from ._stream import task_result as trace_result
from ._stream import task_start as trace_start
from ._task import SEND_TIMEOUTS_CHANNEL, SENDS_CHANNEL, Task
from ._timeout import enclosing_progress
from ._types import (
    END,
    START,
    Command,
    Interrupt,
    RunConfig,
    Send,
    TimeoutPolicy,
)
from .checkpoint.base import (
    CALL,
    DONE,
    ERROR,
    FAILED,
    GOTO,
    INTERRUPT,
    ONCE,
    RESUME,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    checkpoint_seq,
    new_checkpoint,
    new_checkpoint_id,
    noted_metadata,
)
from .errors import (
    CheckpointerRequiredError,
    GraphRecursionError,
    InvalidUpdateError,
    NodeError,
    NodeInterrupt,
    ParentCommand,
    RecordedNodeError,
    ResumeError,
    SideEffectUnrecordedError,
)

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver
    from .compiled import CompiledGraph

ONCE_CHANNEL = "__once__"
DEFER_CHANNEL = "__deferred__"
"""The `defer=True` nodes triggered that wait until no other node is to run."""


class Paused:
    """The result of a run that stopped at a pause."""

    __slots__ = ("config", "interrupts", "values")

    def __init__(
        self, interrupts: tuple[Interrupt, ...], config: RunConfig | None, values: dict[str, Any]
    ) -> None:
        self.interrupts = interrupts
        self.config = config
        self.values = values


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class Run:
    """The state of one invocation (or one `update_state`) on one thread."""

    enclosing: Sequence[tuple[str, str]] = ()
    """For an `update_state` on a subgraph's `checkpoint_ns`: each enclosing graph's namespace
    and the segment (`node:task_id`, or a `checkpointer=True` subgraph's `node`) its task runs
    the next level under, outermost first (`()` otherwise)."""

    def __init__(
        self,
        graph: CompiledGraph,
        config: RunConfig,
        thread_id: str,
        ns: str,
        *,
        modes: frozenset[str] = frozenset(),
        parent: Task | None = None,
        path: tuple[str, ...] = (),
        subgraphs: bool = False,
        forward: frozenset[str] = frozenset(),
        context: Any = None,
    ) -> None:
        self.graph = graph
        self.parent = parent
        """For a subgraph's run: the parent's task that runs it (None for a graph run itself)."""
        self.saver: BaseCheckpointSaver | None = graph.checkpointer
        if parent is not None and graph.inherit:
            self.saver = parent.run.saver
        self.store: Any = graph.store
        """The store its nodes get (`compile(store=)`): a subgraph without one uses its parent's."""
        if self.store is None and parent is not None:
            self.store = parent.run.store
        self.cache: Any = graph.cache
        """Where nodes with a `cache_policy` keep results: a subgraph's, else its parent's."""
        if self.cache is None and parent is not None:
            self.cache = parent.run.cache
        self.config = config
        self.thread_id = thread_id
        self.ns = ns
        self.path = path
        """The subgraph namespaces from the graph run itself to this one (`("node:task_id",)`)."""
        self.top: Run = self if parent is None else parent.run.top
        """The run of the graph invoked itself (this run, unless it is a subgraph's)."""
        self.subgraphs = subgraphs
        """This graph's stream has its subgraphs' chunks too (`stream(..., subgraphs=True)`)."""
        self.asked = modes
        """The stream modes the caller of this run asked for."""
        self.forward = forward
        """The stream modes a subgraph's run hands to its parent's stream."""
        self.task_mark = parent.id if parent is not None and graph.persistent else None
        """For a persistent subgraph: the parent's task, noted in each checkpoint's metadata."""
        self.parents: dict[str, str] = {}
        """The checkpoint each enclosing graph runs this one from, by namespace (metadata
        `parents`, as LangGraph's `{parent_ns: checkpoint_id}`); `{}` for a graph run itself."""
        if parent is not None and parent.run.head_id is not None:
            self.parents = {**parent.run.parents, parent.run.ns: parent.run.head_id}
        modes = modes | forward
        self.modes = modes
        own = modes if parent is None else self.asked
        self.live = (parent is None and subgraphs) or not own.isdisjoint(LIVE_MODES)
        """Its driver runs a step's tasks beside a consumer of what they stream as they run:
        node code streams `custom` or `messages`, or subgraphs stream into this graph's stream.
        (A subgraph's chunks for the top graph's stream go straight to the top's `sink`.)"""
        limit = config.get("recursion_limit")
        self.limit: int = graph.recursion_limit if limit is None else limit
        self.values: dict[str, Any] = {}
        self.width = len(graph.channels)
        """How many state keys there are: `values` has fewer until every key was written."""
        self.internal: dict[str, Any] = {}
        self.versions: dict[str, int] = {}
        self.frontier: list[tuple[str, str]] = []  # (node, task_id)
        self.pending: dict[str, list[tuple[str, Any]]] = {}  # task_id -> writes
        self.head_id: str | None = None
        self.head_config: RunConfig | None = None
        self.requested_id: str | None = None
        self.step = -1
        self.steps = 0
        """How many supersteps this invocation has run (what `RemainingSteps` counts from)."""
        self.paused: list[str] = []
        """The static pause (`interrupt_before/after` nodes) the head checkpoint is at."""
        self.context = context
        """The run's `context=` (what `Runtime.context` holds)."""
        self.sink: Sink | None = None
        """Where node code's `custom` and `messages` chunks go; set by the driver."""
        self.messages = MessagesStream(self) if "messages" in modes else None
        self.writer = self.write_custom if "custom" in modes else no_writer
        """What `get_stream_writer()` returns to node code of this run."""
        self.trace = not modes.isdisjoint(TRACE_MODES)
        """`tasks`, `checkpoints` or `debug` is streamed."""
        self.noted = noted_metadata(config)
        """What the config adds to each checkpoint's metadata (`noted_metadata`)."""
        self.chain: Any = None
        """Its langchain_core chain run, when it reports to callbacks (`_events.py`)."""
        self.step_error: BaseException | None = None
        """Why the step stopped besides its tasks' own errors: the graph's `step_timeout`."""
        self.concurrent = False
        """The running step has two or more tasks to run: each finished task's writes are saved
        as it finishes (`finish`)."""
        self.unsaved: Unsaved | None = None
        """Under `durability="exit"` (a subgraph's run inherits it): what is not saved yet."""
        if parent is not None and parent.run.unsaved is not None and self.saver is not None:
            self.unsaved = Unsaved()

    def saved_parent(self, parent: RunConfig) -> RunConfig:
        """The parent the checkpoint just made is saved with: under `durability="exit"`, the last
        checkpoint saved (the ones between are skipped), as the `checkpoints` stream shows it."""
        held = self.unsaved.checkpoint if self.unsaved is not None else None
        return parent if held is None else held.parent

    def saves_at_exit(self, result: Any) -> bool:
        """Under `durability="exit"`, whether a run that ended with `result` saves what it
        holds: a graph run does; a subgraph's only if it paused or is persistent, as LangGraph
        (one that failed saves too, as it raises)."""
        return self.parent is None or isinstance(result, Paused) or self.graph.persistent

    def write_custom(self, chunk: Any) -> None:
        self.send("custom", chunk)

    def send(self, mode: str, chunk: Any) -> None:
        """Hand a chunk node code wrote to whoever streams it: this run's caller, and the top
        graph's stream when this is a subgraph's run and the top streams its subgraphs."""
        if self.parent is not None:  # a subgraph's chunk: its parents progress
            enclosing_progress(self)
        if mode in self.asked and self.sink is not None:
            self.sink(Emit(mode, chunk))
        if mode in self.forward:
            sink = self.top.sink
            if sink is not None:
                sink(Emit(mode, chunk, self.path))

    @property
    def once_results(self) -> dict[str, Any]:
        return self.internal.get(ONCE_CHANNEL) or {}

    def _head(self) -> RunConfig:
        """The config of the head checkpoint, which pending writes go on.

        With a saver there is one before any task runs (a new run saves its input first), and
        writes are only saved with a saver.
        """
        assert self.head_config is not None
        return self.head_config

    # ---- loading -------------------------------------------------------------------

    def restore(self, tup: CheckpointTuple) -> None:
        cp = tup.checkpoint
        for key, value in cp["channel_values"].items():
            if key.startswith("__") and key != ROOT:
                self.internal[key] = value
            elif key in self.graph.channels:
                self.values[key] = value
            # a key the schema no longer has is dropped; the other keys still load
        self.versions = dict(cp["channel_versions"])
        self.frontier = [(name, task_id) for name, task_id in cp["next_tasks"]]
        unknown = [n for n, _ in self.frontier if n not in self.graph.nodes and n != START]
        if unknown:
            raise ResumeError(
                f"thread {self.thread_id!r} is paused before node(s) {unknown} that this graph "
                f"no longer has; nodes are: {sorted(self.graph.nodes)}",
                self.thread_id,
            )
        self.pending = {}
        for task_id, channel, value in tup.pending_writes:
            self.pending.setdefault(task_id, []).append((channel, value))
        self.head_id = cp["id"]
        self.head_config = tup.config
        self.step = tup.metadata.get("step", -1)
        self.paused = list(cp["paused"])

    # ---- the pieces of a step ------------------------------------------------------

    def make_task(self, name: str, task_id: str) -> Task:
        task = Task(self, self.graph.nodes[name], task_id)
        if SENDS_CHANNEL in self.internal:
            sends = self.internal[SENDS_CHANNEL]
            if task_id in sends:
                task.arg = sends[task_id]
                timeouts = self.internal.get(SEND_TIMEOUTS_CHANNEL)
                if timeouts:
                    task.send_timeout = timeouts.get(task_id)
        answered: dict[str, Any] = {}
        for channel, value in self.pending.get(task_id, ()):
            if channel == INTERRUPT:
                if all(i.id != value.id for i in task.recorded):
                    task.recorded.append(value)
            elif channel == RESUME:
                answered[value[0]] = value[1]
            elif channel == ONCE:
                task.once[value[0]] = (value[1], value[2])
            elif channel == DONE:
                task.done = True
            elif channel == GOTO:
                task.goto.extend(value)
            elif channel == CALL:
                if task.call_results is None:
                    task.call_results = {}
                task.call_results[value[0]] = value[1]
            elif channel == FAILED:
                handler = task.spec.handler
                if handler is not None and task.failure is None:
                    # It failed in an earlier attempt of this step: its handler runs instead.
                    task.failure = NodeError(task.name, RecordedNodeError(*value))
                    task.spec, task.name = handler, handler.name
            elif channel != ERROR:
                task.writes.append((channel, value))
        if not task.done:
            task.writes.clear()
            task.goto.clear()
        for intr in task.recorded:
            if intr.id in answered:
                task.answers[intr.id] = answered[intr.id]
        return task

    def unanswered(self, task: Task) -> list[Interrupt]:
        if task.done:
            return []
        return [i for i in task.recorded if i.id not in task.answers]

    def to_writes(self, task: Task) -> None:
        """Turn a finished task's return value into writes, or record why it is invalid.

        A list holding a `Command` is several returns in order (LangGraph's mixed returns):
        their updates are written one after another and their gotos all followed.
        """
        result = task.result
        if result is None:
            return
        if type(result) is dict and not self.graph.root:  # the hot path: a plain update
            channels = self.graph.channels
            for key in result:
                if key not in channels:
                    break
            else:
                task.writes = list(result.items())
                return
        parts = (
            list(result)
            if type(result) in (list, tuple) and any(isinstance(r, Command) for r in result)
            else [result]
        )
        writes: list[tuple[str, Any]] = []
        gotos: list[Any] = []
        split: list[int] = []
        for part in parts:
            if isinstance(part, Command) and part.graph is not None:
                self.to_parent(task, part)
                return
            one = self.writes_of(task, part)
            if one is None:
                return
            writes += one[0]
            gotos += one[1]
            split.append(len(one[0]))
        task.writes = writes
        task.split = split if len(split) > 1 else None
        if gotos:
            task.goto = gotos

    def update_of(self, task: Task) -> Any:
        """What the `updates` stream shows of a task: its update (the value, for a root
        channel), None if it wrote nothing; a list return shows a list, one per item that
        wrote something, as LangGraph."""
        root = self.graph.root
        writes = task.writes
        if task.split is None:
            if not writes:
                return None
            if root:
                return writes[0][1]
            if len(writes) > 1 and len({c for c, _ in writes}) < len(writes):
                # A key written twice (`push_message()`, then the return): as LangGraph, one
                # update per write, in the order written.
                return [{c: v} for c, v in writes]
            return dict(writes)
        # `push_message()`'s writes come first, each an update of its own, then the items.
        start = len(writes) - sum(task.split)
        shown: list[Any] = [{c: v} for c, v in writes[:start]]
        for n in task.split:
            part = task.writes[start : start + n]
            start += n
            if part:
                shown.append(part[0][1] if root else dict(part))
        return shown or None

    def update_chunk(self, task: Task) -> dict[str, Any]:
        """A task's `updates` chunk: `{node: update}`, with `"__metadata__": {"cached": True}`
        when its node's cache gave the result (the node did not run), as LangGraph marks it."""
        if task.cached:
            return {task.name: self.update_of(task), "__metadata__": {"cached": True}}
        return {task.name: self.update_of(task)}

    def writes_of(self, task: Task, result: Any) -> tuple[list[tuple[str, Any]], list[Any]] | None:
        """One return value's writes and gotos; None (with `task.error` set) if invalid."""
        goto: Any = ()
        if result is None:
            return [], []
        if isinstance(result, Command):
            update: Any = result.update or {}
            if self.graph.root and result.update is not None:
                update = {ROOT: result.update}
            goto = result.goto
        elif self.graph.root:
            update = {ROOT: result}
        elif isinstance(result, dict):
            update = result
        elif isinstance(result, Mapping):
            update = dict(result)
        elif (typed := updates_of(result)) is not None:
            update = typed
        else:
            task.error = InvalidUpdateError(
                f"node {task.name!r} returned {type(result).__name__} {short(result)}; a node "
                "must return a dict of state updates (or None, or a Command)"
            )
            return None
        if type(update) in (list, tuple) and all(
            type(pair) is tuple and len(pair) == 2 for pair in update
        ):
            update = _Pairs(update)  # LangGraph's `[(key, value), ...]` update
        elif not isinstance(update, Mapping) and (typed := updates_of(update)) is not None:
            update = typed  # a pydantic instance with no field set is an empty update
        channels = self.graph.channels
        managed = self.graph.managed
        if managed and any(key in managed for key in update):
            update = _Pairs((k, v) for k, v in update.items() if k not in managed)
        for key in update:
            if key not in channels:
                task.error = InvalidUpdateError(
                    f"node {task.name!r} returned unknown state key {key!r}; the state's keys "
                    f"are: {sorted(channels)}"
                )
                return None
        if not goto:
            return list(update.items()), []
        names = [goto] if isinstance(goto, (str, Send)) else list(goto)
        bad = [
            n
            for n in names
            if (n.node if isinstance(n, Send) else n) not in self.graph.nodes and n != END
        ]
        if bad:
            task.error = InvalidUpdateError(
                f"node {task.name!r} returned Command(goto={bad}) naming unknown node(s); "
                f"nodes are: {sorted(self.graph.nodes)}"
            )
            return None
        return list(update.items()), names

    def to_parent(self, task: Task, command: Command[Any]) -> None:
        """`Command(graph=Command.PARENT)`: leave this run; the parent's task returns it."""
        if command.graph != Command.PARENT:
            task.error = InvalidUpdateError(
                f"node {task.name!r} returned Command(graph={command.graph!r}); the only graph "
                "a command can name is Command.PARENT"
            )
        elif self.parent is None:
            # As LangGraph: the caller gets it (a node that invoked this graph applies it).
            error = ParentCommand(Command(update=command.update, goto=command.goto))
            error.add_note(
                f"node {task.name!r} returned Command(graph=Command.PARENT), but its graph is "
                "not running as a subgraph, so no parent graph applies it: the caller gets "
                "it as ParentCommand (.command)"
            )
            task.error = error
        else:
            raise ParentCommand(Command(update=command.update, goto=command.goto))

    def view(self) -> dict[str, Any]:
        """The state as a node or a router sees it: a reducer key nothing was written to yet
        reads as its empty value (`[]` for a list), as in LangGraph."""
        state = dict(self.values)
        if len(state) < self.width:
            for key, make in self.graph.empty.items():
                if key not in state:
                    state[key] = make()
        return state

    def router_view(self) -> Any:
        """The state a router sees: `view()` with the managed keys (`graphs.managed`) as the
        nodes it routes after had them (as LangGraph: the steps allowed after theirs; after
        the input, one more than the first step's nodes get), coerced like a node's."""
        state = self.view()
        managed = self.graph.managed
        if managed:
            left = self.limit - self.steps  # `steps` counts the step just run
            for key, kind in managed.items():
                state[key] = kind.get(left)
        coerce = self.graph.coerce
        return state if coerce is None else coerce(state)

    def check_input(
        self, update: Any, what: str, keys: frozenset[str] | None = None, *, input: bool = False
    ) -> list[tuple[str, Any]]:
        """`update` as writes, refusing keys the graph does not take. `input`: it is a run's
        input (not a `Command`'s or `update_state`'s update), which drops the keys only nodes'
        own schemas have, as LangGraph does (they are not in its input schema)."""
        if self.graph.root:
            return [(ROOT, update)]
        if not isinstance(update, Mapping) and (typed := updates_of(update)) is not None:
            update = typed  # a pydantic instance with no field set is an empty input
        if keys is not None and isinstance(update, Mapping):
            outside = [k for k in update if k not in keys]
            if outside:
                raise InvalidUpdateError(
                    f"{what} has key(s) {outside} that the graph's input_schema does not have; "
                    f"it takes: {sorted(keys)}"
                )
        private = self.graph.node_keys
        if input and private and isinstance(update, Mapping):
            update = {k: v for k, v in update.items() if k not in private}
        if not isinstance(update, Mapping):
            raise InvalidUpdateError(
                f"{what} must be a dict of state keys, got {type(update).__name__} {short(update)}"
            )
        unknown = [k for k in update if k not in self.graph.channels]
        if unknown:
            raise InvalidUpdateError(
                f"{what} has unknown state key(s) {unknown}; the state's keys are: "
                f"{sorted(self.graph.channels)}"
            )
        return list(update.items())

    def await_routers(self, ran: list[str]) -> Loop[dict[int, Any]]:
        """Run the async routers after `ran` (awaited by the async driver; the sync one
        refuses them): what each returned, by `id` of its branch, for `route`."""
        g = self.graph
        out: dict[int, Any] = {}
        state: Any = None
        for name in dict.fromkeys(ran):
            for br in g.branches.get(name, ()):
                if not br.is_async:
                    continue
                if state is None:
                    state = self.router_view()
                coro = br.router(state, self.config) if br.takes_config else br.router(state)
                name = getattr(br.router, "__name__", type(br.router).__name__)
                what = f"router {name!r} of the conditional edges from {br.source!r}"
                note = f"while routing after node {br.source!r} on thread {self.thread_id!r}"
                out[id(br)] = yield Await(coro, what, note)
        return out

    def next_frontier(
        self, ran: list[str], gotos: list[str | Send], new_versions: dict[str, int]
    ) -> Loop[Sequence[str | Send]]:
        """`route`, after awaiting the async routers it needs, if the graph has any."""
        awaited = (yield from self.await_routers(ran)) if self.graph.async_routers else None
        return self.route(ran, gotos, new_versions, awaited)

    def route(
        self,
        ran: list[str],
        gotos: list[str | Send],
        new_versions: dict[str, int],
        awaited: dict[int, Any] | None = None,
    ) -> Sequence[str | Send]:
        """The next frontier after `ran` finished: nodes in the order they were added, then
        the `Send`s in the order they were made. `awaited`: what the async routers returned."""
        g = self.graph
        sends: list[str | Send] = []
        triggered: set[str] = set()
        if gotos:
            for n in gotos:
                if isinstance(n, str):
                    triggered.add(n)
                else:
                    sends.append(n)
        state: Any = None
        # A node that ran as several `Send`s routes once.
        for name in ran if len(ran) == 1 else dict.fromkeys(ran):
            triggered.update(g.edges.get(name, ()))
            for join in g.joins.get(name, ()):
                seen = set(self.internal.get(join.key, ()))
                seen.add(name)
                if seen >= join.sources:
                    triggered.add(join.target)
                    seen = set()
                self.internal[join.key] = sorted(seen)
                version = self.versions.get(join.key, 0) + 1
                self.versions[join.key] = new_versions[join.key] = version
            for br in g.branches.get(name, ()):
                if state is None:
                    state = self.router_view()
                for dest in self.resolve(br, state, awaited):
                    if isinstance(dest, Send):
                        sends.append(dest)
                    else:
                        triggered.add(dest)
        triggered.discard(END)
        if g.deferred:
            self.hold_deferred(triggered, bool(sends), new_versions)
        if sends:
            return [*sorted(triggered, key=lambda n: g.nodes[n].index), *sends]
        if len(triggered) == 1:
            return list(triggered)
        names: list[str] = sorted(triggered, key=lambda n: g.nodes[n].index)
        return names

    def resolve(
        self, br: Any, state: dict[str, Any], awaited: dict[int, Any] | None = None
    ) -> list[str | Send]:
        if awaited is not None and br.is_async:
            out = awaited[id(br)]
        else:
            try:
                out = br.router(state, self.config) if br.takes_config else br.router(state)
            except Exception as e:
                e.add_note(f"while routing after node {br.source!r} on thread {self.thread_id!r}")
                raise
        results = out if isinstance(out, (list, tuple)) else [out]
        dests: list[str | Send] = []
        for r in results:
            if isinstance(r, Send):
                if r.node not in self.graph.nodes:
                    raise InvalidUpdateError(
                        f"router after {br.source!r} returned Send({r.node!r}, ...), which is "
                        f"not a node; nodes are: {sorted(self.graph.nodes)}"
                    )
                dests.append(r)
                continue
            if br.path_map is not None:
                if r not in br.path_map:
                    raise InvalidUpdateError(
                        f"router after {br.source!r} returned {r!r}, which is not in its "
                        f"path_map {sorted(map(str, br.path_map))}"
                    )
                r = br.path_map[r]
            if r != END and r not in self.graph.nodes:
                raise InvalidUpdateError(
                    f"router after {br.source!r} returned {r!r}, which is not a node; nodes "
                    f"are: {sorted(self.graph.nodes)}"
                )
            dests.append(r)
        return dests

    def output(self) -> Any:
        """The run's result: the state (the output schema's keys, a reducer key nothing was
        written to as its empty value, as LangGraph's), or a root-channel graph's value."""
        state = self.view()  # a reducer key nothing was written to shows its empty value
        if self.graph.root:
            return state.get(ROOT)
        keys = self.graph.output_keys
        if keys is None:
            return state
        return {k: v for k, v in state.items() if k in keys}

    def checkpoint(
        self,
        names: Sequence[str | Send],
        paused: list[str],
        appended: dict[str, int],
        new_versions: dict[str, int],
    ) -> Checkpoint:
        """The next checkpoint, whose frontier is `names` (each with a new task id)."""
        checkpoint_id = new_checkpoint_id(checkpoint_seq(self.head_id) + 1)
        if names and type(names[-1]) is not str or SENDS_CHANNEL in self.internal:
            self.set_frontier(names, checkpoint_id, new_versions)
        else:  # no Send (they come last): the hot path
            self.frontier = [
                (n, task_id_of(self.thread_id, self.ns, checkpoint_id, n))  # type: ignore[misc, arg-type]
                for n in names
            ]
        return self._checkpoint(checkpoint_id, paused, appended)

    def hold_deferred(self, triggered: set[str], sends: bool, new_versions: dict[str, int]) -> None:
        """Keep back the triggered `defer=True` nodes while other nodes (or `Send`s) are to
        run; let them all run once nothing else is (changing `triggered` in place)."""
        held = self.internal.get(DEFER_CHANNEL) or []
        waiting = {n for n in (*triggered, *held) if n in self.graph.deferred}
        triggered.update(waiting)
        if waiting and (sends or len(waiting) < len(triggered)):
            triggered.difference_update(waiting)
        else:
            waiting = set()
        now = sorted(waiting)
        if now != held:
            self.internal[DEFER_CHANNEL] = now
            version = self.versions.get(DEFER_CHANNEL, 0) + 1
            self.versions[DEFER_CHANNEL] = new_versions[DEFER_CHANNEL] = version

    def set_frontier(
        self, names: Sequence[str | Send], checkpoint_id: str | None, new_versions: dict[str, int]
    ) -> None:
        """Give each node of the next frontier its task id; note what each `Send` runs on."""
        if not names or type(names[-1]) is str:  # no Send (they come last)
            self.frontier = [
                (
                    n,
                    n
                    if checkpoint_id is None
                    else task_id_of(self.thread_id, self.ns, checkpoint_id, n),  # type: ignore[arg-type]
                )  # type: ignore[misc]
                for n in names
            ]
            self.clear_sends(new_versions)
            return
        frontier: list[tuple[str, str]] = []
        sends: dict[str, Any] = {}
        timeouts: dict[str, TimeoutPolicy] = {}
        for i, n in enumerate(names):
            if isinstance(n, str):
                frontier.append(
                    (
                        n,
                        n
                        if checkpoint_id is None
                        else task_id_of(self.thread_id, self.ns, checkpoint_id, n),
                    )
                )
                continue
            key = f"{n.node}\x00send\x00{i}"
            task_id = (
                key
                if checkpoint_id is None
                else task_id_of(self.thread_id, self.ns, checkpoint_id, key)
            )
            frontier.append((n.node, task_id))
            sends[task_id] = n.arg
            if n.timeout is not None:
                timeouts[task_id] = n.timeout
        self.frontier = frontier
        self.internal[SENDS_CHANNEL] = sends
        self.versions[SENDS_CHANNEL] = new_versions[SENDS_CHANNEL] = (
            self.versions.get(SENDS_CHANNEL, 0) + 1
        )
        self.set_send_timeouts(timeouts, new_versions)

    def set_send_timeouts(
        self, timeouts: dict[str, TimeoutPolicy], new_versions: dict[str, int]
    ) -> None:
        """Note the `Send(timeout=)` of each frontier task sent one (a channel saved only
        while some pending `Send` has a timeout)."""
        if not timeouts and not self.internal.get(SEND_TIMEOUTS_CHANNEL):
            return
        self.internal[SEND_TIMEOUTS_CHANNEL] = timeouts
        self.versions[SEND_TIMEOUTS_CHANNEL] = new_versions[SEND_TIMEOUTS_CHANNEL] = (
            self.versions.get(SEND_TIMEOUTS_CHANNEL, 0) + 1
        )

    def clear_sends(self, new_versions: dict[str, int]) -> None:
        """The frontier has no `Send` any more: empty the channel that held their args."""
        if self.internal.get(SENDS_CHANNEL):
            self.internal[SENDS_CHANNEL] = {}
            self.versions[SENDS_CHANNEL] = new_versions[SENDS_CHANNEL] = (
                self.versions.get(SENDS_CHANNEL, 0) + 1
            )
        self.set_send_timeouts({}, new_versions)

    def _checkpoint(
        self, checkpoint_id: str, paused: list[str], appended: dict[str, int]
    ) -> Checkpoint:
        """The run as it stands (values, versions, frontier) as a checkpoint."""
        values = {**self.values, **self.internal}
        if self.graph.untracked:
            self.leave_untracked(values)
        return new_checkpoint(
            checkpoint_id,
            _now(),
            values,
            dict(self.versions),
            [[n, t] for n, t in self.frontier],
            paused,
            appended,
        )

    def leave_untracked(self, values: dict[str, Any]) -> None:
        """Take the `UntrackedValue` keys out of a checkpoint's `values`, and out of the dict
        arguments of the `Send`s it saves (the tasks of this run have them as they were)."""
        untracked = self.graph.untracked
        for key in untracked:
            values.pop(key, None)
        start = values.get(START_CHANNEL)
        if start:
            values[START_CHANNEL] = {k: v for k, v in start.items() if k not in untracked}
        sends = values.get(SENDS_CHANNEL)
        if sends:
            values[SENDS_CHANNEL] = {
                task_id: {k: v for k, v in arg.items() if k not in untracked}
                if type(arg) is dict
                else arg
                for task_id, arg in sends.items()
            }

    def save(
        self,
        source: str,
        names: Sequence[str | Send],
        new_versions: dict[str, int],
        appended: dict[str, int],
        paused: list[str],
        forked_from: dict[str, str] | None = None,
    ) -> Loop[None]:
        """Write the next checkpoint (or, without a saver, just move the frontier)."""
        self.step += 1
        self.pending = {}
        self.paused = list(paused)
        if self.saver is None:
            if names and type(names[-1]) is not str or SENDS_CHANNEL in self.internal:
                self.set_frontier(names, None, new_versions)
            else:  # no Send (they come last): the hot path
                self.frontier = [(n, n) for n in names]  # type: ignore[misc]
            return
        if START_CHANNEL in self.internal:  # the input it held is applied, or replaced
            self.drop_start(new_versions)
        cp = self.checkpoint(names, paused, appended, new_versions)
        parent = self.head_config or {
            "configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        }
        metadata: CheckpointMetadata = {
            "source": source,
            "step": self.step,
            "parents": self.parents,
        }
        if forked_from is not None:
            metadata["forked_from"] = forked_from
        if self.task_mark is not None:
            metadata["task"] = self.task_mark
        if self.noted:
            metadata.update(self.noted)  # type: ignore[typeddict-item]
        self.head_config = yield PutCheckpoint(parent, cp, metadata, new_versions)
        self.head_id = cp["id"]
        if self.trace:
            payload = checkpoint_payload(self, self.saved_parent(parent), metadata)
            yield from trace(self, "checkpoints", payload, self.step)

    def execute(self, input: Any) -> Loop[Any]:
        """One invocation: take the input (`take_input`), then run steps until none is left, or
        one pauses or fails (`run_steps`)."""
        stopped = yield from take_input(self, input)
        if stopped is not GO_ON:
            return stopped
        return (yield from self.run_steps())

    def run_steps(self) -> Loop[Any]:
        """Run the frontier's tasks step after step: each step's writes reach the reducers when
        all its tasks finished, the edges pick the next frontier, one checkpoint is saved; a
        step where a task paused or failed keeps what the finished ones wrote (`stop`)."""
        self.steps = 0
        while self.frontier:
            if self.steps >= self.limit:
                raise GraphRecursionError(self.limit, self.steps, self.thread_id)
            tasks = [self.make_task(name, task_id) for name, task_id in self.frontier]
            todo = [t for t in tasks if not t.done]
            if len(todo) < len(tasks) and "updates" in self.modes:
                # As LangGraph: what the tasks that finished in an earlier attempt of this step
                # wrote shows again, marked as not run now.
                for t in tasks:
                    if t.done:
                        update = {t.name: self.update_of(t), "__metadata__": {"cached": True}}
                        yield Emit("updates", update)
            if self.trace:
                for t in todo:
                    payload = trace_start(t, t.input())
                    yield from trace(self, "tasks", payload, self.step + 1)
            self.concurrent = len(todo) > 1
            yield RunTasks(todo)  # the driver reports each task of two or more as it ends
            failed = self.step_error is not None
            for t in todo:
                if t.cancelled:  # a sibling failed, or the step timed out, before it finished
                    failed = True
                    if self.trace:
                        yield from trace(self, "tasks", trace_result(t), self.step + 1)
                    continue
                if not t.ended:
                    yield from self.finish(t)
                failed = failed or t.error is not None or t.pause is not None
            self.steps += 1
            if failed:  # (a task finished in an earlier attempt of this step has neither)
                stuck = [t for t in tasks if t.error is not None or t.pause is not None]
                return (yield from self.stop(tasks, todo, stuck))
            # One pass over the step's tasks (this loop is the engine's hot path).
            writes: list[tuple[str, list[tuple[str, Any]]]] = []
            ran: list[str] = []
            gotos: list[str | Send] = []
            once: dict[str, Any] = {}
            for t in tasks if len(tasks) == 1 else write_order(tasks):
                ran.append(t.name)
                writes.append((t.name, t.writes))
                if t.goto:
                    gotos.extend(t.goto)
                if t.once:
                    once.update((k, r) for k, (s, r) in t.once.items() if s == "done")
            new_versions, appended = apply_writes(
                self.graph.channels, self.values, self.versions, writes
            )
            if self.graph.fleeting:
                expire(self.graph.fleeting, self.values, self.versions, new_versions)
            if once:
                merged = {**self.once_results, **once}
                self.internal[ONCE_CHANNEL] = merged
                self.versions[ONCE_CHANNEL] = new_versions[ONCE_CHANNEL] = (
                    self.versions.get(ONCE_CHANNEL, 0) + 1
                )
            if self.graph.async_routers:
                names = yield from self.next_frontier(ran, gotos, new_versions)
            else:  # the hot path
                names = self.route(ran, gotos, new_versions)
            paused = static_pause(
                self.graph.interrupt_before, self.graph.interrupt_after, names, ran
            )
            yield from self.save("loop", names, new_versions, appended, paused)
            if "updates" in self.modes and not self.concurrent:
                # A step of one task saves no pending writes: its update shows once the step is
                # saved, so a consumer that stops there leaves the step done.
                for t in todo:
                    yield Emit("updates", self.update_chunk(t))
            if "values" in self.modes:
                yield Emit("values", self.output())
            if paused:
                return (yield from self.static_stop())
        return self.output()

    def finish(self, t: Task) -> Loop[None]:
        """Task `t` of the step ended (it was not cancelled): reported as it ends, in the order
        the step's tasks end, as LangGraph does. Its return value becomes its writes (which may
        find it invalid: an error); in a step of two or more tasks, a finished task's writes
        are then saved as pending writes of the step's base checkpoint (so a crash before the
        step completes does not run it again; a step of one task saves only its checkpoint);
        then its `updates` chunk and its `tasks` result are streamed (the `updates` chunk of
        a task alone in its step comes once the step's checkpoint is saved). The step's writes
        still reach the reducers when it completes, in `write_order`."""
        t.ended = True
        if t.shown:  # its `@task` calls' `{task_name: result}`, held while it ran
            shown, t.shown = t.shown, None
            for chunk in shown:
                yield Emit("updates", chunk)
        if t.error is None and t.pause is None:
            self.to_writes(t)  # may find the result invalid: an error
            if t.pushed:  # push_message() wrote before the node returned
                t.writes[:0] = t.pushed
        ok = t.error is None and t.pause is None
        if ok and self.concurrent and self.saver is not None:
            yield PutWrites(self._head(), self.finished_writes(t), t.id)
            t.saved = True
        if ok and self.concurrent and "updates" in self.modes:
            yield Emit("updates", self.update_chunk(t))
        if self.trace:
            yield from trace(self, "tasks", trace_result(t), self.step + 1)

    def finished_writes(self, t: Task) -> list[tuple[str, Any]]:
        """The pending writes that record finished task `t`: what it wrote (messages named,
        `UntrackedValue` keys left out), its gotos, and that it is done."""
        name_messages(self.graph.channels, t.writes)
        kept = t.writes
        if self.graph.untracked:  # never stored, so a resumed run does not have them
            kept = [(c, v) for c, v in kept if c not in self.graph.untracked]
        return [*kept, *([(GOTO, t.goto)] if t.goto else []), (DONE, True)]

    def drop_start(self, new_versions: dict[str, int]) -> None:
        """The input the head held is applied (or an update replaced it): empty its channel."""
        del self.internal[START_CHANNEL]
        version = self.versions.get(START_CHANNEL, 0) + 1
        self.versions[START_CHANNEL] = new_versions[START_CHANNEL] = version

    def same_task(self, tup: CheckpointTuple) -> bool:
        """Whether this subgraph's head was made by the parent's task that runs it now (an
        earlier attempt of it), not by an earlier step or invocation of the parent: always,
        unless the subgraph keeps its state across them (`compile(checkpointer=True)`)."""
        return self.task_mark is None or tup.metadata.get("task") == self.task_mark

    def static_stop(self) -> Loop[Paused]:
        """Stop at an `interrupt_before`/`interrupt_after` pause; `updates` shows it as
        `{"__interrupt__": ()}` (no answer is asked for), so a consumer can tell it from the end.
        A subgraph's pause shows so in its parent's stream only (as in LangGraph)."""
        if "updates" in self.modes and self.parent is None:
            yield Emit("updates", {"__interrupt__": ()})
        return Paused((), self.head_config, self.output())

    def stop(self, tasks: list[Task], ran: list[Task], stuck: list[Task]) -> Loop[Paused]:
        """A step that did not complete: keep finished work, record pauses and errors.

        The step's writes are saved as pending writes of the head checkpoint (which keeps
        the state from before the step): a finished task's as it finished, in a step of
        several (`finish`), the others' now; only then are the pauses shown. As in LangGraph,
        what the finished tasks wrote shows in the `updates` stream (one chunk per task, as
        each finished), then each pause's `{"__interrupt__": (...)}` (in frontier order), in
        the last `values` chunk and in the state a pause returns; the step's writes are
        applied to the saved state once, when it completes.
        """
        saver = self.saver
        asked: dict[str, tuple[Interrupt, ...]] = {}
        for t in ran:
            writes: list[tuple[str, Any]]
            if t.pause is not None or isinstance(t.error, NodeInterrupt):
                writes = []
            elif t.cancelled:
                writes = []  # it did not finish: it runs again when the step is resumed
            elif isinstance(t.error, SideEffectUnrecordedError):
                # The database stayed down through the effect's record: saving the error
                # would fail too, and raise the database's error instead of this one.
                writes = []
            elif t.error is not None:
                writes = [(ERROR, repr(t.error))]  # LangGraph's StateTask.error text
            elif t.saved:
                continue  # saved as it finished (`finish`)
            else:
                writes = self.finished_writes(t)
            for pause in t.pause or ():
                if all(i.id != pause.id for i in t.recorded):
                    writes.append((INTERRUPT, pause))
            if t.pause:
                asked[t.id] = tuple(t.pause)
            if saver is not None and writes:
                yield PutWrites(self._head(), writes, t.id)
        if "updates" in self.modes and not self.concurrent:
            for t in ran:  # a task alone in its step that finished (the step timed out)
                if t.error is None and t.pause is None and not t.cancelled:
                    yield Emit("updates", self.update_chunk(t))
        errors = [
            t for t in stuck if t.error is not None and not isinstance(t.error, NodeInterrupt)
        ]
        node_interrupts = [t for t in stuck if isinstance(t.error, NodeInterrupt)]
        if errors or self.step_error is not None:
            err = errors[0].error if errors else self.step_error
            assert err is not None
            note = f"on thread {self.thread_id!r}"
            if errors:
                note = f"while running node {errors[0].name!r} {note}"
            if saver is not None:
                note += (
                    "; the last checkpoint is kept: fix the cause, then resume with "
                    "invoke(None, config)"
                )
            err.add_note(note)
            raise err
        if saver is None:
            raise CheckpointerRequiredError(
                f"node(s) {[t.name for t in stuck]} paused, but the graph was compiled without a "
                "checkpointer, so the pause cannot be saved: compile(checkpointer=InMemorySaver()) "
                "or SQLSaver(url)"
            )
        for t in node_interrupts:
            assert isinstance(t.error, NodeInterrupt)
            intr = Interrupt(
                t.error.value, interrupt_id(self.thread_id, self.ns, t.id, -1), t.name, -1, False
            )
            if all(i.id != intr.id for i in t.recorded):
                yield PutWrites(self._head(), [(INTERRUPT, intr)], t.id)
            asked[t.id] = (intr,)
        found = tuple(i for t in ran if t.id in asked for i in asked[t.id])
        before = self.output()
        after = self.finished_output(tasks)
        if "updates" in self.modes:
            yield from self.finished_updates(ran, asked)
            if not found:  # a subgraph's interrupt_before/after pause
                yield Emit("updates", {"__interrupt__": ()})
        if "values" in self.modes:
            # LangGraph's last `values` chunks of a pause: the state with each task's pause,
            # then the state with the finished tasks' writes, if they changed it.
            for t in ran:
                if t.id in asked:
                    shown = asked[t.id]
                    base = before if type(before) is dict else {}
                    yield Emit("values", {**base, "__interrupt__": shown})
            if after is not None:
                yield Emit("values", after)
        return Paused(found, self.head_config, before if after is None else after)

    def finished_updates(
        self, ran: list[Task], asked: dict[str, tuple[Interrupt, ...]]
    ) -> Loop[None]:
        """The `updates` chunks of an incomplete step's pauses, in frontier order, after the
        chunks of its finished tasks (each streamed as the task finished: `finish`)."""
        for t in ran:
            if t.id in asked:
                yield Emit("updates", {"__interrupt__": asked[t.id]})

    def finished_output(self, tasks: list[Task]) -> Any:
        """The run's output with the writes of the step's finished tasks applied, on a copy
        (the saved state stays the one from before the step); None if they wrote no output
        key, or if their writes cannot be merged (the step reports that when it completes)."""
        step = [
            (t.name, t.writes)
            for t in write_order(tasks)
            if t.writes and t.error is None and t.pause is None
        ]
        keys = self.graph.output_keys
        if not step or (keys is not None and not any(c in keys for _, w in step for c, _ in w)):
            return None
        values, versions = self.values, self.versions
        self.values, self.versions = dict(values), dict(versions)
        try:
            apply_writes(self.graph.channels, self.values, self.versions, step)
            return self.output()
        except InvalidUpdateError:
            return None
        finally:
            self.values, self.versions = values, versions

    def carry_over(
        self,
        source: str,
        new_versions: dict[str, int],
        appended: dict[str, int],
        *,
        start: bool = False,
    ) -> Loop[None]:
        """Save a checkpoint that keeps the frontier, its task ids and their pending writes;
        `start`: an input checkpoint, whose frontier begins with the `__start__` task."""
        if self.saver is None:
            return
        pending = self.pending
        self.step += 1
        checkpoint_id = new_checkpoint_id(checkpoint_seq(self.head_id) + 1)
        if start:
            self.frontier = [
                (START, task_id_of(self.thread_id, self.ns, checkpoint_id, START)),
                *self.frontier,
            ]
        elif START_CHANNEL in self.internal and all(n != START for n, _ in self.frontier):
            self.drop_start(new_versions)
        cp = self._checkpoint(
            checkpoint_id,
            # An update leaves a static pause in place; input given on resume lifts it.
            list(self.paused) if source == "update" else [],
            appended,
        )
        # A new thread has no parent: a config without checkpoint_id (not an empty id).
        parent = self.head_config or {
            "configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        }
        metadata: CheckpointMetadata = {
            "source": source,
            "step": self.step,
            "parents": self.parents,
        }
        if self.task_mark is not None:
            metadata["task"] = self.task_mark
        if self.noted:
            metadata.update(self.noted)  # type: ignore[typeddict-item]
        head: RunConfig = yield PutCheckpoint(parent, cp, metadata, new_versions)
        self.head_config = head
        self.head_id = cp["id"]
        if self.trace:
            payload = checkpoint_payload(self, self.saved_parent(parent), metadata)
            yield from trace(self, "checkpoints", payload, self.step)
        for task_id, writes in pending.items():
            yield PutWrites(head, writes, task_id)

    # ---- Command(goto=...) ----------------------------------------------------------


def finished_values(graph: CompiledGraph, tup: CheckpointTuple) -> dict[str, Any] | None:
    """The state keys of checkpoint `tup` with the writes of its step's finished tasks (its
    pending writes marked done) applied, as `get_state` shows a thread's head; None if no
    finished task wrote anything, or if those writes cannot be merged."""
    pending = tup.pending_writes
    if not pending or all(channel != DONE for _, channel, _ in pending):
        return None
    conf = tup.config["configurable"]
    run = Run(graph, tup.config, str(conf["thread_id"]), conf.get("checkpoint_ns") or "")
    try:
        run.restore(tup)
    except ResumeError:  # its frontier names a node the graph no longer has
        return None
    tasks = [run.make_task(name, task_id) for name, task_id in run.frontier if name != START]
    step = [(t.name, t.writes) for t in write_order(tasks) if t.done and t.writes]
    if not step:
        return None
    try:
        apply_writes(graph.channels, run.values, run.versions, step)
    except InvalidUpdateError:
        return None
    return run.values


class _Pairs(list):  # type: ignore[type-arg]
    """An update given as `(key, value)` pairs: iterates its keys, `items()` gives the pairs
    (so one key may be written twice, each through the reducer)."""

    def __iter__(self) -> Any:
        return (key for key, _ in super().__iter__())

    def items(self) -> list[tuple[str, Any]]:
        return list(super().__iter__())
