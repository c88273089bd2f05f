"""`UntrackedValue`: a key that nodes read and write within a run, never checkpointed."""

from __future__ import annotations

from .base import GuardedMarker

__all__ = ["UntrackedValue"]


class UntrackedValue(GuardedMarker):
    """The last value written, kept only as long as the run: never written into a checkpoint.

    For what cannot or should not be stored (a client, a lock, a session): nodes of the run
    that wrote it read it, and `invoke` returns it; a checkpoint, its pending writes and the
    `Send` arguments it saves leave it out, so `get_state`, a resumed run and the next
    `invoke` on the thread do not have it (the key is absent until it is written again).

    `guard`: as `GuardedMarker`'s (one write per step by default).
    """
