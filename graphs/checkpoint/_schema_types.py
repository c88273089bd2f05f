"""The classes a graph's schemas name, allowed in its checkpoints without `register_type`.

`allow_schema_types(*schemas)` walks type annotations from the schemas a graph was compiled with
(its state, input, output and nodes' input schemas) down to every class they name: the fields of
TypedDicts, dataclasses, pydantic models and named tuples, the items of `list[X]`, `dict[str, X]`,
`set[X]`, `tuple[X, ...]` and the abstract collections, the members of `Optional`/`Union`, the
enum members of a `Literal`, the type inside `Annotated` (a reducer beside it is not walked),
`Required`/`NotRequired`, `NewType` and `type X = ...` aliases. Each dataclass, pydantic model,
enum and named tuple found is allowed in `serde` under its module-qualified name
(`serde.allow_schema_type`). Anything else (a plain class, a `Protocol`) still needs
`register_type`; langchain_core's messages are `serde`'s already.

It runs once per `compile`, never per step; what it allows comes from the code's own
declarations, never from stored data.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

from . import serde

__all__ = ["allow_schema_types"]

_WRAPPERS = {typing.ClassVar, typing.Final, typing.Required, typing.NotRequired}
_UNIONS = (typing.Union, types.UnionType)
_LEAVES = (str, bytes, int, float, bool, complex, type(None), object)


def allow_schema_types(*schemas: Any) -> list[type]:
    """Allow, in checkpoints, the classes `schemas` name (recursively); returns those newly
    allowed. Annotations that do not resolve (a forward reference to a name the module lacks)
    are skipped: their classes need `register_type`.

    Raises:
        ValueError: a class named is registered under a tag `register_type` gave another class.
    """
    seen: set[int] = set()
    allowed: list[type] = []
    for schema in schemas:
        _walk(schema, seen, allowed)
    return allowed


def _walk(hint: Any, seen: set[int], allowed: list[type]) -> None:
    if hint is None or isinstance(hint, (str, typing.ForwardRef)) or id(hint) in seen:
        return
    seen.add(id(hint))
    if type(hint).__name__ == "TypeAliasType":  # `type X = ...` (3.12; typing_extensions')
        _walk(hint.__value__, seen, allowed)
        return
    supertype = getattr(hint, "__supertype__", None)  # a NewType
    if supertype is not None:
        _walk(supertype, seen, allowed)
        return
    origin = get_origin(hint)
    if origin is not None:
        _walk_generic(hint, origin, seen, allowed)
        return
    if isinstance(hint, type):
        _walk_class(hint, seen, allowed)


def _walk_generic(hint: Any, origin: Any, seen: set[int], allowed: list[type]) -> None:
    args = get_args(hint)
    if origin is typing.Annotated:
        _walk(args[0], seen, allowed)  # the metadata (a reducer, a marker) is not a type
        return
    if origin is typing.Literal:
        for value in args:
            if isinstance(value, enum.Enum):
                _walk(type(value), seen, allowed)
        return
    if origin not in _WRAPPERS and origin not in _UNIONS:
        _walk(origin, seen, allowed)  # a generic class of the app's (`Page[Ticket]`)
    for arg in args:
        if arg is not Ellipsis:
            _walk(arg, seen, allowed)


def _walk_class(cls: type, seen: set[int], allowed: list[type]) -> None:
    if cls in _LEAVES or cls.__module__ in ("builtins", "typing", "collections.abc"):
        return
    if cls.__module__.startswith("langchain_core."):
        return  # messages: serde's own codec, loaded on first sight
    codec = _codec(cls)
    if codec is not None and serde.allow_schema_type(cls, *codec):
        allowed.append(cls)
    if not issubclass(cls, enum.Enum):
        for hint in _field_hints(cls):
            _walk(hint, seen, allowed)


def _codec(cls: type) -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """How values of `cls` are stored: (encode, decode), or None for a class that is not one
    of those a schema may name (a TypedDict is a dict, stored as one)."""
    if issubclass(cls, enum.Enum):
        return _enum_codec(cls)
    if dataclasses.is_dataclass(cls):
        return _dataclass_codec(cls)
    if _is_model(cls):
        return _model_codec(cls)
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return list, lambda data: cls(*data)
    return None


def _enum_codec(cls: type[enum.Enum]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    def encode(member: enum.Enum) -> Any:
        return member.value

    return encode, cls


def _dataclass_codec(cls: type) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    later = [f.name for f in fields if not f.init]  # set after the constructor, as stored

    def encode(value: Any) -> dict[str, Any]:
        return {name: getattr(value, name) for name in names}

    def decode(data: dict[str, Any]) -> Any:
        kept = {name: data.pop(name) for name in later if name in data}
        value = cls(**data)
        for name, field in kept.items():
            object.__setattr__(value, name, field)
        return value

    return encode, decode


def _model_codec(cls: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """A pydantic model: its fields (and extra fields) as they are, and those it was not given
    (`model_fields_set`), read back with `model_construct`: the stored values were validated
    when the model was made, and a validator is not run twice."""
    names = list(cls.model_fields)

    def encode(value: Any) -> list[Any]:
        fields = {name: getattr(value, name) for name in names}
        extra = value.__pydantic_extra__
        if extra:
            fields.update(extra)
        unset = [name for name in names if name not in value.model_fields_set]
        return [fields, unset] if unset else [fields]

    def decode(data: list[Any]) -> Any:
        fields = data[0]
        unset = set(data[1]) if len(data) > 1 else set()
        return cls.model_construct(_fields_set={k for k in fields if k not in unset}, **fields)

    return encode, decode


def _is_model(cls: type) -> bool:
    # Read from the class itself, importing nothing: another thread may be importing pydantic
    # right now (the bot loads langchain_core on a thread as it starts), and a half-imported
    # module has no `BaseModel` yet.
    return any(
        base.__name__ == "BaseModel" and base.__module__ == "pydantic.main" for base in cls.__mro__
    )


def _field_hints(cls: type) -> list[Any]:
    """The annotations of a class's fields (resolved where they resolve)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 (a forward reference that does not resolve: the raw ones)
        hints = {}
        for klass in reversed(cls.__mro__):
            hints.update(getattr(klass, "__annotations__", {}))
    if _is_model(cls):
        fields: Any = cls.model_fields  # type: ignore[attr-defined]
        return [hints.get(name, field.annotation) for name, field in fields.items()]
    if dataclasses.is_dataclass(cls):
        return [hints.get(f.name, f.type) for f in dataclasses.fields(cls)]
    return list(hints.values())
