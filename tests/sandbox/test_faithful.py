"""The stand-in refuses what Slack refuses: membership, archived channels, deleted messages,
dead tokens, oversized views, rate limits; and it can be slowed. Through slack_sdk's client."""

from __future__ import annotations

import asyncio
import time

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import Channel, FakeSlack, limits
from bot.sandbox._web_api import METHODS
from bot.sandbox.people import demo_workspace
from bot.sandbox.scopes import ACCEPTED

TOKEN = "xoxb-sandbox-test"


def client(slack: FakeSlack, token: str = TOKEN) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=slack.url, retry_handlers=[])


async def error_of(call: object) -> str:
    with pytest.raises(SlackApiError) as refused:
        await call  # type: ignore[misc]
    return str(refused.value.response["error"])


async def test_channels_the_bot_is_not_in(slack: FakeSlack) -> None:
    ws = slack.workspace
    ws.add_channel("C0SECRET", "secret", private=True, member=False)
    ws.add_channel("C0PUBLIC", "public", member=False)
    ws.channels["D0OTHERS"] = Channel("D0OTHERS", "U0BOB", is_im=True, is_member=False)
    c = client(slack)
    for channel in ("C0SECRET", "D0OTHERS"):
        assert await error_of(c.chat_postMessage(channel=channel, text="hi")) == "channel_not_found"
        assert await error_of(c.conversations_info(channel=channel)) == "channel_not_found"
    assert await error_of(c.conversations_history(channel="C0PUBLIC")) == "not_in_channel"
    info = await c.conversations_info(channel="C0PUBLIC")
    assert info["channel"]["is_member"] is False
    assert await error_of(c.chat_postMessage(channel="C0PUBLIC", text="hi")) == "not_in_channel"
    ws.team.scopes = (*ws.team.scopes, "chat:write.public")
    assert (await c.chat_postMessage(channel="C0PUBLIC", text="hi"))["ok"]


async def test_a_call_without_its_scope_is_refused_naming_the_scopes_needed() -> None:
    """The bot token has the manifest's scopes and no other, as when the app is installed; Slack
    names them on every answer (`x-oauth-scopes`), and refuses a method none of them allows."""
    async with FakeSlack.running(tokens={TOKEN}) as slack:
        c = client(slack)
        answer = await c.auth_test()
        assert answer.headers["x-oauth-scopes"].split(",") == list(slack.workspace.team.scopes)
        with pytest.raises(SlackApiError) as refused:
            await c.conversations_info(channel="C0APPROVALS")
        assert refused.value.response["error"] == "missing_scope"
        assert refused.value.response["needed"] == "channels:read"
        assert refused.value.response["provided"] == ",".join(slack.workspace.team.scopes)
        # the history of a private channel wants groups:history, a public one channels:history
        slack.workspace.add_channel("C0PRIVATE", "private", private=True)
        slack.workspace.team.scopes = tuple(
            s for s in slack.workspace.team.scopes if s != "groups:history"
        )
        assert (await c.conversations_history(channel="C0APPROVALS"))["ok"]
        with pytest.raises(SlackApiError) as refused:
            await c.conversations_history(channel="C0PRIVATE")
        assert refused.value.response["needed"] == "groups:history"


async def test_an_ephemeral_goes_only_to_someone_in_the_channel(slack: FakeSlack) -> None:
    slack.workspace.add_channel("C0FEW", "few", people=frozenset({"U0ALICE"}))
    c = client(slack)
    assert (await c.chat_postEphemeral(channel="C0FEW", user="U0ALICE", text="only you"))["ok"]
    refused = c.chat_postEphemeral(channel="C0FEW", user="U0BOB", text="only you")
    assert await error_of(refused) == "user_not_in_channel"
    assert [e.text for e in slack.workspace.ephemerals.get("U0BOB", [])] == []


def test_every_method_the_stand_in_answers_has_its_scopes_listed() -> None:
    assert set(METHODS) == set(ACCEPTED)


async def test_archived_channel(slack: FakeSlack) -> None:
    c = client(slack)
    ts = (await c.chat_postMessage(channel="C0GENERAL", text="card"))["ts"]
    slack.workspace.channels["C0GENERAL"].is_archived = True
    assert (await c.conversations_info(channel="C0GENERAL"))["channel"]["is_archived"] is True
    assert await error_of(c.chat_postMessage(channel="C0GENERAL", text="x")) == "is_archived"
    assert await error_of(c.chat_update(channel="C0GENERAL", ts=ts, text="x")) == "is_inactive"


