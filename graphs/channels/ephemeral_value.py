"""`EphemeralValue`: a key that the step after the one that wrote it sees, and no later one."""

from __future__ import annotations

from .base import GuardedMarker

__all__ = ["EphemeralValue"]


class EphemeralValue(GuardedMarker):
    """The value written in the step before, emptied at the end of a step that does not write it.

    The nodes of the next step read it (and routers after the step that wrote it); when that
    step completes without writing it again the key is emptied, so the nodes of the step after
    do not have it (the key is absent). A run's input is not a step: a value given as input is
    seen by the first step's nodes. Checkpoints hold it while it lasts, so a pause in the step
    that reads it keeps it for the resume; `get_state` shows it while it lasts.

    `guard`: as `GuardedMarker`'s (one write per step by default).
    """
