"""The fake Slack as a separate process (`python -m bot.sandbox.slack_api`), driven over HTTP.

This is how the bot's end-to-end tests use it: the fake and the app are different processes,
and the test inspects and programs the fake through `/_sandbox/`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.sandbox import SandboxClient, SandboxError, client, start_fake_slack
from bot.sandbox._cli import READY_PREFIX, build_workspace

TOKEN = "xoxb-sandbox-test"


@pytest.fixture
async def remote() -> AsyncIterator[SandboxClient]:
    async with start_fake_slack("--token", TOKEN) as fake:
        yield fake


def test_ready_line_prefix_is_shared() -> None:
    assert client.READY_PREFIX == READY_PREFIX


async def test_web_api_calls_are_recorded_and_state_is_visible(remote: SandboxClient) -> None:
    web_client = AsyncWebClient(token=TOKEN, base_url=remote.url)
    posted = await web_client.chat_postMessage(channel="#approvals", text="card")
    await web_client.chat_postMessage(channel="C0APPROVALS", text="reply", thread_ts=posted["ts"])
    await web_client.chat_postEphemeral(channel="C0APPROVALS", user="U0BOB", text="only bob")

    calls = await remote.calls("chat.postMessage")
    assert [c["params"]["text"] for c in calls] == ["card", "reply"]
    assert all(c["status"] == 200 and "token" not in c["params"] for c in calls)
    assert len(await remote.calls(since=2)) == 1

    state = await remote.state()
    assert [(m["text"], m.get("thread_ts")) for m in await remote.messages("approvals")] == [
        ("card", posted["ts"]),
        ("reply", posted["ts"]),
    ]
    assert [e["text"] for e in state["ephemerals"]["U0BOB"]] == ["only bob"]
    assert state["version"] >= 3


async def test_fail_next_over_http(remote: SandboxClient) -> None:
    await remote.fail_next("chat.postMessage", status=429, retry_after=1)
    await remote.fail_next("chat.update", status=503)
    retrying = AsyncWebClient(
        token=TOKEN, base_url=remote.url, retry_handlers=[AsyncRateLimitErrorRetryHandler(1)]
    )

    posted = await retrying.chat_postMessage(channel="C0APPROVALS", text="eventually")
    with pytest.raises(SlackApiError) as info:
        await retrying.chat_update(channel="C0APPROVALS", ts=posted["ts"], text="x")

    assert info.value.response.status_code == 503
    assert [c["status"] for c in await remote.calls("chat.postMessage")] == [429, 200]
    with pytest.raises(SandboxError) as refused:
        await remote.fail_next("", count=1)
    assert refused.value.status == 400


async def test_reset_over_http(remote: SandboxClient) -> None:
    await AsyncWebClient(token=TOKEN, base_url=remote.url).chat_postMessage(
        channel="general", text="x"
    )
    await remote.reset()
    assert await remote.calls() == [] and await remote.messages("general") == []


async def test_response_url_records_and_applies_what_the_app_sends(remote: SandboxClient) -> None:
    web_client = AsyncWebClient(token=TOKEN, base_url=remote.url)
    card = await web_client.chat_postMessage(channel="C0APPROVALS", text="card")
    on_card = await remote.response_url("C0APPROVALS", "alice", card["ts"])
    for_command = await remote.response_url("approvals", "U0BOB")

    replaced = await AsyncWebhookClient(on_card).send(replace_original=True, text="decided")
    ephemeral = await AsyncWebhookClient(for_command).send(text="just for bob")
    unknown = await AsyncWebhookClient(remote.base_url + "_sandbox/response/nope").send(text="x")

    assert (replaced.status_code, ephemeral.status_code, unknown.status_code) == (200, 200, 404)
    assert [m["text"] for m in await remote.messages("approvals")] == ["decided"]
    state = await remote.state()
    assert [(e["text"], e["source"]) for e in state["ephemerals"]["U0BOB"]] == [
        ("just for bob", "response_url")
    ]
    recorded = await remote.calls("response_url")
    assert [c["params"]["text"] for c in recorded] == ["decided", "just for bob", "x"]
    assert [c["status"] for c in recorded] == [200, 200, 404]


async def test_wait_for_long_polls_state(remote: SandboxClient) -> None:
    web_client = AsyncWebClient(token=TOKEN, base_url=remote.url)
    await web_client.chat_postMessage(channel="general", text="hello")
    state = await remote.wait_for(lambda s: s["channels"][1]["messages"], timeout=5)
    assert state["channels"][1]["messages"][0]["text"] == "hello"
    with pytest.raises(TimeoutError):
        await remote.wait_for(lambda s: False, timeout=0.3)


@pytest.fixture
async def echo_app() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An app (no signature check needed here: test_signing covers it) recording what it got."""
    got: list[dict[str, Any]] = []

    async def events(request: web.Request) -> web.Response:
        got.append({"headers": dict(request.headers), "body": await request.text()})
        return web.json_response({"text": "ack text"})

    app = web.Application()
    app.router.add_post("/slack/events", events)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/slack/events", got
    await runner.cleanup()


