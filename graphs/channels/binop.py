"""`BinaryOperatorAggregate`: a reducer key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ChannelMarker

__all__ = ["BinaryOperatorAggregate"]


class BinaryOperatorAggregate(ChannelMarker):
    """Writes merged by `operator(current, value)`, from `typ()` when the key is empty: the same
    as `Annotated[typ, operator]`."""

    __slots__ = ("operator",)

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any]) -> None:
        super().__init__(typ)
        self.operator = operator
        """The reducer, `(current, value) -> new value`."""