async def test_deleted_message(slack: FakeSlack) -> None:
    c = client(slack)
    ts = (await c.chat_postMessage(channel="C0APPROVALS", text="card"))["ts"]
    await c.reactions_add(channel="C0APPROVALS", timestamp=ts, name="white_check_mark")
    await c.chat_delete(channel="C0APPROVALS", ts=ts)
    for call in (
        c.chat_update(channel="C0APPROVALS", ts=ts, text="x"),
        c.chat_getPermalink(channel="C0APPROVALS", message_ts=ts),
        c.reactions_add(channel="C0APPROVALS", timestamp=ts, name="x"),
    ):
        assert await error_of(call) == "message_not_found"


@pytest.mark.parametrize("error", ["token_revoked", "account_inactive", "invalid_auth"])
async def test_a_token_revoked_at_run_time(slack: FakeSlack, error: str) -> None:
    assert (await client(slack).auth_test())["ok"]
    slack.revoke_token(TOKEN, error)
    assert await error_of(client(slack).auth_test()) == error
    assert await error_of(client(slack, "xoxb-another").auth_test()) == "invalid_auth"
    slack.issue_token("xoxb-another")  # installed again: a new token, taken
    assert (await client(slack, "xoxb-another").auth_test())["ok"]


async def test_view_over_250_kb_is_too_large(slack: FakeSlack) -> None:
    trigger = slack.triggers.issue("U0ALICE")
    block = {"type": "section", "text": {"type": "plain_text", "text": "x" * 2900}}
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Big"},
            "blocks": [block] * 90}  # fmt: skip
    assert await error_of(client(slack).views_open(trigger_id=trigger, view=view)) == (
        "view_too_large"
    )
    view["blocks"] = [block] * 80
    assert (await client(slack).views_open(trigger_id=trigger, view=view))["ok"]


async def test_expired_trigger_id(slack: FakeSlack) -> None:
    slack.triggers.ttl = 0.0
    trigger = slack.triggers.issue("U0ALICE")
    await asyncio.sleep(0.01)
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Hi"}, "blocks": []}
    assert await error_of(client(slack).views_open(trigger_id=trigger, view=view)) == (
        "expired_trigger_id"
    )


async def test_latency_injection(slack: FakeSlack) -> None:
    slack.delay("auth.test", 0.3)
    started = time.monotonic()
    await client(slack).auth_test()
    assert time.monotonic() - started >= 0.3
    with pytest.raises(ValueError, match="unknown method 'auth.tset'"):
        slack.delay("auth.tset", 1)


async def test_rate_limits_are_off_by_default(slack: FakeSlack) -> None:
    for _ in range(10):
        await client(slack).chat_postMessage(channel="C0APPROVALS", text="x")


async def test_post_message_is_paced_per_channel() -> None:
    async with FakeSlack.running(tokens={TOKEN}, rate_limits=True) as slack:
        c = client(slack)
        for _ in range(limits.POST_MESSAGE_BURST):
            await c.chat_postMessage(channel="C0APPROVALS", text="x")
        with pytest.raises(SlackApiError) as limited:
            await c.chat_postMessage(channel="C0APPROVALS", text="x")
        assert limited.value.response.status_code == 429
        assert limited.value.response["error"] == "ratelimited"
        assert int(limited.value.response.headers["Retry-After"]) >= 1
        assert (await c.chat_postMessage(channel="C0GENERAL", text="x"))["ok"]  # its own pace


async def test_tiers_limit_per_method_per_minute() -> None:
    async with FakeSlack.running(tokens={TOKEN}, rate_limits=True) as slack:
        c = client(slack)
        for _ in range(limits.TIER_2):
            await c.usergroups_list()
        assert await error_of(c.usergroups_list()) == "ratelimited"
        assert (await c.conversations_history(channel="C0APPROVALS"))["ok"]  # another count


async def test_slack_sdk_retry_handler_honours_retry_after() -> None:
    async with FakeSlack.running(tokens={TOKEN}, rate_limits=True) as slack:
        c = AsyncWebClient(
            token=TOKEN,
            base_url=slack.url,
            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
        )
        started = time.monotonic()
        for _ in range(limits.POST_MESSAGE_BURST + 1):
            assert (await c.chat_postMessage(channel="C0APPROVALS", text="x"))["ok"]
        waited = time.monotonic() - started
        statuses = [call.status for call in slack.calls_to("chat.postMessage")]
        assert statuses == [200] * limits.POST_MESSAGE_BURST + [429, 200]
        assert waited >= 1.0


def test_the_demo_bot_is_in_the_demo_channels() -> None:
    ws = demo_workspace()
    assert all(c.is_member and not c.is_archived for c in ws.channels.values())
    assert all(c.visible for c in ws.fresh_copy().channels.values())
