"""State schema: a TypedDict, whose `Annotated[T, reducer]` keys merge and whose plain keys overwrite."""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import operator
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

from .channels import (
    BinaryOperatorAggregate,
    ChannelMarker,
    DeltaChannel,
    EphemeralValue,
    LastValue,
    Topic,
    UntrackedValue,
)
from .errors import GraphSetupError
from .managed import ManagedValue

__all__ = [
    "APPENDS_ATTR",
    "DELTA",
    "EPHEMERAL",
    "ROOT",
    "TOPIC",
    "UNTRACKED",
    "Channel",
    "channels_from_schema",
    "coercer",
    "is_typed_class",
    "managed_from_schema",
    "schema_keys",
    "updates_of",
]

APPENDS_ATTR = "__graphs_appends__"
"""Set to True on a reducer that mostly appends (`add_messages`): a result that begins with the
very objects of the previous value is then stored as a delta, like an `operator.add` list."""

_MISSING: Any = object()

DELTA = "delta"
"""`Channel.kind` of a `DeltaChannel` key: its reducer takes the step's writes as one list."""
EPHEMERAL = "ephemeral"
"""`Channel.kind` of an `EphemeralValue` key: emptied by a step that does not write it."""
TOPIC = "topic"
"""`Channel.kind` of a `Topic` key: every write's items, in a list."""
UNTRACKED = "untracked"
"""`Channel.kind` of an `UntrackedValue` key: kept by the run, left out of checkpoints."""

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
    kind: str | None = None
    """A `graphs.channels` marker whose writes are not those of a plain or reducer key (None
    for every other key)."""
    accumulate: bool = False
    """For a `Topic` key: keep the items of earlier steps."""
    guard: bool = True
    """For an `UntrackedValue` or `EphemeralValue` key: one write per step (else the last one
    is kept)."""


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
        if _managed(hint) is not None:
            continue  # computed for each node run (`graphs.managed`), not a channel
        if key.startswith("__"):
            raise GraphSetupError(
                f"state key {key!r} in {schema.__qualname__}: names starting with '__' are "
                "reserved for the runtime"
            )
        channels[key] = _channel(schema, key, hint)
    return channels


def managed_from_schema(schema: Any) -> dict[str, Any]:
    """The managed keys of a schema (`remaining_steps: RemainingSteps`), each with its
    `ManagedValue` class; empty for anything that is not a class of keys."""
    if not isinstance(schema, type):
        return {}
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception:  # noqa: BLE001 -- channels_from_schema reports unreadable annotations
        return {}
    found = {key: _managed(hint) for key, hint in hints.items()}
    return {key: kind for key, kind in found.items() if kind is not None}


def _managed(hint: Any) -> Any:
    """The `ManagedValue` class an annotation names (`Annotated[int, RemainingStepsManager]`,
    maybe under `NotRequired`), else None."""
    while get_origin(hint) in (typing.Required, typing.NotRequired):
        hint = get_args(hint)[0]
    if get_origin(hint) is not typing.Annotated:
        return None
    for meta in get_args(hint)[1:]:
        if isinstance(meta, type) and issubclass(meta, ManagedValue):
            return meta
    return None


def _channel(schema: Any, key: str, hint: Any) -> Channel:
    # Unwrap Required[...] / NotRequired[...] / ReadOnly[...] around Annotated.
    while get_origin(hint) in (typing.Required, typing.NotRequired):
        hint = get_args(hint)[0]
    if get_origin(hint) is not typing.Annotated:
        return Channel(key, None)
    base, *meta = get_args(hint)
    markers = [m for m in meta if _is_marker(m)]
    if markers:
        return _marked(schema, key, base, markers, meta)
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


def _is_marker(meta: Any) -> bool:
    return isinstance(meta, ChannelMarker) or (
        isinstance(meta, type) and issubclass(meta, ChannelMarker)
    )


def _marked(schema: Any, key: str, base: Any, markers: list[Any], meta: list[Any]) -> Channel:
    """The channel of a key annotated with a `graphs.channels` marker."""
    where = f"state key {key!r} in {getattr(schema, '__qualname__', schema)!r}"
    if len(markers) > 1 or any(callable(m) and not _is_marker(m) for m in meta):
        raise GraphSetupError(
            f"{where} has {len(meta)} annotations, among them the channel {markers[0]!r}; give "
            "it one: a channel or a reducer"
        )
    marker = markers[0]
    if isinstance(marker, type):
        try:
            marker = marker()
        except TypeError as e:
            raise GraphSetupError(
                f"{where}: the channel {marker.__name__} needs arguments ({e}): "
                f"Annotated[T, {marker.__name__}(...)]"
            ) from e
    typ = base if marker.typ is None else marker.typ
    if isinstance(marker, BinaryOperatorAggregate):
        op = marker.operator
        return Channel(
            key,
            op,
            _initial(typ),
            appends=op is operator.add,
            maybe_appends=getattr(op, APPENDS_ATTR, False) is True,
        )
    if isinstance(marker, LastValue):
        return Channel(key, None)
    if isinstance(marker, DeltaChannel):
        # A result that begins with the previous list's very items is stored as its new items.
        return Channel(key, marker.reducer, _initial(typ), maybe_appends=True, kind=DELTA)
    if isinstance(marker, UntrackedValue):
        return Channel(key, None, kind=UNTRACKED, guard=marker.guard)
    if isinstance(marker, EphemeralValue):
        return Channel(key, None, kind=EPHEMERAL, guard=marker.guard)
    if isinstance(marker, Topic):  # no empty value: an empty topic is an absent key
        return Channel(key, None, kind=TOPIC, accumulate=marker.accumulate)
    raise GraphSetupError(f"{where}: graphs does not know the channel {marker!r}")


_ABSTRACT = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}
"""The concrete type whose `()` is the empty value of a key typed by an abstract collection."""


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
    # As LangGraph's BinaryOperatorAggregate: Annotated/Required/NotRequired inside the type
    # (`Annotated[NotRequired[list], add]`) do not hide its empty value.
    while get_origin(base) in (typing.Annotated, typing.Required, typing.NotRequired):
        base = get_args(base)[0]
    origin = get_origin(base) or base
    origin = _ABSTRACT.get(origin, origin)
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
