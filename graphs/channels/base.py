"""`ChannelMarker`: the class of every `graphs.channels` marker."""

from __future__ import annotations

from typing import Any

__all__ = ["ChannelMarker", "GuardedMarker"]


class ChannelMarker:
    """What every marker is: the schema reader recognises a key's annotation by this class."""

    __slots__ = ("typ",)

    def __init__(self, typ: Any = None) -> None:
        self.typ = typ
        """The value's type; None: the annotated key's own (`Annotated[T, ...]`'s `T`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self.typ, '__name__', self.typ)!r})"


class GuardedMarker(ChannelMarker):
    """A marker of a key with one value (`UntrackedValue`, `EphemeralValue`), which may refuse
    several writes in one step.

    `guard=True` (the default): one write per step, as a plain key; `guard=False`: of several,
    the last one (in the order nodes were added) is kept.
    """

    __slots__ = ("guard",)

    def __init__(self, typ: Any = None, guard: bool = True) -> None:
        super().__init__(typ)
        self.guard = guard
        """Refuse a step that writes it more than once (True), or keep the last write."""
