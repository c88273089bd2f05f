"""A run's input, before its steps: what `invoke(input)` does on a new, a paused or a finished
thread, and the pieces of it `update_state` shares (an input checkpoint, answers to pauses,
a `Command`'s gotos).

A new run saves an input checkpoint (`source="input"`) whose `__start__` task applies the input
(`save_input`, `start_step`), as LangGraph does. On a paused or failed thread, a `Command`'s
answers are recorded before anything runs (`answer`), its update and gotos applied in a
checkpoint of their own; new input is applied before the frontier runs in seed 000's dialect,
and starts a new run in LangGraph's (`drop_frontier`: the tasks the thread waited on never run).
`invoke(None, config)` given a past checkpoint replays from it in LangGraph's dialect (`replay`,
a branch inside the thread) and is refused in seed 000's (`refused_replay`); a subgraph that keeps
its state goes back with it (`rewind_subgraph`).

Generators over a `Run` (`_run.py`); the loop calls `take_input` first in `execute`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._algo import apply_writes, name_messages, static_pause, task_id_of
from ._io import Emit, FindCheckpoint, GetCheckpoint, GetHead, Loop, PutWrites
from ._routing import next_frontier
from ._run import ONCE_CHANNEL, SEND_TIMEOUTS_CHANNEL, SENDS_CHANNEL, Paused
from ._save import (
    START_CHANNEL,
    branch,
    carry_over,
    clear_sends,
    frontier_names,
    save,
    set_send_timeouts,
)
from ._schema import ROOT
from ._types import END, START, Command, RunConfig, Send
from .checkpoint.base import DONE, RESUME, CheckpointTuple, checkpoint_config, checkpoint_seq
from .errors import AmbiguousResumeError, EmptyInputError, InvalidUpdateError, ResumeError

if TYPE_CHECKING:
    from ._run import Run

__all__ = [
    "GO_ON",
    "add_to_frontier",
    "answer",
    "drop_frontier",
    "refused_replay",
    "replay",
    "save_input",
    "take_input",
    "update_gotos",
]

GO_ON: Any = object()
"""What `take_input` returns when the run's steps are to run next."""
_ID_LIKE = re.compile(r"^[0-9a-f]{32}$")


