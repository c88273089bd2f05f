"""Checkpoint serialization: JSON with type tags and a format version.

Nothing is pickled and no class named in stored data is ever imported. Plain JSON values are
stored as themselves; every other value is a one-key object `{"$t": [tag, data]}` whose tag
must be on the allow-list below (or registered by the application with `register_type`). A
stored object that happens to have a `"$t"` key of its own is escaped with the tag `dict`.

langchain_core's messages (`HumanMessage`, `AIMessage`, `ToolMessage`, ...) are on the
allow-list too, under the tag `message` (`_messages.py`): they are registered on first sight, in
either direction, so that langchain_core is loaded only by a process that has messages.

Values of the types a compiled graph's schemas name (its state, input, output and nodes' input
schemas: dataclasses, pydantic models, enums, named tuples, and those inside them, found through
TypedDicts, `list[X]`, `dict[str, X]`, `Optional`, `Union`, `Literal`, `Annotated`) are allowed
too, without `register_type`: `compile` hands them to `allow_schema_types` (`_schema_types.py`),
each under its module-qualified name (`myapp.state.Ticket`). The tag read back is looked up among
the classes this process's code declared; nothing named in stored data is imported.

`dumps(value)` returns `str`; `loads(text)` reverses it. Values are wrapped as
`{"v": FORMAT_VERSION, "d": ...}` only where a whole record is stored (`dumps_record`), so
that a later format can be recognised and read or refused with a clear error.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

from .._types import Command, Interrupt, Overwrite, Send, TimeoutPolicy
from ..errors import CheckpointFormatError, SerializationError

__all__ = [
    "FORMAT_VERSION",
    "allow_schema_type",
    "compact_json",
    "dumps",
    "dumps_record",
    "loads",
    "loads_record",
    "register_type",
    "schema_tag",
]

FORMAT_VERSION = 1
"""Bump when the stored shape changes; keep a golden checkpoint of every version in the tests."""

_TAG = "$t"

_Encoder = Callable[[Any], Any]
_Decoder = Callable[[Any], Any]

# tag -> (type, encode(value) -> json-able, decode(json-able) -> value)
_BY_TAG: dict[str, tuple[type, _Encoder, _Decoder]] = {}
_BY_TYPE: dict[type, tuple[str, _Encoder]] = {}
# The tags allowed because a compiled graph's schema names their class (`allow_schema_type`):
# an explicit `register_type` of the class, or of the tag, takes their place.
_SCHEMA_TAGS: set[str] = set()


def register_type(
    cls: type, tag: str, encode: _Encoder, decode: _Decoder, *, replace: bool = False
) -> None:
    """Allow instances of `cls` in state, stored under `tag`.

    `encode` turns an instance into plain JSON-able data (it may contain other supported
    values); `decode` turns that data back into an instance. The tag is what is stored, so keep
    it stable across renames of the class.
    """
    if not replace and (
        (tag in _BY_TAG and tag not in _SCHEMA_TAGS)
        or (cls in _BY_TYPE and _BY_TYPE[cls][0] not in _SCHEMA_TAGS)
    ):
        raise ValueError(f"type tag {tag!r} or class {cls.__qualname__} is already registered")
    # The tag is now the application's own; a schema's other tag for `cls` stays in `_BY_TAG`,
    # so values stored under it are still read.
    _SCHEMA_TAGS.discard(tag)
    _BY_TAG[tag] = (cls, encode, decode)
    _BY_TYPE[cls] = (tag, encode)


def schema_tag(cls: type) -> str:
    """The tag a class named by a graph's schema is stored under: its module-qualified name."""
    return f"{cls.__module__}.{cls.__qualname__}"


def allow_schema_type(cls: type, encode: _Encoder, decode: _Decoder) -> bool:
    """Allow `cls` because a compiled graph's schema names it (`_schema_types.py`), under
    `schema_tag(cls)`. False, changing nothing, when the class is allowed already (by a
    schema, the allow-list or `register_type`, which wins).

    A class declared again under the same name (a module run again, a notebook cell, a
    function that defines one called twice) takes the tag over: values stored under it are
    read as the newest class of that name, as pickle would.

    Raises:
        ValueError: `register_type` gave the tag to another class.
    """
    if cls in _BY_TYPE:
        return False
    tag = schema_tag(cls)
    if tag in _BY_TAG and tag not in _SCHEMA_TAGS:
        raise ValueError(
            f"the state schema names {tag}, whose tag {tag!r} register_type gave to "
            f"{_BY_TAG[tag][0].__module__}.{_BY_TAG[tag][0].__qualname__}: register {tag} "
            "under another tag"
        )
    _SCHEMA_TAGS.add(tag)
    _BY_TAG[tag] = (cls, encode, decode)
    _BY_TYPE[cls] = (tag, encode)
    return True


