"""`@entrypoint`: a function as a one-node graph on graphs' runtime.

The graph's state is a root channel that holds the function's last return value (what
`invoke` returns and `get_state().values` shows), beside two channels of its own: the input
of the current run and the value saved for the next run's `previous`. Its one node, named
after the function, reads the input and `previous`, runs the function, and writes its return
value (or `entrypoint.final(value=, save=)`'s two). Everything else (checkpoints, pauses,
resumes, streams, subgraphs, `get_state`, `update_state`) is the compiled graph's.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_args, get_origin, get_type_hints

from .._calls import await_for, gathered, wait_for
from .._context import Pause, _current
from .._run import Run
from .._schema import ROOT, Channel
from ..compiled import CompiledGraph
from ..runtime import task_runtime

if TYPE_CHECKING:
    from .._run import Task

R = TypeVar("R")
S = TypeVar("S")

INPUT = "entrypoint:input"
"""The channel holding the current run's input (what the function is called with)."""
PREVIOUS = "entrypoint:previous"
"""The channel holding what the last finished run saved: the next run's `previous`."""
INJECTED = ("config", "previous", "runtime", "store", "writer")
"""The parameters an entrypoint function may declare beside its input, by name."""


@dataclasses.dataclass(frozen=True, slots=True)
class Final(Generic[R, S]):
    """`entrypoint.final(value=, save=)`: return `value`, keep `save` as the next run's
    `previous` on the thread."""

    value: R
    """What this run returns."""
    save: S
    """What the next run on the thread gets as `previous`."""


class EntrypointRun(Run):
    """One invocation of an entrypoint: its input goes to the input channel, and its node's
    return to the output and `previous` channels."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "updates" in self.asked:
            self.live = True  # each task's `{name: result}` is streamed as the task finishes

    def check_input(
        self, update: Any, what: str, keys: frozenset[str] | None = None, *, input: bool = False
    ) -> list[tuple[str, Any]]:
        if what == "the input":
            return [(INPUT, update)]
        return super().check_input(update, what, keys, input=input)

    def writes_returned(self, result: Any) -> list[tuple[str, Any]] | None:
        if isinstance(result, Final):
            return [(ROOT, result.value), (PREVIOUS, result.save)]
        return None


class Entrypoint(CompiledGraph):
    """An `@entrypoint` function as a graph: `invoke`, `stream`, `get_state`, `update_state`
    and the rest as a compiled `StateGraph`'s."""

    run_class = EntrypointRun

    def __init__(self, graph: CompiledGraph, func: Callable[..., Any]) -> None:
        vars(self).update(vars(graph))
        self.func = func
        self.__wrapped__ = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def _types(self) -> tuple[Any, Any]:
        """The input and output types the function's annotations declare (`Any` if none)."""
        try:
            hints = get_type_hints(self.func)
        except Exception:  # noqa: BLE001 - a forward reference that does not resolve
            hints = {}
        params = list(inspect.signature(self.func).parameters)
        in_type = hints.get(params[0], Any) if params else Any
        out_type = hints.get("return", Any)
        if get_origin(out_type) is Final:
            out_type = get_args(out_type)[0]
        elif out_type is Final:
            out_type = Any
        return in_type, out_type

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of the function's input (its first parameter's annotation)."""
        return _jsonschema(self._types()[0], "LangGraphInput")

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of what the function returns (`entrypoint.final`'s `value`)."""
        return _jsonschema(self._types()[1], "LangGraphOutput")


def _jsonschema(annotation: Any, title: str) -> dict[str, Any]:
    from pydantic import TypeAdapter  # only here: importing graphs loads no pydantic

    schema = TypeAdapter(annotation).json_schema()
    return {**schema, "title": schema.get("title", title)}


def make_node(func: Callable[..., Any]) -> Callable[[Any], Any]:
    """The entrypoint's node: calls `func(input, **injected)` and returns a `Final` (its
    `timeout=` is the node's: the task runs it under its `Clock`)."""
    params = inspect.signature(func).parameters
    if not params:
        raise TypeError(
            f"@entrypoint function {func.__name__!r} takes no parameter; it must take one, its "
            "input (a dict, to pass several values)"
        )
    names = [n for n in list(params)[1:] if n in INJECTED]

    def call_args(state: tuple[Any, Any]) -> tuple[Any, dict[str, Any], Task]:
        value, previous = state
        task = _current.get()
        assert task is not None  # the node runs as a task
        kwargs: dict[str, Any] = {}
        for name in names:
            if name == "previous":
                kwargs[name] = previous
            elif name == "config":
                kwargs[name] = task.run.config
            elif name == "store":
                kwargs[name] = task.run.store
            elif name == "writer":
                kwargs[name] = task.writer()
            else:
                kwargs[name] = dataclasses.replace(task_runtime(task), previous=previous)
        return value, kwargs, task

    if inspect.iscoroutinefunction(func):

        async def anode(state: tuple[Any, Any]) -> Any:
            value, kwargs, task = call_args(state)
            try:
                out = await func(value, **kwargs)
            except Pause as pause:
                await await_for(task.calls)
                raise gathered(pause, task.calls) from None
            finally:
                await await_for(task.calls)
            return out if isinstance(out, Final) else Final(out, out)

        return anode

    def node(state: tuple[Any, Any]) -> Any:
        value, kwargs, task = call_args(state)
        try:
            out = func(value, **kwargs)
        except Pause as pause:
            wait_for(task.calls)
            raise gathered(pause, task.calls) from None
        finally:
            wait_for(task.calls)
        return out if isinstance(out, Final) else Final(out, out)

    return node


def read_input(state: dict[str, Any]) -> tuple[Any, Any]:
    """What the entrypoint's node runs on: `(input, previous)`."""
    return state.get(INPUT), state.get(PREVIOUS)


def channels() -> dict[str, Channel]:
    return {INPUT: Channel(INPUT, None), PREVIOUS: Channel(PREVIOUS, None)}
