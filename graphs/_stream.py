"""The stream modes beyond `values` and `updates`: what each chunk looks like, built in one place.

- `custom`: whatever node code hands to `get_stream_writer()` (or its `writer` parameter).
- `messages`: `(message, metadata)` for each message a node produces: a chat model's token chunks
  as they arrive (langchain_core's callbacks), then every message in a node's update that the
  node did not read in its input (so a streamed message is not sent twice).
- `tasks`: a task's start `{id, name, input, triggers}` and its result `{id, name, error,
  result, interrupts}`; `checkpoints`: each saved checkpoint as `get_state` would show it;
  `debug`: both, wrapped as `{step, timestamp, type, payload}`.

Chunks written while nodes run (`custom`, `messages`) go to the run's `sink`, which the driver
drains while the step runs; the others are emitted by the loop. langchain_core is imported only
when a caller streams `messages`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._context import _current
from ._io import LIVE_MODES, TRACE_MODES, Emit
from ._subgraph import called_graph, child_config, is_subgraph, segment_of
from ._types import Command, StreamMode

if TYPE_CHECKING:
    from ._run import Run, Task

MODES = frozenset({"values", "updates"}) | LIVE_MODES | TRACE_MODES


NOSTREAM_TAG = "nostream"
"""A chat model tagged with it (`model.with_config(tags=["nostream"])`) streams no tokens."""


def triggers(task: Task) -> tuple[str, ...]:
    """What made the task run, in LangGraph's words: a `Send` (a push) or an edge to it."""
    return ("__pregel_push",) if task.is_send else (f"branch:to:{task.name}",)


PROPAGATED = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)
"""The `configurable` keys LangGraph copies into the metadata of what a run streams."""


def run_metadata(run: Run) -> dict[str, Any]:
    """The metadata every `messages` chunk of a run starts from, as LangGraph's: the config's
    `metadata`, the `PROPAGATED` keys of its `configurable` (a thread id only when the caller
    gave one, or the graph saves the thread), and `ls_integration`."""
    config = run.config
    meta = dict(config.get("metadata") or {})
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    anonymous = run.top.messages is not None and run.top.messages.anonymous
    for key in PROPAGATED:
        value = configurable.get(key)
        if value and key not in meta and not (key == "thread_id" and anonymous):
            meta[key] = value
    meta.setdefault("ls_integration", "langgraph")
    return meta


def task_metadata(task: Task, step: int) -> dict[str, Any]:
    """The metadata of a `messages` chunk from this task (LangGraph's `langgraph_*` keys)."""
    run = task.run
    base = run.messages.base if run.messages is not None else run_metadata(run)
    return {
        **base,
        "langgraph_step": step,
        "langgraph_node": task.name,
        "langgraph_triggers": triggers(task),
        "langgraph_path": task.path,
        "langgraph_checkpoint_ns": f"{run.ns}|{task.name}:{task.id}"
        if run.ns
        else f"{task.name}:{task.id}",
    }


def trace(run: Run, mode: str, payload: dict[str, Any], step: int) -> list[Emit]:
    """A `tasks` or `checkpoints` payload as the requested modes want it (`debug` wraps it)."""
    out: list[Emit] = []
    if mode in run.modes:
        out.append(Emit(mode, payload))
    if "debug" in run.modes:
        kind = (
            "checkpoint"
            if mode == "checkpoints"
            else "task_result"
            if "result" in payload
            else "task"
        )
        out.append(
            Emit(
                "debug",
                {
                    "step": step,
                    "timestamp": dt.datetime.now(dt.UTC).isoformat(),
                    "type": kind,
                    "payload": payload,
                },
            )
        )
    return out


def task_start(task: Task, state: Any) -> dict[str, Any]:
    return {"id": task.id, "name": task.name, "input": state, "triggers": triggers(task)}


def task_result(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "name": task.name,
        "error": task.error,
        "result": _fold(task.writes) if task.error is None and task.pause is None else {},
        "interrupts": [dataclasses.asdict(i) for i in task.pause or ()],
    }


def _fold(writes: list[tuple[str, Any]]) -> dict[str, Any]:
    """A task's writes by key, as LangGraph's task results show them: a key written more than
    once (`push_message()`, a list of updates) as `{"$writes": [value, ...]}`."""
    by_key: dict[str, list[Any]] = {}
    for key, value in writes:
        by_key.setdefault(key, []).append(value)
    return {k: v[0] if len(v) == 1 else {"$writes": v} for k, v in by_key.items()}


