"""`DeltaChannel`: a key whose reducer takes a step's writes at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ChannelMarker

__all__ = ["DeltaChannel"]


class DeltaChannel(ChannelMarker):
    """Writes merged in one call per step: `reducer(current, [write1, write2, ...])`, from
    `typ()` when the key is empty (a list, unless the key's type says otherwise).

    The reducer should give the same result for two batches applied one after the other as for
    their concatenation at once, as LangGraph asks (`reducer(reducer(s, xs), ys) ==
    reducer(s, xs + ys)`). An `Overwrite` among the writes replaces the value, and the step's
    other writes to the key are dropped.

    LangGraph stores such a key as the writes themselves and rebuilds it by replaying them, with
    a full copy every `snapshot_frequency` updates. graphs stores every list key as an edit of
    its previous version (the new items, or the items replaced and removed), so the key already
    costs what it changed per step; `snapshot_frequency` is checked and kept, and changes nothing.
    """

    __slots__ = ("reducer", "snapshot_frequency")

    def __init__(
        self,
        reducer: Callable[[Any, list[Any]], Any],
        typ: Any = None,
        *,
        snapshot_frequency: int = 1000,
    ) -> None:
        if type(snapshot_frequency) is not int or snapshot_frequency <= 0:
            raise ValueError(
                f"DeltaChannel(snapshot_frequency=...) must be a positive int, got "
                f"{snapshot_frequency!r}"
            )
        super().__init__(typ)
        self.reducer = reducer
        """`(current, writes) -> new value`, `writes` being the step's writes in order."""
        self.snapshot_frequency = snapshot_frequency
        """LangGraph's full-copy cadence; graphs stores edits at every step (see the class)."""