def take_input(run: Run, input: Any) -> Loop[Any]:
    """What a run does with its input before its steps: load the thread's head, then start
    a new run (an input checkpoint whose `__start__` task applies it), or resume a paused or
    failed one (answers recorded, a `Command`'s update and gotos applied, or, in seed 000's
    dialect, new input applied before the frontier runs; in LangGraph's, new input starts a
    new run and the tasks the thread waited on are dropped). Returns `GO_ON` when the steps
    are to run next, else what the run returns (its output, or a static pause)."""
    tup = (yield GetHead()) if run.saver is not None else None
    branched = False
    if tup is not None:
        run.restore(tup)
        if run.requested_id is not None:
            branched = yield from go_to_requested(run, tup, input)
    if tup is not None and run.task_mark is not None and rewinds(run):
        yield from rewind_subgraph(run, tup)
    elif run.parent is not None and tup is not None and run.same_task(tup):
        # The parent's task ran this subgraph on an earlier attempt (it paused or failed):
        # go on from where it stopped, and a finished subgraph is not run again.
        if not run.frontier:
            return run.output()
        yield from inherit_answers(run, run.parent.answers)
        input = None
    started = False
    if run.frontier and run.frontier[0][0] == START and not branched:
        # (New input given with a past input checkpoint replaces the input it held.)
        # The head is an input checkpoint whose `__start__` task did not run (the process
        # stopped after saving it, or `update_state(as_node="__input__")` wrote it): apply
        # its input first, once, as the step it is.
        started = True
        if (yield from start_step(run)) and input is None:
            return (yield from static_stop(run))
    is_command = isinstance(input, Command)
    if is_command and not (input.has_resume or input.update is not None or input.goto):
        raise EmptyInputError(
            f"the input Command() is empty, so there is nothing to do on thread "
            f"{run.thread_id!r}: give it resume=, update= or goto=, or pass None to go on"
        )
    goto: list[str | Send] = []
    if is_command and input.goto:
        if tup is None:
            raise InvalidUpdateError(
                f"Command(goto=...) as input goes on a thread's saved state, and thread "
                f"{run.thread_id!r} has none (or the graph has no checkpointer): start it "
                "with an input"
            )
        goto = update_gotos(run, "the input", input.goto)
    update = input.update if is_command else input
    restarted: dict[str, int] = {}
    if run.frontier and input is not None and not is_command and run.graph.dialect == "langgraph":
        restarted = drop_frontier(run)

    if not run.frontier and not goto:
        if input is None and tup is not None and run.graph.dialect == "langgraph":
            return run.output()  # as LangGraph: a finished thread runs nothing, shows its state
        if input is None or (is_command and input.has_resume):
            raise nothing_to_resume(run, tup)
        if update is None:
            raise EmptyInputError("the input is empty: pass a dict of state keys")
        # A new run: the input goes through the reducers, START's edges pick the entry.
        keys = None if is_command else run.graph.input_keys
        given = run.check_input(update, "the input", keys, input=not is_command)
        if run.saver is not None:
            # As LangGraph: an input checkpoint, whose `__start__` task then applies it.
            yield from save_input(run, given, restarted)
            if (yield from start_step(run)):
                return (yield from static_stop(run))
        else:
            # Nothing is saved without a saver: the input's step (-1) is not a checkpoint.
            new_versions, appended = apply_writes(
                run.graph.channels, run.values, run.versions, [(START, given)]
            )
            names = yield from next_frontier(run, [START], [], new_versions)
            paused = static_pause(run.graph.interrupt_before, run.graph.interrupt_after, names, [])
            yield from save(run, "loop", names, new_versions, appended, paused)
            yield from emit_input(run, new_versions)
            if paused:
                return (yield from static_stop(run))
    elif not is_command and input is not None:
        # Input on a paused or failed thread: an input checkpoint, as for a new run; its
        # `__start__` task applies it, and the frontier (its task ids, its pending writes,
        # the answers given) is kept, a static pause lifted.
        given = run.check_input(update, "the input", run.graph.input_keys, input=True)
        yield from save_input(run, given)
        yield from start_step(run, show=False)
        if "values" in run.modes:  # as LangGraph: a resumed run shows the state it resumes
            yield Emit("values", run.output())
    else:
        if is_command and input.has_resume:
            yield from answer(run, input.resume)
        if update is not None:
            # `Command(update=...)` is applied before the frontier runs, in a checkpoint of
            # its own (`source="input"`, no `__start__` task); it may write any state key,
            # as in LangGraph.
            new_versions, appended = apply_writes(
                run.graph.channels,
                run.values,
                run.versions,
                [(START, run.check_input(update, "the input", None))],
            )
            if goto:
                add_to_frontier(run, goto, new_versions)
            yield from carry_over(run, "input", new_versions, appended)
        elif goto:
            new_versions = {}
            add_to_frontier(run, goto, new_versions)
            yield from carry_over(run, "input", new_versions, {})
        if "values" in run.modes and not started:
            # As LangGraph: a resumed run shows the state it resumes.
            yield Emit("values", run.output())
    return GO_ON


