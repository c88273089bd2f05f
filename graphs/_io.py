"""The loop's I/O, as data: the requests it yields, and what a run under `durability="exit"`
holds unsaved.

`execute` (in `_loop.py`) and `update_state`'s `update` (in `_updates.py`) are generators
that never do I/O: each yields a request, one small immutable tuple per kind below, and is sent
the reply. The drivers that perform them are `_drive.py`'s, above the loop; the tasks, the
stream and the loop import from here.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any, NamedTuple, TypeVar

from ._types import RunConfig
from .checkpoint.base import BRANCH_HEAD, Checkpoint, CheckpointMetadata, checkpoint_config

__all__ = [
    "LIVE_MODES",
    "Await",
    "Batch",
    "Emit",
    "GetCheckpoint",
    "GetHead",
    "Loop",
    "PutCheckpoint",
    "PutWrites",
    "Request",
    "RunTasks",
    "Unsaved",
]

R = TypeVar("R")

LIVE_MODES = frozenset({"custom", "messages"})
"""Stream modes whose chunks node code writes while it runs: the step's tasks then run beside
a consumer that hands each chunk on as it comes (`_run_threads`, `_run_concurrent_async`), even
a step of one task; so do they when subgraphs stream into the graph's stream (`Run.live`)."""


TRACE_MODES = frozenset({"tasks", "checkpoints", "debug"})
"""Stream modes that describe tasks and checkpoints."""


class GetHead(NamedTuple):
    """Load the thread's head checkpoint. Reply: its `CheckpointTuple`, or None if it has none."""

    ns: str | None = None
    """The namespace whose head to load, when not the run's own (an enclosing graph's)."""


class GetCheckpoint(NamedTuple):
    """Load one checkpoint of the thread, a past one too (`saver.get_tuple`). Reply: its
    `CheckpointTuple`, or None if there is no such checkpoint."""

    config: RunConfig
    """Names the checkpoint: thread, namespace and `checkpoint_id`."""


class PutCheckpoint(NamedTuple):
    """Save a checkpoint as the thread's new head (`saver.put`). Reply: the `RunConfig` of it."""

    parent: RunConfig
    """Points at the parent checkpoint (no `checkpoint_id` for a new thread)."""
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: dict[str, int]
    """The channels that changed in this step, with their new versions."""


class PutWrites(NamedTuple):
    """Save pending writes of one task on the head checkpoint (`saver.put_writes`). Reply: None."""

    config: RunConfig
    """Points at the checkpoint the writes belong to."""
    writes: Sequence[tuple[str, Any]]
    task_id: str


class RunTasks(NamedTuple):
    """Run these tasks of the step (each records its result, pause or error); a step of two or
    more is reported task by task as each ends (`_loop.finish`). Reply: None."""

    tasks: list[Any]
    """The step's tasks (`_run.Task`: this module sits below the run and its tasks)."""


class Await(NamedTuple):
    """Await an async router's coroutine (only `drive_async` can). Reply: what it returned."""

    coro: Any
    what: str
    """Which router it is, for the error `drive_sync` raises."""
    note: str
    """Added to an error the router raises."""


class Emit(NamedTuple):
    """Hand a stream chunk to the caller. Reply: None."""

    mode: str
    """The stream mode it belongs to: `values` or `updates`."""
    chunk: Any
    ns: tuple[str, ...] = ()
    """Where it comes from: `()` for the graph itself, `("node:task_id", ...)` for a subgraph."""


Sink = Callable[[Emit], None]
"""Takes a chunk node code (or a subgraph's run) made while a step runs."""