async def test_acting_as_a_user_over_http(echo_app: tuple[str, list[dict[str, Any]]]) -> None:
    url, got = echo_app
    async with start_fake_slack(
        "--token", TOKEN, "--users", "erin,U0FRANK=frank", "--channels", "ops"
    ) as remote:
        await remote.connect_app(url, "secret")
        answer = await remote.command("erin", "ops", "status")

        assert answer == {
            "status": 200,
            "body": '{"text": "ack text"}',
            "json": {"text": "ack text"},
        }
        assert "user_id=U0ERIN" in got[0]["body"] and got[0]["headers"][
            "X-Slack-Signature"
        ].startswith("v0=")
        state = await remote.state()
        assert [e["text"] for e in state["ephemerals"]["U0ERIN"]] == ["ack text"]
        assert [u["name"] for u in state["users"]] == ["erin", "frank", "signoff"]
        with pytest.raises(SandboxError) as info:
            await remote.click("frank", "ops", "1.000000", "approve")
        assert info.value.body["error"] == "message_not_found"


async def test_a_command_sent_with_a_trigger_id_carries_it_so_it_can_be_sent_twice(
    echo_app: tuple[str, list[dict[str, Any]]],
) -> None:
    url, got = echo_app
    async with start_fake_slack("--token", TOKEN, "--users", "erin", "--channels", "ops") as remote:
        await remote.connect_app(url, "secret")
        trigger = await remote.trigger_id("erin")
        for _ in range(2):
            await remote.command("erin", "ops", "run refund", trigger_id=trigger)
        await remote.command("erin", "ops", "run refund")
        sent = [parse_qs(g["body"])["trigger_id"] for g in got]
        assert sent[:2] == [[trigger], [trigger]] and sent[2] != [trigger]


def test_build_workspace_from_options() -> None:
    ws = build_workspace("alice,U9=zed", "C1=ops,random", ["leads=alice,zed", "empty="])
    assert [(u.id, u.name) for u in ws.users.values()] == [
        ("U0ALICE", "alice"),
        ("U9", "zed"),
        ("U0SIGNOFF", "signoff"),
    ]
    assert [(c.id, c.name) for c in ws.channels.values()] == [("C1", "ops"), ("C0RANDOM", "random")]
    assert [(g.id, g.users) for g in ws.usergroups.values()] == [
        ("S0LEADS", ["U0ALICE", "U9"]),
        ("S0EMPTY", []),
    ]
    demo = build_workspace(None, None, None)
    assert [g.handle for g in demo.usergroups.values()] == ["approvers"]


async def test_an_unreachable_app_is_a_502(remote: SandboxClient) -> None:
    await remote.connect_app("http://127.0.0.1:9/slack/events", "secret")
    with pytest.raises(SandboxError) as info:
        await remote.open_home("alice")
    assert info.value.status == 502 and "the app did not answer" in info.value.body["error"]


# ---- who may drive it ----------------------------------------------------------------------