def go_to_requested(run: Run, head: CheckpointTuple, input: Any) -> Loop[bool]:
    """A run given a `checkpoint_id`, the thread's head `head` restored: a past checkpoint is
    replayed (`input` None) or run from with new input in LangGraph's dialect, and refused
    otherwise. As LangGraph, a run given a checkpoint, the head too, travels to it unless it
    answers a pause: subgraphs that keep their state go back to theirs of then
    (`Run.replay_point`). Returns whether new input branches there."""
    langgraphs = run.graph.dialect == "langgraph" and run.parent is None
    if run.requested_id == run.head_id:
        if langgraphs and not (isinstance(input, Command) and input.has_resume):
            run.replay_point = travelled_to(head)
        return False
    if not langgraphs:
        raise refused_replay(run, input)
    if input is None:
        yield from replay(run, head)
        return False
    if isinstance(input, Command):
        raise refused_replay(run, input)
    # As LangGraph: new input given with a past checkpoint is a new run from there,
    # branching the thread's history as a replay does.
    yield from branch_from(run, head)
    return True


def replay(run: Run, head: CheckpointTuple) -> Loop[None]:
    """LangGraph's dialect: `invoke(None, config)` whose `checkpoint_id` is a past checkpoint
    of the thread replays from it, inside the thread (`_save.branch`): a checkpoint of it
    (`source="fork"`, as LangGraph's) is the branch point and the thread's new head, and the
    tasks it waited on run again from there under new ids (a static pause there is lifted, as
    on any resume; a `once()` effect the thread recorded is not run again)."""
    yield from branch_from(run, head)
    yield from save(run, "fork", frontier_names(run), {}, {}, [])


def branch_from(run: Run, head: CheckpointTuple) -> Loop[None]:
    """LangGraph's dialect: the run goes on from the past checkpoint its config names, and its
    first checkpoint branches the thread's history there (`_save.branch`): a replay's
    (`replay`), or the input checkpoint of new input given with it."""
    assert run.requested_id is not None
    past: CheckpointTuple | None = yield GetCheckpoint(
        checkpoint_config(run.thread_id, run.ns, run.requested_id)
    )
    if past is None:
        raise ResumeError(
            f"thread {run.thread_id!r} has no checkpoint {run.requested_id} to run from: "
            "pick one from get_state_history(config)",
            run.thread_id,
        )
    branch(run, past, head)
    run.replay_point = travelled_to(past)


def travelled_to(tup: CheckpointTuple) -> int:
    """The sequence number of the point in the thread's history a run travels to from the
    checkpoint `tup`: its own, or, for an update's or a fork's checkpoint, that of the one it
    was made from, as LangGraph's (the subgraphs' checkpoints of then precede that one)."""
    parent = tup.parent_config
    if tup.metadata.get("source") in ("update", "fork") and parent is not None:
        return checkpoint_seq(parent["configurable"].get("checkpoint_id"))
    return checkpoint_seq(tup.checkpoint["id"])


def rewinds(run: Run) -> bool:
    """Whether this run of a `compile(checkpointer=True)` subgraph is its first under a run of
    the graph that travelled to a past checkpoint (`Run.replay_point`)."""
    top = run.top
    return top.replay_point is not None and run.ns not in top.rewound


def rewind_subgraph(run: Run, head: CheckpointTuple) -> Loop[None]:
    """LangGraph's time travel reaches the subgraphs that keep their state: the first run of
    one under a run that travelled to a past checkpoint goes on from the state it had then,
    its newest checkpoint made before that point (the `parents` of its metadata say when),
    or its empty state when it had not run yet, as LangGraph's. Its first checkpoint
    branches from there over its head (`_save.branch`), and its input is applied as a new
    run's, whatever that state waited on. Later runs of it in the same run go on as usual."""
    top = run.top
    top.rewound.add(run.ns)
    point = top.replay_point
    assert point is not None
    config: RunConfig = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": run.ns}}

    def made_before(tup: CheckpointTuple) -> bool:
        made_in = (tup.metadata.get("parents") or {}).get(top.ns)
        return made_in is not None and checkpoint_seq(made_in) < point

    past: CheckpointTuple | None = yield FindCheckpoint(config, made_before)
    if past is not None:
        if past.checkpoint["id"] != head.checkpoint["id"]:
            branch(run, past, head)
        return
    # It had not run before that point: its empty state, on a branch from its first checkpoint.
    first: CheckpointTuple | None = yield FindCheckpoint(config, _is_first)
    assert first is not None  # (the namespace has a head)
    branch(run, first, head)
    once = run.internal.get(ONCE_CHANNEL)
    run.values, run.internal = {}, ({ONCE_CHANNEL: once} if once is not None else {})
    run.frontier, run.pending, run.paused = [], {}, []
    run.step = -2


