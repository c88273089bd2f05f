"""The user's side of Slack: clicks, modal submissions, slash commands, opening the Home tab.

`AppDriver` sends the app the request Slack would send for each, with a trigger_id and a
response_url the fake issued, over HTTP (signed, to the request URL) or Socket Mode (an envelope
on the app's WebSocket): see `transports`. It then does what Slack does with the app's answer: a
slash command's ack text becomes an ephemeral message, a modal's `response_action` closes,
updates, pushes or marks errors on it; an answer after `ACK_DEADLINE` is ignored and comes back
marked `late` (Slack shows the user an error); an event not answered in time is sent again.
`apply_response()` is what Slack does with a post to a response_url.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

from bot.sandbox import limits
from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.handles import ResponseTarget, ResponseUrls, TriggerIds
from bot.sandbox.signing import (
    AppResponse,
    SlackRequest,
    SlackSigner,
    app_event,
    app_home_opened,
    block_actions,
    slash_command,
    state_values,
    view_block_actions,
    view_submission,
)
from bot.sandbox.transports import HttpTransport, Transport
from bot.sandbox.validation import check_message, check_view
from bot.sandbox.workspace import JSON, View, Workspace

__all__ = [
    "REQUIRED_FIELD",
    "AppDriver",
    "Delivery",
    "SubmitResult",
    "apply_response",
    "find_element",
]


class Slack(Protocol):
    """What the user's side needs of the fake (`SlackState`): the workspace the person acts in,
    the trigger_ids and response_urls it issues, a way to say the workspace changed and to
    revoke a token (an uninstall)."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def triggers(self) -> TriggerIds: ...

    @property
    def responses(self) -> ResponseUrls: ...

    def touch(self) -> None: ...

    def revoke_token(self, token: str, error: str = "token_revoked") -> None: ...


REQUIRED_FIELD = "Please complete this required field."
"""What Slack's client says under an empty required input (the app is not called)."""


@dataclass(frozen=True)
class SubmitResult:
    """What came of submitting a modal."""

    response: AppResponse | None
    """The app's answer; None when Slack's client refused to send (required field empty)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Errors shown under inputs, by block_id: the client's own or the app's `errors`."""
    view: JSON | None = None
    """The user's top modal afterwards (as views.* return it); None when it closed."""


@dataclass(frozen=True)
class Delivery:
    """One attempt to deliver an event to the app."""

    event_id: str
    retry_attempt: int
    """0 the first time, then 1, 2, ... (`X-Slack-Retry-Num`, Socket Mode's `retry_attempt`)."""
    retry_reason: str
    """Why it was sent again (`http_timeout`, `http_error`, `connection_failed`); "" at first."""
    response: AppResponse | None
    """The app's answer; None when it could not be reached."""


def find_element(blocks: list[JSON], action_id: str) -> tuple[str, JSON]:
    """The interactive element `action_id` in `blocks`, with its block's block_id.

    Raises:
        LookupError: naming the action_ids that are there.
    """
    found: list[str] = []
    for block in blocks:
        elements = list(block.get("elements") or [])
        if isinstance(block.get("accessory"), dict):
            elements.append(block["accessory"])
        for el in elements:
            if isinstance(el, dict) and "action_id" in el:
                if el["action_id"] == action_id:
                    return block.get("block_id", ""), el
                found.append(el["action_id"])
    raise LookupError(f"no element with action_id {action_id!r}; the blocks have {found or 'none'}")


def _flag(value: Any) -> bool:
    return value is True or value in ("true", "1")


