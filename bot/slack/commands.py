"""`/agent`: status, the status of one thread, run a workflow, retry or cancel a run, help.

Each answer is ephemeral and within Slack's 3 seconds, and nothing is asked of Slack before the
ack: `/agent status` and `/agent run` ack at once with nothing, and their answer (the list; the
run refused, paused or ended) follows through the response_url, the one message the person sees.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError

from graphs import RunConfig

from ..approvals.errors import (
    AlreadyStartedError,
    ApprovalError,
    DatabaseUnavailable,
    GroupsUnavailable,
    InvalidInputError,
    MissingInputError,
    StartRefused,
    UnknownWorkflowError,
)
from ..approvals.events import RetryLater
from . import messages, payloads, replies, status
from ._listener import STATUS_LIMIT, Listener
from .away import user_named
from .errors import CHANNEL_GONE, error_code
from .home import Home

__all__ = ["Commands"]

log = logging.getLogger("signoff.slack")

HISTORY_STEPS = 10
"""How many checkpoints `/agent status THREAD_ID` summarises."""
STATUS_TRIES = 20
"""How many times `/agent status` asks again (a second apart) while Slack is slow to say who is
in the groups: it has answered already, so it can wait where a click cannot."""


class Commands(Listener):
    """The `/agent` slash command."""

    home: Home | None = None
    """Published again after `/agent away` and `/agent back` (set by `Handlers`)."""

    def _home_soon(self, user: str) -> None:
        if self.home is not None:
            self._spawn(self.home.publish_home(user))

    async def on_agent(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        user = body.get("user_id", "")
        try:
            command = payloads.parse_agent_command(body.get("text") or "")
        except payloads.CommandError as e:
            help_message = status.help_blocks(sorted(self.signoff.workflows))
            await ack(
                response_type="ephemeral",
                text=messages.command_error(str(e)),
                blocks=help_message["blocks"],
            )
            return
        try:
            if command.kind == "status":
                # Nothing is asked of Slack (groups, card links) before the ack: the list
                # follows through the response_url.
                await ack()
                self._spawn(self._status(user, body.get("channel_id"), body.get("response_url")))
            elif command.kind == "status_thread":
                await ack(
                    response_type="ephemeral",
                    **(await self._thread_status(command.thread_id or "")),
                )
            elif command.kind == "run":
                # An empty ack: the outcome (refused, paused, ended) is the one answer the
                # person sees, through the response_url, once the run has got that far.
                await ack()
                channel = body.get("channel_id") or self.default_channel
                self._spawn(
                    self._run(
                        command.workflow or "",
                        command.args,
                        user,
                        channel,
                        body.get("response_url"),
                        body.get("trigger_id"),
                    )
                )
            elif command.kind == "away":
                until = payloads.until_time(command.until, time.time()) if command.until else None
                if command.delegate and command.delegate.startswith("@"):
                    await ack()  # Slack is asked who that is: the answer follows
                    where = (body.get("channel_id"), body.get("response_url"))
                    self._spawn(self._away_named(user, until, command.delegate, *where))
                    return
                await self.signoff.away.set(user, until=until, delegate=command.delegate)
                await ack(
                    response_type="ephemeral", text=messages.away_set(until, command.delegate)
                )
                self._home_soon(user)
            elif command.kind == "back":
                await self.signoff.away.end(user)
                await ack(response_type="ephemeral", text=messages.back())
                self._home_soon(user)
            elif command.kind == "retry":
                await self.signoff.retry(command.thread_id or "", actor=user, check_control=True)
                self.kick()
                await ack(
                    response_type="ephemeral", text=messages.retrying(command.thread_id or "")
                )
            elif command.kind == "cancel":
                cancelled = await self.signoff.cancel(
                    command.thread_id or "", actor=user, note=command.note, check_control=True
                )
                self.kick()
                await ack(
                    response_type="ephemeral",
                    text=messages.cancelled_run(command.thread_id or "", len(cancelled)),
                )
            else:
                await ack(
                    response_type="ephemeral",
                    **status.help_blocks(sorted(self.signoff.workflows), unknown=command.unknown),
                )
        except ApprovalError as e:
            await ack(response_type="ephemeral", text=messages.refusal_text(e))
        except payloads.CommandError as e:
            await ack(response_type="ephemeral", text=messages.command_error(str(e)))

    async def _away_named(
        self,
        user: str,
        until: float | None,
        handle: str,
        channel: str | None,
        response_url: str | None,
    ) -> None:
        """`/agent away ... delegate @handle`, after its ack: the handle looked up in Slack."""
        try:
            delegate = await user_named(self.client, handle.removeprefix("@"))
            if delegate is None:
                text = messages.no_such_person(handle)
            else:
                await self.signoff.away.set(user, until=until, delegate=delegate)
                text = messages.away_set(until, delegate)
                self._home_soon(user)
        except ApprovalError as e:
            text = messages.refusal_text(e)
        except (SlackApiError, RetryLater, aiohttp.ClientError, TimeoutError) as e:
            log.warning("could not look %s up in Slack: %s", handle, e)
            text = messages.no_such_person(handle, slack_failed=True)
        await self._respond(response_url, channel, user, text)

    async def _status(self, user: str, channel: str | None, response_url: str | None) -> None:
        """`/agent status`, after its ack: what waits on `user` and on others, with links."""
        for attempt in range(STATUS_TRIES):
            try:
                view = await self.signoff.pending_view(user, limit=STATUS_LIMIT)
                break
            except GroupsUnavailable as e:  # Slack is slow: its answer fills the cache meanwhile
                if attempt == STATUS_TRIES - 1:
                    await self._respond(response_url, channel, user, messages.refusal_text(e))
                    return
                await asyncio.sleep(1.0)
            except ApprovalError as e:
                await self._respond(response_url, channel, user, messages.refusal_text(e))
                return
        shown = view.mine + view.others
        answer = status.status_blocks(
            shown,
            user,
            time.time(),
            decidable={a.id for a in view.mine},
            permalinks=await self._card_links(shown),
            totals=(view.mine_total, view.others_total),
            mentions=await self._approver_names(shown),
        )
        await self._respond(response_url, channel, user, answer["text"], answer.get("blocks"))

    async def _thread_status(self, thread_id: str) -> dict[str, Any]:
        run = await self.signoff.run_info(thread_id)
        if run is None:
            return {"text": messages.unknown_thread(thread_id)}
        graph = self.signoff.graph(run["workflow"])
        config: RunConfig = {"configurable": {"thread_id": thread_id}}
        history = [
            messages.history_line(s.metadata.get("step"), s.metadata.get("source"), s.next)
            async for s in graph.aget_state_history(config, limit=HISTORY_STEPS)
        ]
        state = await graph.aget_state(config)
        approvals = await self.signoff.thread_approvals(thread_id)
        summary = {"next": state.next, "history": list(reversed(history))}
        return status.thread_status_blocks(dict(run), summary, approvals)

    async def _run(
        self,
        workflow: str,
        args: dict[str, str],
        user: str,
        channel: str | None,
        response_url: str | None,
        trigger_id: str | None = None,
    ) -> None:
        asked_in = channel
        channel = await self._card_channel(channel)
        if channel is None:
            await self._respond(response_url, asked_in, user, messages.run_nowhere_to_post())
            return
        try:
            report = await self.signoff.start(
                workflow,
                args,
                requester=user,
                channel=channel,
                check_starter=True,
                text_inputs=True,
                request_key=trigger_id,  # one command, one run: a replay starts nothing
            )
            settled = [await self.signoff.get(a) for a in report.approvals]
            if report.status == "running" and report.error:  # handed to the worker
                text = messages.run_handed_over(workflow, report.thread_id)
            else:
                text = messages.run_started(workflow, report.thread_id, report.status, settled)
        except AlreadyStartedError as e:
            log.warning(
                "/agent run by %s was sent again (trigger %s): not started", user, trigger_id
            )
            text = messages.run_already_started(workflow, e.thread_id)
        except UnknownWorkflowError:
            text = messages.unknown_workflow(workflow, sorted(self.signoff.workflows))
        except MissingInputError as e:
            text = messages.missing_inputs(workflow, e.missing, e.inputs)
        except InvalidInputError as e:
            text = messages.invalid_inputs(workflow, e.problems)
        except StartRefused:
            text = messages.start_refused(workflow)
        except DatabaseUnavailable:
            text = messages.database_unavailable()
        except Exception as e:
            log.exception("/agent run %s failed", workflow)
            text = replies.thread_reply_failed(workflow, "", f"{type(e).__name__}: {e}")
        self.kick()
        if channel != asked_in:
            text += "\n" + messages.run_card_elsewhere(channel)
        # through the response_url: it reaches the person even where signoff cannot post
        await self._respond(response_url, asked_in, user, text)

    async def _card_channel(self, channel: str | None) -> str | None:
        """Where a run started in `channel` posts its cards: there if signoff is in it, else
        the default channel (None when there is none). Asked after the ack.

        Membership is asked by reading one message (`conversations.history`, which the
        `*:history` scopes the bot has already allow): Slack answers `not_in_channel` or
        `channel_not_found` where the bot is not a member, the same rule as for posting
        without `chat:write.public`."""
        if not channel:
            return self.default_channel
        try:
            await self.client.conversations_history(channel=channel, limit=1)
        except SlackApiError as e:
            if error_code(e) in CHANNEL_GONE:  # a DM or private channel signoff is not in
                return self.default_channel
            return channel  # Slack cannot say now: the card's delivery handles what follows
        except (aiohttp.ClientError, TimeoutError, RetryLater):
            return channel
        return channel
