"""The checkpoint saver contract: what the runtime stores, and what a saver must guarantee.

A thread's history is a chain of checkpoints, each pointing at its parent. The newest is the
thread's *head*. After every superstep the runtime calls `put` with the new checkpoint; while a
step is under way (a task finished but a sibling paused or failed) it calls `put_writes` so that
finished work survives and is not run again.

A saver must:

- store `checkpoint` so that `get_tuple` returns an equal copy: values are copies, never shared
  with the running graph (mutating state after a step cannot rewrite history);
- in `put`, refuse with `CheckpointConflictError` when `config`'s `checkpoint_id` (the parent)
  is not the thread's current head: history never forks by accident. One put may branch: when
  `config` also names the head it is written over (`BRANCH_HEAD`, what LangGraph's dialect
  writes for a replay or an update of a past checkpoint), the parent is a past checkpoint of
  the thread, and the put is refused unless the head is still the one named (`branch_head`);
- keep pending writes in the order they were put, per checkpoint;
- in `lock_thread`, give at most one holder per thread at a time, refusing others with
  `ThreadBusyError` rather than waiting.

Savers may store only the channels in `new_versions` (the others did not change), and may use
`checkpoint["appended"]` (channel -> number of items) to store a list channel that grew by
concatenation as a delta instead of the whole list. Both bundled savers also store a list that
changed in the middle (an `add_messages` update by id) as an edit of the version they stored
before it (`_delta.Heads`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import random
import re
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict

from .._types import RunConfig
from ..errors import ThreadBusyError

__all__ = [
    "BRANCH_HEAD",
    "CHECKPOINT_VERSION",
    "BaseCheckpointSaver",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointRecord",
    "CheckpointTuple",
    "PendingWrite",
    "branch_head",
    "checkpoint_from_record",
    "checkpoint_record",
    "checkpoint_seq",
    "config_checkpoint_id",
    "config_ns",
    "config_thread_id",
    "database_unavailable",
    "empty_checkpoint",
    "new_checkpoint",
    "new_checkpoint_id",
]

# Reserved pending-write channels (never state keys: state keys cannot start with "__").
INTERRUPT = "__interrupt__"
"""An `Interrupt` raised by the task."""
RESUME = "__resume__"
"""`[interrupt_id, answer]`: an answer to one of the task's interrupts."""
ERROR = "__error__"
"""A string: the task failed with this error."""
FAILED = "__failed__"
"""`[type_name, message]`: the node failed and its `error_handler` takes over; on resume the
handler runs, not the node."""
DONE = "__done__"
"""The task finished; its channel writes precede this marker."""
ONCE = "__once__"
"""`[key, "started"|"done", result]`: progress of a `once()` side effect."""
GOTO = "__goto__"
"""A list of node names the task asked to run next (`Command(goto=...)`)."""
CALL = "__call__"
"""`[key, result]`: a finished call of a `graphs.func` `@task` the node made (kept so that a
replay of the node returns it instead of calling the task again)."""


CHECKPOINT_VERSION = 1
"""The format version of `Checkpoint` (its `v`), set by `new_checkpoint` alone. Bump it when the
keys of a checkpoint or their meaning change, and keep a golden checkpoint of every version in
the tests. (How values are encoded has a version of its own, `serde.FORMAT_VERSION`.)"""


class Checkpoint(TypedDict):
    """One saved superstep. Made by `new_checkpoint` (or, from storage, `checkpoint_from_record`)."""

    v: int
    """Format version of this structure."""
    id: str
    """Sortable within the thread: a zero-padded sequence number, then random hex."""
    ts: str
    """ISO-8601 UTC time it was made."""
    channel_values: dict[str, Any]
    """The value of every channel that has one (state keys and internal `__` channels)."""
    channel_versions: dict[str, int]
    """A counter per channel, bumped each time its value changes."""
    next_tasks: list[list[str]]
    """The pending frontier: `[node, task_id]` pairs that run when the thread goes on."""
    paused: list[str]
    """Nodes of a static pause (`interrupt_before`/`interrupt_after`) at this checkpoint."""
    appended: dict[str, int]
    """Channels that grew by list concatenation in this step, and by how many items."""


