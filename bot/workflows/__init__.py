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
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from graphs import CompiledGraph, StateGraph

from ..approvals.effects import services
from ..approvals.models import Workflow
from ..approvals.policy.schema import Schema
from . import delete_row, refund, support_agent, vendor_payment

__all__ = ["BUILTIN", "Workflow", "load_workflows", "services"]


BUILTIN: dict[str, Workflow] = {
    m.__name__.rpartition(".")[2]: Workflow(
        m.__name__.rpartition(".")[2],
        m.build,
        (m.__doc__ or "").strip().splitlines()[0],
        m.INPUTS,
    )
    for m in (refund, delete_row, vendor_payment, support_agent)
}


def load_workflows(paths: Mapping[str, str | None]) -> dict[str, Workflow]:
    """The built-in workflows plus the user's, given as `{name: "module:attribute"}`.

    Raises:
        ValueError: a path that does not import, or does not name a function returning a
            StateGraph (the message names the workflow and the path).
    """
    out = dict(BUILTIN)
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
    return out


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