def _decode_float(data: str) -> float:
    return float(data)


register_type(tuple, "tuple", list, tuple)
register_type(set, "set", lambda v: sorted(v, key=repr), set)
register_type(frozenset, "frozenset", lambda v: sorted(v, key=repr), frozenset)
register_type(bytes, "bytes", lambda v: base64.b64encode(v).decode("ascii"), base64.b64decode)
register_type(dt.datetime, "datetime", dt.datetime.isoformat, dt.datetime.fromisoformat)
register_type(dt.date, "date", dt.date.isoformat, dt.date.fromisoformat)
register_type(dt.time, "time", dt.time.isoformat, dt.time.fromisoformat)
register_type(
    dt.timedelta,
    "timedelta",
    lambda v: [v.days, v.seconds, v.microseconds],
    lambda d: dt.timedelta(days=d[0], seconds=d[1], microseconds=d[2]),
)
register_type(decimal.Decimal, "decimal", str, decimal.Decimal)
register_type(uuid.UUID, "uuid", str, uuid.UUID)
register_type(
    Interrupt,
    "interrupt",
    lambda v: [v.value, v.id, v.node, v.index, v.resumable],
    lambda d: Interrupt(d[0], d[1], d[2], d[3], d[4]),
)
register_type(
    TimeoutPolicy,
    "timeout_policy",
    lambda v: [v.run_timeout, v.idle_timeout, v.refresh_on],
    lambda d: TimeoutPolicy(run_timeout=d[0], idle_timeout=d[1], refresh_on=d[2]),
)
# `[node, arg]`, and `[node, arg, timeout]` for a `Send(timeout=)` (LangGraph's two forms).
register_type(
    Send,
    "send",
    lambda v: [v.node, v.arg] if v.timeout is None else [v.node, v.arg, v.timeout],
    lambda d: Send(d[0], d[1]) if len(d) == 2 else Send(d[0], d[1], timeout=d[2]),
)
# A finished task's writes are saved as it finishes, so an `Overwrite` it returned is stored.
register_type(Overwrite, "overwrite", lambda v: v.value, Overwrite)


def _decode_command(d: list[Any]) -> Command:
    has_resume, resume, update, goto, graph = d
    if has_resume:
        return Command(resume=resume, update=update, goto=goto, graph=graph)
    return Command(update=update, goto=goto, graph=graph)


register_type(
    Command,
    "command",
    lambda v: [v.has_resume, v.resume, v.update, v.goto, v.graph],
    _decode_command,
)


_MESSAGES_LOADED = False


def _load_messages() -> bool:
    """Register langchain_core's message classes (once). False if they already were."""
    global _MESSAGES_LOADED
    if _MESSAGES_LOADED:
        return False
    try:  # lazy: `_messages` imports langchain_core, loaded only by a checkpoint holding messages
        from . import _messages
    except ImportError as e:  # stored by a process that had langchain_core; this one has not
        raise CheckpointFormatError(
            f"the checkpoint holds langchain_core messages, which need langchain-core: {e}"
        ) from e
    for cls in _messages.MESSAGE_CLASSES.values():
        _BY_TYPE[cls] = (_messages.TAG, _messages.encode)
    _BY_TAG[_messages.TAG] = (_messages.BaseMessage, _messages.encode, _messages.decode)
    _MESSAGES_LOADED = True
    return True


