"""Chat messages in state: the `add_messages` reducer and `MessagesState`.

Messages are langchain_core's (`HumanMessage`, `AIMessage` with `tool_calls`, `ToolMessage`,
`SystemMessage`, `RemoveMessage`, ...), so that models and tools of that ecosystem plug in as
they are. Importing this module loads langchain_core (about 0.1 s); `import graphs` does not.

```python
class State(MessagesState):
    summary: str

def chat(state: State) -> dict[str, Any]:
    return {"messages": [("ai", "hello")]}       # coerced to AIMessage, given an id
```
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Annotated, Literal, Union, cast, overload

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    MessageLikeRepresentation,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from typing_extensions import TypedDict  # pydantic takes it in a tool's signature on 3.11

from .._context import _task
from .._schema import APPENDS_ATTR
from .._stream import task_metadata
from ..errors import InvalidUpdateError
from .state import StateGraph

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AnyMessage",
    "MessageGraph",
    "Messages",
    "MessagesState",
    "add_messages",
    "push_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""`RemoveMessage(id=REMOVE_ALL_MESSAGES)` in an update drops every message before it."""

Messages = Union[Sequence[MessageLikeRepresentation], MessageLikeRepresentation]  # noqa: UP007
"""What `add_messages` takes on either side: one message-like value or a list of them (a
tuple is one message, `("user", "hi")`, as in LangGraph)."""


_MESSAGES = frozenset(
    (
        HumanMessage,
        AIMessage,
        SystemMessage,
        ToolMessage,
        RemoveMessage,
        FunctionMessage,
        ChatMessage,
    )
)
"""Classes `convert_to_messages` returns as they are (no chunk): a state's list is all of them,
and checking that is a tenth of converting it again at every step."""


_ID = attrgetter("id")


def _as_messages(value: Messages) -> list[BaseMessage]:
    """`value` as a list of messages: a list of messages is returned as it is (not a copy; the
    callers only read it), anything else converted."""
    # A list is many messages; anything else (a tuple too: `("user", "hi")`) is one.
    items = value if isinstance(value, list) else [cast("MessageLikeRepresentation", value)]
    if _MESSAGES.issuperset(map(type, items)):  # one pass in C: a state's list at every step
        return cast("list[BaseMessage]", items)
    out = convert_to_messages(items)
    return [message_chunk_to_message(m) if isinstance(m, BaseMessageChunk) else m for m in out]


Format = Literal["langchain-openai"]
"""The one message format `add_messages(format=...)` knows (LangGraph's)."""

_FORMATS = ("langchain-openai",)


@overload
def add_messages(
    left: Messages, right: Messages, *, format: Format | None = None
) -> list[BaseMessage]: ...


@overload
def add_messages(
    left: None = None, right: None = None, *, format: Format | None = None
) -> Callable[[Messages, Messages], list[BaseMessage]]: ...


def add_messages(
    left: Messages | None = None, right: Messages | None = None, *, format: Format | None = None
) -> list[BaseMessage] | Callable[[Messages, Messages], list[BaseMessage]]:
    """Merge `right` into `left`: append new messages, replace those whose id is already there.

    - Either side may be a message, a list of them, or anything langchain_core's
      `convert_to_messages` turns into messages: `("user", "hi")`, `{"role": "user",
      "content": "hi"}`, `{"type": "human", ...}`, or a plain string (a human message).
    - A message without an id is given a fresh one (a uuid4 string).
    - A message whose id is in `left` replaces that message, in place.
    - `RemoveMessage(id=...)` deletes the message with that id; `RemoveMessage(
      id=REMOVE_ALL_MESSAGES)` drops everything before it (the earlier state and the update's
      own earlier messages).

    The result is a new list; `left` is left as it was. When the update only appends, the result
    begins with `left`'s very objects, so a checkpointer stores only the new messages.

    Called with neither list, as LangGraph's, it returns the reducer: `Annotated[list,
    add_messages(format="langchain-openai")]` merges the same way and gives each message it
    adds the content OpenAI's format has (langchain_core's `convert_to_openai_messages`, then
    back to messages): string, `text` and `image_url` blocks, an Anthropic-style `tool_use`
    block as a tool call, a `tool_result` block as a `ToolMessage` of its own. Unlike
    LangGraph's (whose formatted messages lose their ids), each message keeps its id (one that
    becomes several: `id`, then `id:1`, `id:2`, ...).

    Raises:
        ValueError: a `RemoveMessage` names an id that no message has; only one of `left` and
            `right` is given; an unknown `format`.
    """
    if left is None or right is None:
        if left is not None or right is not None:
            raise ValueError(
                "Must specify non-null arguments for both 'left' and 'right'. Only received: "
                f"'{'left' if left is not None else 'right'}'."
            )
        if format is None:
            return add_messages
        if format not in _FORMATS:
            raise ValueError(f"Unrecognized {format=}. Expected one of 'langchain-openai', None.")
        return add_messages_openai
    if format is not None:
        return add_messages_openai(left, right)
    return _merge(left, right, None)


