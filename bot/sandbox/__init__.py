"""A local Slack: the Web API the bot calls and the signed requests Slack sends the bot.

Used by the Slack app's tests and by `signoff demo`. Nothing here talks to the real Slack.

- `FakeSlack` (`slack_api.py`): an aiohttp application answering `/api/<method>` over a
  `Workspace` model, recording calls, with programmable faults; also plays the user
  (`click`, `submit`, `command`, `open_home`). `python -m bot.sandbox.slack_api` runs it as a
  process with an HTTP control API under `/_sandbox/` (`control.py`).
- `SandboxClient`, `start_fake_slack()` (`client.py`): drive that process from another one.
- `FakeSlackProcess`, `BotProcess` (`processes.py`): the fake and `signoff run` as processes of
  their own, for end-to-end tests and benchmarks.
- `SlackSigner` and the payload builders (`signing.py`): Slack's v0 request signatures and the
  bodies of block_actions, view_submission, slash commands and `app_home_opened`.
- `limits`: Slack's documented limits as named constants.
- `SocketModeHub` (`socket_mode.py`): the Socket Mode WebSocket; `HttpTransport` /
  `SocketTransport` (`transports.py`): the two ways the user's actions reach the app.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bot.sandbox import limits

if TYPE_CHECKING:
    from bot.sandbox.client import SandboxClient, SandboxError, start_fake_slack
    from bot.sandbox.errors import SlackApiFailure
    from bot.sandbox.interactions import AppDriver, SubmitResult
    from bot.sandbox.processes import BotProcess, FakeSlackProcess
    from bot.sandbox.signing import (
        AppResponse,
        SlackRequest,
        SlackSigner,
        app_home_opened,
        block_actions,
        slash_command,
        state_values,
        view_submission,
    )
    from bot.sandbox.slack_api import Call, FakeSlack, Fault
    from bot.sandbox.socket_mode import SocketModeHub
    from bot.sandbox.transports import HttpTransport, SocketTransport
    from bot.sandbox.workspace import (
        Channel,
        Ephemeral,
        Message,
        Team,
        User,
        UserGroup,
        View,
        Workspace,
    )

# Imported on first use, so that `python -m bot.sandbox.slack_api` does not import itself twice.
_WHERE = {
    "client": ["SandboxClient", "SandboxError", "start_fake_slack"],
    "errors": ["SlackApiFailure"],
    "interactions": ["AppDriver", "SubmitResult"],
    "processes": ["BotProcess", "FakeSlackProcess"],
    "signing": [
        "AppResponse", "SlackRequest", "SlackSigner", "app_home_opened", "block_actions",
        "slash_command", "state_values", "view_submission",
    ],
    "slack_api": ["Call", "FakeSlack", "Fault"],
    "socket_mode": ["SocketModeHub"],
    "transports": ["HttpTransport", "SocketTransport"],
    "workspace": ["Channel", "Ephemeral", "Message", "Team", "User", "UserGroup", "View", "Workspace"],
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'bot.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(f"bot.sandbox.{module}"), name)


__all__ = [
    "AppDriver",
    "AppResponse",
    "BotProcess",
    "Call",
    "Channel",
    "Ephemeral",
    "FakeSlack",
    "FakeSlackProcess",
    "Fault",
    "HttpTransport",
    "Message",
    "SandboxClient",
    "SandboxError",
    "SlackApiFailure",
    "SlackRequest",
    "SlackSigner",
    "SocketModeHub",
    "SocketTransport",
    "SubmitResult",
    "Team",
    "User",
    "UserGroup",
    "View",
    "Workspace",
    "app_home_opened",
    "block_actions",
    "limits",
    "slash_command",
    "start_fake_slack",
    "state_values",
    "view_submission",
]
