"""What node code can call while it runs: `interrupt()` (and `scope()`), with the running task it
finds them by (`once()` and `aonce()` are `_once.py`'s, on the same rules).

Replay rules, stated once
-------------------------
A node that pauses in `interrupt()` is run again *from its top* when the thread is resumed:
that is how `interrupt()` can return the answer. Everything before the `interrupt()` call runs
again. So, in node code:

- Do not send, write or charge anything before an `interrupt()`. Put side effects after it, or
  in a node of their own after the approval.
- If code before an `interrupt()` must have an effect (draft an email with a model, reserve an
  id), wrap it in `once(key, fn, ...)`: it runs once per thread; its result is stored in the
  checkpoint and returned on every replay.
- Make each `interrupt()` call happen in the same order on every replay: answers are matched by
  the call's position within the node (and every pause has a stable id derived from it).

Time travel (LangGraph's dialect: `invoke(None, config)` or `update_state` given a past
checkpoint of the thread) runs that checkpoint's tasks again from their top, on a branch that
becomes the thread's head: everything in the node runs again, and each `interrupt()` asks again
(answers given on the old branch are not reused). A `once()` effect the thread already recorded
is the exception: it is not run again, on any branch; the replay gets its stored result.

These functions work only inside a running node; elsewhere they raise `RuntimeError`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from ._types import Interrupt
from .checkpoint import serde
from .errors import CheckpointerRequiredError

if TYPE_CHECKING:
    from ._run import Task

__all__ = ["Pause", "interrupt", "scope"]

T = TypeVar("T")

_current: ContextVar[Task | None] = ContextVar("graphs_current_task", default=None)


class Pause(BaseException):
    """Raised by `interrupt()` to leave the node.

    A `BaseException`, so that `except Exception:` in node code cannot swallow a pause. It
    carries one interrupt, or several when code that runs independent parts of a node (the
    prebuilt `ToolNode`, one part per tool call) gathers their pauses into one.
    """

    def __init__(self, interrupts: tuple[Interrupt, ...]) -> None:
        super().__init__(interrupts)
        self.interrupts = interrupts


@contextmanager
def scope(key: str) -> Iterator[None]:
    """Number the `interrupt()` calls made inside from 0, under ids of their own.

    For a node that runs independent parts (one per tool call, `key` being the call's id):
    each part's pauses keep their ids and answers whatever the other parts do on a replay.
    Outside a running node it does nothing.
    """
    task = _current.get()
    if task is None:
        yield
        return
    saved = task.scope_id, task.interrupt_count
    task.scope_id, task.interrupt_count = f"{task.id}/{key}", 0
    try:
        yield
    finally:
        task.scope_id, task.interrupt_count = saved


def interrupt_id(thread_id: str, ns: str, task_id: str, index: int) -> str:
    """The id of the `index`-th `interrupt()` of a task: stable across replays, unique per thread."""
    raw = f"{thread_id}\x00{ns}\x00{task_id}\x00{index}".encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _task(fn_name: str) -> Task:
    task = _current.get()
    if task is None:
        raise RuntimeError(f"{fn_name}() can only be called inside a graph node while it runs")
    return task


def interrupt(value: Any = None) -> Any:
    """Pause the run and hand `value` to the caller; return the answer once resumed.

    The first time, this raises out of the node: the run stops, the pause is saved, and the
    caller sees an `Interrupt(value, id)`. When the thread is resumed with
    `invoke(Command(resume=answer), config)`, the node runs again from its top and this call
    returns `answer`. Several calls in one node are answered one after another.

    Raises:
        CheckpointerRequiredError: the graph has no checkpointer, so it cannot pause (in
            LangGraph's dialect, as in LangGraph, the run returns the pause unsaved instead).
        RuntimeError: called outside a running node.
    """
    task = _task("interrupt")
    index = task.interrupt_count
    task.interrupt_count += 1
    iid = interrupt_id(task.run.thread_id, task.run.ns, task.scope_id, index)
    if iid in task.answers:
        return task.answers[iid]
    if task.run.saver is None and task.run.graph.dialect != "langgraph":
        # LangGraph's dialect pauses unsaved, as LangGraph does: the run returns the pause,
        # and nothing can resume it.
        raise CheckpointerRequiredError(
            f"node {task.name!r} called interrupt(), but the graph was compiled without a "
            "checkpointer, so it cannot pause: compile(checkpointer=InMemorySaver()) for "
            "tests, or SQLSaver(url) to survive restarts"
        )
    serde.dumps(value)  # a payload that cannot be stored must fail here, in the node
    raise Pause((Interrupt(value, iid, task.name, index),))
