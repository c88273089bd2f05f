"""`FakeSlack`: a local stand-in for Slack's Web API, as an aiohttp application.

Point slack_sdk's client (or the bot, through `SIGNOFF_SLACK_API_URL`) at `FakeSlack.url` and it
answers `/api/<method>` like Slack: form-encoded or JSON bodies, the token in the Authorization
header or the body, `{"ok": false, "error": ...}` refusals with Slack's codes. Behind it is a
`Workspace` (channels, messages, threads, edits, ephemeral messages, modals, Home tabs, users,
user groups) that tests inspect. Every call is recorded; `fail_next()` makes the next calls of a
method answer 429 (with Retry-After), 5xx or a Slack error first; `delay()` slows a method's
answers; it takes only the tokens it issued (`bot_token`, `issue_token()`), as Slack does, and
`revoke_token()` kills one; `rate_limits=True` answers 429 past Slack's tiers.

Socket Mode: an `xapp-` token's `apps.connections.open` gets a WebSocket URL the fake serves
(`socket_mode.py`); with `socket_mode=True` the user's actions go to the app over it.

In the other direction it plays the user: `click()`, `submit()`, `command()`, `open_home()` send
the app properly signed requests, with trigger_ids and response_urls the fake issued and honours.

    async with FakeSlack.running() as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
        ...

Run as a process (`python -m bot.sandbox.slack_api --port 0`; its options are `_cli`'s), it
prints its URLs and serves an HTTP control API under `/_sandbox/` (see `bot.sandbox.control`) so
other processes can drive it.

What it holds and how it answers is `SlackState`'s (`state.py`); this module serves it: the
`/api/<method>` route, Socket Mode's and the control API's routes, and the process.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from bot.sandbox._cli import (
    APP_TOKEN_PREFIX,
    BOT_TOKEN_PREFIX,
    READY_PREFIX,
    build_workspace,
    parse_args,
)
from bot.sandbox.control import add_control_routes
from bot.sandbox.state import Call, Fault, SlackState
from bot.sandbox.workspace import JSON

__all__ = ["Call", "FakeSlack", "Fault"]

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class FakeSlack(SlackState):
    """Slack's Web API and interaction delivery, in process, over a `Workspace`.

    Args:
        workspace: The initial workspace (`reset()` keeps its people, groups and channels and
            drops the conversations), or a factory for it (called again on `reset()`);
            `Workspace.demo` by default.
        tokens: The bot tokens the workspace issued (the app's install); when None, it issues
            one of its own (`bot_token`). As Slack, it takes no other: a call with no token
            gets `not_authed`, one with a token it did not issue `invalid_auth`
            (`issue_token()` issues more).
        app_tokens: The app-level tokens it issued, for `apps.connections.open`; when None,
            one of its own (`app_token`). Other methods refuse them
            (`not_allowed_token_type`), as it refuses bot tokens.
        app_url: The app's request URL (`.../slack/events`), for `click()` and friends.
        signing_secret: The app's signing secret, to sign what is sent to `app_url`.
        socket_mode: Send the user's actions over the app's Socket Mode connection instead.
        rate_limits: Answer 429 past Slack's rate limits (`ratelimits.py`); off by default so
            that the demo and ordinary tests are not slowed; tests about load turn it on.
        event_retry_delays: Seconds before each redelivery of an event the app failed to
            acknowledge (Slack's: at once, after a minute, after five).
        trigger_ttl: Seconds a trigger_id may open a modal (Slack: about 3).
        clock: Time source for recorded calls, trigger_ids and response_urls.
    """

    _runner: web.AppRunner | None = None

    @functools.cached_property
    def app(self) -> web.Application:
        """The aiohttp application; serve it yourself or use `start()` / `running()`."""
        app = web.Application()
        app.middlewares.append(self._learn_base_url)
        app.router.add_route("*", "/api/{method}", self._handle_api)
        self.sockets.add_routes(app)
        add_control_routes(app, self)
        return app

    # serving ----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The Web API base URL (`http://host:port/api/`): slack_sdk's `base_url`."""
        if not self.base_url:
            raise RuntimeError("FakeSlack is not serving yet: call start() or use running()")
        return self.base_url + "api/"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on `host:port` (0 picks a free port); returns the Web API base URL."""
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        self.base_url = f"http://{bound_host}:{bound_port}/"
        self.responses.base_url = self.base_url
        return self.url

    async def stop(self) -> None:
        """Stop serving and close the connection to the app."""
        if self._driver:
            await self._driver.close()
        await self.sockets.close()
        if self._runner:
            await self._runner.cleanup()
            self._runner = None

    @classmethod
    @asynccontextmanager
    async def running(
        cls, *, host: str = "127.0.0.1", port: int = 0, **kwargs: Any
    ) -> AsyncIterator[FakeSlack]:
        """`async with FakeSlack.running(port=0) as slack:` serves while the block runs."""
        slack = cls(**kwargs)
        await slack.start(host, port)
        try:
            yield slack
        finally:
            await slack.stop()

    @web.middleware
    async def _learn_base_url(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """When the app is served by someone else (not `start()`), learn the URL from a request."""
        if not self.base_url:
            self.base_url = f"{request.url.origin()}/"
            self.responses.base_url = self.base_url
        return await handler(request)

    # the Web API ------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, token = await _read_params(request)
        if self.latency.get(method):
            await asyncio.sleep(self.latency[method])
        status, headers, body = self.answer(method, params, token)
        if self.losses.get(method):
            self.losses[method] -= 1
            if not self.losses[method]:
                del self.losses[method]
            self.calls.append(Call(method, params, self.clock(), status, body, lost=True))
            self.touch()
            if request.transport is not None:
                request.transport.abort()  # done; the app never hears the answer
            raise web.HTTPServiceUnavailable()  # not sent: the connection is gone
        self.record(method, params, status, body)
        return web.json_response(body, status=status, headers=headers)


async def _read_params(request: web.Request) -> tuple[JSON, str | None]:
    """Merge query, form and JSON parameters as Slack does; take the token out of them."""
    params: JSON = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                body = None
            if isinstance(body, dict):
                params.update(body)
        else:
            params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
    token = params.pop("token", None)
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        token = auth.removeprefix("Bearer ").strip()
    return params, token


async def _serve(args: argparse.Namespace) -> None:
    slack = FakeSlack(
        lambda: build_workspace(
            args.users, args.channels, args.usergroup, args.scopes, args.messages_tab
        ),
        tokens=set(args.token) if args.token else None,
        app_tokens=set(args.app_token) if args.app_token else None,
        socket_mode=args.socket_mode,
        rate_limits=args.rate_limits,
        app_url=args.app_url,
        signing_secret=args.signing_secret,
        trigger_ttl=args.trigger_ttl,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await slack.start(args.host, args.port)
    if not args.token:
        print(f"{BOT_TOKEN_PREFIX}{slack.bot_token}", flush=True)
    if not args.app_token:
        print(f"{APP_TOKEN_PREFIX}{slack.app_token}", flush=True)
    print(f"{READY_PREFIX}{slack.url}", flush=True)
    try:
        await stop.wait()
    finally:
        await slack.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m bot.sandbox.slack_api`: serve the fake until interrupted; the exit status."""
    asyncio.run(_serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
