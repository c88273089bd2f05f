"""`LastValue`: a plain key."""

from __future__ import annotations

from .base import ChannelMarker

__all__ = ["LastValue"]


class LastValue(ChannelMarker):
    """The last value written: the same as a key without annotation (one writer per step)."""

    __slots__ = ()
