"""Requests Slack sends to an app, built and signed the way Slack does it.

`SlackSigner` computes Slack's v0 signature (HMAC-SHA256 of `v0:{timestamp}:{body}` with the
app's signing secret) and `send()` posts a request to the app's request URL over HTTP. The
builders produce the bodies Slack sends: interactive payloads (`block_actions`,
`view_submission`) as a form field `payload=<json>`, slash commands as plain form fields,
events (`app_home_opened`) as JSON. They are pure: the ids they carry (trigger_id,
response_url) come from the caller, normally the fake Slack that issued them.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.sandbox.workspace import JSON, Team

__all__ = [
    "AppResponse",
    "SlackRequest",
    "SlackSigner",
    "app_event",
    "app_home_opened",
    "block_actions",
    "slash_command",
    "state_values",
    "view_block_actions",
    "view_submission",
]

FORM = "application/x-www-form-urlencoded"
_TEAM = Team()
_EVENT_SEQ = itertools.count(1)


@dataclass(frozen=True)
class SlackRequest:
    """A request body as Slack would send it to the app, not yet signed."""

    body: str
    """Exactly the bytes (as text) that are signed and sent."""
    content_type: str
    """`application/x-www-form-urlencoded` or `application/json`."""
    payload: JSON = field(compare=False)
    """The decoded contents, for assertions and logs."""


@dataclass(frozen=True)
class AppResponse:
    """What the app answered."""

    status: int
    """HTTP status; over Socket Mode 200 for an ack, and 0 when no answer came at all."""
    body: str
    """The body (over Socket Mode: the ack's response payload as JSON, or empty)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    late: bool = False
    """Answered after Slack's `ACK_DEADLINE` (or never): Slack ignores the answer and shows the
    user an error ("failed with the error operation_timeout"), events are sent again."""

    @property
    def ok(self) -> bool:
        """Whether Slack took this as a success: a 2xx answer within the deadline."""
        return 200 <= self.status < 300 and not self.late

    def json(self) -> Any:
        """The body parsed as JSON; None when it is empty or not JSON (a plain ack)."""
        try:
            return json.loads(self.body) if self.body.strip() else None
        except ValueError:
            return None


class SlackSigner:
    """Signs requests with an app's signing secret, as Slack does, and sends them.

    Args:
        signing_secret: The app's signing secret (Bolt's `SLACK_SIGNING_SECRET`).
        clock: Time source for the request timestamp.
    """

    def __init__(self, signing_secret: str, *, clock: Callable[[], float] = time.time) -> None:
        if not signing_secret:
            raise ValueError("SlackSigner needs the app's signing secret; got an empty string")
        self._secret = signing_secret.encode()
        self.clock = clock

    def __repr__(self) -> str:
        return "SlackSigner(signing_secret='**********')"

    def signature(self, timestamp: int | str, body: str | bytes) -> str:
        """`v0=<hex>`: HMAC-SHA256 of `v0:{timestamp}:{body}`."""
        raw = body.encode() if isinstance(body, str) else body
        base = b"v0:" + str(timestamp).encode() + b":" + raw
        return "v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest()

    def headers(self, request: SlackRequest, *, timestamp: int | None = None) -> dict[str, str]:
        """The headers Slack sends with `request`: content type, timestamp and signature.

        Args:
            timestamp: Unix seconds to sign with; now when None (pass an old one to test the
                five-minute replay window).
        """
        ts = int(self.clock()) if timestamp is None else timestamp
        return {
            "Content-Type": request.content_type,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": self.signature(ts, request.body),
        }

    async def send(
        self,
        url: str,
        request: SlackRequest,
        *,
        timestamp: int | None = None,
        signature: str | None = None,
        session: aiohttp.ClientSession | None = None,
        timeout: float = 10.0,
        extra_headers: Mapping[str, str] | None = None,
    ) -> AppResponse:
        """POST `request` to the app's request URL, signed, and return its answer.

        Args:
            url: The app's request URL, e.g. `http://127.0.0.1:3000/slack/events`.
            timestamp: Sign as of this time (default now).
            signature: Send this signature instead of the right one (to test refusals).
            session: Reuse a client session; a short-lived one is made otherwise.
            timeout: Seconds to wait for the app's answer.
            extra_headers: More headers (`X-Slack-Retry-Num` on a redelivered event).
        """
        headers = {**self.headers(request, timestamp=timestamp), **(extra_headers or {})}
        if signature is not None:
            headers["X-Slack-Signature"] = signature
        own = session is None
        client = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))
        try:
            async with client.post(url, data=request.body.encode(), headers=headers) as res:
                return AppResponse(res.status, await res.text(), dict(res.headers))
        finally:
            if own:
                await client.close()


