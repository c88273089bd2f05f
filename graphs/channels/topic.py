"""`Topic`: a key that collects the values written to it, in a list."""

from __future__ import annotations

from typing import Any

from .base import ChannelMarker

__all__ = ["Topic"]


class Topic(ChannelMarker):
    """Every value written to the key, in a list: any number of nodes may write it in a step.

    A write that is a list gives each of its items; any other value is one item. The items
    come in the order the step's writes are applied (the order nodes were added).

    - `accumulate=False` (the default): the key holds the items of the last step that wrote
      it, and a step that does not write it empties it (the key is then absent, as LangGraph's
      empty topic is).
    - `accumulate=True`: the items of every step, oldest first (stored as appends).

    `typ` is the items' type (the key itself holds a list of them).
    """

    __slots__ = ("accumulate",)

    def __init__(self, typ: Any = None, accumulate: bool = False) -> None:
        super().__init__(typ)
        self.accumulate = accumulate
        """Keep the items of earlier steps (True), or only the last step's (False)."""
