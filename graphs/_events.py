"""langchain_core callbacks for graph runs and their tasks, and `astream_events` on top of them.

When a run's config has `callbacks` (a tracer, or `astream_events`' own handler), the run
reports to them as LangGraph's does: a chain run for the graph (named `compile(name=)`, under
the config's `run_id`), and under it, one chain run per task (named after its node, tagged
`graph:step:N`, with the `langgraph_*` metadata); a chat model a node calls reports under its
task's run, and a subgraph's run under the task that runs it. Without `callbacks` none of this
runs, and langchain_core is not imported.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._stream import task_metadata
from ._timeout import progress_handler
from .errors import GraphInterrupt

if TYPE_CHECKING:
    from ._run import Run, Task

__all__ = ["astream_events", "traced"]


def traced(run: Run) -> bool:
    """Whether the run reports to langchain_core callbacks: its config has some, or it is a
    subgraph's run inside a task that does."""
    parent = run.parent
    return "callbacks" in run.config or (parent is not None and parent.traced is not None)


def _start_args(run: Run) -> tuple[Any, dict[str, Any]]:
    config = cast(dict[str, Any], run.config)
    callbacks = config.get("callbacks")
    parent = run.parent
    if parent is not None and parent.traced is not None:
        callbacks = parent.traced.get_child()  # under the task that runs this subgraph
    kwargs = {
        "inheritable_callbacks": callbacks,
        "inheritable_tags": config.get("tags"),
        "inheritable_metadata": config.get("metadata"),
    }
    # A subgraph's config is its parent's: the run id and name given are the parent's.
    top = parent is None
    start = {
        "name": (config.get("run_name") if top else None) or run.graph.name,
        "run_id": config.get("run_id") if top else None,
    }
    return kwargs, start


def start_sync(run: Run, input: Any) -> Any:
    """Report the graph run's start; return its chain run (`CallbackManagerForChainRun`)."""
    from langchain_core.callbacks.manager import CallbackManager

    kwargs, start = _start_args(run)
    return CallbackManager.configure(**kwargs).on_chain_start(None, input, **start)


async def start_async(run: Run, input: Any) -> Any:
    from langchain_core.callbacks.manager import AsyncCallbackManager

    kwargs, start = _start_args(run)
    return await AsyncCallbackManager.configure(**kwargs).on_chain_start(None, input, **start)


def _task_manager(task: Task) -> Any:
    run = task.run
    step = run.step + 1
    child = run.chain.get_child(f"graph:step:{step}")
    child.add_metadata(task_metadata(task, step), inherit=True)
    return child


def _outcome(task: Task) -> tuple[BaseException | None, Any]:
    if task.error is not None:
        return task.error, None
    if task.pause is not None:
        return GraphInterrupt(task.pause), None
    return None, task.result


def task_sync(task: Task, body: Callable[[Task], None]) -> None:
    """Run `body(task)` (the task's attempts) inside a chain run of the task."""
    task.traced = _task_manager(task).on_chain_start(None, task.input(), name=task.name)
    try:
        body(task)
    except BaseException as e:
        task.traced.on_chain_error(e)
        raise
    error, output = _outcome(task)
    if error is not None:
        task.traced.on_chain_error(error)
    else:
        task.traced.on_chain_end(output)


async def task_async(task: Task, body: Callable[[Task], Awaitable[None]]) -> None:
    """`task_sync` for the async driver (a sync node's body runs in a worker thread)."""
    manager = _task_manager(task)
    task.traced = await manager.on_chain_start(None, task.input(), name=task.name)
    try:
        await body(task)
    except BaseException as e:
        await task.traced.on_chain_error(e)
        raise
    error, output = _outcome(task)
    if error is not None:
        await task.traced.on_chain_error(error)
    else:
        await _stream_output(task.traced, output)
        await task.traced.on_chain_end(output)


async def _stream_output(traced: Any, output: Any) -> None:
    """Hand a task's output to the streaming tracers (`astream_events`' handler, which shows
    it as the task's `on_chain_stream`), as LangGraph's async run streams each task when one
    is there; the `messages` stream's own handler is not one of them."""
    try:
        from langchain_core.tracers._streaming import _StreamingCallbackHandler
    except ImportError:  # pragma: no cover - older langchain_core
        return
    for handler in traced.handlers:
        if isinstance(handler, _StreamingCallbackHandler) and not getattr(
            handler, "messages_stream", False
        ):
            async for _ in handler.tap_output_aiter(traced.run_id, _one(output)):
                pass


async def _one(output: Any) -> AsyncIterator[Any]:
    yield output


def node_config(task: Task) -> Any:
    """The config a node that takes one is given in a traced run: the run's, with callbacks
    under the task's chain run (so a model or subgraph called with it nests there), without
    the run's `run_id` and `run_name` (the graph run's own: a model given them would report as
    that run, its own parent, and langchain_core's event stream drops its events), as
    langchain_core's `patch_config` leaves them out of a child's config."""
    callbacks = task.traced.get_child()
    if task.watched:  # its events refresh the node's idle timeout
        callbacks.add_handler(progress_handler(task), inherit=True)
    config = {**task.run.config, "callbacks": callbacks}
    config.pop("run_id", None)
    config.pop("run_name", None)
    return config


class _EventsSource:
    """What langchain_core's event stream runs: the graph's `astream`, on the config it made
    (minus the default recursion limit it adds: the graph's own applies)."""

    def __init__(self, astream: Callable[..., AsyncIterator[Any]], limit_given: bool) -> None:
        self._astream = astream
        self.limit_given = limit_given

    def astream(self, input: Any, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if not self.limit_given:
            config.pop("recursion_limit", None)
        return self._astream(input, config, **kwargs)


async def astream_events(
    astream: Callable[..., AsyncIterator[Any]],
    input: Any,
    config: Any,
    version: str,
    filters: dict[str, Sequence[str] | None],
    kwargs: dict[str, Any],
) -> AsyncIterator[Any]:
    """`CompiledGraph.astream_events`: langchain_core's v2 event stream of the graph's `astream`,
    `filters` being its `include_*`/`exclude_*` arguments and `kwargs` astream's."""
    if version != "v2":
        raise ValueError(
            f'astream_events supports version="v2" only (LangGraph\'s current), got {version!r}'
        )
    from langchain_core.tracers.event_stream import _astream_events_implementation_v2

    source = _EventsSource(astream, "recursion_limit" in (config or {}))
    events = cast(
        AsyncGenerator[Any, None],
        _astream_events_implementation_v2(cast(Any, source), input, config, **filters, **kwargs),
    )
    # Closing this stream closes langchain_core's at once, which cancels the run's task.
    async with contextlib.aclosing(events):
        async for event in events:
            yield event
