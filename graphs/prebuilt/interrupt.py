"""Agent Inbox's request and answer for a pause (LangGraph's `langgraph.prebuilt.interrupt`).

A node or a tool asks a person with `interrupt([HumanInterrupt(...)])` and reads the
`HumanResponse` it is resumed with. These are plain `TypedDict`s: a request is a dict, stored
in the checkpoint and shown as it is (signoff's bot reads it as one approval per action request).
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

__all__ = ["ActionRequest", "HumanInterrupt", "HumanInterruptConfig", "HumanResponse"]


class HumanInterruptConfig(TypedDict):
    """What the person may do: skip the step, answer in words, edit the call, accept it."""

    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class ActionRequest(TypedDict):
    """The action asked about (a tool's name) and its arguments."""

    action: str
    args: dict[str, Any]


class HumanInterrupt(TypedDict):
    """A request for a person's decision: the action, what they may do, and a description."""

    action_request: ActionRequest
    config: HumanInterruptConfig
    description: str | None


class HumanResponse(TypedDict):
    """The answer: `accept` or `ignore` (`args` None), `response` (`args` the words), `edit`
    (`args` the edited `ActionRequest`)."""

    type: Literal["accept", "ignore", "response", "edit"]
    args: None | str | ActionRequest
