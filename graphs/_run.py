"""A run's state and its tasks' data: `Run` (one invocation, or one `update_state`, on one thread:
the head's values, versions, frontier and pending writes) and `Task` (one node run of a step: its
node, its input, its path, its config through its run, and its writes), with the pause a run
stops at (`Paused`).

Plain data with the readings of it that need nothing else: the run's functions are the modules
above it (its input `_input.py`, the step's pure functions `_algo.py`, the next frontier
`_routing.py`, a finished task's writes `_results.py`, the checkpoint saved `_save.py`, the step
loop `_loop.py`), and running a task is `_task.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ._internal._constants import CONFIG_KEY_NODE_FINISHED
from ._io import LIVE_MODES, TRACE_MODES, Emit, Sink, Unsaved
from ._schema import ROOT, updates_of
from ._shape import GraphShape
from ._specs import NodeSpec
from ._timeout import enclosing_progress
from ._types import PULL, PUSH, START, Interrupt, RunConfig, Send, TimeoutPolicy, no_writer
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
    InvalidUpdateError,
    NodeError,
    NodeInterrupt,
    RecordedNodeError,
    ResumeError,
    short,
)

if TYPE_CHECKING:
    from .checkpoint.base import BaseCheckpointSaver

ONCE_CHANNEL = "__once__"
"""`{key: result}` of the `once()` effects done on the thread."""

SENDS_CHANNEL = "__sends__"
"""`{task_id: arg}` of the frontier's `Send` tasks: what each runs on instead of the state."""

SEND_TIMEOUTS_CHANNEL = "__send_timeouts__"
"""`{task_id: TimeoutPolicy}` of the frontier's `Send` tasks sent with `Send(timeout=)` (saved
only while there is one): each times its task in place of its node's `timeout=`."""

STATE: Any = object()
"""`Task.arg` of a task that runs on the graph's state (not a `Send`)."""


def task_paths(
    frontier: Sequence[Sequence[str]], sends: Mapping[str, Any]
) -> list[tuple[str | int | bool, ...]]:
    """The path of each `(name, task_id)` of a frontier, as LangGraph's `PregelTask.path` and
    `langgraph_path` give it: `(PULL, name)`, or `(PUSH, i, False)` for its i-th `Send` (a
    task whose id is in `sends`)."""
    paths: list[tuple[str | int | bool, ...]] = []
    pushed = 0
    for name, task_id in frontier:
        if task_id in sends:
            paths.append((PUSH, pushed, False))
            pushed += 1
        else:
            paths.append((PULL, name))
    return paths


def refreshed_by_events(limit: TimeoutPolicy | None) -> bool:
    """A task timed by `limit` runs under an `idle_timeout` that langchain_core callback events
    refresh (`Task.watched`, for a `limit` read already)."""
    return limit is not None and limit.idle_timeout is not None and limit.refresh_on == "auto"