class CheckpointRecord(TypedDict):
    """What a saver stores of a checkpoint besides its id and its channel values."""

    v: int
    """`Checkpoint.v`: the format version it was written in."""
    ts: str
    channel_versions: dict[str, int]
    next_tasks: list[list[str]]
    paused: list[str]


def new_checkpoint(
    checkpoint_id: str,
    ts: str,
    channel_values: dict[str, Any],
    channel_versions: dict[str, int],
    next_tasks: list[list[str]],
    paused: list[str],
    appended: dict[str, int],
) -> Checkpoint:
    """A checkpoint of this code's format version (`CHECKPOINT_VERSION`)."""
    return {
        "v": CHECKPOINT_VERSION,
        "id": checkpoint_id,
        "ts": ts,
        "channel_values": channel_values,
        "channel_versions": channel_versions,
        "next_tasks": next_tasks,
        "paused": paused,
        "appended": appended,
    }


def checkpoint_record(checkpoint: Checkpoint, *, compact: bool = False) -> CheckpointRecord:
    """What to store of `checkpoint` besides its id and values (copies, never shared with it).
    `compact`: each task id in LangGraph's UUID shape (36 characters) as the 22 of its 16 bytes
    in URL-safe base64 (a database's rows, where the 14 characters add up over a long thread;
    `checkpoint_from_record` reads either)."""
    if compact:
        next_tasks = [[name, _compact_id(task_id)] for name, task_id in checkpoint["next_tasks"]]
    else:
        next_tasks = [list(t) for t in checkpoint["next_tasks"]]
    return {
        "v": checkpoint["v"],
        "ts": checkpoint["ts"],
        "channel_versions": dict(checkpoint["channel_versions"]),
        "next_tasks": next_tasks,
        "paused": list(checkpoint["paused"]),
    }


_UUID_SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_COMPACT = re.compile(r"[A-Za-z0-9_-]{22}")


def _compact_id(task_id: str) -> str:
    if len(task_id) != 36 or not _UUID_SHAPE.fullmatch(task_id):
        return task_id  # another shape (an older checkpoint's 16 hex digits): as it is
    raw = bytes.fromhex(task_id.replace("-", ""))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _task_id(stored: str) -> str:
    if len(stored) != 22 or not _COMPACT.fullmatch(stored):
        return stored
    h = base64.urlsafe_b64decode(stored + "==").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def checkpoint_from_record(
    checkpoint_id: str, record: CheckpointRecord, channel_values: dict[str, Any]
) -> Checkpoint:
    """The stored checkpoint back, in the format version it was written in (copies of the record)."""
    return {
        "v": record["v"],
        "id": checkpoint_id,
        "ts": record["ts"],
        "channel_values": channel_values,
        "channel_versions": dict(record["channel_versions"]),
        "next_tasks": [[name, _task_id(task_id)] for name, task_id in record["next_tasks"]],
        "paused": list(record["paused"]),
        "appended": {},
    }


class CheckpointMetadata(TypedDict, total=False):
    source: str
    """`input` (a run started), `loop` (a superstep finished), `update` (`update_state`) or
    `fork` (a thread started at a copy of another's checkpoint)."""
    step: int
    """Superstep number within the thread: the input checkpoint of a new thread is step 0."""
    forked_from: dict[str, str]
    """On the first checkpoint of a thread made by `fork` (`source="fork"`): the `thread_id`
    and `checkpoint_id` it is a copy of."""
    task: str
    """On a checkpoint of a `compile(checkpointer=True)` subgraph: the parent's task that ran it."""
    parents: dict[str, str]
    """The checkpoint id each enclosing graph ran this one from, by that graph's namespace (`""`
    for the graph invoked itself), as in LangGraph: `{}` on a top graph's checkpoints. Checkpoints
    stored before it was written there have no such key."""


_NOT_NOTED = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        *CheckpointMetadata.__annotations__,
    }
)
_SECRET_LIKE = ("key", "token", "secret", "password", "auth")