def _merge(
    left: Messages,
    right: Messages,
    formatted: Callable[[list[BaseMessage]], list[BaseMessage]] | None,
) -> list[BaseMessage]:
    """`add_messages`: `right` merged into `left`, each new message made by `formatted`."""
    old = _as_messages(left)
    new = _as_messages(right)
    for m in new:
        if m.id is None:
            m.id = str(uuid.uuid4())
    if formatted is not None:
        new = formatted(new)
    for i in range(len(new) - 1, -1, -1):
        if isinstance(new[i], RemoveMessage) and new[i].id == REMOVE_ALL_MESSAGES:
            old, new = [], new[i + 1 :]
            break
    fresh = {m.id for m in new}
    if (
        len(fresh) == len(new)
        and not any(isinstance(m, RemoveMessage) for m in new)
        and {None, *fresh}.isdisjoint(map(_ID, old))  # one pass in C over the state's list
    ):
        # Only appends, and every message of `left` has an id: the common case (at every
        # step of an agent), stored as a delta.
        return [*old, *new]
    for m in old:
        if m.id is None:
            m.id = str(uuid.uuid4())
    index = {m.id: i for i, m in enumerate(old)}
    merged: list[BaseMessage | None] = list(old)
    for m in new:
        at = index.get(m.id)
        if isinstance(m, RemoveMessage):
            if at is None or merged[at] is None:
                raise ValueError(
                    f"RemoveMessage(id={m.id!r}): no message has that id; ids are: "
                    f"{[x.id for x in merged if x is not None]}"
                )
            merged[at] = None
        elif at is not None and merged[at] is not None:
            # The very object the list holds, changed in place and returned: a copy, so that a
            # checkpointer (which keeps what it stored by identity) sees that it changed.
            merged[at] = m.model_copy() if m is merged[at] else m
        else:
            index[m.id] = len(merged)
            merged.append(m)
    return [m for m in merged if m is not None]


setattr(add_messages, APPENDS_ATTR, True)


def add_messages_openai(left: Messages, right: Messages) -> list[BaseMessage]:
    """`add_messages(format="langchain-openai")`: `add_messages`, each message it adds in
    OpenAI's format."""
    if format_messages is None:
        raise ValueError(
            "add_messages(format='langchain-openai') needs langchain_core's "
            "convert_to_openai_messages (langchain-core>=0.3.11)"
        )
    return _merge(left, right, format_messages)


setattr(add_messages_openai, APPENDS_ATTR, True)


def _openai(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Each message as OpenAI's format has it, keeping its id; `RemoveMessage`s as they are."""
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, RemoveMessage):
            out.append(m)
            continue
        made = convert_to_messages(convert_to_openai_messages([m]))
        for k, f in enumerate(made):
            f.id = m.id if k == 0 else f"{m.id}:{k}"
        out.extend(made)
    return out


try:
    from langchain_core.messages import convert_to_openai_messages
except ImportError:  # pragma: no cover - langchain-core older than 0.3.11
    format_messages: Callable[[list[BaseMessage]], list[BaseMessage]] | None = None
else:
    format_messages = _openai


def _messages_delta_reducer(state: Messages, writes: list[Messages]) -> list[BaseMessage]:
    """`add_messages` for a `DeltaChannel` key: `state` merged with a step's writes, in order.

    `Annotated[list, DeltaChannel(_messages_delta_reducer)]` (LangGraph's name, private there
    as here). Each write is a message-like value or a list of them; the result is what
    `add_messages` gives for all of them at once (ids given, updates by id, `RemoveMessage`,
    `REMOVE_ALL_MESSAGES`), which is also what applying the writes one batch after another
    gives. Unlike LangGraph's, a `RemoveMessage` whose id no message has is an error, as it is
    for `add_messages`.

    Raises:
        ValueError: a `RemoveMessage` names an id that no message has.
    """
    flat: list[MessageLikeRepresentation] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(cast("MessageLikeRepresentation", write))
    return add_messages(state, flat)


class MessageGraph(StateGraph):
    """LangGraph's `MessageGraph` (deprecated there since 1.0, as here): a graph whose whole
    state is one list of messages, merged by `add_messages`.

    A root-channel `StateGraph(Annotated[list[AnyMessage], add_messages])`: each node gets the
    list and returns a message or a list of them; `invoke` takes and returns the list. Prefer a
    `StateGraph` with a `messages` key (`MessagesState`), which can hold other keys too.
    """

    def __init__(self) -> None:
        warnings.warn(
            "MessageGraph is deprecated (as in LangGraph 1.0): use StateGraph(MessagesState), a "
            "state with a `messages` key merged by add_messages",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(Annotated[list[AnyMessage], add_messages])  # type: ignore[arg-type]  # a root channel


class MessagesState(TypedDict):
    """A state with a conversation: `messages` merged by `add_messages`. Subclass it to add keys."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation, oldest first; every message has an id."""


def push_message(
    message: MessageLikeRepresentation | BaseMessageChunk, *, state_key: str | None = "messages"
) -> AnyMessage:
    """Send a message to the `messages` stream now, as the node runs, and (unless `state_key`
    is None) write it to that state key, as if the node had returned it.

    For a message the node makes itself (not through a chat model, whose tokens stream on
    their own): `push_message(AIMessage("done", id="m1"))`. The message needs an id; the
    stream does not send it again when the node's return holds it too.

    Raises:
        ValueError: the message has no id.
        InvalidUpdateError: `state_key` is not a key of the state.
        RuntimeError: called outside a running node.
    """
    task = _task("push_message")
    found = convert_to_messages([message])[0]
    if found.id is None:
        raise ValueError(
            "push_message() needs a message with an id, so that the stream and the state can "
            "tell it apart from others: AIMessage(..., id=str(uuid.uuid4()))"
        )
    run = task.run
    if task.clock is not None:
        task.clock.progress()  # a write: progress for an idle timeout, as LangGraph's
    if run.messages is not None:
        run.messages.emit(found, task_metadata(task, run.step + 1), dedupe=False)
    if state_key:
        if state_key not in run.graph.channels:
            raise InvalidUpdateError(
                f"push_message(state_key={state_key!r}): the state has no such key; its keys "
                f"are {sorted(run.graph.channels)} (state_key=None only streams the message)"
            )
        if task.pushed is None:
            task.pushed = []
        task.pushed.append((state_key, found))
    return cast(AnyMessage, found)
