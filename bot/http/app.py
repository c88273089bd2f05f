"""The bot's process: the aiohttp application that mounts each surface's routes, and `serve`,
which owns start-up and shutdown: the HTTP server, Socket Mode when configured, and the
background work (job worker, sweep), all on one event loop.

The surfaces, one route table each:
- Slack (`bot.http.slack`): `POST /slack/events`, every Slack request, in HTTP mode only.
- operations (`bot.http.operations`): `GET /healthz`, `GET /metrics`.
- the approvals API (`bot.http.api`): `/api/runs`, `/api/approvals`, `/api/openapi.json`.
- MCP (`bot.http.mcp`): `/mcp`, the MCP server over streamable HTTP, for services with a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib
import logging
import signal
from typing import Any

import aiohttp
from aiohttp import web

from ..approvals.service import Signoff
from ..config import Settings, SettingsError
from ..scheduler import Foreground, JobRunner, start_scheduler
from ..slack.app import build_bolt_app
from ..slack.health import SlackHealth
from ..slack.socket_link import SocketLink
from .api import api_routes
from .mcp import mount_mcp
from .metrics import Metrics
from .operations import operation_routes
from .runtime import (
    build_runtime,
    check_slack,
    keep_groups_fresh,
    release_held,
    share_rate_limits,
)
from .slack import slack_routes
from .webhooks import WebhookClient

__all__ = ["build_web_app", "serve"]

log = logging.getLogger("signoff.server")


def build_web_app(
    signoff: Signoff,
    settings: Settings,
    *,
    bolt_app: Any | None,
    runner: JobRunner,
    metrics: Metrics,
    slack_health: SlackHealth | None = None,
    socket_link: SocketLink | None = None,
) -> web.Application:
    """The aiohttp application. `bolt_app` is None in Socket Mode (no Slack route is served);
    `slack_health` (the sink's) degrades `/healthz` once Slack refuses the bot token,
    `socket_link` once the Socket Mode connection is gone past its grace."""
    app = web.Application(client_max_size=1024 * 1024)
    # This process posts the cards: a service's request that could reach no one is refused
    signoff.external.check_reach = True
    signoff.external.default_channel = settings.default_channel
    if bolt_app is not None:
        app.add_routes(slack_routes(bolt_app, settings.slack_signing_secret, metrics))
    app.add_routes(operation_routes(signoff, metrics, slack_health, socket_link))
    app.add_routes(api_routes(signoff, settings, runner))
    mount_mcp(app, signoff)  # `/mcp`: the MCP server, for services with a bearer token
    return app


async def serve(settings: Settings, *, port: int, host: str = "0.0.0.0") -> None:
    """Run the bot until SIGTERM or SIGINT.

    What it opens (the Slack session, the database, the Socket Mode connection, the port, the
    workers) is closed in the reverse order on the way out, also when start-up stops half way:
    a token Slack refuses, a database that is down, a port in use.
    """
    settings.check_slack()
    metrics = Metrics()
    async with contextlib.AsyncExitStack() as opened:
        # One session for every Web API call, its connections kept alive: slack_sdk would open
        # a session, a connection and (to Slack) a TLS handshake for each call otherwise. With
        # a session of ours, slack_sdk times each call by the session's timeout.
        slack_session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=settings.slack_timeout)
        )
        opened.push_async_callback(slack_session.close)
        signoff, client = build_runtime(settings, metrics=metrics, session=slack_session)
        opened.push_async_callback(signoff.db.aclose)
        # Slack's word on the tokens and the policy's groups, asked while the database is made
        # ready and the app built; awaited before anything is served
        slack_checked = asyncio.create_task(check_slack(signoff, client, settings))
        opened.push_async_callback(_given_up, slack_checked)  # start-up stopped before it
        await signoff.db.upgrade()
        await signoff.release_dead_leases()  # a crashed predecessor's jobs, at once
        foreground = Foreground()  # the clicks being served; the job workers give way to them
        runner = JobRunner(
            signoff,
            concurrency=settings.workers,
            kinds=("resume", "event", "webhook"),
            foreground=foreground,
            webhook_workers=settings.webhook_workers,  # a slow receiver never holds up a card
        )
        webhooks = WebhookClient(timeout=settings.webhook_timeout)
        opened.push_async_callback(webhooks.close)
        signoff.external.send = webhooks.send
        signoff.external.checks.post = webhooks.ask_facts
        bolt_app = build_bolt_app(
            signoff,
            client,
            runner.kick,
            # Socket Mode envelopes come over the app token's WebSocket, unsigned
            signing_secret=None if settings.slack_app_token else settings.slack_signing_secret,
            default_channel=settings.default_channel,
            serving=foreground.serving,
        )
        socket_url = await slack_checked  # SettingsError: a token refused, a group unknown
        share_rate_limits(signoff, client)
        await release_held(signoff)
        socket_handler = socket_link = None
        if settings.slack_app_token:
            # Bolt's Socket Mode adapter and its WebSocket client, for Socket Mode alone
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            socket_handler = AsyncSocketModeHandler(bolt_app, settings.slack_app_token)
            opened.push_async_callback(socket_handler.close_async)
            socket_handler.client.wss_uri = socket_url  # the check's URL: no second Tier 1 call
            await socket_handler.connect_async()  # type: ignore[no-untyped-call]
            metrics.socket_connected.set(1)
            socket_link = SocketLink(
                socket_handler.client,
                client,
                settings.slack_app_token,
                grace=settings.socket_grace,
                on_change=lambda up: metrics.socket_connected.set(1 if up else 0),
            )
            opened.push_async_callback(socket_link.start())
        web_app = build_web_app(
            signoff,
            settings,
            bolt_app=None if socket_handler else bolt_app,
            runner=runner,
            metrics=metrics,
            slack_health=getattr(signoff.sink, "health", None),
            socket_link=socket_link,
        )
        web_runner = web.AppRunner(web_app, access_log=None)
        await web_runner.setup()
        opened.push_async_callback(web_runner.cleanup)
        await _listen(web.TCPSite(web_runner, host, port), host, port)
        runner.start()
        opened.push_async_callback(_stop_workers, signoff, runner)
        preloaded = asyncio.create_task(_preload())  # before the first click, not during it
        opened.push_async_callback(_given_up, preloaded)
        groups_task = keep_groups_fresh(signoff)
        if groups_task is not None:
            opened.callback(groups_task.cancel)
        scheduler = start_scheduler(
            signoff, sweep_every=settings.sweep_interval, jobs_every=None, foreground=foreground
        )
        opened.callback(scheduler.shutdown, wait=False)
        # first on the way out: reads waiting on a decision answer now, with what they would read
        opened.callback(signoff.external.close)
        mode = (
            "Socket Mode"
            if socket_handler
            else f"HTTP on {host}:{port}, Slack requests at /slack/events"
        )
        log.info("signoff running (%s); database %s", mode, signoff.db.display_url)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()


async def _listen(site: web.TCPSite, host: str, port: int) -> None:
    """Start listening on `host:port`, or say why it cannot and what to do.

    Raises:
        SettingsError: the port is taken (another `signoff run` or `signoff demo`?), or the
            address is not one of this machine's, or the port needs privileges.
    """
    try:
        await site.start()
    except OSError as e:
        why = {
            errno.EADDRINUSE: "the port is in use (another signoff run or signoff demo?): stop "
            "that one, or pass --port with a free one",
            errno.EADDRNOTAVAIL: "the address is not one of this machine's: pass --host "
            "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)",
            errno.EACCES: "a port below 1024 needs privileges: pass --port 1024 or above (the "
            "default is 3000)",
        }.get(e.errno or 0, f"{e.strerror or e}: pass another --host or --port")
        raise SettingsError(f"cannot listen on {host}:{port}: {why}") from e


async def _given_up(task: asyncio.Task[Any]) -> None:
    """Stop `task` if it is still running (start-up stopped half way), and wait for it."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)  # its error: said already, or moot


RESUME_IMPORTS = ("langchain_core.runnables.utils",)
"""What a decision's resume loads on first use that `signoff run` does not load to start: the
graph runtime reads the paused run's state, and finds each node's subgraph as LangGraph does,
with langchain_core's helper (`graphs._subgraph`). Its first import takes a tenth of a second
or more of the event loop, which the first decisions' job would take in the middle of a burst
of clicks, every click in flight waiting on it."""


async def _preload() -> None:
    """Import `RESUME_IMPORTS` on a thread once the bot serves: the event loop keeps taking
    turns meanwhile, and neither the start (`/healthz`) nor the first clicks wait for it. One
    that fails to import is left to fail where it is used."""
    for name in RESUME_IMPORTS:
        try:
            await asyncio.to_thread(importlib.import_module, name)
        except Exception as e:  # noqa: BLE001 - said where it is used, if it is
            log.debug("could not preload %s: %s", name, e)


async def _stop_workers(signoff: Signoff, runner: JobRunner) -> None:
    """Let the job workers finish what they hold, then link what was recorded in the last
    moments into the audit chain."""
    await runner.stop()
    try:
        await signoff.link_audit()
    except Exception as e:  # noqa: BLE001 -- another process or the next start links it
        log.warning("could not link the last audit entries on the way out: %s", e)