def _is_first(tup: CheckpointTuple) -> bool:
    return tup.parent_config is None


def refused_replay(run: Run, input: Any) -> ResumeError:
    """A run given a `checkpoint_id` that is not the thread's head, where that is no replay:
    seed 000's dialect (history never branches inside a thread), a `Command`, or a
    subgraph's run."""
    if run.graph.dialect == "langgraph" and run.parent is None:
        return ResumeError(
            f"thread {run.thread_id!r}: a Command is not given with a past checkpoint "
            f"({run.requested_id}; the thread's latest is {run.head_id}), whose pauses are "
            "not the thread's: replay from it with invoke(None, config), or give new input "
            "with it, or update_state(config, values), which forks from it",
            run.thread_id,
        )
    return ResumeError(
        f"thread {run.thread_id!r}: runs continue from the latest checkpoint "
        f"({run.head_id}), not from {run.requested_id}: drop checkpoint_id from "
        "the config, or, to run again from that checkpoint, fork it into a new "
        "thread first: graph.invoke(None, graph.fork(config, thread_id))",
        run.thread_id,
    )


def drop_frontier(run: Run) -> dict[str, int]:
    """LangGraph's dialect: new input on a paused or failed thread starts a new run from
    START, so the tasks the head waits on are dropped, with their pending writes (answers
    given, finished branches' writes) and its static pause; a tool call the person denied by
    sending new input never runs. Returns the versions of the internal channels emptied."""
    new_versions: dict[str, int] = {}
    clear_sends(run, new_versions)
    run.frontier = []
    run.pending = {}
    run.paused = []
    return new_versions


def save_input(
    run: Run, writes: list[tuple[str, Any]], new_versions: dict[str, int] | None = None
) -> Loop[None]:
    """Save an input checkpoint, LangGraph's: `source="input"`, its step the one after the
    head's (-1 on a new thread), the thread's values as they were, the input (the writes
    `check_input` made of it) in the `__start__` channel, and a frontier that begins with
    the `__start__` task that applies it (then the tasks a paused or failed thread keeps,
    with their pending writes). `start_step` runs that task. `new_versions`: other internal
    channels the checkpoint changes (`drop_frontier`'s)."""
    if run.head_id is None:
        run.step = -2
    if run.frontier and run.frontier[0][0] == START:
        # `update_state(as_node="__input__")` on an input checkpoint: the new input
        # replaces the one its `__start__` task had not applied (as LangGraph's channel).
        run.pending.pop(run.frontier.pop(0)[1], None)
    run.internal[START_CHANNEL] = dict(writes)
    version = run.versions.get(START_CHANNEL, 0) + 1
    run.versions[START_CHANNEL] = version
    changed = {**(new_versions or {}), START_CHANNEL: version}
    yield from carry_over(run, "input", changed, {}, start=True)


