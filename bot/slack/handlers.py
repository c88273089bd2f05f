"""The Bolt listeners. Thin: read the payload (`payloads`), call the governance core, answer with
what `blocks` and `messages` render. Nothing here decides who may do what.

Every click is answered within Slack's 3 seconds: the decision is committed first, then the
request is acknowledged, and the resume and the card update run in the background (the job
worker, kicked). Every refusal is an ephemeral message to the person who clicked; nothing
changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import (
    ApprovalError,
    DatabaseUnavailable,
    DecisionRefused,
    MissingInputError,
    StartRefused,
    UnknownWorkflowError,
)
from ..approvals.models import Approval
from ..approvals.service import Signoff
from . import blocks, messages, payloads

__all__ = ["Handlers"]

log = logging.getLogger("signoff.slack")

Ack = Callable[..., Awaitable[Any]]

HISTORY_STEPS = 10
"""How many checkpoints `/agent status THREAD_ID` summarises."""
PERMALINKS = 20
"""How many card links `/agent status` fetches."""
STATUS_LIMIT = 50
"""How many approvals of each list (yours, others') `/agent status` and Home load; a message
holds at most 50 blocks anyway, and the totals are counted by the database."""
CLICK_WAIT = 2.0
"""Seconds a click's decision may queue for its turn to write: Slack wants an answer within 3 s,
and past that it shows the user an error even if the click went through. A click that would wait
longer is refused ("busy, nothing was recorded") and answered in time."""
HOME_REFRESH_DELAY = 1.0
"""Seconds from a decision to the refresh of the decider's Home (later clicks join it)."""


class Handlers:
    """The listeners, bound to one `Signoff`, Web API client and job runner."""

    def __init__(
        self,
        signoff: Signoff,
        client: AsyncWebClient,
        kick: Callable[[], None],
        *,
        default_channel: str | None = None,
    ) -> None:
        self.signoff = signoff
        self.client = client
        self.kick = kick
        self.default_channel = default_channel
        self._background: set[asyncio.Task[Any]] = set()
        self._home_locks: dict[str, asyncio.Lock] = {}
        self._home_waiting: set[str] = set()
        self._home_soon: set[str] = set()

    # ---- helpers ------------------------------------------------------------------------

    async def _ephemeral(self, body: dict[str, Any], text: str) -> None:
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
            "channel_id"
        )
        user = (body.get("user") or {}).get("id")
        if channel and user:
            try:
                await self.client.chat_postEphemeral(channel=channel, user=user, text=text)
            except Exception as e:  # noqa: BLE001 - the click is acknowledged; a refusal that cannot be shown is only logged
                log.warning("could not tell %s in %s: %s (%s)", user, channel, text, e)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _approval_for_click(self, body: dict[str, Any]) -> tuple[str, Approval]:
        """The button pressed and its approval, checked against the message it was on.

        Raises:
            payloads.BadPayload: a malformed value, or one pointing at another thread or card.
            UnknownApprovalError: no such approval.
        """
        action_id, value = payloads.action_from_body(body)
        approval = await self.signoff.get(value.approval_id)
        message_ts = _get(body, "message", "ts") or _get(body, "container", "message_ts")
        channel = _get(body, "channel", "id") or _get(body, "container", "channel_id")
        if value.thread_id and value.thread_id != approval.thread_id:
            raise payloads.BadPayload("the button points at another thread than its approval's")
        if value.interrupt_id is not None and value.interrupt_id != approval.interrupt_id:
            raise payloads.BadPayload("the button points at another pause than its approval's")
        # Our buttons are only on cards: a click must name the message it was on, and that must
        # be the approval's card once it is recorded (a click can beat the recording by a moment).
        if not message_ts or (approval.message_ts and message_ts != approval.message_ts):
            raise payloads.BadPayload("the button is not on its approval's card")
        if approval.channel and channel != approval.channel:
            raise payloads.BadPayload("the button is not in its approval's channel")
        return action_id, approval

    # ---- buttons ------------------------------------------------------------------------

    async def on_button(self, ack: Ack, body: dict[str, Any]) -> None:
        user = (body.get("user") or {}).get("id", "")
        try:
            action_id, a = await self._approval_for_click(body)
            if action_id == payloads.APPROVE:
                await self.signoff.vote(a.id, user, True, wait=CLICK_WAIT)
                await ack()
                self.kick()
                self.refresh_home_soon(user)
                return
            if action_id == payloads.PAYLOAD:
                await ack()
                await self.client.views_open(
                    trigger_id=body["trigger_id"], view=blocks.payload_modal(a)
                )
                return
            a = await self.signoff.check_voter(a.id, user, approve=action_id != payloads.REJECT)
            await ack()
            if action_id == payloads.REJECT:
                view = blocks.reject_modal(a)
            else:
                rule = self.signoff.policy.actions[a.action]
                view = blocks.edit_modal(a, {f: a.payload.get(f) for f in rule.editable})
            await self.client.views_open(trigger_id=body["trigger_id"], view=view)
        except (payloads.BadPayload, ApprovalError) as e:  # nothing changed: say why
            log.info("refused a click from %s: %s", user, e)
            await ack()
            approval = await self._refused_approval(e)
            await self._ephemeral(body, messages.refusal_text(e, approval))

    async def _refused_approval(self, error: Exception) -> Approval | None:
        """The approval a refused vote was about, to word the refusal (None if unknown)."""
        if not isinstance(error, DecisionRefused) or not error.approval_id:
            return None
        try:
            return await self.signoff.get(error.approval_id)
        except ApprovalError:
            return None

    # ---- modals -------------------------------------------------------------------------

    async def on_reject_submit(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        user = (body.get("user") or {}).get("id", "")
        try:
            approval_id = payloads.approval_id_from_view(view)
            reason = payloads.reason_from_view_state(view.get("state") or {})
            await self.signoff.vote(approval_id, user, False, note=reason, wait=CLICK_WAIT)
            self.refresh_home_soon(user)
        except payloads.FormErrors as e:
            await ack(**e.response())
            return
        except (payloads.BadPayload, ApprovalError) as e:
            text = messages.refusal_text(e, form=True)
            await ack(response_action="errors", errors={payloads.REASON_BLOCK: text})
            return
        await ack()
        self.kick()

    async def on_edit_submit(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        user = (body.get("user") or {}).get("id", "")
        first_block = payloads.NOTE_BLOCK
        try:
            approval_id = payloads.approval_id_from_view(view)
            a = await self.signoff.get(approval_id)
            rule = self.signoff.policy.actions.get(a.action)
            editable = {f: a.payload.get(f) for f in (rule.editable if rule else ())}
            if editable:
                first_block = payloads.edit_block_id(next(iter(editable)))
            edits = payloads.edits_from_view_state(view.get("state") or {}, editable)
            note = payloads.note_from_view_state(view.get("state") or {})
            await self.signoff.vote(
                approval_id, user, True, note=note, edits=edits, wait=CLICK_WAIT
            )
            self.refresh_home_soon(user)
        except payloads.FormErrors as e:
            await ack(**e.response())
            return
        except (payloads.BadPayload, ApprovalError) as e:
            text = messages.refusal_text(e, form=True)
            await ack(response_action="errors", errors={first_block: text})
            return
        await ack()
        self.kick()

    # ---- /agent -------------------------------------------------------------------------

    async def on_agent(self, ack: Ack, body: dict[str, Any]) -> None:
        user = body.get("user_id", "")
        try:
            command = payloads.parse_agent_command(body.get("text") or "")
        except payloads.CommandError as e:
            help_message = blocks.help_blocks(sorted(self.signoff.workflows))
            await ack(
                response_type="ephemeral",
                text=messages.command_error(str(e)),
                blocks=help_message["blocks"],
            )
            return
        try:
            if command.kind == "status":
                view = await self.signoff.pending_view(user, limit=STATUS_LIMIT)
                shown = view.mine + view.others
                links = await self._permalinks(shown)
                await ack(
                    response_type="ephemeral",
                    **blocks.status_blocks(
                        shown,
                        user,
                        time.time(),
                        decidable={a.id for a in view.mine},
                        permalinks=links,
                        totals=(view.mine_total, view.others_total),
                    ),
                )
            elif command.kind == "status_thread":
                await ack(
                    response_type="ephemeral",
                    **(await self._thread_status(command.thread_id or "")),
                )
            elif command.kind == "run":
                await ack(
                    response_type="ephemeral", text=messages.run_starting(command.workflow or "")
                )
                channel = body.get("channel_id") or self.default_channel
                self._spawn(
                    self._run(
                        command.workflow or "",
                        command.args,
                        user,
                        channel,
                        body.get("response_url"),
                    )
                )
            else:
                await ack(
                    response_type="ephemeral", **blocks.help_blocks(sorted(self.signoff.workflows))
                )
        except ApprovalError as e:
            await ack(response_type="ephemeral", text=messages.refusal_text(e))

    async def _permalinks(self, approvals: list[Approval]) -> dict[str, str]:
        """Links to the cards (at most PERMALINKS of them, fetched together; a failure just
        leaves that one out: the list must answer within Slack's 3 seconds)."""
        posted = [a for a in approvals if a.message_ts and a.channel][:PERMALINKS]

        async def one(a: Approval) -> tuple[str, str | None]:
            try:
                resp = await asyncio.wait_for(
                    self.client.chat_getPermalink(channel=a.channel, message_ts=a.message_ts), 1.0
                )
                return a.id, resp.get("permalink")
            except Exception:  # noqa: BLE001 - a missing link is fine
                return a.id, None

        found = await asyncio.gather(*(one(a) for a in posted))
        return {approval_id: url for approval_id, url in found if url}

    async def _thread_status(self, thread_id: str) -> dict[str, Any]:
        run = await self.signoff.run_info(thread_id)
        if run is None:
            return {"text": messages.unknown_thread(thread_id)}
        graph = self.signoff.graph(run["workflow"])
        config = {"configurable": {"thread_id": thread_id}}
        history = [
            messages.history_line(s.metadata.get("step"), s.metadata.get("source"), s.next)
            async for s in graph.aget_state_history(config, limit=HISTORY_STEPS)
        ]
        state = await graph.aget_state(config)
        approvals = await self.signoff.thread_approvals(thread_id)
        summary = {"next": state.next, "history": list(reversed(history))}
        return blocks.thread_status_blocks(dict(run), summary, approvals, now=time.time())

    async def _run(
        self,
        workflow: str,
        args: dict[str, str],
        user: str,
        channel: str | None,
        response_url: str | None,
    ) -> None:
        try:
            report = await self.signoff.start(
                workflow, args, requester=user, channel=channel, check_starter=True
            )
            text = messages.run_started(workflow, report.thread_id, report.status)
        except UnknownWorkflowError:
            text = messages.unknown_workflow(workflow, sorted(self.signoff.workflows))
        except MissingInputError as e:
            text = messages.missing_inputs(workflow, e.missing, e.inputs)
        except StartRefused:
            text = messages.start_refused(workflow)
        except DatabaseUnavailable:
            text = messages.database_unavailable()
        except Exception as e:
            log.exception("/agent run %s failed", workflow)
            text = messages.run_failed(workflow, "", f"{type(e).__name__}: {e}")
        self.kick()
        if channel and user:
            try:
                await self.client.chat_postEphemeral(channel=channel, user=user, text=text)
            except Exception as e:  # noqa: BLE001 - the click is acknowledged; a refusal that cannot be shown is only logged
                log.warning("could not tell %s in %s: %s (%s)", user, channel, text, e)

    # ---- App Home -----------------------------------------------------------------------

    async def on_home_opened(self, event: dict[str, Any]) -> None:
        if event.get("tab") not in (None, "home"):
            return
        await self.publish_home(event["user"])

    def refresh_home_soon(self, user: str) -> None:
        """Publish `user`'s Home after they decided something, within HOME_REFRESH_DELAY.

        Clicks come in bursts (an approver working through a queue): one publish a moment after
        the last of them shows them all, where a publish per click would keep the bot busy
        rendering views nobody is looking at.
        """
        if user in self._home_soon:
            return
        self._home_soon.add(user)

        async def later() -> None:
            try:
                await asyncio.sleep(HOME_REFRESH_DELAY)
            finally:
                self._home_soon.discard(user)
            await self.publish_home(user)

        self._spawn(later())

    async def publish_home(self, user: str) -> None:
        # One publish per user at a time, so a view computed earlier never lands after a later
        # one; and at most one more waiting behind it, which will show everything that happened
        # meanwhile: a burst of clicks by one person costs two publishes, not one per click.
        if user in self._home_waiting:
            return
        self._home_waiting.add(user)
        lock = self._home_locks.setdefault(user, asyncio.Lock())
        try:
            await lock.acquire()
        finally:
            self._home_waiting.discard(user)
        try:
            await self._publish_home(user)
        finally:
            lock.release()
            if (
                not lock.locked()
                and user not in self._home_waiting
                and self._home_locks.get(user) is lock
            ):
                del self._home_locks[user]

    async def _publish_home(self, user: str) -> None:
        try:
            pending = await self.signoff.pending_view(user, limit=STATUS_LIMIT)
            recent = await self.signoff.recent(10)
        except DatabaseUnavailable:
            view = blocks.home_view(
                [], [], user=user, now=time.time(), notice=messages.database_unavailable()
            )
        else:
            view = blocks.home_view(
                pending.mine, recent, user=user, now=time.time(), pending_total=pending.mine_total
            )
        await self.client.views_publish(user_id=user, view=view)


def _get(body: Any, key: str, field: str) -> Any:
    """`body[key][field]`, or None when either is missing or not an object."""
    inner = body.get(key) if isinstance(body, dict) else None
    return inner.get(field) if isinstance(inner, dict) else None