def _interactive(payload: JSON) -> SlackRequest:
    return SlackRequest(urlencode({"payload": json.dumps(payload)}), FORM, payload)


def _user(user_id: str, user_name: str | None, team_id: str) -> JSON:
    name = user_name or user_id
    return {"id": user_id, "username": name, "name": name, "team_id": team_id}


def block_actions(
    *,
    action_id: str,
    value: str | None,
    user_id: str,
    channel_id: str,
    message: JSON,
    trigger_id: str,
    response_url: str,
    block_id: str = "",
    action_type: str = "button",
    button_text: str = "",
    user_name: str | None = None,
    channel_name: str = "",
    is_ephemeral: bool = False,
    team_id: str = _TEAM.id,
    team_domain: str = _TEAM.domain,
    api_app_id: str = _TEAM.app_id,
) -> SlackRequest:
    """A button click on a message: what Slack posts as `payload=` for `block_actions`.

    Args:
        action_id: The clicked element's `action_id`.
        value: Its `value` (None for a button without one).
        message: The clicked message as Slack renders it (`ts`, `text`, `blocks`, ...).
        trigger_id: Lets the app open a modal for the clicker (issued by the fake).
        response_url: Lets the app answer in place (issued by the fake).
    """
    action: JSON = {
        "type": action_type,
        "action_id": action_id,
        "block_id": block_id,
        "text": {"type": "plain_text", "text": button_text, "emoji": True},
        "action_ts": f"{time.time():.6f}",
    }
    if value is not None:
        action["value"] = value
    return _interactive(
        {
            "type": "block_actions",
            "user": _user(user_id, user_name, team_id),
            "api_app_id": api_app_id,
            "token": "sandbox-verification-token",
            "container": {
                "type": "message",
                "message_ts": message["ts"],
                "channel_id": channel_id,
                "is_ephemeral": is_ephemeral,
            },
            "trigger_id": trigger_id,
            "team": {"id": team_id, "domain": team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel_id, "name": channel_name},
            "message": message,
            "state": {"values": {}},
            "response_url": response_url,
            "actions": [action],
        }
    )


