"""State schema: a TypedDict, whose `Annotated[T, reducer]` keys merge and whose plain keys overwrite."""

from __future__ import annotations

import operator
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

from .errors import GraphSetupError

__all__ = ["APPENDS_ATTR", "Channel", "channels_from_schema"]

APPENDS_ATTR = "__graphs_appends__"
"""Set to True on a reducer that mostly appends (`add_messages`): a result that begins with the
very objects of the previous value is then stored as a delta, like an `operator.add` list."""

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Channel:
    """How one state key takes the values written to it in a step."""

    name: str
    reducer: Callable[[Any, Any], Any] | None
    """None: the key holds the last value written (one writer per step). Else: merged."""
    initial: Callable[[], Any] | None = None
    """For a reducer key: makes the value the first write is merged into (e.g. `list`)."""
    appends: bool = False
    """The reducer is `operator.add`: list values grow by concatenation (stored as deltas)."""
    maybe_appends: bool = False
    """The reducer declares `APPENDS_ATTR`: a result is a delta if its prefix is the old list."""


def channels_from_schema(schema: type) -> dict[str, Channel]:
    """Read a TypedDict into channels.

    Raises:
        GraphSetupError: the schema is not a TypedDict, or a key is reserved or badly annotated.
    """
    if not (
        isinstance(schema, type) and issubclass(schema, dict) and hasattr(schema, "__annotations__")
    ):
        raise GraphSetupError(
            f"state schema must be a TypedDict class, got {schema!r}: "
            "class State(TypedDict): messages: Annotated[list, operator.add]"
        )
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception as e:  # a forward reference that does not resolve
        raise GraphSetupError(f"cannot read the annotations of {schema.__qualname__}: {e}") from e
    channels: dict[str, Channel] = {}
    for key, hint in hints.items():
        if key.startswith("__"):
            raise GraphSetupError(
                f"state key {key!r} in {schema.__qualname__}: names starting with '__' are "
                "reserved for the runtime"
            )
        channels[key] = _channel(schema, key, hint)
    return channels


def _channel(schema: type, key: str, hint: Any) -> Channel:
    # Unwrap Required[...] / NotRequired[...] / ReadOnly[...] around Annotated.
    while get_origin(hint) in (typing.Required, typing.NotRequired):
        hint = get_args(hint)[0]
    if get_origin(hint) is not typing.Annotated:
        return Channel(key, None)
    base, *meta = get_args(hint)
    reducers = [m for m in meta if callable(m)]
    if not reducers:
        return Channel(key, None)
    if len(reducers) > 1:
        raise GraphSetupError(
            f"state key {key!r} in {schema.__qualname__} has {len(reducers)} reducers; give one"
        )
    reducer = reducers[0]
    return Channel(
        key,
        reducer,
        _initial(base),
        appends=reducer is operator.add,
        maybe_appends=getattr(reducer, APPENDS_ATTR, False) is True,
    )


def _initial(base: Any) -> Callable[[], Any] | None:
    origin = get_origin(base) or base
    if isinstance(origin, type):
        try:
            origin()
        except Exception:  # noqa: BLE001 -- a type without a no-argument constructor has no default
            return None
        return origin
    return None
