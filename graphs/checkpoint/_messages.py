"""langchain_core's message classes in checkpoints, as tagged JSON: `{"$t": ["message", [type, fields]]}`.

A message is stored as its `type` field (`"human"`, `"ai"`, `"tool"`, ...) and the fields that
differ from their defaults. It is read back through a fixed map from that `type` to the class
(`MESSAGE_CLASSES`): no class named in stored data is ever imported, and nothing is pickled.
`serde` loads this module (and with it langchain_core) only when it meets a message, in either
direction, so nobody registers anything by hand and `import graphs` stays light.
"""

from __future__ import annotations

from typing import Any

from langchain_core import messages as lc
from langchain_core.messages import BaseMessage

from ..errors import CheckpointFormatError

__all__ = ["MESSAGE_CLASSES", "TAG", "BaseMessage", "decode", "encode"]

TAG = "message"
"""The serde tag of every message class."""

MESSAGE_CLASSES: dict[str, type[lc.BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        lc.HumanMessage,
        lc.AIMessage,
        lc.SystemMessage,
        lc.ToolMessage,
        lc.RemoveMessage,
        lc.FunctionMessage,
        lc.ChatMessage,
        lc.AIMessageChunk,
        lc.HumanMessageChunk,
        lc.SystemMessageChunk,
        lc.ToolMessageChunk,
        lc.FunctionMessageChunk,
        lc.ChatMessageChunk,
    )
}
"""The stored `type` of each message class that checkpoints hold (its own `type` default)."""


def encode(message: lc.BaseMessage) -> list[Any]:
    """`[type, fields]`: the fields without those left at their defaults (and without `type`)."""
    return [message.type, message.model_dump(exclude_defaults=True)]


def decode(data: list[Any]) -> lc.BaseMessage:
    """The message `encode` stored.

    Raises:
        CheckpointFormatError: the stored `type` is not one of `MESSAGE_CLASSES`.
    """
    kind, fields = data
    cls = MESSAGE_CLASSES.get(kind)
    if cls is None:
        raise CheckpointFormatError(
            f"stored message type {kind!r} is none of the known langchain_core messages "
            f"{sorted(MESSAGE_CLASSES)}"
        )
    return cls(**fields)