def checkpoint_payload(run: Run, parent: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A saved checkpoint as `get_state` shows it; a task that runs a subgraph (as its node, or
    one its function calls) has the config of the subgraph's checkpoints as its `state`."""
    nodes = run.graph.nodes
    config = run.head_config
    assert config is not None
    return {
        "config": config,
        "parent_config": parent if parent and parent["configurable"].get("checkpoint_id") else None,
        "values": run.output(),
        "metadata": dict(metadata),
        "next": [name for name, _ in run.frontier],
        "tasks": [
            {
                "id": task_id,
                "name": name,
                "interrupts": (),
                "state": child_config(config, segment_of(nodes, name, task_id))
                if is_subgraph(nodes.get(name)) or called_graph(nodes.get(name)) is not None
                else None,
            }
            for name, task_id in run.frontier
        ],
    }


# ---- messages ----------------------------------------------------------------------------


def _messages_in(value: Any) -> list[Any]:
    """The messages among a state's (or an update's) values, top level and in lists."""
    from langchain_core.messages import BaseMessage

    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, Mapping):
        values: Sequence[Any] = list(value.values())
    elif isinstance(value, Sequence) and not isinstance(value, str):
        values = value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        values = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif hasattr(type(value), "model_fields"):
        values = [getattr(value, k) for k in type(value).model_fields]
    else:
        return []
    found: list[Any] = []
    for v in values:
        if isinstance(v, BaseMessage):
            found.append(v)
        elif isinstance(v, Sequence) and not isinstance(v, str):
            found.extend(m for m in v if isinstance(m, BaseMessage))
    return found


def open_messages(run: Run) -> Run:
    """Give `run` its `messages` stream when it streams that mode, or hands it to its parent's
    (a run is made without one: `_run.py` sits below the stream)."""
    if "messages" in run.modes:
        run.messages = MessagesStream(run)
    return run


class MessagesStream:
    """The `messages` mode of one run: which message ids were already seen or sent."""

    def __init__(self, run: Run) -> None:
        self.run = run
        top = run.top.messages if run.top is not run else None
        # A subgraph's messages streamed into the top's stream are not sent again when the
        # parent's node returns them.
        self.seen: set[str] = top.seen if top is not None and "messages" in run.forward else set()
        self.anonymous = False
        """The run's thread id was made up for a run without a saver: not in the metadata."""
        self._base: dict[str, Any] | None = None

    @property
    def base(self) -> dict[str, Any]:
        """`run_metadata` of the run, made when its first chunk is."""
        if self._base is None:
            self._base = run_metadata(self.run)
        return self._base

    def emit(self, message: Any, metadata: dict[str, Any], *, dedupe: bool) -> None:
        if dedupe and message.id in self.seen:
            return
        if message.id is None:
            # Given here, as LangGraph does, so the stored message has the id the caller saw.
            message.id = str(uuid.uuid4())
        self.seen.add(message.id)
        self.run.send("messages", (message, metadata))

    def task_started(self, task: Task, state: Any) -> Any:
        """Note the messages the node reads; return the callback handler for its models."""
        for m in _messages_in(state):
            if m.id is not None:
                self.seen.add(m.id)
        return _handler(self, task_metadata(task, self.run.step + 1))

    def task_finished(self, task: Task) -> None:
        """Send the messages of the node's update that it did not read (or stream) already."""
        result = task.result
        if result is None:
            return
        # A list holding a Command is several returns (LangGraph's mixed returns).
        parts = (
            result
            if type(result) in (list, tuple) and any(isinstance(r, Command) for r in result)
            else [result]
        )
        metadata = task_metadata(task, self.run.step + 1)
        for part in parts:
            if isinstance(part, Command):
                part = part.update
            if part is not None:
                for m in _messages_in(part):
                    self.emit(m, metadata, dedupe=True)


def _user_tags(tags: Sequence[str]) -> list[str]:
    """The tags a chunk shows: each once, without langchain_core's `seq:step:N` bookkeeping."""
    return [t for t in dict.fromkeys(tags) if not t.startswith("seq:step")]


