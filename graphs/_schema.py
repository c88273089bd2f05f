"""State schema: a TypedDict, whose `Annotated[T, reducer]` keys merge and whose plain keys overwrite."""

from __future__ import annotations

import dataclasses
import inspect
import operator
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

from .errors import GraphSetupError

__all__ = [
    "APPENDS_ATTR",
    "ROOT",
    "Channel",
    "channels_from_schema",
    "coercer",
    "is_typed_class",
    "schema_keys",
    "updates_of",
]

APPENDS_ATTR = "__graphs_appends__"
"""Set to True on a reducer that mostly appends (`add_messages`): a result that begins with the
very objects of the previous value is then stored as a delta, like an `operator.add` list."""

_MISSING: Any = object()

ROOT = "__root__"
"""The one channel of a root-channel graph (`StateGraph(Annotated[list, operator.add])`), whose
state is that value itself rather than a dict of keys (LangGraph's name for it)."""


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


def is_model(schema: Any) -> bool:
    """A pydantic model class (recognised without importing pydantic)."""
    return (
        isinstance(schema, type)
        and hasattr(schema, "model_fields")
        and hasattr(schema, "model_validate")
    )


def is_typed_class(schema: Any) -> bool:
    """A dataclass or a pydantic model: nodes receive instances of it."""
    return isinstance(schema, type) and (dataclasses.is_dataclass(schema) or is_model(schema))


def schema_keys(schema: type) -> list[str]:
    """The state keys a schema declares, in order."""
    if is_model(schema):
        return list(schema.model_fields)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(schema):
        return [f.name for f in dataclasses.fields(schema)]
    return list(get_type_hints(schema))


def is_root_schema(schema: Any) -> bool:
    """A schema that is a value's type (`Annotated[list, operator.add]`, `list[str]`, `int`)
    rather than a class of keys: the graph's state is one value, the root channel."""
    if isinstance(schema, type) and (
        (issubclass(schema, dict) and hasattr(schema, "__annotations__")) or is_typed_class(schema)
    ):
        return False
    return get_origin(schema) is not None or isinstance(schema, type)


def root_channel(schema: Any) -> Channel:
    """The channel of a root-channel graph: reduced when the schema is `Annotated[T, reducer]`."""
    return _channel(schema, ROOT, schema)


def channels_from_schema(schema: type) -> dict[str, Channel]:
    """Read a TypedDict, a dataclass or a pydantic model into channels.

    Raises:
        GraphSetupError: the schema is none of those, or a key is reserved or badly annotated.
    """
    typed_dict = (
        isinstance(schema, type) and issubclass(schema, dict) and hasattr(schema, "__annotations__")
    )
    if not typed_dict and not is_typed_class(schema):
        raise GraphSetupError(
            f"state schema must be a TypedDict, a dataclass or a pydantic model class (or a "
            f"value's type, for a root channel: Annotated[list, operator.add]), got {schema!r}: "
            "class State(TypedDict): messages: Annotated[list, operator.add]"
        )
    try:
        hints = get_type_hints(schema, include_extras=True)
        if not typed_dict:
            hints = {k: hints[k] for k in schema_keys(schema)}
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


def _channel(schema: Any, key: str, hint: Any) -> Channel:
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
    _check_reducer(schema, key, reducer)
    return Channel(
        key,
        reducer,
        _initial(base),
        appends=reducer is operator.add,
        maybe_appends=getattr(reducer, APPENDS_ATTR, False) is True,
    )


def _check_reducer(schema: Any, key: str, reducer: Callable[..., Any]) -> None:
    """Refuse a reducer that cannot be called as `reducer(current, update)`, at once (LangGraph
    refuses it too, with "Invalid reducer signature"), not at the first write to its key."""
    try:
        sig = inspect.signature(reducer)
    except Exception:  # noqa: BLE001 - a callable that does not describe itself: taken on trust
        return
    try:
        sig.bind(None, None)
    except TypeError:
        where = "the root channel" if key == ROOT else f"state key {key!r}"
        owner = getattr(schema, "__qualname__", None)
        raise GraphSetupError(
            f"Invalid reducer signature for {where}{f' in {owner}' if owner else ''}: "
            f"{getattr(reducer, '__qualname__', reducer)!s}{sig} cannot be called as "
            "reducer(current, update); expected (a, b) -> c, the value made of both"
        ) from None


def _initial(base: Any) -> Callable[[], Any] | None:
    origin = get_origin(base) or base
    if isinstance(origin, type):
        try:
            origin()
        except Exception:  # noqa: BLE001 -- a type without a no-argument constructor has no default
            return None
        return origin
    return None


def coercer(schema: type) -> Callable[[dict[str, Any]], Any] | None:
    """How a node's state dict becomes an instance of a dataclass or pydantic state schema
    (None for a TypedDict: nodes get the dict). Defaults fill the keys not written yet."""
    if not is_typed_class(schema):
        return None
    keys = schema_keys(schema)

    def coerce(state: dict[str, Any]) -> Any:
        return schema(**{k: state[k] for k in keys if k in state})

    return coerce


def updates_of(value: Any) -> dict[str, Any] | None:
    """A dataclass or pydantic instance given as an input or returned by a node, as updates.

    As LangGraph: a pydantic model gives the fields that were set or are not None (or whose
    default is not None); a dataclass gives every field. None for anything else.
    """
    cls = type(value)
    if is_model(cls):
        fields_set = value.model_fields_set
        out: dict[str, Any] = {}
        for key, info in cls.model_fields.items():
            v = getattr(value, key)
            if v is not None or info.default is not None or key in fields_set:
                out[key] = v
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return None