async def test_another_sites_page_cannot_drive_the_sandbox(remote: SandboxClient) -> None:
    """What a page on another site can send without a preflight (a form, plain text, or JSON
    whose Origin is its own) is refused, and nothing is clicked, posted or reset."""
    click = '{"user": "alice", "channel": "C0APPROVALS", "ts": "1.0", "action_id": "approve"}'
    base = remote.url.removesuffix("api/")
    async with aiohttp.ClientSession() as http:
        attempts = [
            ({"Content-Type": "text/plain"}, click, 415),
            ({"Content-Type": "application/x-www-form-urlencoded"}, "user=alice", 415),
            ({"Content-Type": "application/json", "Origin": "https://evil.example"}, click, 403),
            ({"Content-Type": "application/json", "Origin": "null"}, click, 403),
            ({"Content-Type": "application/json", "Host": "evil.example"}, "{}", 403),
        ]
        for headers, body, status in attempts:
            for path in ("_sandbox/act/click", "_sandbox/reset", "_demo/runs"):
                async with http.post(base + path, data=body, headers=headers) as res:
                    assert res.status == status, (path, headers, await res.text())
        # The sandbox's own page (same origin) and programs on this machine (no Origin) may.
        same = {"Origin": base.rstrip("/")}
        async with http.post(
            base + "_sandbox/triggers", json={"user": "U0BOB"}, headers=same
        ) as res:
            assert res.status == 200, await res.text()
    assert await remote.calls() == []


async def test_lose_next_over_http_does_the_call_and_drops_its_answer(
    remote: SandboxClient,
) -> None:
    await remote.lose_next("chat.postMessage")
    once = AsyncWebClient(token=TOKEN, base_url=remote.url, retry_handlers=[])
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await once.chat_postMessage(channel="C0APPROVALS", text="posted, answer lost")
    await once.chat_postMessage(channel="C0APPROVALS", text="answered")
    assert [m["text"] for m in await remote.messages("approvals")] == [
        "posted, answer lost",
        "answered",
    ]
    assert [c.get("lost", False) for c in await remote.calls("chat.postMessage")] == [True, False]


async def test_a_long_call_log_is_read_in_pages_and_counted_without_reading_it(
    remote: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, "CALLS_PAGE", 3)
    web_client = AsyncWebClient(token=TOKEN, base_url=remote.url)
    await remote.fail_next("chat.postMessage", status=429, retry_after=1)
    with pytest.raises(SlackApiError):
        await web_client.chat_postMessage(channel="C0APPROVALS", text="limited")
    for i in range(7):
        await web_client.chat_postMessage(channel="C0APPROVALS", text=f"m{i}")
        await web_client.auth_test()

    posts = await remote.calls("chat.postMessage")  # 3 pages of 3 (filtered), one more to end
    assert [c["params"]["text"] for c in posts] == ["limited"] + [f"m{i}" for i in range(7)]
    assert len(await remote.calls()) == 15
    assert [c["method"] for c in await remote.calls(since=13)] == ["chat.postMessage", "auth.test"]
    assert await remote.call_counts() == {
        "chat.postMessage": {429: 1, 200: 7},
        "auth.test": {200: 7},
    }
    assert await remote.call_counts(since=14) == {"auth.test": {200: 1}}


async def test_a_person_s_status_and_dnd_set_over_http_reach_the_app_as_slack_s_events(
    echo_app: tuple[str, list[dict[str, Any]]],
) -> None:
    url, got = echo_app
    async with start_fake_slack("--token", TOKEN, "--users", "erin", "--channels", "ops") as remote:
        await remote.connect_app(url, "secret")
        answers = await remote.set_status("erin", ":palm_tree:", "Vacation", 2000000000)
        assert [a["status"] for a in answers["answers"]] == [200, 200]
        assert (await remote.set_dnd("erin", 2000000000))["status"] == 200
        events = [json.loads(g["body"])["event"] for g in got]
        assert [e["type"] for e in events] == [
            "user_change",
            "user_status_changed",
            "dnd_updated_user",
        ]
        profile = events[0]["user"]["profile"]
        assert (profile["status_emoji"], profile["status_text"]) == (":palm_tree:", "Vacation")
        assert profile["status_expiration"] == 2000000000
        assert events[2]["user"] == "U0ERIN"
        assert events[2]["dnd_status"]["dnd_enabled"] is True
        assert events[2]["dnd_status"]["next_dnd_end_ts"] == 2000000000
        [erin] = [u for u in (await remote.state())["users"] if u["name"] == "erin"]
        assert (erin["status_emoji"], erin["dnd_end"]) == (":palm_tree:", 2000000000)

        with pytest.raises(SandboxError) as info:
            await remote.click_home("erin", "signoff.back")
        assert info.value.body["error"] == "not_found"  # no Home published for her