class MessagesSink(Protocol):
    """The `messages` stream of a run (`_stream.MessagesStream`), which its tasks report to."""

    seen: set[str]
    anonymous: bool

    @property
    def base(self) -> dict[str, Any]: ...

    def emit(self, message: Any, metadata: dict[str, Any], *, dedupe: bool) -> None: ...

    def task_started(self, task: Task, state: Any) -> Any: ...

    def task_finished(self, task: Task) -> None: ...


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
        self.branch_head: str | None = None
        """LangGraph's time travel: the thread's head that the run's first checkpoint is
        written over, branching from the past checkpoint the run went on from (`_save.branch`);
        None once that checkpoint is saved, and for every other run."""
        self.replay_point: int | None = None
        """LangGraph's time travel, on the run of the graph itself: the sequence number of the
        checkpoint it travelled to. A `compile(checkpointer=True)` subgraph's first run under
        it goes on from the state that subgraph had then (`_input.rewind_subgraph`)."""
        self.rewound: set[str] = set()
        """The namespaces of the subgraphs rewound so far under `replay_point`: each once."""
        self.tip_seq = -1
        """The sequence number of the thread's newest checkpoint when it is not the head the run
        goes on from (a branch): the run's checkpoint ids come after it, so the branch sorts
        last and is the thread's head."""
        self.step = -1
        self.steps = 0
        """How many supersteps this invocation has run (what `RemainingSteps` counts from)."""
        self.paused: list[str] = []
        """The static pause (`interrupt_before/after` nodes) the head checkpoint is at."""
        self.context = context
        """The run's `context=` (what `Runtime.context` holds)."""
        self.sink: Sink | None = None
        """Where node code's `custom` and `messages` chunks go; set by the driver."""
        self.messages: MessagesSink | None = None
        """Its `messages` stream, when it streams that mode (`_stream.open_messages`)."""
        self.writer = self.write_custom if "custom" in modes else no_writer
        """What `get_stream_writer()` returns to node code of this run."""
        self.trace = not modes.isdisjoint(TRACE_MODES)
        """`tasks`, `checkpoints` or `debug` is streamed."""
        self.noted = noted_metadata(config)
        """What the config adds to each checkpoint's metadata (`noted_metadata`)."""
        hook: Any = (config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
        self.node_finished: Callable[[str], Any] | None = (
            hook if hook is not None or parent is None else self.top.node_finished
        )
        """The config's `configurable[CONFIG_KEY_NODE_FINISHED]`, called with a node's name
        once it finished (`_task._report_finished`); a subgraph's run takes its top run's
        when its own config has none."""
        self.chain: Any = None
        """Its langchain_core chain run, when it reports to callbacks (`_events.py`)."""
        self.run_alone: Callable[[Task], None] | None = None
        """Set by the sync driver (`_drive.py`) when it would run a task alone in its step
        right where it stands (`_task.run_sync`): the loop then runs such a task itself,
        without yielding `RunTasks`."""
        self.put_now: Callable[..., RunConfig] | None = None
        """Set by the sync driver (`_drive.py`) when it would put a checkpoint right where it
        stands (the saver's `put`: no batch holds it, nothing waits unsaved): the loop's `save`
        then puts it itself, without yielding `PutCheckpoint`."""
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

    def head(self) -> RunConfig:
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
        """The task of node `name` with id `task_id` in this step, with what the head's pending
        writes hold of it (its answers, its `once()` records, its writes if it finished)."""
        task = Task(self, self.graph.nodes[name], task_id)
        if SENDS_CHANNEL in self.internal:
            sends = self.internal[SENDS_CHANNEL]
            if task_id in sends:
                task.arg = sends[task_id]
                timeouts = self.internal.get(SEND_TIMEOUTS_CHANNEL)
                if timeouts:
                    task.send_timeout = timeouts.get(task_id)
        pending = self.pending.get(task_id)
        if not pending:  # the hot path: nothing recorded of it yet
            return task
        answered: dict[str, Any] = {}
        for channel, value in pending:
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

    def writes_returned(self, result: Any) -> list[tuple[str, Any]] | None:
        """The writes a node's return value makes where this kind of run reads it its own way
        (an `@entrypoint`'s `entrypoint.final`); None: by the graph's rules (`to_writes`)."""
        return None

    def same_task(self, tup: CheckpointTuple) -> bool:
        """Whether this subgraph's head was made by the parent's task that runs it now (an
        earlier attempt of it), not by an earlier step or invocation of the parent: always,
        unless the subgraph keeps its state across them (`compile(checkpointer=True)`)."""
        return self.task_mark is None or tup.metadata.get("task") == self.task_mark


class Task:
    """One node to run in this step, with what it needs to replay deterministically."""

    __slots__ = (
        "__weakref__",
        "answers",
        "arg",
        "attempt",
        "cached",
        "call_results",
        "calls",
        "cancelled",
        "clock",
        "done",
        "ended",
        "error",
        "failure",
        "goto",
        "id",
        "interrupt_count",
        "kept_ns",
        "name",
        "node_error",
        "once",
        "pause",
        "pushed",
        "recorded",
        "result",
        "run",
        "saved",
        "scope_id",
        "send_timeout",
        "shown",
        "spec",
        "split",
        "subgraphs",
        "traced",
        "writes",
    )

    def __init__(self, run: Run, spec: NodeSpec, task_id: str) -> None:
        self.run = run
        self.spec = spec
        self.name = spec.name
        self.id = task_id
        self.answers: dict[str, Any] = {}
        """Answers to its `interrupt()` calls, by interrupt id."""
        self.arg: Any = STATE
        """What the node runs on: the state (`STATE`), or a `Send`'s arg."""
        self.send_timeout: TimeoutPolicy | None = None
        """Its `Send`'s `timeout=`, which times it in place of the node's own."""
        self.interrupt_count = 0
        self.attempt = 1
        """Which attempt of the node runs (1 for the first; more under a `RetryPolicy`)."""
        self.cached = False
        """Its result came from the node's `CachePolicy` cache: the node did not run."""
        self.scope_id = task_id
        """What its interrupt ids derive from: the task id, or the id of a `scope()` within it."""
        self.once: dict[str, tuple[str, Any]] = {}
        self.recorded: list[Interrupt] = []
        self.done = False
        self.ended = False
        """This attempt of it ended and was reported (`_loop.finish`)."""
        self.saved = False
        """Its writes were saved as pending writes as it finished (a step of several tasks)."""
        self.writes: list[tuple[str, Any]] = []
        self.split: list[int] | None = None
        """For a list return, how many of `writes` each item gave (the `updates` stream shows
        one update per item, as LangGraph)."""
        self.goto: list[str | Send] = []
        self.result: Any = None
        self.pause: tuple[Interrupt, ...] | None = None
        """The pauses it stopped at on its last attempt (usually one)."""
        self.error: BaseException | None = None
        self.failure: NodeError | None = None
        """The node failed (in this attempt of the step, or one saved earlier) and its error
        handler runs in its place: then `spec` and `name` are the handler's."""
        self.node_error: NodeError | None = None
        """What an error handler running now is handed as its `error` parameter."""
        self.cancelled = False
        self.clock: Any = None
        """The watch of an attempt run under a `timeout=` (`graphs._timeout.Clock`)."""
        self.shown: list[Any] | None = None
        """`{task_name: result}` of the `@task` calls it made that finished, for the `updates`
        stream, held until it ends when the step's tasks do not run beside the consumer."""
        """It was cancelled before it finished, because a sibling failed or the step timed out
        (`_drive.run_step_async`): it keeps no writes and runs again when the step is resumed."""
        self.subgraphs = 0
        """How many subgraph runs this attempt started (the n-th gets namespace suffix `|n`)."""
        self.kept_ns = False
        """This attempt ran a `checkpointer=True` subgraph (its namespace is the node's name)."""
        self.pushed: list[tuple[str, Any]] | None = None
        """Writes `push_message()` made as the node ran, before those of its return value."""
        self.calls: Any = None
        """This attempt's `@task` calls (`graphs.func`), made on its first call."""
        self.call_results: dict[str, Any] | None = None
        """Results of `@task` calls that finished, by call key (saved, or of an earlier attempt)."""
        self.traced: Any = None
        """Its langchain_core chain run, when the run reports to callbacks (`_events.py`)."""

    def writer(self) -> Any:
        """What `get_stream_writer()` gives its code: the run's writer (under a `timeout=`,
        each write counting as progress)."""
        clock = self.clock
        return self.run.writer if clock is None else clock.writer(self.run.writer)

    @property
    def home(self) -> Task:
        """The task whose pending writes hold its `once()` records: itself (a `@task` call's
        are its node's task's, `graphs.func`)."""
        return self

    @property
    def failed(self) -> bool:
        """It ended with an error (a `NodeInterrupt` is a pause, not a failure)."""
        return self.error is not None and not isinstance(self.error, NodeInterrupt)

    @property
    def cancellable(self) -> bool:
        """It runs async code under `ainvoke`, which a failing sibling can cancel (a sync
        node runs in a thread, which nothing can stop)."""
        return self.spec.is_async or self.spec.afn is not None

    @property
    def is_send(self) -> bool:
        """It runs on a `Send`'s arg, not on the state."""
        return self.arg is not STATE

    @property
    def path(self) -> tuple[str | int | bool, ...]:
        """Its path, LangGraph's: `(PULL, name)`, or `(PUSH, i, False)` for the frontier's
        i-th `Send`."""
        if not self.is_send:
            return (PULL, self.name)
        sends = self.run.internal.get(SENDS_CHANNEL) or {}
        frontier = self.run.frontier
        ids = [task_id for _, task_id in frontier]
        at = ids.index(self.id) if self.id in ids else len(ids)
        return (PUSH, sum(1 for t in ids[:at] if t in sends), False)

    # ---- running --------------------------------------------------------------------

    @property
    def limit(self) -> TimeoutPolicy | None:
        """The `timeout=` its attempts run under: its `Send`'s, else its node's (an error
        handler running in its place has its own, as LangGraph's)."""
        sent = self.send_timeout
        return self.spec.timeout if sent is None or self.failure is not None else sent

    @property
    def watched(self) -> bool:
        """It runs under an `idle_timeout` that langchain_core callback events refresh."""
        return refreshed_by_events(self.limit)

    def input(self) -> Any:
        """What the node runs on: a copy of the state (an instance of a dataclass or pydantic
        state schema), or its `Send`'s arg."""
        if self.arg is not STATE:
            return self.arg
        run = self.run
        values = run.values
        state = dict(values) if len(values) == run.width else run.view()
        managed = run.graph.managed
        if managed:
            left = run.limit - run.steps - 1  # the steps allowed after this one
            for key, kind in managed.items():
                state[key] = kind.get(left)
        reads = self.spec.reads
        if reads is not None:
            return reads(state)
        coerce = run.graph.coerce
        return state if coerce is None else coerce(state)
