"""`graphs.channels`: LangGraph's channel classes, as markers for state keys.

In LangGraph a channel is a Pregel object that holds one key's value. graphs has no Pregel layer;
these classes are only read, when a graph is compiled, from a state key's annotation, and give
that key the behaviour LangGraph's channel of the same name has:

```python
class State(TypedDict):
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
