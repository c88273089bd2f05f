"""`ChannelMarker`: the class of every `graphs.channels` marker."""

from __future__ import annotations

from typing import Any

__all__ = ["ChannelMarker"]


class ChannelMarker:
    """What every marker is: the schema reader recognises a key's annotation by this class."""

    __slots__ = ("typ",)

    def __init__(self, typ: Any = None) -> None:
        self.typ = typ
        """The value's type; None: the annotated key's own (`Annotated[T, ...]`'s `T`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self.typ, '__name__', self.typ)!r})"