def noted_metadata(config: RunConfig) -> dict[str, Any]:
    """What a run's config adds to the metadata of each checkpoint it saves, as LangGraph's
    savers do: the `metadata` and `configurable` entries whose values are strings, numbers or
    booleans (`{"configurable": {"user_id": "u1"}}` notes `user_id`, so `list(filter=...)`
    finds the thread's checkpoints by it). Not noted: the checkpoint's own coordinates, keys
    starting with `__`, and keys that look like credentials (`api_key`, `token`, `password`,
    ...): unlike LangGraph, graphs does not write those into the database."""
    noted: dict[str, Any] = {}
    for source in (config.get("metadata"), config.get("configurable")):
        if not source:
            continue
        for key, value in source.items():
            if key in noted or key in _NOT_NOTED or key.startswith("__"):
                continue
            if type(value) not in (str, int, float, bool):
                continue
            if any(s in key.casefold() for s in _SECRET_LIKE):
                continue
            noted[key] = value.replace("\x00", "") if type(value) is str else value
    return noted


class PendingWrite(NamedTuple):
    task_id: str
    channel: str
    value: Any


@dataclass(frozen=True, slots=True)
class CheckpointTuple:
    """A checkpoint with its config, metadata, parent and pending writes."""

    config: RunConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: RunConfig | None = None
    pending_writes: list[PendingWrite] = field(default_factory=list)


def config_thread_id(config: RunConfig | None) -> str | None:
    """The config's thread id; an int or UUID one (LangGraph takes `thread_id=1`) as its
    string."""
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    if isinstance(thread_id, (int, uuid.UUID)):
        return str(thread_id)
    return thread_id


def config_ns(config: RunConfig | None) -> str:
    return ((config or {}).get("configurable") or {}).get("checkpoint_ns") or ""


def config_list_ns(config: RunConfig | None) -> str | None:
    """The namespace `list(config)` lists: the config's `checkpoint_ns` (`""`: the graph's
    own), or None when it names none: every namespace of the thread, subgraphs' too."""
    ns = ((config or {}).get("configurable") or {}).get("checkpoint_ns")
    return None if ns is None else str(ns)


def config_checkpoint_id(config: RunConfig | None) -> str | None:
    return ((config or {}).get("configurable") or {}).get("checkpoint_id")


BRANCH_HEAD = "branch_head_id"
"""The key of a `put`'s config that makes it a branch: the thread's head it is written over,
its parent (`checkpoint_id`) being a past checkpoint of the thread. Written by the runtime only
for LangGraph's time travel (`invoke(None, config)` or `update_state` given a past checkpoint)."""


def branch_head(config: RunConfig) -> str | None:
    """The head a `put` branching from a past checkpoint is written over (None: not a branch).

    A saver's compare-and-set then checks the head against this id instead of the parent, and
    checks that the parent is a checkpoint of the thread."""
    return (config.get("configurable") or {}).get(BRANCH_HEAD)  # type: ignore[return-value]


_ID_BITS = random.Random()
"""The random part of checkpoint ids: seeded from the system's randomness, again in a forked
child, and apart from the `random` module's own state (which code may seed)."""
os.register_at_fork(after_in_child=_ID_BITS.seed)


def new_checkpoint_id(seq: int) -> str:
    """A checkpoint id that sorts by `seq` within a thread and is unique across forks."""
    return "%012x-%08x" % (seq, _ID_BITS.getrandbits(32))  # noqa: UP031 (faster than f"{:012x}")


def checkpoint_seq(checkpoint_id: str | None) -> int:
    """The sequence number in a checkpoint id (-1 for none)."""
    if not checkpoint_id:
        return -1
    return int(checkpoint_id.split("-", 1)[0], 16)


def empty_checkpoint() -> Checkpoint:
    return new_checkpoint("", "", {}, {}, [], [], {})


def checkpoint_config(thread_id: str, ns: str, checkpoint_id: str) -> RunConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


_SQLITE_UNAVAILABLE = frozenset(
    (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    )
)
"""SQLite's primary result codes for a file that cannot take a write now (another writer holds
it past the busy timeout; it cannot be opened, read or grown; it was moved): not a mistake in
the statement, whose code is `SQLITE_ERROR` ("no such table", a syntax error)."""


