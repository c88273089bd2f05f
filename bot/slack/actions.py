"""The buttons on a card: Approve, Allow more like this (a grant), Reject, Edit, Full payload;
and on an agent turn's card, "Approve all".

Every click is answered within Slack's 3 seconds: the decision is committed first, then the
request is acknowledged, and the resume and the card update run in the background (the job
worker, kicked). Reject, Edit and Allow more like this open a modal (`modals`) once the
clicker may vote; every refusal is an ephemeral message to the person who clicked, and nothing
changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import aiohttp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.decisions import stale
from ..approvals.errors import ApprovalError, DecisionRefused
from ..approvals.events import RetryLater
from ..approvals.models import Approval
from ..approvals.service import Signoff
from . import messages, modals, payloads, replies
from ._listener import Listener, click_wait
from .errors import error_code
from .home import Home

__all__ = ["Actions"]

log = logging.getLogger("signoff.slack")

_NOT_DONE = (SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError)
"""What a call to Slack after the ack may end in: Slack refused it, the client's turn for it is
far off (`RetryLater`: Slack rate-limited the method), or no answer came."""


class Actions(Listener):
    """`block_actions` on signoff's buttons (`payloads.ACTION_IDS`)."""

    def __init__(
        self,
        signoff: Signoff,
        client: AsyncWebClient,
        kick: Callable[[], None],
        home: Home,
        *,
        serving: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        super().__init__(signoff, client, kick, serving=serving)
        self.home = home
        """Refreshed after its user decided something."""

    async def on_button(
        self, ack: AsyncAck, body: dict[str, Any], context: dict[str, Any] | None = None
    ) -> None:
        with self.serving():  # the jobs wait: the person waits for this
            await self._on_button(ack, body, context)

    async def _on_button(
        self, ack: AsyncAck, body: dict[str, Any], context: dict[str, Any] | None
    ) -> None:
        user = (body.get("user") or {}).get("id", "")
        try:
            # The read of what the button is on is within the click's bound too.
            action_id, a, value = await self._approval_for_click(body, click_wait(context))
            if action_id == payloads.APPROVE:
                # For the values the card showed: refused if an edit changed them since.
                await self.signoff.vote(
                    a.id, user, True, wait=click_wait(context), revision=value.revision, seen=a
                )
                await ack()
                self.kick()
                self.home.refresh_home_soon(user)
                return
            if action_id == payloads.PAYLOAD:
                await ack()
                await self._open(body, modals.payload_modal(a), "Full payload")
                try:  # after the modal: its trigger expires in 3 seconds
                    await self.signoff.payload_viewed(a, user)
                except ApprovalError as e:  # the modal is open; only the note of it is lost
                    log.warning("could not note that %s opened %s's payload: %s", user, a.id, e)
                return
            a = await self.signoff.check_voter(a.id, user, approve=action_id != payloads.REJECT)
            limits = self.signoff.grant_limits(a) if action_id == payloads.GRANT else None
            await ack()
            if action_id == payloads.REJECT:
                await self._open(body, modals.reject_modal(a), "Reject")
            elif limits is not None:
                await self._open(body, modals.grant_modal(a, limits), "Approve, allow more")
            else:
                rule = self.signoff.policy.actions[a.action]
                view = modals.edit_modal(a, {f: a.current.get(f) for f in rule.editable})
                await self._open(body, view, "Edit")
        except (payloads.BadPayload, ApprovalError) as e:  # nothing changed: say why
            log.info("refused a click from %s: %s", user, e)
            await ack()
            approval = await self._refused_approval(e)
            await self._ephemeral(body, messages.refusal_text(e, approval))

    async def on_approve_turn(
        self, ack: AsyncAck, body: dict[str, Any], context: dict[str, Any] | None = None
    ) -> None:
        """Approve all, on an agent turn's card: the clicker's approval of each pending call it
        names, at the revision the card showed, in the order the model proposed them. Every
        call is checked first (the button is on its card, its values are those shown, the
        clicker may approve it): one refusal refuses the click, and nothing is recorded."""
        with self.serving():
            user = (body.get("user") or {}).get("id", "")
            try:
                actions = body.get("actions") or [{}]
                value = payloads.TurnValue.decode(actions[0].get("value"))
                wait = click_wait(context)
                calls = []
                for approval_id, revision in value.calls:
                    a = await self.signoff.get(approval_id, wait=wait)
                    shown = payloads.ActionValue(approval_id, value.thread_id, None, revision)
                    calls.append((_on_its_card(body, shown, a), revision))
                for a, revision in calls:
                    if a.revision != revision:  # an edit changed it since the card was drawn
                        raise stale(a, revision)
                    await self.signoff.check_voter(a.id, user)
                for a, revision in calls:
                    await self.signoff.vote(a.id, user, True, wait=wait, revision=revision)
            except (payloads.BadPayload, ApprovalError) as e:  # say why
                log.info("refused an Approve all from %s: %s", user, e)
                await ack()
                approval = await self._refused_approval(e)
                await self._ephemeral(body, messages.refusal_text(e, approval))
                return
            await ack()
            self.kick()
            self.home.refresh_home_soon(user)

    async def on_run_button(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Retry or Cancel on a failed run's message: allowed to the people `/agent retry` and
        `/agent cancel` allow (refusals audited), once (a second click is told it was done);
        the message then says who did it instead of offering the buttons again."""
        user = (body.get("user") or {}).get("id", "")
        actions = body.get("actions") or [{}]
        action_id, thread_id = actions[0].get("action_id"), actions[0].get("value")
        try:
            if not isinstance(thread_id, str) or not thread_id:
                raise payloads.BadPayload("the button names no run")
            if action_id == payloads.RUN_RETRY:
                await self.signoff.retry(thread_id, actor=user, check_control=True)
                line = messages.run_retried_line(user)
            else:
                await self.signoff.cancel(thread_id, actor=user, check_control=True)
                line = messages.run_cancelled_line(user)
        except (payloads.BadPayload, ApprovalError) as e:
            log.info("refused a run button from %s: %s", user, e)
            await ack()
            await self._ephemeral(body, messages.refusal_text(e, None))
            return
        await ack()
        self.kick()
        channel = _get(body, "channel", "id") or _get(body, "container", "channel_id")
        ts = _get(body, "message", "ts") or _get(body, "container", "message_ts")
        text = _get(body, "message", "text") or ""
        if not channel or not ts:
            return
        try:
            await self.client.chat_update(
                channel=channel, ts=ts, **replies.run_control_done(text, line)
            )
        except _NOT_DONE as e:  # done; only the look
            log.warning("could not update the failure message of %s: %s", thread_id, e)

    async def _open(self, body: dict[str, Any], view: dict[str, Any], form: str) -> None:
        """Open the modal of the button clicked; when Slack will not (an expired trigger_id,
        a view it refuses, no answer), tell the person so and to click again."""
        try:
            await self.client.views_open(trigger_id=body["trigger_id"], view=view)
        except _NOT_DONE as e:
            why = error_code(e) if isinstance(e, SlackApiError) else type(e).__name__
            if isinstance(e, RetryLater):  # rate-limited: the client's next turn is far off
                why = "ratelimited"
            log.warning("could not open the %s modal: %s", form, why or e)
            await self._ephemeral(body, messages.modal_not_opened(form, why or "no_answer"))

    async def _refused_approval(self, error: Exception) -> Approval | None:
        """The approval a refused vote was about, to word the refusal (None if unknown)."""
        if not isinstance(error, DecisionRefused) or not error.approval_id:
            return None
        try:
            return await self.signoff.get(error.approval_id)
        except ApprovalError:
            return None

    async def _approval_for_click(
        self, body: dict[str, Any], wait: float
    ) -> tuple[str, Approval, payloads.ActionValue]:
        """The button pressed, its approval and its value, checked against the message it was
        on.

        Raises:
            payloads.BadPayload: a malformed value, or one pointing at another thread or card.
            UnknownApprovalError: no such approval.
        """
        action_id, value = payloads.action_from_body(body)
        if action_id == payloads.APPROVE:
            # The approval as this process last read it (posting or updating its card), if it
            # fits the click: the vote checks it against the database (compare-and-set on its
            # version, or judged again on the row) before anything is recorded. A copy that
            # does not fit may be stale (a card posted again), and one from before the card
            # was posted cannot say which message is its card: the approval is read.
            known = self.signoff.last_read(value.approval_id)
            if known is not None and known.message_ts and known.channel:
                try:
                    return action_id, _on_its_card(body, value, known), value
                except payloads.BadPayload:
                    pass
        approval = await self.signoff.get(value.approval_id, wait=wait)
        return action_id, _on_its_card(body, value, approval), value


def _on_its_card(body: dict[str, Any], value: payloads.ActionValue, approval: Approval) -> Approval:
    """`approval`, when the click's button (`value`) is on its card; else `BadPayload`."""
    message_ts = _get(body, "message", "ts") or _get(body, "container", "message_ts")
    channel = _get(body, "channel", "id") or _get(body, "container", "channel_id")
    if value.thread_id and value.thread_id != approval.thread_id:
        raise payloads.BadPayload("the button points at another thread than its approval's")
    if value.interrupt_id is not None and value.interrupt_id != approval.interrupt_id:
        raise payloads.BadPayload("the button points at another pause than its approval's")
    # Our buttons are only on cards: a click must name the message it was on, and that must
    # be the approval's card once it is recorded (a click can beat the recording by a moment)
    # or its copy in an approver's DM with the bot (`notify = "dm"`: only we post there).
    dm_copy = isinstance(channel, str) and channel.startswith("D") and bool(message_ts)
    if not message_ts or (
        approval.message_ts and message_ts != approval.message_ts and not dm_copy
    ):
        raise payloads.BadPayload("the button is not on its approval's card")
    if approval.channel and channel != approval.channel and not dm_copy:
        raise payloads.BadPayload("the button is not in its approval's channel")
    return approval


def _get(body: Any, key: str, field: str) -> Any:
    """`body[key][field]`, or None when either is missing or not an object."""
    inner = body.get(key) if isinstance(body, dict) else None
    return inner.get(field) if isinstance(inner, dict) else None
