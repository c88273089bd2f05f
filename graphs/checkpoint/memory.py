"""`InMemorySaver`: checkpoints in a dict, for development and tests. Lost when the process exits.

Values are stored serialized (the same tagged JSON as `SQLSaver`), so a value that would not
survive a restart fails here too, at the step that produced it, and stored history is a copy
that later mutation cannot reach. As in `SQLSaver`, a list that grew by concatenation
(`checkpoint["appended"]`) stores only its new items, chained to the version it extends: a
thread's message list costs what was appended over its life, not the whole list at every step.
A list changed otherwise (an `add_messages` update by id, a removal) stores an edit of the
version before it (`_delta`): the items replaced, dropped and added.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._types import RunConfig
from ..errors import CheckpointConflictError, CheckpointFormatError, SerializationError
from . import _delta, serde
from .base import (
    BRANCH_HEAD,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointRecord,
    CheckpointTuple,
    PendingWrite,
    checkpoint_config,
    checkpoint_from_record,
    config_checkpoint_id,
    config_list_ns,
    config_thread_id,
)

__all__ = ["InMemorySaver", "MemorySaver"]

_Key = tuple[str, str]  # (thread_id, checkpoint_ns)
_Entry = tuple[
    int,
    str,
    dict[str, int],
    tuple[tuple[str, ...], ...],
    tuple[str, ...],
    CheckpointMetadata,
    str | None,
]
"""A stored checkpoint: its `CheckpointRecord` (`v`, `ts`, `channel_versions`, `next_tasks`,
`paused`), its metadata and its parent's id, in one tuple. The frontier and the pause are kept
as tuples of strings, and the versions in a dict of numbers, which the garbage collector does
not scan: a long history costs less collection time."""

# Immutable scalars need no copy: they are kept as they are, in a 1-tuple; the rest as JSON.
_SCALARS = frozenset([str, int, bool, type(None)])


def _store(value: Any) -> tuple[Any] | str:
    return (value,) if type(value) in _SCALARS else serde.dumps(value)


def _load(stored: tuple[Any] | str) -> Any:
    return stored[0] if isinstance(stored, tuple) else serde.loads(stored)


@dataclass(frozen=True, slots=True)
class _Whole:
    """A list channel's version stored whole."""

    total: int
    """How many items the list holds."""
    items: str


@dataclass(frozen=True, slots=True)
class _Appended:
    """A list channel's version stored as the items appended to the version before it."""

    prev: int
    """The channel version this one extends."""
    total: int
    """How many items the list holds, with those of the versions before."""
    items: str


@dataclass(frozen=True, slots=True)
class _Edited:
    """A list channel's version stored as an edit of the version before it (`_delta`): after
    an update by id or a removal, the items replaced, dropped and added alone."""

    prev: int
    total: int
    edit: str
    """`_delta.edit_json`, serialized."""


_Blob = tuple[Any] | str | _Whole | _Appended | _Edited
_BlobKey = tuple[str, str, str, int]  # (thread_id, checkpoint_ns, channel, version)


