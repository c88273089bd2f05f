"""The workflows signoff ships with, the registry that names them, and what their nodes can use.

A workflow is a function that returns a `graphs.StateGraph` (not compiled: signoff compiles it
with its own checkpointer). Register yours by dotted path in the policy file:

```toml
[workflows.my_flow]
path = "mypkg.flows:build"
starters = ["@support"]
```

A workflow declares its inputs beside its builder, as `INPUTS` (a `Schema`; an attribute of the
function or of its module): a start whose inputs do not fit is refused, field by field, before
anything is recorded. A tuple of names is accepted too (with `REQUIRED`, the names a run cannot
start without), but then the values are not checked.

Node code reaches signoff's services through its config: `services(config).effects`.

A bundled workflow's module is imported when the workflow is first looked up (`Workflows`): the
support agent's loads langchain_core, most of a second, which a command or a bot that never
runs it does without. The policy's own workflows are imported, and checked, at load.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from graphs import CompiledGraph, StateGraph

from ..approvals.effects import services
from ..approvals.models import Workflow
from ..approvals.policy.schema import Schema

__all__ = ["BUILTIN", "BUNDLED", "Workflow", "Workflows", "load_workflows", "services"]

BUNDLED = ("refund", "delete_row", "vendor_payment", "support_agent")
"""The workflows signoff ships with, each the module of this package of the same name (its
`build`, its `INPUTS`, its docstring's first line as the description)."""

if TYPE_CHECKING:
    BUILTIN: dict[str, Workflow]
    """Every bundled workflow by name, their modules imported (see `__getattr__`)."""


def _bundled(name: str) -> Workflow:
    module = importlib.import_module(f"{__name__}.{name}")
    doc = (module.__doc__ or "").strip().splitlines()[0]
    return Workflow(name, module.build, doc, module.INPUTS)


class Workflows(Mapping[str, Workflow]):
    """The workflows signoff can run, by name: the bundled ones, then those `declared` (which
    may take a bundled one's name, and its place). A bundled one is imported on its first
    lookup; its name is known before (`in`, iterating, `len` import nothing)."""

    def __init__(self, declared: Mapping[str, Workflow] | None = None) -> None:
        self._found = dict(declared or {})
        self._names = tuple(dict.fromkeys([*BUNDLED, *self._found]))

    def __getitem__(self, name: str) -> Workflow:
        found = self._found.get(name)
        if found is None:
            if name not in BUNDLED:
                raise KeyError(name)
            found = self._found[name] = _bundled(name)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"Workflows({list(self._names)!r})"


def __getattr__(name: str) -> Any:
    """`BUILTIN`, the bundled workflows as a dict (PEP 562: their modules imported only for
    whoever asks for it)."""
    if name == "BUILTIN":
        return dict(Workflows())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_workflows(paths: Mapping[str, str | None]) -> Workflows:
    """The bundled workflows plus the user's, given as `{name: "module:attribute"}`: each of
    the user's imported and built once here, so that a wrong path stops start-up.

    Raises:
        ValueError: a path that does not import, or does not name a function returning a
            StateGraph (the message names the workflow and the path).
    """
    out: dict[str, Workflow] = {}
    for name, path in paths.items():
        if not path:
            continue
        module_name, _, attr = path.partition(":")
        if not attr:
            raise ValueError(
                f"workflow {name!r}: path {path!r} must look like 'package.module:function'"
            )
        try:
            module = importlib.import_module(module_name)
            target: Any = getattr(module, attr)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"workflow {name!r}: cannot import {path!r}: {e}") from e
        build = (lambda g=target: g) if isinstance(target, StateGraph) else target
        if not callable(build):
            raise ValueError(  # noqa: TRY004 -- a configuration error, like the others here
                f"workflow {name!r}: {path!r} is not a function returning a StateGraph"
            )
        _check_build(name, path, build)
        doc = (getattr(target, "__doc__", None) or name).strip().splitlines()[0]
        out[name] = Workflow(name, build, doc, _schema(name, target, module))
    return Workflows(out)


def _check_build(name: str, path: str, build: Any) -> None:
    """Call `build` once, at load, so that a function returning the wrong thing (or raising)
    stops start-up with the workflow's name, its path and what came back, not a traceback at
    its first run."""
    try:
        graph = build()
    except Exception as e:
        raise ValueError(f"workflow {name!r}: {path}() raised {type(e).__name__}: {e}") from e
    if isinstance(graph, StateGraph):
        return
    kind = type(graph)
    got = "None" if graph is None else f"a {kind.__module__}.{kind.__qualname__}"
    got = got.replace("a builtins.", "a ")
    if isinstance(graph, CompiledGraph):
        hint = "return the StateGraph itself, not compiled: signoff compiles it with its own checkpointer"
    elif graph is None:
        hint = "it must return a graphs.StateGraph (is `return g` missing?)"
    else:
        hint = "it must return a graphs.StateGraph (not compiled)"
    raise ValueError(f"workflow {name!r}: {path}() returned {got}, not a StateGraph; {hint}")


def _schema(name: str, target: Any, module: Any) -> Schema:
    inputs = getattr(target, "INPUTS", getattr(module, "INPUTS", ()))
    if isinstance(inputs, Schema):
        return inputs
    required = getattr(target, "REQUIRED", getattr(module, "REQUIRED", ()))
    try:
        return Schema.loose(tuple(inputs), tuple(required))
    except TypeError as e:
        raise ValueError(  # a configuration error, like the others here
            f"workflow {name!r}: INPUTS must be a Schema or a tuple of names, got {inputs!r}"
        ) from e
