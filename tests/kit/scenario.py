"""The real Bolt app in process: scenario tests through the front door, without processes.

`running_scenario(directory)` wires the bot as `signoff run` does (`bot.http.build_runtime`:
a `Signoff` on a SQLite file, Slack events delivered by the Slack sink, groups from Slack), builds
its Bolt app (`bot.slack.app.build_bolt_app`) and serves it on 127.0.0.1 through Bolt's aiohttp
adapter; its Web API client points at an in-process `FakeSlack`, which plays the people and
signs what it sends them with the app's signing secret. What a test looks at is what a user
would notice: the calls the fake recorded, its workspace (cards, ephemerals, modals) and the
database.

The job worker does not run by itself: `settle()` performs every due job (card posts and
updates, resumes), as the bot's worker would once kicked, so each step is deterministic.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from bot.approvals.models import Approval
from bot.approvals.service import Signoff
from bot.config import DEFAULT_SLACK_TIMEOUT, Settings
from bot.http import build_runtime
from bot.sandbox import AppResponse, FakeSlack, SlackRequest, SlackSigner, block_actions
from bot.sandbox.interactions import find_element
from bot.sandbox.processes import APP_TOKEN, CHANNEL, SIGNING_SECRET, sqlite_url, write_policy
from bot.sandbox.transports import TransportName
from bot.sandbox.workspace import Message
from bot.slack.app import build_bolt_app

__all__ = ["POLICY", "Scenario", "running_scenario"]

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "24h"
"""
"""Carol starts refunds; one of the Slack user group @approvers (alice, bob) decides alone."""

SETTLE_TIMEOUT = 10.0
"""Seconds the background work of a test may take once it is over (a Home refresh)."""

BOT_TOKEN = "xoxb-scenario"
"""The bot token the scenario's workspace issued (it takes no other)."""


@dataclass
class Scenario:
    """One test's bot, in process, and the fake Slack it talks to."""

    slack: FakeSlack
    """The fake: its `calls`, its `workspace`, and the people (`click`, `submit`, `command`)."""
    signoff: Signoff
    """The governance core the app was built on (its database is the test's own)."""
    app: AsyncApp = field(init=False)
    """The real Bolt app."""
    url: str = field(init=False)
    """Where the app is served (`http://127.0.0.1:PORT/slack/events`)."""
    kicks: int = 0
    """How many times a listener woke the job worker."""

    def kick(self) -> None:
        self.kicks += 1

    async def settle(self) -> int:
        """Do every due job (post and update cards, resume runs); how many were done."""
        done = 0
        while n := await self.signoff.run_jobs():
            done += n
        return done

    async def refund(self, customer: str, amount: float = 42.5) -> tuple[Approval, Message]:
        """Carol asks for a refund; the approval, and its card once posted in #approvals."""
        report = await self.signoff.start(
            "refund",
            {"customer_id": customer, "order_id": "o-1", "amount": amount, "reason": "damaged"},
            requester="U0CAROL",
            channel=CHANNEL,
        )
        (approval_id,) = report.approvals
        await self.settle()
        approval = await self.signoff.get(approval_id)
        assert approval.message_ts is not None, f"no card was posted for {approval_id}"
        return approval, self.card(approval)

    def card(self, approval: Approval) -> Message:
        """The approval's card as it is in the workspace now."""
        assert approval.message_ts is not None
        return self.slack.workspace.channels[CHANNEL].messages[approval.message_ts]

    def click_request(
        self, user: str, card: Message, action_id: str, *, trigger_id: str | None = None
    ) -> SlackRequest:
        """What Slack sends when `user` clicks `action_id` on `card`, not yet signed; with a
        trigger_id issued by the fake unless one is given."""
        block_id, element = find_element(card.blocks, action_id)
        return block_actions(
            action_id=action_id, value=element.get("value"), block_id=block_id,
            user_id=user, channel_id=card.channel, message=card.to_api(),
            trigger_id=trigger_id or self.slack.triggers.issue(user),
            response_url=self.slack.responses.issue(card.channel, user, card.ts),
        )  # fmt: skip

    async def send(
        self, request: SlackRequest, *, signer: SlackSigner | None = None, **kw: Any
    ) -> AppResponse:
        """Send the app a request over HTTP, signed with its secret (or by `signer`); `kw` goes
        to `SlackSigner.send` (`signature=`, `timestamp=`)."""
        return await (signer or self.slack.driver.signer).send(self.url, request, **kw)


@contextlib.asynccontextmanager
async def running_scenario(
    directory: Path,
    policy: str = POLICY,
    *,
    transport: TransportName = "http",
    default_channel: str | None = CHANNEL,
    slack_timeout: float = DEFAULT_SLACK_TIMEOUT,
) -> AsyncIterator[Scenario]:
    """A fake Slack and the bot's Bolt app on a fresh SQLite file in `directory`, serving while
    the block runs; on the way out the app's background work (a Home refresh) is let finish.

    `transport`: how the fake's people reach the app: signed HTTP to its request URL, or
    Socket Mode envelopes through the real `AsyncSocketModeHandler` (an `xapp-` token, the app
    unsigned, as `signoff run` serves it then). `Scenario.send` (hand-made signed requests)
    is HTTP's alone. `default_channel`: `SIGNOFF_DEFAULT_CHANNEL` (None: unset).
    `slack_timeout`: `SIGNOFF_SLACK_TIMEOUT`."""
    async with FakeSlack.running(tokens={BOT_TOKEN}, app_tokens={APP_TOKEN}) as slack:
        settings = Settings(
            database_url=sqlite_url(directory),
            policy_path=write_policy(directory, policy),
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=slack.url,
            default_channel=default_channel,
            slack_timeout=slack_timeout,
        )
        signoff, client = build_runtime(settings)
        await signoff.db.upgrade()
        scenario = Scenario(slack, signoff)
        scenario.app = build_bolt_app(
            signoff,
            client,
            scenario.kick,
            signing_secret=SIGNING_SECRET if transport == "http" else None,
            default_channel=default_channel,
        )
        before = asyncio.all_tasks()
        runner = web.AppRunner(scenario.app.web_app(path="/slack/events"), access_log=None)
        handler: AsyncSocketModeHandler | None = None
        if transport == "http":
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            host, port = runner.addresses[0][:2]
            scenario.url = f"http://{host}:{port}/slack/events"
            slack.connect_app(scenario.url, SIGNING_SECRET)
        else:
            scenario.url = ""
            slack.use_socket_mode()
            handler = AsyncSocketModeHandler(scenario.app, APP_TOKEN)
            await handler.connect_async()  # type: ignore[no-untyped-call]
            await slack.sockets.wait_connected()
        try:
            yield scenario
        finally:
            await slack.driver.close()
            if handler is not None:
                await handler.close_async()  # type: ignore[no-untyped-call]
            else:
                await runner.cleanup()
            left = asyncio.all_tasks() - before - {asyncio.current_task()}
            if left:
                _, pending = await asyncio.wait(left, timeout=SETTLE_TIMEOUT)
                for task in pending:
                    task.cancel()
            await signoff.db.aclose()
