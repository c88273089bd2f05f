"""How a node's function is read into a `NodeSpec` (`_specs.py`): does it take the config, by which
name; which injections it asks for (handed from the running task); where its `Command` may go.

Pure readings of a function: below the builder and the prebuilt agent, which make specs with them.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args, get_origin

from ._context import _current
from ._schema import is_root_schema
from ._types import Command
from .errors import GraphSetupError, NodeError
from .runtime import task_runtime


def _config_by_name(fn: Callable[..., Any]) -> bool:
    """`fn(state, *, config)`: the config is a keyword-only parameter."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "config" and p.kind is p.KEYWORD_ONLY for p in params)


def _with_config_by_name(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(state: Any, config: Any) -> Any:
        return fn(state, config=config)

    call.__wrapped__ = fn  # type: ignore[attr-defined]  # what get_graph() reads
    return call


def _goto_annotation(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The node names of a `-> Command[Literal["a", "b"]]` return annotation, if it has one."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return ()
    found: list[str] = []
    todo = [hints.get("return")]
    while todo:
        hint = todo.pop()
        origin = get_origin(hint)
        if origin is Command:
            for arg in get_args(hint):
                if get_origin(arg) is Literal:
                    found += [a for a in get_args(arg) if isinstance(a, str)]
        elif origin is not None:  # a union, Optional[...], ...
            todo.extend(get_args(hint))
    return tuple(found)


def _may_return(fn: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `fn` may return one of `kinds` (or a list of them), as far as its return
    annotation tells: yes without one, or with one that does not resolve or says `Any`."""
    if not inspect.isroutine(fn) and callable(fn):
        fn = fn.__call__  # an object with __call__: its method's annotation
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve rules nothing out
        return True
    if "return" not in hints:
        return True
    todo = [hints["return"]]
    while todo:
        hint = todo.pop()
        if hint is Any or hint is object or (isinstance(hint, type) and issubclass(hint, kinds)):
            return True
        origin = get_origin(hint)
        if isinstance(origin, type) and issubclass(origin, kinds):
            return True
        if origin in (typing.Union, types.UnionType, list, tuple, Sequence):
            todo.extend(a for a in get_args(hint) if a is not Ellipsis)  # `X | None`, `list[X]`
        elif origin is typing.Annotated:
            todo.append(get_args(hint)[0])
    return False


INJECTED = ("writer", "runtime", "store", "error")
"""Parameters a node may declare by name to be handed the run's `StreamWriter`, `Runtime` and
store (`compile(store=)`), and, in an error handler, the `NodeError` (None elsewhere)."""


def _is_injected(p: inspect.Parameter) -> bool:
    """An `INJECTED` parameter; `error` only when annotated `NodeError`, as LangGraph's."""
    if p.name != "error":
        return p.name in INJECTED
    note = p.annotation
    return note is NodeError or (isinstance(note, str) and note.endswith("NodeError"))


def _injected(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The `INJECTED` parameters `fn` declares (by keyword, or positionally after the state)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params[1:] if _is_injected(p) and p.kind in kinds)


def _with_injected(
    fn: Callable[..., Any],
    names: tuple[str, ...],
    config: Literal["pos", "kw", "no"],
    is_async: bool,
) -> Callable[..., Any]:
    """`fn` called as `(state, config)`, given what it declared of `writer` and `runtime`."""

    def kwargs(cfg: Any) -> dict[str, Any]:
        task = _current.get()
        assert task is not None  # nodes run inside their task
        out: dict[str, Any] = {}
        if "writer" in names:
            out["writer"] = task.run.writer
        if "runtime" in names:
            out["runtime"] = task_runtime(task)
        if "store" in names:
            out["store"] = task.run.store
        if "error" in names:
            out["error"] = task.node_error
        if config == "kw":
            out["config"] = cfg
        return out

    if is_async:

        async def acall(state: Any, cfg: Any) -> Any:
            if config == "pos":
                return await fn(state, cfg, **kwargs(cfg))
            return await fn(state, **kwargs(cfg))

        acall.__wrapped__ = fn  # type: ignore[attr-defined]  # what get_graph() reads
        return acall

    def call(state: Any, cfg: Any) -> Any:
        if config == "pos":
            return fn(state, cfg, **kwargs(cfg))
        return fn(state, **kwargs(cfg))

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def _takes_config(fn: Callable[..., Any], what: str) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and not _is_injected(p)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    if len(positional) == 2 or any(p.name == "config" for p in params):
        return True
    if len(positional) > 2:
        raise GraphSetupError(
            f"{what} takes {len(positional)} arguments; it must take (state) or (state, config)"
        )
    return False


def _first_param_schema(fn: Any) -> type | None:
    """The schema class `fn`'s first parameter is annotated with (`def node(state: Private)`),
    if it is one: a TypedDict, a dataclass or a pydantic model."""
    if not inspect.isroutine(fn):
        return None
    try:
        params = list(inspect.signature(fn).parameters)
        hint = typing.get_type_hints(fn).get(params[0]) if params else None
    except Exception:  # noqa: BLE001 -- an annotation that does not resolve declares nothing
        return None
    if not isinstance(hint, type) or is_root_schema(hint):
        return None
    return hint


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 -- the method itself: is it async?
    )
