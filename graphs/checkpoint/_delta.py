"""A list channel's new version as an edit of the version before it, for both savers.

The runtime tells a saver when a list only grew (`checkpoint["appended"]`); a saver then stores
the new items alone. An `add_messages` update by id (or a `RemoveMessage`) changes items in the
middle, so the runtime cannot say that, and the list was stored whole at every such step: an
agent that revises one message per turn stored the conversation once per turn.

`Heads` remembers, per thread, the items of the list channels the saver last stored. At the
next `put`, `Heads.edit` compares the new list with them: an item that is the very object it was
is kept, one with the same `id` (a message's, or a dict's `"id"`) at its place is replaced, the
rest of the old list is dropped, and what is left of the new list is added at the end. That is
the shape of every `add_messages` result (updates in place, removals, appends), and rebuilding
the list from the edit gives the new list exactly whatever it is: a list of another shape only
makes a bigger edit, and one no smaller than half the list is stored whole instead.

As with appends, an item that a node mutated in place, without returning it as an update, is not
written again: state changes through updates. (`add_messages` copies a message that a node
changed in place and returned, so that it is not the very object stored before.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..errors import CheckpointFormatError

__all__ = ["Edit", "Heads", "apply", "diff", "edit_from_json", "edit_json"]


@dataclass(frozen=True, slots=True)
class Edit:
    """How a list differs from the version before it."""

    drop: list[int]
    """Indexes, in the previous list, of the items no longer there."""
    put: list[tuple[int, Any]]
    """(index in the previous list, the item that takes its place)."""
    add: list[Any]
    """Items appended after the others."""


def _id(item: Any) -> Any:
    if type(item) is dict:
        return item.get("id")
    return getattr(item, "id", None)


def diff(old: list[Any], new: list[Any]) -> Edit | None:
    """`new` as an edit of `old`, or None when storing `new` whole is as small."""
    i = j = 0
    n_old, n_new = len(old), len(new)
    drop: list[int] = []
    put: list[tuple[int, Any]] = []
    while i < n_old and j < n_new:
        a, b = old[i], new[j]
        if a is b:
            j += 1
        else:
            key = _id(a)
            if key is not None and key == _id(b):
                put.append((i, b))
                j += 1
            else:
                drop.append(i)
        i += 1
    drop.extend(range(i, n_old))
    add = new[j:]
    if 2 * (len(put) + len(add)) >= n_new:
        return None
    return Edit(drop, put, add)


def apply(old: list[Any], edit: Edit) -> list[Any]:
    """The list `edit` was made from, rebuilt from `old` (which is not changed)."""
    out = list(old)
    for i, item in edit.put:
        out[i] = item
    if edit.drop:
        gone = set(edit.drop)
        out = [item for k, item in enumerate(out) if k not in gone]
    out.extend(edit.add)
    return out


def edit_json(edit: Edit) -> dict[str, Any]:
    """The stored form of `edit` (serialized with the values it holds by `serde`)."""
    return {"drop": edit.drop, "put": [[i, item] for i, item in edit.put], "add": edit.add}


def edit_from_json(data: Any, prev_total: int) -> Edit:
    """The `Edit` stored as `edit_json`, checked against the length of the list it edits.

    Raises:
        CheckpointFormatError: it is not an edit, or names an index the list does not have.
    """
    try:
        drop = [int(i) for i in data["drop"]]
        put = [(int(i), item) for i, item in data["put"]]
        add = list(data["add"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointFormatError(f"a stored list edit is malformed ({e!r})") from e
    if any(not 0 <= i < prev_total for i in drop) or any(not 0 <= i < prev_total for i, _ in put):
        raise CheckpointFormatError(
            f"a stored list edit names an index beyond the {prev_total} items it edits"
        )
    return Edit(drop, put, add)


_Key = tuple[str, str]  # (thread_id, checkpoint_ns)


class Heads:
    """The list channels a saver last stored per thread, to store the next versions as edits.

    An entry is valid only for the checkpoint it was stored at: a `put` whose parent is another
    checkpoint (another process wrote the thread, or it was deleted and made again) finds
    nothing and stores whole. Bounded to `size` threads (least recently stored dropped first);
    a thread that finished is dropped at once, its next run starts with an append.
    """

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._heads: OrderedDict[_Key, tuple[str, dict[str, tuple[int, list[Any]]]]] = OrderedDict()

    def edit(
        self, key: _Key, parent_id: str | None, channel: str, value: list[Any]
    ) -> tuple[int, Edit] | None:
        """(the length of the list edited, the edit) that make `value` from the version of
        `channel` stored at `parent_id`; None when that is not known or not worth it."""
        if parent_id is None:
            return None
        with self._lock:
            head = self._heads.get(key)
        if head is None or head[0] != parent_id:
            return None
        prev = head[1].get(channel)
        if prev is None:
            return None
        edit = diff(prev[1], value)
        return None if edit is None else (len(prev[1]), edit)

    def stored(
        self,
        key: _Key,
        parent_id: str | None,
        checkpoint_id: str,
        lists: dict[str, tuple[int, list[Any]]],
        finished: bool,
    ) -> None:
        """The checkpoint `checkpoint_id` was stored with these list channels (channel ->
        (version, items)); the others are as at `parent_id`."""
        if not lists and not finished:  # the hot path of a graph without list channels
            head = self._heads.get(key)
            if head is not None:
                if head[0] == parent_id:
                    self._heads[key] = (checkpoint_id, head[1])
                else:
                    self._heads.pop(key, None)
            return
        with self._lock:
            if finished:
                self._heads.pop(key, None)
                return
            head = self._heads.pop(key, None)
            channels = dict(head[1]) if head is not None and head[0] == parent_id else {}
            channels.update(lists)
            self._heads[key] = (checkpoint_id, channels)
            while len(self._heads) > self._size:
                self._heads.popitem(last=False)

    def forget(self, thread_id: str | None = None) -> None:
        """Drop what is known of `thread_id` (every namespace), or of every thread."""
        with self._lock:
            if thread_id is None:
                self._heads.clear()
                return
            for key in [k for k in self._heads if k[0] == thread_id]:
                del self._heads[key]