def start_step(run: Run, *, show: bool = True) -> Loop[bool]:
    """Run the head's `__start__` task: its writes (the input its checkpoint holds) are
    saved as its pending writes (so history shows the task and its result), applied
    through the reducers, and the step's checkpoint (`source="loop"`) is saved, its frontier
    START's edges, or the tasks the head kept after it (input on a paused thread). Run again
    on a head whose step-0 checkpoint was not saved, it applies the same input once.
    Returns whether that checkpoint is a static pause (`interrupt_before` a first node);
    `show`: emit the `values` chunk of the input."""
    (_, start_id), *rest = run.frontier
    writes = list((run.internal.get(START_CHANNEL) or {}).items())
    if not any(channel == DONE for channel, _ in run.pending.get(start_id, ())):
        name_messages(run.graph.channels, writes)
        kept = writes
        if run.graph.untracked:  # never stored (the run itself applies them)
            kept = [(c, v) for c, v in writes if c not in run.graph.untracked]
        yield PutWrites(run.head(), [*kept, (DONE, True)], start_id)
    run.pending.pop(start_id, None)
    run.frontier = rest
    new_versions, appended = apply_writes(
        run.graph.channels, run.values, run.versions, [(START, writes)]
    )
    changed = dict(new_versions)  # (before saving adds the emptied `__start__` channel)
    paused: list[str] = []
    if rest:
        yield from carry_over(run, "loop", new_versions, appended)
    else:
        names = yield from next_frontier(run, [START], [], new_versions)
        paused = static_pause(run.graph.interrupt_before, run.graph.interrupt_after, names, [])
        yield from save(run, "loop", names, new_versions, appended, paused)
    if show:
        yield from emit_input(run, changed)
    return bool(paused)


def emit_input(run: Run, new_versions: dict[str, int]) -> Loop[None]:
    """The `values` chunk of a run's input, given what applying it changed. As LangGraph:
    an empty input shows no state; nor does an entrypoint's input (it writes a channel of
    its own, not the root channel of return values)."""
    if "values" in run.modes and new_versions and (not run.graph.root or ROOT in new_versions):
        yield Emit("values", run.output())


def answer(run: Run, resume: Any) -> Loop[None]:
    """Record `Command(resume=...)` answers durably, before anything runs."""
    tasks = [run.make_task(name, task_id) for name, task_id in run.frontier if name != START]
    waiting = [(t, i) for t in tasks for i in run.unanswered(t)]
    resumable = [(t, i) for t, i in waiting if i.resumable]
    if not resumable:
        if waiting:
            nodes = sorted({t.name for t, _ in waiting})
            raise ResumeError(
                f"thread {run.thread_id!r} is paused by NodeInterrupt in {nodes}, which "
                "takes no answer: fix the state with update_state if needed, then resume "
                "with invoke(None, config)",
                run.thread_id,
            )
        raise ResumeError(
            f"thread {run.thread_id!r} has no pending interrupt() to answer (it waits to "
            f"run {[n for n, _ in run.frontier]}): resume it with invoke(None, config)",
            run.thread_id,
        )
    by_id = {i.id: (t, i) for t, i in resumable}
    if isinstance(resume, Mapping) and resume and all(k in by_id for k in resume):
        answers = [(by_id[k][0], by_id[k][1], v) for k, v in resume.items()]
    elif (
        isinstance(resume, Mapping)
        and resume
        and any(k in by_id or (isinstance(k, str) and _ID_LIKE.match(k)) for k in resume)
    ):
        unknown = [k for k in resume if k not in by_id]
        raise ResumeError(
            f"thread {run.thread_id!r}: no pending interrupt has id(s) {unknown}; pending: "
            f"{sorted(by_id)}",
            run.thread_id,
        )
    elif len(resumable) == 1:
        t, i = resumable[0]
        answers = [(t, i, resume)]
    else:
        raise AmbiguousResumeError(
            "When there are multiple pending interrupts, you must specify the interrupt id "
            f"when resuming. Thread {run.thread_id!r} has {len(resumable)}; answer them by "
            "id: Command(resume={interrupt_id: answer, ...}) with ids "
            f"{[i.id for _, i in resumable]}",
            run.thread_id,
        )
    for t, i, value in answers:
        yield PutWrites(run.head(), [(RESUME, [i.id, value])], t.id)
        run.pending.setdefault(t.id, []).append((RESUME, [i.id, value]))


