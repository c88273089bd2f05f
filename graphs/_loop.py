"""The superstep loop: `execute` (a run's input, then its steps), `run_steps`, and what a step
does as its tasks finish (`finish`) or when one paused or failed (`stop`).

One invocation is a `Run` (`_run.py`, its state). Its logic is written once, as a generator that
*describes* I/O (load the head, save a checkpoint, save pending writes, run these tasks, emit a
chunk: the requests of `_io.py`) and never performs it; `drive_sync` and `drive_async`
(`_drive.py`) perform each request with the sync or async saver and task runner. So `invoke` and
`ainvoke` share every rule. Running a task (one node run of a step) is `_task.py`'s; a task alone
in its step that the sync driver would run right where it stands, the loop runs itself with the
function that driver hands it (`Run.run_alone`), and so it puts a checkpoint the driver would
put as it comes (`Run.put_now`), sparing the requests on the engine's hot path.

The loop is functions over a `Run`, as the rest of a run is, each cut by job: its input
(`_input.py`), the step's pure functions (`_algo.py`), the next frontier (`_routing.py`), what a
finished task's return becomes (`_results.py`), the checkpoint saved (`_save.py`), and
`update_state`/`fork` (`_updates.py`).

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

from typing import Any

from ._algo import apply_writes, expire, static_pause, write_order
from ._context import interrupt_id
from ._input import GO_ON, static_stop, take_input
from ._io import (
    Emit,
    Loop,
    PutWrites,
    RunTasks,
)
from ._results import (
    finished_output,
    finished_updates,
    finished_writes,
    to_writes,
    update_chunk,
    update_of,
)
from ._routing import next_frontier, route
from ._run import ONCE_CHANNEL, Paused, Run, Task
from ._save import move_on, save
from ._schema import ROOT
from ._shape import GraphShape
from ._stream import task_result as trace_result
from ._stream import task_start as trace_start
from ._stream import trace
from ._types import (
    START,
    Interrupt,
    Send,
)
from .checkpoint.base import (
    DONE,
    ERROR,
    INTERRUPT,
    CheckpointTuple,
)
from .errors import (
    CheckpointerRequiredError,
    GraphRecursionError,
    InvalidUpdateError,
    NodeInterrupt,
    ResumeError,
    SideEffectUnrecordedError,
)


def execute(run: Run, input: Any) -> Loop[Any]:
    """One invocation: take the input (`take_input`), then run steps until none is left, or
    one pauses or fails (`run_steps`)."""
    stopped = yield from take_input(run, input)
    if stopped is not GO_ON:
        return stopped
    return (yield from run_steps(run))


def run_steps(run: Run) -> Loop[Any]:
    """Run the frontier's tasks step after step: each step's writes reach the reducers when
    all its tasks finished, the edges pick the next frontier, one checkpoint is saved; a
    step where a task paused or failed keeps what the finished ones wrote (`stop`)."""
    run.steps = 0
    while run.frontier:
        if run.steps >= run.limit:
            raise GraphRecursionError(run.limit, run.steps, run.thread_id)
        if len(run.frontier) == 1:  # the hot path: one task
            name, task_id = run.frontier[0]
            t = run.make_task(name, task_id)
            tasks = [t]
            todo = [] if t.done else [t]
        else:
            tasks = [run.make_task(name, task_id) for name, task_id in run.frontier]
            todo = [t for t in tasks if not t.done]
        if len(todo) < len(tasks) and "updates" in run.modes:
            # As LangGraph: what the tasks that finished in an earlier attempt of this step
            # wrote shows again, marked as not run now.
            for t in tasks:
                if t.done:
                    update = {t.name: update_of(run, t), "__metadata__": {"cached": True}}
                    yield Emit("updates", update)
        if run.trace:
            for t in todo:
                payload = trace_start(t, t.input())
                yield from trace(run, "tasks", payload, run.step + 1)
        run.concurrent = len(todo) > 1
        if run.run_alone is not None and len(todo) == 1:
            run.run_alone(todo[0])  # the sync driver's hot path (as `RunTasks` runs it there)
        else:
            yield RunTasks(todo)  # the driver reports each task of two or more as it ends
        failed = run.step_error is not None
        for t in todo:
            if t.cancelled:  # a sibling failed, or the step timed out, before it finished
                failed = True
                if run.trace:
                    yield from trace(run, "tasks", trace_result(t), run.step + 1)
                continue
            if t.ended:
                pass
            elif run.concurrent or t.shown or run.trace:
                yield from finish(run, t)
            else:  # the hot path: a task alone in its step, nothing to stream as it ends
                settle(run, t)
            failed = failed or t.error is not None or t.pause is not None
        run.steps += 1
        if failed:  # (a task finished in an earlier attempt of this step has neither)
            stuck = [t for t in tasks if t.error is not None or t.pause is not None]
            return (yield from stop(run, tasks, todo, stuck))
        # One pass over the step's tasks (this loop is the engine's hot path).
        ran: list[str]
        writes: list[tuple[str, list[tuple[str, Any]]]]
        gotos: list[str | Send]
        once: dict[str, Any] | None  # the `once()` effects done in the step
        if len(tasks) == 1:  # the hot path
            t = tasks[0]
            ran, writes, gotos = [t.name], [(t.name, t.writes)], [*t.goto]
            once = {k: r for k, (s, r) in t.once.items() if s == "done"} if t.once else None
        else:
            ran, writes, gotos, once = [], [], [], {}
            for t in write_order(tasks):
                ran.append(t.name)
                writes.append((t.name, t.writes))
                gotos.extend(t.goto)
                once.update((k, r) for k, (s, r) in t.once.items() if s == "done")
        new_versions, appended = apply_writes(run.graph.channels, run.values, run.versions, writes)
        if run.graph.fleeting:
            expire(run.graph.fleeting, run.values, run.versions, new_versions)
        if once:
            merged = {**run.once_results, **once}
            run.internal[ONCE_CHANNEL] = merged
            run.versions[ONCE_CHANNEL] = new_versions[ONCE_CHANNEL] = (
                run.versions.get(ONCE_CHANNEL, 0) + 1
            )
        if run.graph.async_routers:
            names = yield from next_frontier(run, ran, gotos, new_versions)
        else:  # the hot path
            names = route(run, ran, gotos, new_versions)
        g = run.graph
        paused = (
            static_pause(g.interrupt_before, g.interrupt_after, names, ran)
            if g.interrupt_before or g.interrupt_after
            else []
        )
        if run.saver is None:
            move_on(run, names, new_versions, paused)  # (no generator: the hot path of no saver)
        else:
            yield from save(run, "loop", names, new_versions, appended, paused)
        if "updates" in run.modes and not run.concurrent:
            # A step of one task saves no pending writes: its update shows once the step is
            # saved, so a consumer that stops there leaves the step done.
            for t in todo:
                yield Emit("updates", update_chunk(run, t))
        if "values" in run.modes and (
            run.graph.dialect != "langgraph" or shows_state(run, new_versions)
        ):
            yield Emit("values", run.output())
        if paused:
            return (yield from static_stop(run))
    return run.output()


def shows_state(run: Run, new_versions: dict[str, int]) -> bool:
    """LangGraph's rule for a step's `values` chunk: the step wrote a key the output shows (a
    step whose nodes all returned None, or wrote only private keys, shows none). Seed 000's
    dialect shows the state after every step, as it documents."""
    if run.graph.root:
        return ROOT in new_versions
    keys: Any = run.graph.output_keys
    if keys is None:
        keys = run.graph.channels
    return any(k in keys for k in new_versions)


def finish(run: Run, t: Task) -> Loop[None]:
    """Task `t` of the step ended (it was not cancelled): reported as it ends, in the order
    the step's tasks end, as LangGraph does. Its return value becomes its writes (which may
    find it invalid: an error); in a step of two or more tasks, a finished task's writes
    are then saved as pending writes of the step's base checkpoint (so a crash before the
    step completes does not run it again; a step of one task saves only its checkpoint);
    then its `updates` chunk and its `tasks` result are streamed (the `updates` chunk of
    a task alone in its step comes once the step's checkpoint is saved). The step's writes
    still reach the reducers when it completes, in `write_order`."""
    if t.shown:  # its `@task` calls' `{task_name: result}`, held while it ran
        shown, t.shown = t.shown, None
        for chunk in shown:
            yield Emit("updates", chunk)
    settle(run, t)
    ok = t.error is None and t.pause is None
    if ok and run.concurrent and run.saver is not None:
        yield PutWrites(run.head(), finished_writes(run, t), t.id)
        t.saved = True
    if ok and run.concurrent and "updates" in run.modes:
        yield Emit("updates", update_chunk(run, t))
    if run.trace:
        yield from trace(run, "tasks", trace_result(t), run.step + 1)


def settle(run: Run, t: Task) -> None:
    """What `finish` makes of an ended task before anything is streamed or saved: its
    return value becomes its writes (which may find it invalid: an error), after what
    `push_message()` wrote."""
    t.ended = True
    if t.error is None and t.pause is None:
        to_writes(run, t)  # may find the result invalid: an error
        if t.pushed:  # push_message() wrote before the node returned
            t.writes[:0] = t.pushed


def stop(run: Run, tasks: list[Task], ran: list[Task], stuck: list[Task]) -> Loop[Paused]:
    """A step that did not complete: keep finished work, record pauses and errors.

    The step's writes are saved as pending writes of the head checkpoint (which keeps
    the state from before the step): a finished task's as it finished, in a step of
    several (`finish`), the others' now; only then are the pauses shown. As in LangGraph,
    what the finished tasks wrote shows in the `updates` stream (one chunk per task, as
    each finished), then each pause's `{"__interrupt__": (...)}` (in frontier order), in
    the last `values` chunk and in the state a pause returns; the step's writes are
    applied to the saved state once, when it completes.
    """
    saver = run.saver
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
            writes = finished_writes(run, t)
        for pause in t.pause or ():
            if all(i.id != pause.id for i in t.recorded):
                writes.append((INTERRUPT, pause))
        if t.pause:
            asked[t.id] = tuple(t.pause)
        if saver is not None and writes:
            yield PutWrites(run.head(), writes, t.id)
    if "updates" in run.modes and not run.concurrent:
        for t in ran:  # a task alone in its step that finished (the step timed out)
            if t.error is None and t.pause is None and not t.cancelled:
                yield Emit("updates", update_chunk(run, t))
    errors = [t for t in stuck if t.error is not None and not isinstance(t.error, NodeInterrupt)]
    node_interrupts = [t for t in stuck if isinstance(t.error, NodeInterrupt)]
    if errors or run.step_error is not None:
        err = errors[0].error if errors else run.step_error
        assert err is not None
        note = f"on thread {run.thread_id!r}"
        if errors:
            note = f"while running node {errors[0].name!r} {note}"
        if saver is not None:
            note += (
                "; the last checkpoint is kept: fix the cause, then resume with "
                "invoke(None, config)"
            )
        err.add_note(note)
        raise err
    if saver is None and run.graph.dialect != "langgraph":
        # (LangGraph's dialect returns the pause unsaved, as LangGraph: it cannot be resumed.)
        raise CheckpointerRequiredError(
            f"node(s) {[t.name for t in stuck]} paused, but the graph was compiled without a "
            "checkpointer, so the pause cannot be saved: compile(checkpointer=InMemorySaver()) "
            "or SQLSaver(url)"
        )
    for t in node_interrupts:
        assert isinstance(t.error, NodeInterrupt)
        intr = Interrupt(
            t.error.value, interrupt_id(run.thread_id, run.ns, t.id, -1), t.name, -1, False
        )
        if saver is not None and all(i.id != intr.id for i in t.recorded):
            yield PutWrites(run.head(), [(INTERRUPT, intr)], t.id)
        asked[t.id] = (intr,)
    found = tuple(i for t in ran if t.id in asked for i in asked[t.id])
    before = run.output()
    after = finished_output(run, tasks)
    if "updates" in run.modes:
        yield from finished_updates(run, ran, asked)
        if not found:  # a subgraph's interrupt_before/after pause
            yield Emit("updates", {"__interrupt__": ()})
    if "values" in run.modes:
        # LangGraph's last `values` chunks of a pause: the state with each task's pause,
        # then the state with the finished tasks' writes, if they changed it.
        for t in ran:
            if t.id in asked:
                shown = asked[t.id]
                base = before if type(before) is dict else {}
                yield Emit("values", {**base, "__interrupt__": shown})
        if after is not None:
            yield Emit("values", after)
    return Paused(found, run.head_config, before if after is None else after)


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