def view_block_actions(
    *,
    action_id: str,
    value: str | None,
    user_id: str,
    view: JSON,
    trigger_id: str,
    block_id: str = "",
    button_text: str = "",
    user_name: str | None = None,
    team_id: str = _TEAM.id,
    team_domain: str = _TEAM.domain,
    api_app_id: str = _TEAM.app_id,
) -> SlackRequest:
    """A button click in a view (App Home, a modal): what Slack posts as `payload=` for
    `block_actions`. Unlike a message's, it names no channel and carries no `response_url`:
    the app answers by updating or publishing the view.

    Args:
        view: The view as Slack renders it (`id`, `type`, `blocks`, `state`, ...).
    """
    action: JSON = {
        "type": "button",
        "action_id": action_id,
        "block_id": block_id,
        "text": {"type": "plain_text", "text": button_text, "emoji": True},
        "action_ts": f"{time.time():.6f}",
    }
    if value is not None:
        action["value"] = value
    return _interactive(
        {
            "type": "block_actions",
            "user": _user(user_id, user_name, team_id),
            "api_app_id": api_app_id,
            "token": "sandbox-verification-token",
            "container": {"type": "view", "view_id": view.get("id", "")},
            "trigger_id": trigger_id,
            "team": {"id": team_id, "domain": team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "view": view,
            "actions": [action],
        }
    )


def state_values(blocks: list[JSON], inputs: Mapping[str, Any]) -> JSON:
    """A view's `state.values` for what a user typed or picked, shaped per element type.

    Args:
        blocks: The view's blocks (input blocks are read for their element's type and ids).
        inputs: Answers keyed by block_id or by action_id; a string for text and number inputs,
            an option value for selects.

    Returns:
        `{block_id: {action_id: {"type": ..., "value": ...}}}` for every input block, answered
        or not, as Slack sends them.
    """
    values: JSON = {}
    for block in blocks:
        if block.get("type") != "input" or not isinstance(block.get("element"), dict):
            continue
        el, block_id = block["element"], block.get("block_id", "")
        action_id = el.get("action_id", "")
        answer = inputs.get(block_id, inputs.get(action_id))
        kind = el.get("type", "plain_text_input")
        state: JSON = {"type": kind}
        if kind in ("static_select", "radio_buttons"):
            chosen = [o for o in el.get("options", []) if o.get("value") == answer]
            state["selected_option"] = chosen[0] if chosen else None
        elif kind == "checkboxes":
            wanted = answer if isinstance(answer, list) else []
            state["selected_options"] = [
                o for o in el.get("options", []) if o.get("value") in wanted
            ]
        elif kind == "users_select":
            state["selected_user"] = answer
        else:
            state["value"] = None if answer is None else str(answer)
        values.setdefault(block_id, {})[action_id] = state
    return values


def view_submission(
    *,
    user_id: str,
    view: JSON,
    values: JSON,
    trigger_id: str,
    user_name: str | None = None,
    team_id: str = _TEAM.id,
    team_domain: str = _TEAM.domain,
    api_app_id: str = _TEAM.app_id,
) -> SlackRequest:
    """A modal's Submit: what Slack posts as `payload=` for `view_submission`.

    Args:
        view: The view object as views.open returned it (`id`, `callback_id`, `blocks`, ...).
        values: `state.values` (see `state_values`).
    """
    return _interactive(
        {
            "type": "view_submission",
            "team": {"id": team_id, "domain": team_domain},
            "user": _user(user_id, user_name, team_id),
            "api_app_id": api_app_id,
            "token": "sandbox-verification-token",
            "trigger_id": trigger_id,
            "view": {**view, "state": {"values": values}},
            "response_urls": [],
            "enterprise": None,
            "is_enterprise_install": False,
        }
    )


def slash_command(
    *,
    text: str,
    user_id: str,
    channel_id: str,
    trigger_id: str,
    response_url: str,
    command: str = "/agent",
    user_name: str | None = None,
    channel_name: str = "",
    team_id: str = _TEAM.id,
    team_domain: str = _TEAM.domain,
    api_app_id: str = _TEAM.app_id,
) -> SlackRequest:
    """A slash command: plain form fields (`command=/agent&text=status&user_id=...`)."""
    fields = {
        "token": "sandbox-verification-token",
        "team_id": team_id,
        "team_domain": team_domain,
        "channel_id": channel_id,
        "channel_name": channel_name,
        "user_id": user_id,
        "user_name": user_name or user_id,
        "command": command,
        "text": text,
        "api_app_id": api_app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return SlackRequest(urlencode(fields), FORM, fields)


def app_home_opened(
    *,
    user_id: str,
    channel_id: str,
    view: JSON | None = None,
    tab: str = "home",
    team_id: str = _TEAM.id,
    api_app_id: str = _TEAM.app_id,
    bot_user_id: str = _TEAM.bot_user_id,
) -> SlackRequest:
    """The `app_home_opened` event (JSON `event_callback`), with the published view if any."""
    now = time.time()
    event: JSON = {
        "type": "app_home_opened",
        "user": user_id,
        "channel": channel_id,
        "tab": tab,
        "event_ts": f"{now:.6f}",
    }
    if view is not None:
        event["view"] = view
    return app_event(event, team_id=team_id, api_app_id=api_app_id, bot_user_id=bot_user_id)


def app_event(
    event: JSON,
    *,
    team_id: str = _TEAM.id,
    api_app_id: str = _TEAM.app_id,
    bot_user_id: str = _TEAM.bot_user_id,
) -> SlackRequest:
    """Any Events API event (`{"type": "tokens_revoked", ...}`) as Slack wraps it: an
    `event_callback` with its event_id, event_time and authorizations."""
    now = time.time()
    payload = {
        "token": "sandbox-verification-token",
        "team_id": team_id,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{int(now)}{next(_EVENT_SEQ):06d}",
        "event_time": int(now),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
    }
    return SlackRequest(json.dumps(payload), "application/json", payload)