def _enc(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        return {_TAG: ["float", repr(value)]}
    if t is list:
        # A str, an int, a bool or None is itself: no call for it (most leaves are).
        return [
            v if (u := type(v)) is str or u is int or u is bool or v is None else _enc(v)
            for v in value
        ]
    if t is dict:
        if all(type(k) is str for k in value):
            out = {
                k: v if (u := type(v)) is str or u is int or u is bool or v is None else _enc(v)
                for k, v in value.items()
            }
            if _TAG in value:
                return {_TAG: ["dict", out]}
            return out
        return {_TAG: ["map", [[_enc(k), _enc(v)] for k, v in value.items()]]}
    entry = _BY_TYPE.get(t)
    if entry is None and t.__module__.startswith("langchain_core.") and _load_messages():
        entry = _BY_TYPE.get(t)
    if entry is not None:
        tag, encode = entry
        return {_TAG: [tag, _enc(encode(value))]}
    raise SerializationError(
        f"cannot store a value of type {t.__module__}.{t.__qualname__} in a checkpoint: "
        "state must be JSON-like (dict, list, str, int, float, bool, None), a type on the "
        "allow-list (tuple, set, bytes, datetime, date, time, timedelta, Decimal, UUID, "
        "langchain_core messages), or a dataclass, pydantic model, enum or named tuple that a "
        "compiled graph's state, input, output or node schema names; register "
        f"{t.__qualname__} with graphs.checkpoint.serde.register_type, or name it in the schema"
    )


def _dec(data: Any) -> Any:
    t = type(data)
    if t is list:
        return [_dec(v) for v in data]
    if t is dict:
        tagged = data.get(_TAG)
        if tagged is None or len(data) != 1:
            return {k: _dec(v) for k, v in data.items()}
        tag, payload = tagged
        if tag == "dict":
            return {k: _dec(v) for k, v in payload.items()}
        if tag == "map":
            return {_hashable(_dec(k)): _dec(v) for k, v in payload}
        if tag == "float":
            return _decode_float(payload)
        entry = _BY_TAG.get(tag)
        if entry is None and tag == "message" and _load_messages():
            entry = _BY_TAG.get(tag)
        if entry is None:
            raise CheckpointFormatError(
                f"unknown type tag {tag!r}: the value was stored by code that registered a type, "
                "or compiled a graph whose schema names a class, that this process has not; "
                "compile that graph (import its module) before reading, or register the type "
                "(graphs.checkpoint.serde.register_type). Nothing named in stored data is "
                "imported"
            )
        return entry[2](_dec(payload))
    return data


def _hashable(key: Any) -> Any:
    return tuple(key) if type(key) is list else key


def _encoder(sort_keys: bool) -> Callable[[Any], str]:
    """`json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
    sort_keys=sort_keys).encode`, made once. Its `encode` builds json's C encoder afresh at
    every call, a third of a small value's time (a checkpoint writes several), so the C encoder
    is built here once, without the check for a value that holds itself: what graphs stores
    comes from `_enc`, which rebuilds each container and ends such a value in RecursionError.
    Where json has no C encoder, the encoder's own `encode`."""
    options = {"separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}
    plain = json.JSONEncoder(**options, sort_keys=sort_keys)  # type: ignore[arg-type]
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:
        return plain.encode
    chunks = make(None, plain.default, quote, None, ":", ",", sort_keys, False, False)
    return lambda data: "".join(chunks(data, 0))


_COMPACT = _encoder(sort_keys=False)
_SORTED = _encoder(sort_keys=True)


def compact_json(data: Any, *, sort_keys: bool = False) -> str:
    """Plain JSON data as compact text: no spaces, non-ASCII as is, NaN and infinities refused.

    Every JSON text graphs stores is written by this function. Keys keep their order (a state
    dict reads back in the order it was written); `sort_keys=True` gives one canonical text per
    value, for hashing or comparing.

    Raises:
        ValueError: `data` holds a float that is NaN or infinite.
        TypeError: `data` holds something that is not plain JSON data.
        RecursionError: `data` holds itself.
    """
    return (_SORTED if sort_keys else _COMPACT)(data)


def dumps(value: Any) -> str:
    """Serialize one value to tagged JSON text.

    Raises:
        SerializationError: the value (or something inside it) is not storable.
    """
    return compact_json(_enc(value))


def loads(text: str | bytes) -> Any:
    """Read what `dumps` wrote.

    Raises:
        CheckpointFormatError: the text is not valid or names an unknown type tag.
    """
    try:
        return _dec(json.loads(text))
    except CheckpointFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise CheckpointFormatError(f"stored value is not valid tagged JSON: {e}") from e


def dumps_record(value: Any) -> str:
    """Like `dumps`, with the format version around it: `{"v": 1, "d": ...}`."""
    return compact_json({"v": FORMAT_VERSION, "d": _enc(value)})


def loads_record(text: str | bytes) -> Any:
    """Read what `dumps_record` wrote, refusing a format this code does not know."""
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise CheckpointFormatError(f"stored record is not JSON: {e}") from e
    if not isinstance(raw, dict) or "v" not in raw or "d" not in raw:
        raise CheckpointFormatError("stored record has no format version ('v')")
    if raw["v"] != FORMAT_VERSION:
        raise CheckpointFormatError(
            f"stored record has format version {raw['v']!r}; this code reads version "
            f"{FORMAT_VERSION}. Upgrade signoff to read it."
        )
    try:
        return _dec(raw["d"])
    except CheckpointFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise CheckpointFormatError(f"stored record is not valid tagged JSON: {e}") from e
