"""`UntrackedValue`: a key that nodes read and write within a run, never checkpointed."""

from __future__ import annotations

from typing import Any

from .base import ChannelMarker

__all__ = ["UntrackedValue"]


class UntrackedValue(ChannelMarker):
    """The last value written, kept only as long as the run: never written into a checkpoint.

    For what cannot or should not be stored (a client, a lock, a session): nodes of the run
    that wrote it read it, and `invoke` returns it; a checkpoint, its pending writes and the
    `Send` arguments it saves leave it out, so `get_state`, a resumed run and the next
    `invoke` on the thread do not have it (the key is absent until it is written again).

    `guard=True` (the default): one write per step, as a plain key; `guard=False`: of several,
    the last one (in the order nodes were added) is kept.
    """

    __slots__ = ("guard",)

    def __init__(self, typ: Any = None, guard: bool = True) -> None:
        super().__init__(typ)
        self.guard = guard
        """Refuse a step that writes it more than once (True), or keep the last write."""