def inherit_answers(run: Run, answers: dict[str, Any]) -> Loop[None]:
    """Record, for this subgraph's tasks, the answers its parent's task was given."""
    if not answers:
        return
    for name, task_id in run.frontier:
        if name == START:
            continue
        for i in run.unanswered(run.make_task(name, task_id)):
            if i.id in answers:
                write = (RESUME, [i.id, answers[i.id]])
                yield PutWrites(run.head(), [write], task_id)
                run.pending.setdefault(task_id, []).append(write)


def nothing_to_resume(run: Run, tup: CheckpointTuple | None) -> ResumeError:
    if run.saver is None:
        return ResumeError("there is nothing to resume: the graph has no checkpointer")
    if tup is None:
        return ResumeError(
            f"thread {run.thread_id!r} does not exist (no checkpoint), so there is nothing "
            "to resume; check the thread id, or start a run with an input",
            run.thread_id,
        )
    return ResumeError(
        f"thread {run.thread_id!r} is not paused: its last run finished; start a new run "
        "with an input",
        run.thread_id,
    )


def update_gotos(run: Run, what: str, goto: Any) -> list[str | Send]:
    """The `goto` of a `Command` given as input or to `update_state` (`what`), checked."""
    names: list[str | Send] = [goto] if isinstance(goto, (str, Send)) else list(goto)
    nodes = run.graph.nodes
    bad = [n for n in names if (n.node if isinstance(n, Send) else n) not in (*nodes, END)]
    if bad:
        raise InvalidUpdateError(
            f"{what}: Command(goto={bad}) names unknown node(s); "
            f"nodes are: {sorted(run.graph.nodes)}"
        )
    return [n for n in names if n != END]


def add_to_frontier(run: Run, goto: list[str | Send], new_versions: dict[str, int]) -> None:
    """`invoke(Command(goto=...))`: those nodes run in the step about to run, beside the
    frontier's tasks (which keep their ids and pending writes), in the order nodes were
    added, `Send`s last."""
    assert run.head_id is not None
    nodes = run.graph.nodes
    sends = dict(run.internal.get(SENDS_CHANNEL) or {})
    plain = [(n, t) for n, t in run.frontier if t not in sends]
    sent = [(n, t) for n, t in run.frontier if t in sends]
    have = {n for n, _ in plain}
    for n in goto:
        if isinstance(n, str) and n not in have:
            plain.append((n, task_id_of(run.thread_id, run.ns, run.head_id, n)))
            have.add(n)
    plain.sort(key=lambda pair: nodes[pair[0]].index)
    had = len(sends)
    timeouts = dict(run.internal.get(SEND_TIMEOUTS_CHANNEL) or {})
    timed = len(timeouts)
    for i, n in enumerate(g for g in goto if isinstance(g, Send)):
        task_id = task_id_of(run.thread_id, run.ns, run.head_id, f"{n.node}\x00input-send\x00{i}")
        sent.append((n.node, task_id))
        sends[task_id] = n.arg
        if n.timeout is not None:
            timeouts[task_id] = n.timeout
    if len(sends) != had:
        run.internal[SENDS_CHANNEL] = sends
        run.versions[SENDS_CHANNEL] = new_versions[SENDS_CHANNEL] = (
            run.versions.get(SENDS_CHANNEL, 0) + 1
        )
    if len(timeouts) != timed:
        set_send_timeouts(run, timeouts, new_versions)
    run.frontier = plain + sent


def static_stop(run: Run) -> Loop[Paused]:
    """Stop at an `interrupt_before`/`interrupt_after` pause; `updates` shows it as
    `{"__interrupt__": ()}` (no answer is asked for), so a consumer can tell it from the end.
    A subgraph's pause shows so in its parent's stream only (as in LangGraph)."""
    if "updates" in run.modes and run.parent is None:
        yield Emit("updates", {"__interrupt__": ()})
    return Paused((), run.head_config, run.output())
