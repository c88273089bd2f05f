"""The superstep loop.

One invocation is a `Run`. Its logic is written once, as a generator that *describes* I/O
(load the head, save a checkpoint, save pending writes, run these tasks, emit a chunk: the
requests of `_io.py`) and never performs it; `drive_sync` and `drive_async` (`_drive.py`) perform
each request with the sync or async saver and task runner. So `invoke` and `ainvoke` share
every rule. A task (one node run of a step) is a `Task`, in `_task.py`.

This module holds the run's state (`Run`: the head's values, versions, frontier and pending
writes) and the step loop; the rest of a run is cut by job, each a module of functions over a
`Run`: its input (`_input.py`), the step's pure functions (`_algo.py`), the next frontier
(`_routing.py`), what a finished task's return becomes (`_results.py`), the checkpoint saved
(`_save.py`), and `update_state`/`fork` (`_updates.py`).

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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._algo import (
    apply_writes,
    expire,
    short,
    static_pause,
    write_order,
)
from ._context import interrupt_id
from ._input import GO_ON, take_input
from ._io import (
    LIVE_MODES,
    Emit,
    Loop,
    PutWrites,
    RunTasks,
    Unsaved,
)
from ._results import (
    finished_output,
    finished_updates,
    finished_writes,
    to_parent,
    update_chunk,
    update_of,
    writes_of,
)
from ._routing import next_frontier, route
from ._save import save
from ._schema import ROOT, updates_of
from ._shape import GraphShape
from ._stream import TRACE_MODES, MessagesStream, Sink, no_writer, trace
from ._stream import task_result as trace_result
from ._stream import task_start as trace_start
from ._task import SEND_TIMEOUTS_CHANNEL, SENDS_CHANNEL, Task
from ._timeout import enclosing_progress
from ._types import (
    START,
    Command,
    Interrupt,
    RunConfig,
    Send,
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
    CheckpointTuple,
    noted_metadata,
)
from .errors import (
    CheckpointerRequiredError,
    GraphRecursionError,
    InvalidUpdateError,
    NodeError,
    NodeInterrupt,
    RecordedNodeError,
    ResumeError,
    SideEffectUnrecordedError,
)

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver

ONCE_CHANNEL = "__once__"


class Paused:
    """The result of a run that stopped at a pause."""

    __slots__ = ("config", "interrupts", "values")

    def __init__(
        self, interrupts: tuple[Interrupt, ...], config: RunConfig | None, values: dict[str, Any]
    ) -> None:
        self.interrupts = interrupts
        self.config = config
        self.values = values


class Run:
    """The state of one invocation (or one `update_state`) on one thread."""

    enclosing: Sequence[tuple[str, str]] = ()
    """For an `update_state` on a subgraph's `checkpoint_ns`: each enclosing graph's namespace
    and the segment (`node:task_id`, or a `checkpointer=True` subgraph's `node`) its task runs
    the next level under, outermost first (`()` otherwise)."""

    def __init__(
        self,
        graph: GraphShape,
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
                to_parent(self, task, part)
                return
            one = writes_of(self, task, part)
            if one is None:
                return
            writes += one[0]
            gotos += one[1]
            split.append(len(one[0]))
        task.writes = writes
        task.split = split if len(split) > 1 else None
        if gotos:
            task.goto = gotos

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
        own schemas have, as LangGraph does (they are not in its input schema); in LangGraph's
        dialect it drops every key the graph does not take, as LangGraph reads only its input
        channels."""
        if self.graph.root:
            return [(ROOT, update)]
        if not isinstance(update, Mapping) and (typed := updates_of(update)) is not None:
            update = typed  # a pydantic instance with no field set is an empty input
        if input and self.graph.dialect == "langgraph" and isinstance(update, Mapping):
            taken = self.graph.channels if keys is None else keys
            update = {k: v for k, v in update.items() if k in taken}
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
                        update = {t.name: update_of(self, t), "__metadata__": {"cached": True}}
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
                names = yield from next_frontier(self, ran, gotos, new_versions)
            else:  # the hot path
                names = route(self, ran, gotos, new_versions)
            paused = static_pause(
                self.graph.interrupt_before, self.graph.interrupt_after, names, ran
            )
            yield from save(self, "loop", names, new_versions, appended, paused)
            if "updates" in self.modes and not self.concurrent:
                # A step of one task saves no pending writes: its update shows once the step is
                # saved, so a consumer that stops there leaves the step done.
                for t in todo:
                    yield Emit("updates", update_chunk(self, t))
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
            yield PutWrites(self._head(), finished_writes(self, t), t.id)
            t.saved = True
        if ok and self.concurrent and "updates" in self.modes:
            yield Emit("updates", update_chunk(self, t))
        if self.trace:
            yield from trace(self, "tasks", trace_result(t), self.step + 1)

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
                writes = finished_writes(self, t)
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
                    yield Emit("updates", update_chunk(self, t))
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
        if saver is None and self.graph.dialect != "langgraph":
            # (LangGraph's dialect returns the pause unsaved, as LangGraph: it cannot be resumed.)
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
            if saver is not None and all(i.id != intr.id for i in t.recorded):
                yield PutWrites(self._head(), [(INTERRUPT, intr)], t.id)
            asked[t.id] = (intr,)
        found = tuple(i for t in ran if t.id in asked for i in asked[t.id])
        before = self.output()
        after = finished_output(self, tasks)
        if "updates" in self.modes:
            yield from finished_updates(self, ran, asked)
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

    # ---- Command(goto=...) ----------------------------------------------------------


def finished_values(graph: GraphShape, tup: CheckpointTuple) -> dict[str, Any] | None:
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
