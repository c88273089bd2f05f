"""The JSON schemas of a compiled graph's input, output and context, as LangGraph gives them
(`get_input_jsonschema()`, `get_output_jsonschema()`, `get_context_jsonschema()`), and the
pydantic models of its `input_schema` and `output_schema` properties.

As in LangGraph: a pydantic schema gives its own JSON schema; a TypedDict the one pydantic's
`TypeAdapter` makes of it; a dataclass (or a root channel) a model named after the graph
(`LangGraphInput`) whose fields are the schema's keys, each with the type its reducer takes
and its default. Pydantic reads only `typing_extensions.TypedDict` before Python 3.12, so a
`typing.TypedDict` (anywhere in the schema) is first rebuilt as one, with the same keys,
required keys, docstring and name. pydantic is imported only here, when a schema is asked for.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from typing import Any, get_args, get_origin, get_type_hints

from ._schema import ROOT, is_model, schema_keys
from ._shape import Schemas

__all__ = ["context_jsonschema", "input_model", "output_model", "state_jsonschema"]

_QUALIFIERS = (typing.Required, typing.NotRequired)
_rebuilt: dict[type, type] = {}


def _is_typeddict(tp: Any) -> bool:
    import typing_extensions

    return typing_extensions.is_typeddict(tp)


def _strip_qualifiers(hint: Any) -> Any:
    """`Required[T]` / `NotRequired[T]` -> T (they belong to the TypedDict, not the type)."""
    import typing_extensions

    while get_origin(hint) in (
        *_QUALIFIERS,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        hint = get_args(hint)[0]
    return hint


def pydantic_compatible(hint: Any) -> Any:
    """`hint` with every `typing.TypedDict` in it rebuilt as a `typing_extensions.TypedDict`
    (Python < 3.12 only: pydantic refuses the former there); anything else as it is."""
    if sys.version_info >= (3, 12):
        return hint
    if isinstance(hint, type) and _is_typeddict(hint):
        return _rebuild_typeddict(hint) if type(hint).__module__ == "typing" else hint
    args = get_args(hint)
    origin = get_origin(hint)
    if not args or origin is None or origin is typing.Literal:
        return hint
    new = tuple(pydantic_compatible(a) for a in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return hint
    if origin is typing.Annotated:
        return typing.Annotated[(new[0], *hint.__metadata__)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new]  # noqa: UP007 -- built from a tuple of members
    return origin[new if len(new) > 1 else new[0]]


def _rebuild_typeddict(td: type) -> type:
    import typing_extensions

    if td in _rebuilt:
        return _rebuilt[td]
    optional: frozenset[str] = getattr(td, "__optional_keys__", frozenset())
    fields: dict[str, Any] = {}
    for key, hint in get_type_hints(td, include_extras=True).items():
        hint = pydantic_compatible(_strip_qualifiers(hint))
        fields[key] = typing_extensions.NotRequired[hint] if key in optional else hint
    make: Any = typing_extensions.TypedDict  # (its name is not a literal here)
    new: Any = make(td.__name__, fields)
    new.__doc__, new.__module__, new.__qualname__ = td.__doc__, td.__module__, td.__qualname__
    _rebuilt[td] = new
    return typing.cast(type, new)


def _key_type(builder: Schemas, schema: type, key: str) -> Any:
    """The type a key takes, from the first schema that declares it (the state's first, as the
    key's channel is made from it): `Annotated[T, reducer]` -> T."""
    owner = builder.schema if key in builder.channels and _declares(builder.schema, key) else schema
    hint = _strip_qualifiers(get_type_hints(owner, include_extras=True).get(key, Any))
    if get_origin(hint) is typing.Annotated:
        base, *meta = get_args(hint)
        if any(callable(m) for m in meta):
            hint = base
    return pydantic_compatible(hint)


def _declares(schema: type, key: str) -> bool:
    try:
        return key in schema_keys(schema)
    except TypeError:  # a root-channel schema has no keys
        return False


def _is_optional(hint: Any) -> bool:
    return get_origin(hint) in (typing.Union, types.UnionType) and type(None) in get_args(hint)


def _default(schema: type, key: str, hint: Any) -> Any:
    """A key's default in the model: the dataclass field's, else None for an Optional type,
    else required (`...`)."""
    if dataclasses.is_dataclass(schema):
        for f in dataclasses.fields(schema):
            if f.name == key:
                if f.default is not dataclasses.MISSING and f.default is not ...:
                    return f.default
                if f.default_factory is not dataclasses.MISSING:
                    return f.default_factory()
    return None if _is_optional(hint) else ...


def _root_type(builder: Schemas) -> Any:
    hint = builder.schema
    if get_origin(hint) is typing.Annotated:
        base, *meta = get_args(hint)
        if any(callable(m) for m in meta):
            return base
    return hint


def state_jsonschema(builder: Schemas, schema: type, name: str) -> dict[str, Any]:
    """The JSON schema of `schema` (the graph's input or output schema); `name` titles it
    when it is neither a pydantic model nor a TypedDict."""
    from pydantic import TypeAdapter, create_model

    if is_model(schema):
        return typing.cast(dict[str, Any], schema.model_json_schema())  # type: ignore[attr-defined]
    if _is_typeddict(schema):
        adapter: Any = TypeAdapter(pydantic_compatible(schema))
        return typing.cast(dict[str, Any], adapter.json_schema())
    if builder.root:
        return typing.cast(
            dict[str, Any], _root_model(name, _root_type(builder), None).model_json_schema()
        )
    fields: dict[str, Any] = {}
    for key in schema_keys(schema):
        hint = _key_type(builder, schema, key)
        fields[key] = (hint, _default(schema, key, hint))
    model: Any = create_model(name, **fields)
    return typing.cast(dict[str, Any], model.model_json_schema())


def _root_model(name: str, hint: Any, default: Any = ...) -> Any:
    from pydantic import RootModel, create_model

    base: Any = RootModel[hint]
    if default is ...:
        return create_model(name, __base__=base)
    return create_model(name, __base__=base, root=(hint, default))


def context_jsonschema(schema: type | None) -> dict[str, Any] | None:
    """The JSON schema of a graph's `context_schema`; None without one."""
    from pydantic import TypeAdapter

    if schema is None:
        return None
    if is_model(schema):
        return typing.cast(dict[str, Any], schema.model_json_schema())  # type: ignore[attr-defined]
    if _is_typeddict(schema) or dataclasses.is_dataclass(schema):
        adapter: Any = TypeAdapter(pydantic_compatible(schema))
        return typing.cast(dict[str, Any], adapter.json_schema())
    raise ValueError(
        f"context_schema {schema!r} has no JSON schema: make it a pydantic model, a TypedDict "
        "or a dataclass"
    )


def input_model(builder: Schemas, name: str) -> type:
    """`input_schema` as LangGraph's Runnable gives it: a pydantic input schema itself, else a
    root model named `name` of it."""
    schema = builder.input_schema
    if is_model(schema):
        return schema
    return typing.cast(type, _root_model(name, pydantic_compatible(schema)))


def output_model(builder: Schemas, name: str) -> type:
    """`output_schema` as LangGraph gives it: a model named `name` with each output key,
    typed, defaulting to None (a root model of the value, for a root channel)."""
    from pydantic import create_model

    if builder.root:
        return typing.cast(type, _root_model(name, _root_type(builder)))
    schema = builder.output_schema
    fields: dict[str, Any] = {
        k: (_key_type(builder, schema, k), None) for k in schema_keys(schema) if k != ROOT
    }
    return typing.cast(type, create_model(name, **fields))