def _handler(stream: MessagesStream, metadata: dict[str, Any]) -> Any:
    """A langchain_core callback handler that hands a chat model's tokens to the stream."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk

    try:  # its presence makes a chat model's invoke() stream through _stream()
        from langchain_core.tracers._streaming import _StreamingCallbackHandler
    except ImportError:  # pragma: no cover - older langchain_core: whole messages only
        _StreamingCallbackHandler = object  # type: ignore[assignment,misc]

    class Handler(BaseCallbackHandler, _StreamingCallbackHandler):  # type: ignore[type-arg]
        run_inline = True
        messages_stream = True  # not a tracer to hand a task's output (`_events.stream_output`)

        def __init__(self) -> None:
            self.models: dict[uuid.UUID, dict[str, Any]] = {}

        def tap_output_iter(self, run_id: uuid.UUID, output: Any) -> Any:
            return output

        def tap_output_aiter(self, run_id: uuid.UUID, output: Any) -> Any:
            return output

        def on_chat_model_start(
            self,
            serialized: dict[str, Any],
            messages: Any,
            *,
            run_id: uuid.UUID,
            tags: list[str] | None = None,
            metadata: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            if tags and NOSTREAM_TAG in tags:
                return
            task = _current.get()
            if task is not None and task.run is not stream.run:
                # A model in a subgraph this run's handler was inherited by: its tokens are
                # the subgraph's (streamed by its own handler, or not at all).
                return
            # As LangGraph's: the task's metadata under the model's own (`ls_provider`, ...),
            # the task's namespace as `checkpoint_ns`, and the tags it was called with.
            meta = {**stream_metadata, **(metadata or {})}
            meta["checkpoint_ns"] = stream_metadata["langgraph_checkpoint_ns"]
            shown = _user_tags([*(stream.run.config.get("tags") or ()), *(tags or ())])
            if shown:
                meta["tags"] = shown
            self.models[run_id] = meta

        def on_llm_new_token(
            self, token: Any, *, chunk: Any = None, run_id: uuid.UUID, **kwargs: Any
        ) -> None:
            meta = self.models.get(run_id)
            if meta is not None and isinstance(chunk, ChatGenerationChunk):
                stream.emit(chunk.message, meta, dedupe=False)

        def on_llm_end(self, response: Any, *, run_id: uuid.UUID, **kwargs: Any) -> None:
            meta = self.models.pop(run_id, None)
            if meta is not None and response.generations and response.generations[0]:
                gen = response.generations[0][0]
                if isinstance(gen, ChatGeneration):
                    stream.emit(gen.message, meta, dedupe=True)

        def on_llm_error(self, error: BaseException, *, run_id: uuid.UUID, **kwargs: Any) -> None:
            self.models.pop(run_id, None)

    stream_metadata = metadata
    return Handler()


def stream_item(mode: str, chunk: Any, ns: tuple[str, ...], tagged: bool, subgraphs: bool) -> Any:
    """One item of `stream`, in LangGraph's shapes."""
    if subgraphs:
        return (ns, mode, chunk) if tagged else (ns, chunk)
    return (mode, chunk) if tagged else chunk


def print_chunk(mode: str, chunk: Any, ns: tuple[str, ...], subgraphs: bool) -> None:
    """A chunk of a `print_mode`, as LangGraph prints it: the mode in bold, a subgraph's
    namespace in yellow (under `subgraphs=True`), then the chunk's repr."""
    parts = [f"\033[1m[{mode}]\033[0m"]
    if subgraphs and ns:
        parts.append(f"\033[1;30;33m[graph={ns}]\033[0m")
    parts.append(repr(chunk))
    print(" ".join(parts))


def stream_modes(
    stream_mode: StreamMode | Sequence[StreamMode] | None,
) -> tuple[frozenset[str], bool]:
    """The modes `stream_mode` asks for, and whether each item is tagged with its mode (a list
    of modes was given); `None` is LangGraph's StateGraph default, `"updates"`."""
    if stream_mode is None:
        stream_mode = "updates"  # LangGraph's StateGraph default
    if isinstance(stream_mode, str):
        modes, tagged = frozenset([stream_mode]), False
    else:
        modes, tagged = frozenset(stream_mode), True
    unknown = modes - MODES
    if unknown:
        raise ValueError(f"unknown stream_mode {sorted(unknown)}; use any of {sorted(MODES)}")
    return modes, tagged
