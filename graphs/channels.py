"""`graphs.channels`: LangGraph's channel classes, as markers for state keys.

In LangGraph a channel is a Pregel object that holds one key's value. graphs has no Pregel layer;
these classes are only read, when a graph is compiled, from a state key's annotation, and give
that key the behaviour LangGraph's channel of the same name has:

```python
class State(TypedDict):
    messages: Annotated[list, DeltaChannel(merge_batch)]     # reducer(state, [w1, w2, ...])
    total: Annotated[int, BinaryOperatorAggregate(int, operator.add)]  # = Annotated[int, add]
    name: Annotated[str, LastValue(str)]                     # a plain key
```

A marker may be given as its class where LangGraph allows it (`Annotated[str, LastValue]`):
it then takes the key's type. None of them holds a value; a graph's state lives in its runs and
checkpoints, as for any other key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "BinaryOperatorAggregate",
    "ChannelMarker",
    "DeltaChannel",
    "LastValue",
]


class ChannelMarker:
    """What every marker is: the schema reader recognises a key's annotation by this class."""

    __slots__ = ("typ",)

    def __init__(self, typ: Any = None) -> None:
        self.typ = typ
        """The value's type; None: the annotated key's own (`Annotated[T, ...]`'s `T`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self.typ, '__name__', self.typ)!r})"


class LastValue(ChannelMarker):
    """The last value written: the same as a key without annotation (one writer per step)."""

    __slots__ = ()


class BinaryOperatorAggregate(ChannelMarker):
    """Writes merged by `operator(current, value)`, from `typ()` when the key is empty: the same
    as `Annotated[typ, operator]`."""

    __slots__ = ("operator",)

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any]) -> None:
        super().__init__(typ)
        self.operator = operator
        """The reducer, `(current, value) -> new value`."""


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
