"""Socket Mode and the driver's two transports, through the real slack_sdk / slack_bolt clients.

A real Bolt AsyncApp is reached either over HTTP (signed POSTs to its aiohttp adapter) or over
Socket Mode (`AsyncSocketModeHandler`, which opens the fake's WebSocket with an `xapp-` token);
the same driver calls go over either and come back the same.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import FakeSlack
from bot.sandbox.signing import app_home_opened
from bot.sandbox.transports import SocketTransport

TOKEN = "xoxb-sandbox-test"
APP_TOKEN = "xapp-1-sandbox-test"
SECRET = "socket-test-signing-secret"
CARD = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "Refund $20"}},
    {"type": "actions", "elements": [
        {"type": "button", "action_id": "approve", "value": "ap-1",
         "text": {"type": "plain_text", "text": "Approve"}},
        {"type": "button", "action_id": "slow", "value": "ap-1",
         "text": {"type": "plain_text", "text": "Slow"}},
    ]},
]  # fmt: skip


def build_app(slack: FakeSlack) -> AsyncApp:
    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=slack.url), signing_secret=SECRET)

    @app.action("approve")
    async def approve(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.chat_postMessage(channel=body["channel"]["id"], text="approved")

    @app.action("slow")
    async def slow(ack: AsyncAck) -> None:
        await asyncio.sleep(3.3)
        await ack()

    @app.command("/agent")
    async def agent(ack: AsyncAck, command: dict[str, Any]) -> None:
        await ack(f"you said: {command['text']}")

    return app


@asynccontextmanager
async def bolt_app(transport: str) -> AsyncIterator[FakeSlack]:
    """The fake, with a Bolt app it reaches over `transport` (`http` or `socket`)."""
    async with FakeSlack.running(tokens={TOKEN}, app_tokens={APP_TOKEN}) as slack:
        app = build_app(slack)
        if transport == "http":
            runner = web.AppRunner(app.web_app(path="/slack/events"), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            host, port = runner.addresses[0][:2]
            slack.connect_app(f"http://{host}:{port}/slack/events", SECRET)
            try:
                yield slack
            finally:
                await runner.cleanup()
        else:
            slack.use_socket_mode()
            handler = AsyncSocketModeHandler(app, APP_TOKEN)
            await handler.connect_async()
            await slack.sockets.wait_connected()
            try:
                yield slack
            finally:
                await handler.close_async()


@pytest.fixture(params=["http", "socket"])
async def bolt(request: pytest.FixtureRequest) -> AsyncIterator[FakeSlack]:
    """`bolt_app` over each transport in turn."""
    async with bolt_app(request.param) as slack:
        yield slack


def post_card(slack: FakeSlack) -> str:
    ws = slack.workspace
    return ws.post(ws.channel("C0APPROVALS"), ws.team.bot_user_id, "card", CARD).ts


async def test_a_click_reaches_the_app_and_its_ack_comes_back(bolt: FakeSlack) -> None:
    ts = post_card(bolt)
    response = await bolt.click("U0ALICE", "C0APPROVALS", ts, "approve")
    assert response.status == 200 and response.ok
    calls = await bolt.wait_for(lambda s: s.calls_to("chat.postMessage"))
    assert calls[0].params["text"] == "approved"


async def test_a_slash_command_gets_its_response_payload_back(bolt: FakeSlack) -> None:
    response = await bolt.command("U0BOB", "C0APPROVALS", "status")
    # Bolt answers HTTP with a text/plain body, Socket Mode with a `{"text": ...}` payload.
    assert response.ok and "you said: status" in response.body
    [ephemeral] = bolt.workspace.ephemerals["U0BOB"]
    assert ephemeral.text == "you said: status" and ephemeral.source == "command_ack"


async def test_slash_command_text_arrives_html_escaped(bolt: FakeSlack) -> None:
    await bolt.command("U0BOB", "C0APPROVALS", "run a&b <x> > y")
    [ephemeral] = bolt.workspace.ephemerals["U0BOB"]
    assert ephemeral.text == "you said: run a&amp;b &lt;x&gt; &gt; y"


async def test_a_click_acknowledged_after_three_seconds_is_reported_failed(bolt: FakeSlack) -> None:
    ts = post_card(bolt)
    response = await bolt.click("U0ALICE", "C0APPROVALS", ts, "slow")
    assert response.late and not response.ok


async def test_connections_open_takes_only_app_tokens() -> None:
    async with FakeSlack.running(tokens={TOKEN}, app_tokens={APP_TOKEN}) as slack:
        client = AsyncWebClient(base_url=slack.url)
        opened = await client.apps_connections_open(app_token=APP_TOKEN)
        assert opened["url"].startswith(f"ws://{slack.base_url.removeprefix('http://')}link/")
        for token, error in [
            (TOKEN, "not_allowed_token_type"),
            ("xapp-1-unknown", "invalid_auth"),
            ("nonsense", "invalid_auth"),
        ]:
            with pytest.raises(SlackApiError) as refused:
                await client.apps_connections_open(app_token=token)
            assert refused.value.response["error"] == error
        with pytest.raises(SlackApiError) as wrong_way:
            await AsyncWebClient(token=APP_TOKEN, base_url=slack.url).auth_test()
        assert wrong_way.value.response["error"] == "not_allowed_token_type"


async def test_hello_and_envelopes_are_shaped_as_slack_sends_them(slack: FakeSlack) -> None:
    url = (await AsyncWebClient(base_url=slack.url).apps_connections_open(app_token=APP_TOKEN))[
        "url"
    ]
    slack.use_socket_mode()
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        hello = json.loads((await ws.receive()).data)
        assert hello["type"] == "hello" and hello["num_connections"] == 1
        assert hello["connection_info"] == {"app_id": slack.workspace.team.app_id}
        assert "host" in hello["debug_info"]

        command = asyncio.ensure_future(slack.command("U0ALICE", "C0APPROVALS", "status"))
        envelope = json.loads((await ws.receive()).data)
        assert envelope["type"] == "slash_commands" and envelope["accepts_response_payload"]
        assert envelope["payload"]["command"] == "/agent"
        assert "retry_attempt" not in envelope
        await ws.send_json({"envelope_id": envelope["envelope_id"], "payload": {"text": "ok"}})
        assert (await command).json() == {"text": "ok"}


async def test_a_used_ticket_is_refused(slack: FakeSlack) -> None:
    url = (await AsyncWebClient(base_url=slack.url).apps_connections_open(app_token=APP_TOKEN))[
        "url"
    ]
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url):
            pass
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await session.ws_connect(url)


async def test_an_unacknowledged_event_is_sent_again_with_its_retry_number() -> None:
    async with FakeSlack.running(
        tokens={TOKEN}, app_tokens={APP_TOKEN}, socket_mode=True, event_retry_delays=(0.0, 0.0)
    ) as slack:
        assert isinstance(slack.driver.transport, SocketTransport)
        slack.driver.transport.ack_wait = 0.3
        client = AsyncWebClient(base_url=slack.url)
        url = (await client.apps_connections_open(app_token=APP_TOKEN))["url"]
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            await ws.receive()  # hello
            first = await slack.open_home("U0ALICE")
            assert first.late and not first.ok
            envelopes = [json.loads((await ws.receive()).data) for _ in range(2)]
            assert [e["type"] for e in envelopes] == ["events_api"] * 2
            assert [(e["retry_attempt"], e["retry_reason"]) for e in envelopes] == [
                (0, ""),
                (1, "http_timeout"),
            ]
            assert envelopes[0]["payload"]["event_id"] == envelopes[1]["payload"]["event_id"]
            third = json.loads((await ws.receive()).data)
            assert third["retry_attempt"] == 2
            await ws.send_json({"envelope_id": third["envelope_id"]})
            await slack.wait_for(lambda s: len(s.driver.deliveries) == 3)
            assert [d.retry_attempt for d in slack.driver.deliveries] == [0, 1, 2]
            assert slack.driver.deliveries[-1].response is not None
            assert slack.driver.deliveries[-1].response.ok


async def test_an_event_failed_over_http_is_sent_again_with_retry_headers() -> None:
    seen: list[tuple[str | None, str | None]] = []

    async def events(request: web.Request) -> web.Response:
        seen.append(
            (request.headers.get("X-Slack-Retry-Num"), request.headers.get("X-Slack-Retry-Reason"))
        )
        return web.Response(status=500 if len(seen) == 1 else 200)

    app = web.Application()
    app.router.add_post("/slack/events", events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        url = f"http://{host}:{port}/slack/events"
        async with FakeSlack.running(
            app_url=url, signing_secret=SECRET, event_retry_delays=(0.0,)
        ) as slack:
            first = await slack.open_home("U0ALICE")
            assert first.status == 500 and not first.ok
            await slack.wait_for(lambda s: len(s.driver.deliveries) == 2)
            assert seen == [(None, None), ("1", "http_error")]
    finally:
        await runner.cleanup()


async def test_envelopes_go_to_every_open_connection_not_only_the_newest() -> None:
    """Slack spreads an app's envelopes over its open connections (two replicas, or one app
    during a refresh): each must be ready to take any of them."""
    async with FakeSlack.running(tokens={TOKEN}, app_tokens={APP_TOKEN}, socket_mode=True) as slack:
        client = AsyncWebClient(base_url=slack.url)
        got: dict[int, list[str]] = {0: [], 1: []}

        async def app(n: int, ws: aiohttp.ClientWebSocketResponse) -> None:
            async for message in ws:
                envelope = json.loads(message.data)
                if envelope.get("type") == "events_api":
                    got[n].append(envelope["payload"]["event"]["user"])
                    await ws.send_json({"envelope_id": envelope["envelope_id"]})

        async with aiohttp.ClientSession() as session:
            sockets = []
            for _ in range(2):
                url = (await client.apps_connections_open(app_token=APP_TOKEN))["url"]
                sockets.append(await session.ws_connect(url))
            await slack.sockets.wait_connected(count=2)
            readers = [asyncio.ensure_future(app(n, ws)) for n, ws in enumerate(sockets)]
            for user in ("U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"):
                assert (await slack.open_home(user)).ok
            for ws in sockets:
                await ws.close()
            await asyncio.gather(*readers)
        assert got[0] and got[1], got  # both connections took envelopes
        assert sorted(got[0] + got[1]) == ["U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"]


async def test_an_event_unanswered_after_3_s_is_sent_again_while_the_first_is_in_flight() -> None:
    """Slack waits 3 s for an answer to an event and no longer: its first retry goes out then
    (`http_timeout`), even though the first request is still open and answered later."""
    seen: list[tuple[str | None, str | None]] = []
    answered = asyncio.Event()
    first_open_at_retry: list[bool] = []

    async def events(request: web.Request) -> web.Response:
        seen.append(
            (request.headers.get("X-Slack-Retry-Num"), request.headers.get("X-Slack-Retry-Reason"))
        )
        if len(seen) == 2:
            first_open_at_retry.append(not answered.is_set())
        if len(seen) == 1:
            await asyncio.sleep(4.5)  # a slow app: the retry comes while this one waits
            answered.set()
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/slack/events", events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        url = f"http://{host}:{port}/slack/events"
        async with FakeSlack.running(
            app_url=url, signing_secret=SECRET, event_retry_delays=(0.0, 60.0)
        ) as slack:
            first = await slack.open_home("U0ALICE")
            assert first.late and first.status == 200  # answered, but after the 3 s
            await slack.wait_for(lambda s: len(s.driver.deliveries) == 2)
            assert seen == [(None, None), ("1", "http_timeout")]
            assert first_open_at_retry == [True]  # it did not wait for the first answer
            retry = slack.driver.deliveries[0]  # the retry's answer was recorded first
            assert (retry.retry_attempt, retry.retry_reason) == (1, "http_timeout")
            assert retry.response is not None and retry.response.ok
            assert answered.is_set()
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("reason", ["refresh_requested", "warning"])
async def test_disconnect_makes_the_app_reconnect(reason: str) -> None:
    async with bolt_app("socket") as slack:
        assert await slack.sockets.disconnect(reason, close_after=0.5) == 1
        await slack.sockets.wait_connected(count=2)
        [told] = [m for m in slack.sockets.sent if m["type"] == "disconnect"]
        assert told["reason"] == reason
        await asyncio.sleep(0.7)
        assert len(slack.sockets.connections) == 1  # the old one closed (by the app or Slack)
        response = await slack.command("U0BOB", "C0APPROVALS", "again")
        assert response.ok and response.json() == {"text": "you said: again"}


async def test_ssl_check_is_sent_unsigned(slack: FakeSlack) -> None:
    bodies: list[tuple[str, str | None]] = []

    async def events(request: web.Request) -> web.Response:
        bodies.append((await request.text(), request.headers.get("X-Slack-Signature")))
        return web.Response()

    app = web.Application()
    app.router.add_post("/slack/events", events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        slack.connect_app(f"http://{host}:{port}/slack/events", SECRET)
        assert (await slack.ssl_check()).status == 200
        assert bodies == [("ssl_check=1&token=sandbox-verification-token", None)]
    finally:
        await runner.cleanup()


def test_home_opened_over_socket_mode_is_an_events_api_envelope() -> None:
    from bot.sandbox.transports import envelope_type

    assert envelope_type(app_home_opened(user_id="U0ALICE", channel_id="D0ALICE")) == "events_api"