class Unsaved:
    """What a run under `durability="exit"` has not saved yet: its latest checkpoint (the ones
    before it since the last save are skipped, as LangGraph skips them) and the pending writes
    made on it. Saved when the run exits (completes, pauses or fails; a subgraph's run that
    completes saves nothing unless it is persistent, as LangGraph's), and before a `once()`
    effect begins (`save_before_once`), so the effect's record attaches to a saved checkpoint.

    Tasks of a step run in threads (or beside each other on the event loop): a save and the
    writes held meanwhile go one at a time (`lock`, `alock`)."""

    def __init__(self) -> None:
        self.checkpoint: PutCheckpoint | None = None
        self.writes: list[PutWrites] = []
        self.lock = threading.Lock()
        self.alock: asyncio.Lock | None = None

    def hold_checkpoint(self, request: PutCheckpoint) -> RunConfig:
        """Keep `request` in place of the one held (whose pending writes are dropped, as
        LangGraph drops them); its parent stays the last saved one, its new versions the
        channels changed since. The reply a saver gives: the config of it."""
        with self.lock:
            held = self.checkpoint
            if held is not None:
                request = request._replace(
                    parent=held.parent, new_versions={**held.new_versions, **request.new_versions}
                )
                if BRANCH_HEAD in held.parent["configurable"]:
                    # Still a branch's first put (`_save.branch_put`): every value whole.
                    request.checkpoint["appended"] = {}
            self.checkpoint = request
            self.writes = []
        conf = request.parent["configurable"]
        return checkpoint_config(
            str(conf["thread_id"]), conf.get("checkpoint_ns") or "", request.checkpoint["id"]
        )

    def hold_writes(self, request: PutWrites) -> None:
        with self.lock:
            self.writes.append(request)

    def _take(self) -> tuple[PutCheckpoint | None, list[PutWrites]]:
        held, writes = self.checkpoint, self.writes
        self.checkpoint, self.writes = None, []
        return held, writes

    def save_sync(self, saver: Any) -> None:
        with self.lock:
            held, writes = self._take()
            if held is not None:
                saver.put(*held)
            for w in writes:
                saver.put_writes(*w)

    async def save_async(self, saver: Any) -> None:
        if self.alock is None:
            self.alock = asyncio.Lock()
        async with self.alock:
            with self.lock:
                held, writes = self._take()
            if held is not None:
                await saver.aput(*held)
            for w in writes:
                await saver.aput_writes(*w)


class Batch:
    """Saves a driver holds back to hand its saver at once, as one transaction: a run's input
    checkpoint (`source="input"`), the writes made on it, and the checkpoint after it, which
    closes the batch; between them the loop runs no node code (the `__start__` task applies
    the input), so a crash in between loses nothing a node did. Only for a saver that takes
    a batch (`SQLSaver._put_batch`: one commit instead of three); any other request, an
    error or the loop's end hands over what is held first."""

    __slots__ = ("ops", "saver")

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.ops: list[tuple[bool, tuple[Any, ...]]] = []

    @staticmethod
    def opens(request: PutCheckpoint) -> bool:
        # (Not a branch's input checkpoint, LangGraph's dialect's new input given with a past
        # checkpoint: its put is the saver's branch transaction, alone.)
        return request.metadata.get("source") == "input" and (
            BRANCH_HEAD not in request.parent["configurable"]
        )

    def hold(self, request: PutCheckpoint | PutWrites) -> RunConfig | None:
        """Keep `request`; the reply its saver would give."""
        if isinstance(request, PutWrites):
            self.ops.append((False, tuple(request)))
            return None
        self.ops.append((True, tuple(request)))
        conf = request.parent["configurable"]
        return checkpoint_config(
            str(conf["thread_id"]), conf.get("checkpoint_ns") or "", request.checkpoint["id"]
        )

    def send(self) -> None:
        """Hand what is held to the saver, as one transaction."""
        ops, self.ops = self.ops, []
        self.saver._put_batch(ops)

    async def asend(self) -> None:
        ops, self.ops = self.ops, []
        await self.saver._aput_batch(ops)


Request = GetHead | GetCheckpoint | PutCheckpoint | PutWrites | RunTasks | Await | Emit
"""What the loop can ask of its driver."""

Loop = Generator[Request, Any, R]
"""The loop as its drivers see it: requests out, replies in (see each request), `R` at the end."""
