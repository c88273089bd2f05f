"""LangChain Runnable methods of a compiled graph that LangGraph users call: `batch`,
`abatch`, `with_config`, `copy`, `get_name`, and composing with `|`."""

from __future__ import annotations

import asyncio
import copy as _copy
from collections.abc import AsyncIterator, Iterator, Sequence
from functools import cache
from typing import Any, Self, cast

from ._types import RunConfig

__all__ = ["RunnableMethods", "merge_configs"]


def merge_configs(bound: RunConfig | None, given: RunConfig | None) -> RunConfig | None:
    """`given` over `bound`: its keys win, `configurable`, `metadata` merge key by key and
    `tags` add up."""
    if not bound:
        return given
    if not given:
        return _own_copy(bound)
    b: dict[str, Any] = dict(bound)
    g: dict[str, Any] = dict(given)
    out: dict[str, Any] = {**b, **g}
    for key in ("configurable", "metadata"):
        if key in b or key in g:
            out[key] = {**(b.get(key) or {}), **(g.get(key) or {})}
    if "tags" in b and "tags" in g:
        out["tags"] = [*b["tags"], *(t for t in g["tags"] if t not in b["tags"])]
    return cast(RunConfig, out)


class RunnableMethods:
    """Mixed into `CompiledGraph`."""

    bound_config: RunConfig | None = None
    """What `with_config` bound: the base of every run's config."""

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """The graph's `name` (or `name`), with `suffix` as LangChain adds it: `LangGraphInput`,
        or `agent_input` for a name in lower case (the titles of its JSON schemas)."""
        out: str = name or cast(Any, self).name
        if not suffix:
            return out
        return out + suffix.title() if out[:1].isupper() else f"{out}_{suffix.lower()}"

    def with_config(self, config: RunConfig | None = None, **kwargs: Any) -> Self:
        """A copy of this graph whose runs start from `config` (and `kwargs`, such as
        `recursion_limit=` or `configurable=`): `graph.with_config(recursion_limit=50)`.

        The config given to `invoke`/`stream` then goes over it (its keys win; `configurable`
        and `metadata` merge). `get_state` and `update_state` take the config they are given."""
        extra: RunConfig = {**(config or {}), **kwargs}  # type: ignore[typeddict-item]
        out = _copy.copy(self)
        out.bound_config = merge_configs(self.bound_config, extra)
        return out

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy, with the attributes in `update` replaced (`{"name": "other"}`)."""
        out = _copy.copy(self)
        for key, value in (update or {}).items():
            if not hasattr(out, key):
                raise AttributeError(f"copy(update=...): a compiled graph has no {key!r}")
            setattr(out, key, value)
        return out

    def __or__(self, other: Any) -> Any:
        """`graph | runnable`: a langchain_core `RunnableSequence` whose first step runs this
        graph (`invoke`, `stream` and `astream_events` as the graph's; its stream is the
        graph's default `updates`). Needs langchain_core."""
        from langchain_core.runnables.base import RunnableSequence, coerce_to_runnable

        return RunnableSequence(as_runnable(self), coerce_to_runnable(other))

    def __ror__(self, other: Any) -> Any:
        """`{...} | graph` or `function | graph` (a langchain_core `Runnable` on the left
        cannot take a graph: write `step | (graph | RunnablePassthrough())`, or
        `RunnableSequence(step, as_runnable(graph))`)."""
        from langchain_core.runnables.base import RunnableSequence, coerce_to_runnable

        return RunnableSequence(coerce_to_runnable(other), as_runnable(self))

    def batch(
        self,
        inputs: Sequence[Any],
        config: RunConfig | Sequence[RunConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """`invoke` each input in turn (LangChain runs them in a thread pool; here they run one
        after another, in order). `config`: one for all, or one per input. With
        `return_exceptions=True`, an input whose run raised gives its exception."""
        out: list[Any] = []
        for input, cfg in zip(inputs, _configs(config, len(inputs)), strict=True):
            try:
                out.append(cast(Any, self).invoke(input, cfg, **kwargs))
            except Exception as e:
                if not return_exceptions:
                    raise
                out.append(e)
        return out

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: RunConfig | Sequence[RunConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """`ainvoke` the inputs concurrently; results in the order of the inputs."""
        runs = [
            cast(Any, self).ainvoke(input, cfg, **kwargs)
            for input, cfg in zip(inputs, _configs(config, len(inputs)), strict=True)
        ]
        return list(await asyncio.gather(*runs, return_exceptions=return_exceptions))


def _configs(config: RunConfig | Sequence[RunConfig] | None, n: int) -> list[RunConfig | None]:
    if config is None or isinstance(config, dict):
        # Each run gets its own copy: a run writes its thread id into the config it is given.
        return [_own_copy(config) for _ in range(n)]
    configs = list(config)
    if len(configs) != n:
        raise ValueError(
            f"batch() got {n} inputs but {len(configs)} configs: give one, or one each"
        )
    return configs  # type: ignore[return-value]


def _own_copy(config: RunConfig | None) -> RunConfig | None:
    if config is None:
        return None
    return cast(RunConfig, {**config, "configurable": dict(config.get("configurable") or {})})


def as_runnable(graph: Any) -> Any:
    """The graph as a langchain_core `Runnable` (for composing it with `|`): its `invoke`,
    `ainvoke`, `stream` and `astream` are the graph's, given the step's config (so the
    graph's run reports to the sequence's callbacks, under its step)."""
    return _runnable_class()(graph)


@cache
def _runnable_class() -> type:
    from langchain_core.runnables import Runnable

    class GraphRunnable(Runnable[Any, Any]):
        def __init__(self, graph: Any) -> None:
            self.graph = graph
            self.name = graph.name

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            return self.graph.invoke(input, config, **kwargs)

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            return await self.graph.ainvoke(input, config, **kwargs)

        def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
            yield from self.graph.stream(input, config, **kwargs)

        async def astream(
            self, input: Any, config: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            async for chunk in self.graph.astream(input, config, **kwargs):
                yield chunk

    return GraphRunnable