def database_unavailable(error: BaseException) -> bool:
    """True when `error`, raised by a saver, means its database cannot be used right now, not
    that the call was wrong: the same call may succeed once the database is back.

    That is, for `error` or what caused it (`__cause__`, `__context__`): a `ConnectionError`;
    a SQLAlchemy error of a connection that dropped (`connection_invalidated`); psycopg's
    `OperationalError` (the server is down, restarting or unreachable, or ended the session,
    as `pg_terminate_backend` or a restart does); SQLite's `OperationalError` for a file that
    is locked past the busy timeout, cannot be opened, read or grown. The bot's
    `database_down` reads PostgreSQL's errors the same way (it leaves SQLite's out).
    """
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionError) or getattr(e, "connection_invalidated", False) is True:
            return True
        if isinstance(e, sqlite3.OperationalError):
            code = getattr(e, "sqlite_errorcode", None)
            if code is None:  # raised by Python code, not by SQLite (the write gate's)
                return str(e).startswith("database is locked")
            return code & 0xFF in _SQLITE_UNAVAILABLE
        if type(e).__module__.startswith("psycopg") and any(
            c.__name__ == "OperationalError" for c in type(e).__mro__
        ):
            return True
        e = e.__cause__ or e.__context__
    return False


class BaseCheckpointSaver:
    """Base class of every saver. Implement the sync methods; the async ones default to them.

    A saver written against this class works with every feature of the runtime: interrupts,
    resume, `get_state`/`update_state`, history, one run per thread (through `lock_thread`).
    """

    lock_may_be_lost: bool = False
    """True when `lock_thread`'s hold on a thread can end while the run holding it goes on (a
    PostgreSQL advisory lock goes with its session, which a restart, a failover or
    `pg_terminate_backend` ends). Then a run that finds a `once()` effect started and not
    recorded waits a while for its outcome: the run that started it may be recording it."""

    def __init__(self) -> None:
        self._locks_guard = threading.Lock()
        self._threads_held: set[tuple[str, str]] = set()
        """The (thread_id, checkpoint_ns) pairs `lock_thread` holds in this process."""

    # ---- the contract -------------------------------------------------------------------

    def get_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        """The thread's head, or the checkpoint named by `checkpoint_id`; None if there is none."""
        raise NotImplementedError

    def list(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The thread's checkpoints, newest first (`config=None`: every thread's).

        With a `checkpoint_ns` in `config`, those of that namespace (`""`: the graph's own);
        without one, as in LangGraph, those of every namespace of the thread (its subgraphs'
        runs too), namespace by namespace (the graph's own first), each newest first."""
        raise NotImplementedError

    def put(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        """Store `checkpoint` as the thread's new head; return the config that points at it.

        `config["configurable"]["checkpoint_id"]` is the parent (absent for a new thread).
        With `BRANCH_HEAD` in it too, the parent is a past checkpoint of the thread and the new
        checkpoint branches from it, written over the head that key names.

        Raises:
            CheckpointConflictError: the parent is not the thread's current head (a branch:
                the head is not the one named, or the parent is not a checkpoint of the thread).
        """
        raise NotImplementedError

    def put_writes(
        self,
        config: RunConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Append pending writes of `task_id` to the checkpoint `config` points at.

        `task_path` is LangGraph's (a saver written for it may be called with one); the runtime
        never passes it and savers ignore it."""
        raise NotImplementedError

    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of the thread (all namespaces)."""
        raise NotImplementedError

    # ---- one run per thread -------------------------------------------------------------

    @contextlib.contextmanager
    def lock_thread(self, config: RunConfig) -> Iterator[None]:
        """Hold the thread for one run. This default guards within one process only.

        Raises:
            ThreadBusyError: someone else holds it.
        """
        key = (config_thread_id(config) or "", config_ns(config))
        with self._locks_guard:
            if key in self._threads_held:
                raise ThreadBusyError(
                    f"thread {key[0]!r} is already running in this process; "
                    "wait for that run to pause or finish",
                    key[0],
                )
            self._threads_held.add(key)
        try:
            yield
        finally:
            with self._locks_guard:
                self._threads_held.discard(key)

    @contextlib.asynccontextmanager
    async def alock_thread(self, config: RunConfig) -> AsyncIterator[None]:
        """Async form of `lock_thread`."""
        with self.lock_thread(config):
            yield

    # ---- async twins (default: the sync method, off the event loop) -------------------

    async def aget_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(lambda: list(self.list(config, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)