def apply_response(slack: Slack, target: ResponseTarget, body: JSON) -> None:
    """Do what Slack does with a post to a response_url.

    `delete_original` removes the clicked message; `replace_original` replaces its text and
    blocks; `response_type: in_channel` posts a new message; anything else is an ephemeral
    message to the user who interacted.

    Raises:
        SlackApiFailure: the message is refused (`no_text`, `invalid_blocks`, ...).
    """
    ws = slack.workspace
    channel = ws.channel(target.channel)
    text, blocks = body.get("text"), body.get("blocks")
    if _flag(body.get("delete_original")):
        if target.message_ts and target.message_ts in channel.messages:
            ws.delete(channel.messages[target.message_ts])
        return
    check_message(text, blocks)
    thread_ts = body.get("thread_ts")
    if _flag(body.get("replace_original")) and target.message_ts:
        ws.edit(ws.message(channel, target.message_ts), text or "", blocks or [])
    elif body.get("response_type") == "in_channel":
        ws.post(channel, ws.team.bot_user_id, text or "", blocks or [], thread_ts=thread_ts)
    else:
        ws.post_ephemeral(
            channel,
            target.user,
            text or "",
            blocks or [],
            thread_ts=thread_ts,
            source="response_url",
        )


class AppDriver:
    """Sends the app what Slack sends when a person uses it, and applies the app's answers.

    Args:
        slack: The fake whose workspace the person acts in.
        transport: The way to the app (`HttpTransport` to its request URL, or
            `SocketTransport` over the connection it opened).
        event_retry_delays: Seconds after a failed event delivery to send it again, one entry
            per retry (Slack's: `limits.EVENT_RETRY_DELAYS`).
    """

    def __init__(
        self,
        slack: Slack,
        transport: Transport,
        *,
        event_retry_delays: Sequence[float] = limits.EVENT_RETRY_DELAYS,
    ) -> None:
        self.slack = slack
        self.transport = transport
        self.event_retry_delays = tuple(event_retry_delays)
        self.deliveries: list[Delivery] = []
        """Every delivery of an event, retries included, oldest first."""
        self._retries: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The app's request URL (HTTP transport only)."""
        return self._http().url

    @property
    def signer(self) -> SlackSigner:
        """Signs with the app's signing secret (HTTP transport only)."""
        return self._http().signer

    def _http(self) -> HttpTransport:
        if isinstance(self.transport, HttpTransport):
            return self.transport
        raise RuntimeError("the app is reached over Socket Mode: no request URL, no signing")

    async def close(self) -> None:
        """Stop pending event retries and close the way to the app."""
        for task in list(self._retries):
            task.cancel()
        await asyncio.gather(*self._retries, return_exceptions=True)
        await self.transport.close()

    async def _send(self, request: SlackRequest) -> AppResponse:
        """Deliver a request; the answer, `late` when it missed Slack's deadline."""
        return await self.transport.send(request)

    async def ssl_check(self) -> AppResponse:
        """Slack's unsigned certificate check (`ssl_check=1&token=...`), over HTTP only.

        Raises:
            RuntimeError: the app is reached over Socket Mode (Slack sends no ssl_check then).
        """
        return await self._http().ssl_check()

    async def _send_event(self, request: SlackRequest) -> AppResponse:
        """Deliver an event; when it fails, send it again later as Slack does (in the
        background, per `event_retry_delays`). Returns the first answer.

        Slack waits `ACK_DEADLINE` for an answer and no longer: past it, the first retry goes
        out (`http_timeout`) whether or not the first answer comes later, so an app that is
        slow to answer gets the event twice at once, and must take it once.

        Raises:
            aiohttp.ClientError: the app could not be reached (the retries still follow).
        """
        first = asyncio.ensure_future(self._attempt_event(request, 0, "", raising=True))
        done, _ = await asyncio.wait({first}, timeout=limits.ACK_DEADLINE)
        if not done and self.event_retry_delays:
            self._schedule_retries(request, "http_timeout")
        try:
            response = await first
        except aiohttp.ClientError:
            if done:
                self._schedule_retries(request, "connection_failed")
            raise
        assert response is not None
        if done and not response.ok:
            self._schedule_retries(request, _retry_reason(response))
        return response

    def _schedule_retries(self, request: SlackRequest, reason: str) -> None:
        if self.event_retry_delays:
            task = asyncio.ensure_future(self._retry_event(request, reason))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

    async def _attempt_event(
        self, request: SlackRequest, attempt: int, reason: str, *, raising: bool = False
    ) -> AppResponse | None:
        event_id = str(request.payload.get("event_id", ""))
        try:
            response: AppResponse | None = await self.transport.send(
                request, retry_attempt=attempt, retry_reason=reason
            )
        except aiohttp.ClientError:
            response = None
            if raising:
                self.deliveries.append(Delivery(event_id, attempt, reason, None))
                raise
        self.deliveries.append(Delivery(event_id, attempt, reason, response))
        self.slack.touch()
        return response

    async def _retry_event(self, request: SlackRequest, reason: str) -> None:
        for attempt, delay in enumerate(self.event_retry_delays, start=1):
            await asyncio.sleep(delay)
            response = await self._attempt_event(request, attempt, reason)
            if response and response.ok:
                return
            reason = _retry_reason(response)

    async def click(
        self, user: str, channel: str, ts: str, action_id: str, *, value: str | None = None
    ) -> AppResponse:
        """`user` clicks the button `action_id` on the message `ts` in `channel`.

        Args:
            value: Send this value instead of the button's own (to test forged clicks).

        Returns:
            The app's answer; `late` when it came after `ACK_DEADLINE` (or, over Socket Mode,
            never): Slack then shows the user an error, so `ok` is False.

        Raises:
            SlackApiFailure: unknown user, channel or message.
            LookupError: the message has no element `action_id`.
        """
        ws = self.slack.workspace
        person, conv = ws.user(user), ws.channel(channel)
        msg = ws.message(conv, ts)
        block_id, element = find_element(msg.blocks, action_id)
        request = block_actions(
            action_id=action_id,
            value=element.get("value") if value is None else value,
            block_id=block_id,
            button_text=str((element.get("text") or {}).get("text", "")),
            user_id=person.id,
            user_name=person.name,
            channel_id=conv.id,
            channel_name=conv.name,
            message=msg.to_api(),
            trigger_id=self.slack.triggers.issue(person.id),
            response_url=self.slack.responses.issue(conv.id, person.id, msg.ts),
            team_id=ws.team.id,
            team_domain=ws.team.domain,
            api_app_id=ws.team.app_id,
        )
        return await self._send(request)

    async def command(
        self,
        user: str,
        channel: str,
        text: str,
        command: str = "/agent",
        *,
        trigger_id: str | None = None,
    ) -> AppResponse:
        """`user` types `{command} {text}` in `channel`; an ack with text shows it to them.

        Slack sends the text with `&`, `<` and `>` HTML-escaped (`&amp;`, `&lt;`, `&gt;`), as
        here; the answer is `late` (and not shown) when it missed the deadline.

        Args:
            trigger_id: Send this one (from `triggers.issue`, or an earlier command's) instead
                of a fresh one: the same command twice, as a client or proxy that sends it again
                would. Slack itself gives each command its own.
        """
        ws = self.slack.workspace
        person, conv = ws.user(user), ws.channel(channel)
        request = slash_command(
            command=command,
            text=html.escape(text, quote=False),
            user_id=person.id,
            user_name=person.name,
            channel_id=conv.id,
            channel_name=conv.name,
            trigger_id=trigger_id or self.slack.triggers.issue(person.id),
            response_url=self.slack.responses.issue(conv.id, person.id),
            team_id=ws.team.id,
            team_domain=ws.team.domain,
            api_app_id=ws.team.app_id,
        )
        response = await self._send(request)
        if response.status == 200 and not response.late and response.body.strip():
            body = response.json()
            if not isinstance(body, dict):
                body = {"text": response.body}
            if body.get("text") or body.get("blocks"):
                text_, blocks = str(body.get("text") or ""), body.get("blocks") or []
                if body.get("response_type") == "in_channel":
                    ws.post(conv, ws.team.bot_user_id, text_, blocks)
                else:
                    ws.post_ephemeral(conv, person.id, text_, blocks, source="command_ack")
                self.slack.touch()
        return response

    async def open_home(self, user: str) -> AppResponse:
        """`user` opens the app's Home tab (`app_home_opened`, with the view published so far).

        Returns:
            The app's first answer. When that is not a timely 2xx (or the app cannot be
            reached) the event is sent again later; `deliveries` records each attempt.
        """
        ws = self.slack.workspace
        person = ws.user(user)
        home = ws.home.get(person.id)
        request = app_home_opened(
            user_id=person.id,
            channel_id=ws.im(person.id).id,
            view=home.to_api(ws.team) if home else None,
            team_id=ws.team.id,
            api_app_id=ws.team.app_id,
            bot_user_id=ws.team.bot_user_id,
        )
        return await self._send_event(request)

    async def click_home(
        self, user: str, action_id: str, *, value: str | None = None
    ) -> AppResponse:
        """`user` clicks the button `action_id` on their Home tab as the app last published
        it; with `value`, the one of those buttons that carries it (several grants each have
        a Revoke button of one action_id).

        Raises:
            SlackApiFailure: unknown user, or no Home published for them (`not_found`).
            LookupError: no such button on it.
        """
        ws = self.slack.workspace
        person = ws.user(user)
        home = ws.home.get(person.id)
        if home is None:
            raise SlackApiFailure("not_found")  # nothing published for them: no Home to click
        shown = home.to_api(ws.team)
        for block in shown.get("blocks") or []:
            elements = [*(block.get("elements") or []), block.get("accessory")]
            for el in elements:
                if (
                    isinstance(el, dict)
                    and el.get("action_id") == action_id
                    and (value is None or el.get("value") == value)
                ):
                    request = view_block_actions(
                        action_id=action_id,
                        value=el.get("value"),
                        block_id=block.get("block_id", ""),
                        button_text=str((el.get("text") or {}).get("text", "")),
                        user_id=person.id,
                        user_name=person.name,
                        view=shown,
                        trigger_id=self.slack.triggers.issue(person.id),
                        team_id=ws.team.id,
                        team_domain=ws.team.domain,
                        api_app_id=ws.team.app_id,
                    )
                    return await self._send(request)
        raise LookupError(f"no button {action_id!r} (value {value!r}) on {person.id}'s Home")

    async def set_status(
        self, user: str, emoji: str = "", text: str = "", expiration: int = 0
    ) -> list[AppResponse]:
        """`user` sets their status (all empty: clears it); Slack tells the app with
        `user_change` and `user_status_changed` at once (when its token has `users:read`).

        Returns:
            The app's first answers to the events sent (none without the scope).
        """
        ws = self.slack.workspace
        person = ws.user(user)
        person.status_emoji, person.status_text = emoji, text
        person.status_expiration = expiration
        self.slack.touch()
        if "users:read" not in ws.team.scopes:
            return []
        now = time.time()
        return [
            await self._send_team_event(
                {
                    "type": kind,
                    "user": person.to_api(ws.team.id),
                    "cache_ts": int(now),
                    "event_ts": f"{now:.6f}",
                }
            )
            for kind in ("user_change", "user_status_changed")
        ]

    async def set_dnd(self, user: str, until: int | None) -> AppResponse | None:
        """`user` turns do-not-disturb on from now until `until` (None: off); Slack tells the
        app with `dnd_updated_user` (when its token has `dnd:read`).

        Returns:
            The app's first answer to the event (None without the scope).
        """
        ws = self.slack.workspace
        person = ws.user(user)
        person.dnd_start, person.dnd_end = (int(time.time()), until) if until else (0, 0)
        self.slack.touch()
        if "dnd:read" not in ws.team.scopes:
            return None
        event = {
            "type": "dnd_updated_user",
            "user": person.id,
            "dnd_status": person.dnd_status(),
            "event_ts": f"{time.time():.6f}",
        }
        return await self._send_team_event(event)

    async def _send_team_event(self, event: JSON) -> AppResponse:
        team = self.slack.workspace.team
        request = app_event(
            event, team_id=team.id, api_app_id=team.app_id, bot_user_id=team.bot_user_id
        )
        return await self._send_event(request)

    async def revoke(self, token: str, *, uninstall: bool) -> AppResponse:
        """The bot token stops working, and Slack says so to the app: `app_uninstalled` when
        the app was uninstalled, else `tokens_revoked` (listing the bot user's token).

        Returns:
            The app's first answer to the event (retried as any event when it fails).
        """
        self.slack.revoke_token(token, "token_revoked")
        team = self.slack.workspace.team
        event: JSON = (
            {"type": "app_uninstalled"}
            if uninstall
            else {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": [team.bot_user_id]}}
        )
        request = app_event(
            event, team_id=team.id, api_app_id=team.app_id, bot_user_id=team.bot_user_id
        )
        return await self._send_event(request)

    async def submit(self, user: str, inputs: JSON, *, view_id: str | None = None) -> SubmitResult:
        """`user` fills in their top modal (or `view_id`) with `inputs` and presses Submit.

        Args:
            inputs: Answers by block_id or action_id (see `signing.state_values`).

        Raises:
            SlackApiFailure: the user has no such modal open (`not_found`).
        """
        ws = self.slack.workspace
        person = ws.user(user)
        stack = ws.views.get(person.id) or []
        view = next((v for v in stack if v.id == view_id), None) if view_id else _top(stack)
        if view is None:
            raise SlackApiFailure("not_found")
        blocks = view.spec.get("blocks") or []
        values = state_values(blocks, inputs)
        missing = _missing_required(blocks, values)
        if missing:
            view.errors = missing
            self.slack.touch()
            return SubmitResult(None, missing, view.to_api(ws.team))
        request = view_submission(
            user_id=person.id,
            user_name=person.name,
            view=view.to_api(ws.team),
            values=values,
            trigger_id=self.slack.triggers.issue(person.id),
            team_id=ws.team.id,
            team_domain=ws.team.domain,
            api_app_id=ws.team.app_id,
        )
        response = await self._send(request)
        errors: dict[str, str] = {}
        if response.status == 200 and not response.late:
            errors = self._apply_view_ack(person.id, view, response.json())
            self.slack.touch()
        top = _top(ws.views.get(person.id) or [])
        return SubmitResult(response, errors, top.to_api(ws.team) if top else None)

    def _apply_view_ack(self, user: str, view: View, ack: Any) -> dict[str, str]:
        ws = self.slack.workspace
        stack = ws.views.get(user) or []
        action = ack.get("response_action") if isinstance(ack, dict) else None
        if action == "errors":
            view.errors = dict(ack.get("errors") or {})
            return view.errors
        if action in ("update", "push"):
            new = ack.get("view")
            check_view(new)
            if action == "update":
                ws.replace_view(view, new)
            elif len(stack) < limits.MAX_VIEW_STACK:
                stack.append(ws.new_view(user, new, root=stack[-1]))
            return {}
        if action == "clear":
            stack.clear()
        elif view in stack:  # no response_action: this view closes, the one below shows again
            stack.remove(view)
        return {}


def _retry_reason(response: AppResponse | None) -> str:
    """Slack's `X-Slack-Retry-Reason` for a delivery that failed this way."""
    if response is None:
        return "connection_failed"
    return "http_timeout" if response.late else "http_error"


def _top(stack: list[View]) -> View | None:
    return stack[-1] if stack else None


def _missing_required(blocks: list[JSON], values: JSON) -> dict[str, str]:
    missing: dict[str, str] = {}
    for block in blocks:
        if block.get("type") != "input" or block.get("optional"):
            continue
        block_id = block.get("block_id", "")
        for state in (values.get(block_id) or {}).values():
            answered = [v for k, v in state.items() if k != "type" and v not in (None, "", [])]
            if not answered:
                missing[block_id] = REQUIRED_FIELD
    return missing