class InMemorySaver(BaseCheckpointSaver):
    """Keeps every thread's checkpoints in memory."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        # (thread, ns) -> {checkpoint_id: `_Entry`}, in insertion order
        self._checkpoints: dict[_Key, dict[str, _Entry]] = {}
        self._blobs: dict[_BlobKey, _Blob] = {}
        self._writes: dict[tuple[str, str, str], list[tuple[str, str, tuple[Any] | str]]] = {}
        # The list channels last stored per thread: an update by id is stored as an edit.
        self._heads = _delta.Heads()

    def _key(self, config: RunConfig) -> _Key:
        conf = (config or {}).get("configurable") or {}
        thread_id = conf.get("thread_id")
        if type(thread_id) is not str:  # an int or a UUID one is its string
            thread_id = config_thread_id(config)
        if not thread_id:
            raise ValueError('config needs {"configurable": {"thread_id": ...}}')
        return (thread_id, conf.get("checkpoint_ns") or "")

    def get_tuple(self, config: RunConfig) -> CheckpointTuple | None:
        key = self._key(config)
        with self._lock:
            history = self._checkpoints.get(key)
            if not history:
                return None
            checkpoint_id = config_checkpoint_id(config) or next(reversed(history))
            if checkpoint_id not in history:
                return None
            return self._tuple(key, checkpoint_id, history[checkpoint_id])

    def _tuple(
        self,
        key: _Key,
        checkpoint_id: str,
        entry: _Entry,
    ) -> CheckpointTuple:
        v, ts, versions, next_tasks, paused, metadata, parent_id = entry
        record: CheckpointRecord = {
            "v": v,
            "ts": ts,
            "channel_versions": versions,
            "next_tasks": [list(t) for t in next_tasks],
            "paused": list(paused),
        }  # (`checkpoint_from_record` copies it)
        thread_id, ns = key
        values: dict[str, Any] = {}
        for channel, version in versions.items():
            if (thread_id, ns, channel, version) not in self._blobs:
                continue
            try:
                values[channel] = self._value((thread_id, ns, channel, version))
            except CheckpointFormatError as e:
                raise CheckpointFormatError(
                    f"thread {thread_id!r}, channel {channel!r}: {e}",
                    thread_id=thread_id,
                    channel=channel,
                ) from e
        checkpoint = checkpoint_from_record(checkpoint_id, record, values)
        writes = [
            PendingWrite(task_id, channel, _load(value))
            for task_id, channel, value in self._writes.get((thread_id, ns, checkpoint_id), ())
        ]
        return CheckpointTuple(
            config=checkpoint_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=metadata.copy(),
            parent_config=checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
            pending_writes=writes,
        )

    def _value(self, key: _BlobKey) -> Any:
        """The value stored under `key`; an appended list is rebuilt from its chain."""
        blob = self._blobs[key]
        if not isinstance(blob, (_Whole, _Appended, _Edited)):
            return _load(blob)
        thread_id, ns, channel, _ = key
        parts: list[_Appended | _Edited] = []
        while isinstance(blob, (_Appended, _Edited)):
            parts.append(blob)
            blob = self._blobs[(thread_id, ns, channel, blob.prev)]
        assert isinstance(blob, _Whole)
        value: list[Any] = serde.loads(blob.items)
        for part in reversed(parts):
            if isinstance(part, _Appended):
                value.extend(serde.loads(part.items))
            else:
                edit = _delta.edit_from_json(serde.loads(part.edit), len(value))
                value = _delta.apply(value, edit)
        return value

    def list(
        self,
        config: RunConfig | None,
        *,
        before: RunConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        with self._lock:
            if config is None:
                keys = list(self._checkpoints)
            elif config_list_ns(config) is None:  # every namespace of the thread
                thread_id = self._key(config)[0]
                keys = sorted(k for k in self._checkpoints if k[0] == thread_id)
            else:
                key = self._key(config)
                keys = [key] if key in self._checkpoints else []
            before_id = config_checkpoint_id(before) if before else None
            out: list[CheckpointTuple] = []
            for key in keys:
                for checkpoint_id in reversed(self._checkpoints[key]):
                    if before_id is not None and checkpoint_id >= before_id:
                        continue
                    if limit is not None and len(out) >= limit:
                        break
                    out.append(
                        self._tuple(key, checkpoint_id, self._checkpoints[key][checkpoint_id])
                    )
        yield from out

    def put(
        self,
        config: RunConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> RunConfig:
        key = self._key(config)
        thread_id, ns = key
        conf = config["configurable"]  # (`_key` found the thread id in it)
        parent_id = conf.get("checkpoint_id")
        # Serialize before taking the lock: a value that cannot be stored fails here, changing nothing.
        values = checkpoint["channel_values"]
        appended = checkpoint.get("appended") or {}
        blobs: dict[_BlobKey, _Blob] = {}
        # (channel, version, value, the length of the list it extends, the delta, is an edit):
        # checked against the parent under the lock.
        grown: list[tuple[str, int, list[Any], int, str, bool]] = []
        lists: dict[str, tuple[int, list[Any]]] = {}  # remembered for the next put (`_delta`)
        for channel, version in new_versions.items():
            if channel not in values:
                continue
            value = values[channel]
            try:
                if type(value) is not list:
                    blobs[(thread_id, ns, channel, version)] = (
                        (value,) if type(value) in _SCALARS else serde.dumps(value)
                    )  # (`_store`)
                    continue
                lists[channel] = (version, list(value))
                n = appended.get(channel, 0)
                if parent_id and 0 < n < len(value):
                    items = serde.dumps(value[-n:])
                    grown.append((channel, version, value, len(value) - n, items, False))
                elif value and (edit := self._heads.edit(key, parent_id, channel, value)):
                    # An update by id (or a removal): the changes alone.
                    changes = serde.dumps(_delta.edit_json(edit[1]))
                    grown.append((channel, version, value, edit[0], changes, True))
                else:
                    blobs[(thread_id, ns, channel, version)] = _Whole(
                        len(value), serde.dumps(value)
                    )
            except SerializationError as e:
                raise SerializationError(f"thread {thread_id!r}, state key {channel!r}: {e}") from e
        stored: _Entry = (
            checkpoint["v"],
            checkpoint["ts"],
            dict(checkpoint["channel_versions"]),
            tuple(map(tuple, checkpoint["next_tasks"])),
            tuple(checkpoint["paused"]),
            metadata.copy(),
            parent_id,
        )  # (copies, never shared with the caller's checkpoint)
        checkpoint_id = checkpoint["id"]
        with self._lock:
            history = self._checkpoints.get(key)
            if history is None:
                history = self._checkpoints[key] = {}
            head = next(reversed(history)) if history else None
            expected = conf.get(BRANCH_HEAD) or parent_id  # (`branch_head`)
            if head != expected:
                raise CheckpointConflictError(
                    f"thread {thread_id!r} moved on: its head is {head!r}, not {expected!r}; "
                    "another run wrote to it",
                    thread_id,
                )
            if expected != parent_id:
                _check_branch(history, thread_id, parent_id)
            parent = history[parent_id][2] if parent_id and grown else {}
            for channel, version, value, prev_total, delta, is_edit in grown:
                # It extends the parent's version of the channel, if that holds what it grew from.
                prev = parent.get(channel)
                before = None if prev is None else self._blobs.get((thread_id, ns, channel, prev))
                if (
                    prev is not None
                    and isinstance(before, (_Whole, _Appended, _Edited))
                    and before.total == prev_total
                ):
                    kind = _Edited if is_edit else _Appended
                    blobs[(thread_id, ns, channel, version)] = kind(prev, len(value), delta)
                    continue
                blobs[(thread_id, ns, channel, version)] = _Whole(len(value), serde.dumps(value))
            self._blobs.update(blobs)
            history[checkpoint_id] = stored
        finished = not checkpoint["next_tasks"] and not checkpoint["paused"]
        self._heads.stored(key, parent_id, checkpoint_id, lists, finished)
        return checkpoint_config(thread_id, ns, checkpoint_id)

    def put_writes(
        self,
        config: RunConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id, ns = self._key(config)
        checkpoint_id = config_checkpoint_id(config) or ""
        stored = [(task_id, channel, _store(value)) for channel, value in writes]
        with self._lock:
            self._writes.setdefault((thread_id, ns, checkpoint_id), []).extend(stored)

    def delete_thread(self, thread_id: str) -> None:
        self._heads.forget(thread_id)
        with self._lock:
            for key in [k for k in self._checkpoints if k[0] == thread_id]:
                del self._checkpoints[key]
            for blob_key in [k for k in self._blobs if k[0] == thread_id]:
                del self._blobs[blob_key]
            for write_key in [k for k in self._writes if k[0] == thread_id]:
                del self._writes[write_key]


def _check_branch(history: dict[str, _Entry], thread_id: str, parent_id: str | None) -> None:
    """A put that branches (`branch_head`) must grow from a checkpoint of the thread."""
    if parent_id not in history:
        raise CheckpointConflictError(
            f"thread {thread_id!r} has no checkpoint {parent_id!r} to branch from",
            thread_id,
        )


MemorySaver = InMemorySaver
"""Alias of `InMemorySaver` (the name LangGraph used first)."""
