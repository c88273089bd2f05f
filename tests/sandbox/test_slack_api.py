"""The fake Slack's Web API, through slack_sdk's real clients pointed at it with `base_url`.

The sync `WebClient` blocks, and the fake serves on this test's event loop, so its calls run in
a worker thread (`asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry import RateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import FakeSlack, limits

TOKEN = "xoxb-sandbox-test"


def aclient(slack: FakeSlack, **kwargs: Any) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=slack.url, **kwargs)


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(action_id: str, value: str, **extra: Any) -> dict[str, Any]:
    text = {"type": "plain_text", "text": "Approve"}
    return {"type": "button", "action_id": action_id, "value": value, "text": text, **extra}


def modal(title: str, **extra: Any) -> dict[str, Any]:
    return {"type": "modal", "title": {"type": "plain_text", "text": title}, "blocks": [], **extra}


async def error_of(call: Any) -> dict[str, Any]:
    """The body of the SlackApiError a client call raises."""
    with pytest.raises(SlackApiError) as info:
        await call
    return dict(info.value.response.data)


# chat ---------------------------------------------------------------------------------------


async def test_post_message_returns_ts_and_channel_and_is_stored(slack: FakeSlack) -> None:
    blocks = [section("*Refund* $20"), {"type": "actions", "elements": [button("approve", "a1")]}]
    res = await aclient(slack).chat_postMessage(channel="#approvals", text="Refund?", blocks=blocks)

    assert res["ok"] and res["channel"] == "C0APPROVALS"
    msg = slack.workspace.channels["C0APPROVALS"].messages[res["ts"]]
    assert (msg.text, msg.user, msg.bot_id) == ("Refund?", "U0SIGNOFF", "B0SIGNOFF")
    assert msg.blocks[1]["elements"][0]["value"] == "a1"
    assert res["message"]["blocks"] == msg.blocks
    assert all("block_id" in b for b in msg.blocks)  # Slack fills in missing block_ids


async def test_thread_replies_and_conversations_replies(slack: FakeSlack) -> None:
    client = aclient(slack)
    parent = await client.chat_postMessage(channel="C0APPROVALS", text="card")
    r1 = await client.chat_postMessage(channel="C0APPROVALS", text="one", thread_ts=parent["ts"])
    await client.chat_postMessage(channel="C0APPROVALS", text="two", thread_ts=r1["ts"])

    replies = await client.conversations_replies(channel="C0APPROVALS", ts=parent["ts"])
    assert [m["text"] for m in replies["messages"]] == ["card", "one", "two"]
    assert replies["messages"][0]["reply_count"] == 2
    assert {m["thread_ts"] for m in replies["messages"]} == {parent["ts"]}
    history = await client.conversations_history(channel="C0APPROVALS")
    assert [m["text"] for m in history["messages"]] == ["card"]
    body = await error_of(client.chat_postMessage(channel="C0APPROVALS", text="x", thread_ts="1.2"))
    assert body["error"] == "thread_not_found"


async def test_a_reply_broadcast_is_in_the_thread_and_in_the_channel_once(
    slack: FakeSlack,
) -> None:
    client = aclient(slack)
    parent = await client.chat_postMessage(channel="C0APPROVALS", text="card")
    quiet = await client.chat_postMessage(
        channel="C0APPROVALS", text="quiet", thread_ts=parent["ts"]
    )
    loud = await client.chat_postMessage(
        channel="C0APPROVALS", text="loud", thread_ts=parent["ts"], reply_broadcast=True
    )
    assert loud["message"]["subtype"] == "thread_broadcast"
    assert loud["message"]["thread_ts"] == parent["ts"]

    history = await client.conversations_history(channel="C0APPROVALS")
    assert [(m["text"], m.get("subtype")) for m in history["messages"]] == [
        ("loud", "thread_broadcast"), ("card", None)
    ]  # fmt: skip
    root = history["messages"][0]["root"]
    assert (root["ts"], root["reply_count"]) == (parent["ts"], 2)
    replies = await client.conversations_replies(channel="C0APPROVALS", ts=parent["ts"])
    assert [m["ts"] for m in replies["messages"]] == [parent["ts"], quiet["ts"], loud["ts"]]

    # form-encoded, as Slack reads a boolean there; without thread_ts it is a plain message
    sync = WebClient(token=TOKEN, base_url=slack.url)
    form = await asyncio.to_thread(
        sync.api_call, "chat.postMessage",
        data={"channel": "C0APPROVALS", "text": "form", "thread_ts": parent["ts"],
              "reply_broadcast": "true"},
    )  # fmt: skip
    alone = await client.chat_postMessage(channel="C0APPROVALS", text="alone", reply_broadcast=True)
    off = await asyncio.to_thread(
        sync.api_call, "chat.postMessage",
        data={"channel": "C0APPROVALS", "text": "off", "thread_ts": parent["ts"],
              "reply_broadcast": "false"},
    )  # fmt: skip
    messages = slack.workspace.channels["C0APPROVALS"].messages
    assert messages[form["ts"]].subtype == "thread_broadcast"
    assert messages[alone["ts"]].subtype is None and messages[alone["ts"]].thread_ts is None
    assert messages[off["ts"]].subtype is None and not messages[off["ts"]].in_channel


async def test_a_reply_broadcast_cannot_carry_buttons_or_attachments(slack: FakeSlack) -> None:
    """Slack: a broadcast reply "cannot contain attachments or message buttons"."""
    client = aclient(slack)
    parent = await client.chat_postMessage(channel="C0APPROVALS", text="card")
    actions = {"type": "actions", "elements": [button("retry", "t-1")]}
    body = await error_of(
        client.chat_postMessage(
            channel="C0APPROVALS", text="failed", thread_ts=parent["ts"], reply_broadcast=True,
            blocks=[section("failed"), actions, section("or", accessory=button("b", "v"))],
        )
    )  # fmt: skip
    assert body["error"] == "invalid_blocks"
    refused = "[ERROR] a reply broadcast to the channel cannot contain message buttons"
    assert body["response_metadata"]["messages"] == [
        f"{refused} [json-pointer:/blocks/1]",
        f"{refused} [json-pointer:/blocks/2/accessory]",
    ]
    attached = await error_of(
        client.chat_postMessage(
            channel="C0APPROVALS", text="failed", thread_ts=parent["ts"], reply_broadcast=True,
            attachments=[{"fallback": "x", "text": "x"}],
        )
    )  # fmt: skip
    assert attached["error"] == "invalid_attachments"
    messages = slack.workspace.channels["C0APPROVALS"].messages
    assert list(messages) == [parent["ts"]]  # nothing was posted

    # the same buttons in a reply not broadcast, or at the top of the channel, are fine
    quiet = await client.chat_postMessage(
        channel="C0APPROVALS", text="failed", thread_ts=parent["ts"], blocks=[actions]
    )
    top = await client.chat_postMessage(
        channel="C0APPROVALS", text="failed", blocks=[actions], reply_broadcast=True
    )
    # so is a broadcast of text blocks only; an edit cannot add the buttons to it afterwards
    image = {"type": "image", "image_url": "https://example.com/a.png", "alt_text": "a"}
    loud = await client.chat_postMessage(
        channel="C0APPROVALS", text="failed", thread_ts=parent["ts"], reply_broadcast=True,
        blocks=[section("failed", accessory=image)],
    )  # fmt: skip
    assert [messages[m["ts"]].subtype for m in (quiet, top, loud)] == [
        None, None, "thread_broadcast"
    ]  # fmt: skip
    edit = await error_of(
        client.chat_update(channel="C0APPROVALS", ts=loud["ts"], text="failed", blocks=[actions])
    )
    assert edit["error"] == "invalid_blocks"
    await client.chat_update(
        channel="C0APPROVALS", ts=loud["ts"], text="retried", blocks=[section("retried")]
    )
    assert messages[loud["ts"]].text == "retried"


async def test_sync_webclient_json_and_form_encoded(slack: FakeSlack) -> None:
    client = WebClient(token=TOKEN, base_url=slack.url)
    res = await asyncio.to_thread(client.chat_postMessage, channel="general", text="json body")
    blocks = json.dumps([section("form body")])
    form = await asyncio.to_thread(
        client.api_call, "chat.postMessage", data={"channel": "C0GENERAL", "blocks": blocks}
    )

    texts = [m.text for m in slack.workspace.channels["C0GENERAL"].messages.values()]
    assert res["ok"] and form["ok"] and texts == ["json body", ""]
    assert slack.workspace.channels["C0GENERAL"].messages[form["ts"]].blocks[0]["text"]["text"] == (
        "form body"
    )
    group = await asyncio.to_thread(client.usergroups_users_list, usergroup="S0APPROVERS")
    assert group["users"] == ["U0ALICE", "U0BOB"]


async def test_update_keeps_edit_history(slack: FakeSlack) -> None:
    client = aclient(slack)
    posted = await client.chat_postMessage(
        channel="C0APPROVALS", text="pending", blocks=[section("A")]
    )
    res = await client.chat_update(
        channel="C0APPROVALS", ts=posted["ts"], text="approved", blocks=[]
    )

    msg = slack.workspace.channels["C0APPROVALS"].messages[posted["ts"]]
    assert res["ts"] == posted["ts"] and res["text"] == "approved"
    assert (msg.text, msg.blocks, msg.edited_ts is not None) == ("approved", [], True)
    assert [e["text"] for e in msg.edits] == ["pending"]
    body = await error_of(client.chat_update(channel="C0APPROVALS", ts="1.000001", text="x"))
    assert body["error"] == "message_not_found"


async def test_ephemeral_is_kept_per_user(slack: FakeSlack) -> None:
    res = await aclient(slack).chat_postEphemeral(
        channel="C0APPROVALS", user="U0BOB", text="You cannot approve your own request."
    )
    assert res["ok"] and res["message_ts"]
    [eph] = slack.workspace.ephemerals["U0BOB"]
    assert (eph.channel, eph.text, eph.ts) == (
        "C0APPROVALS",
        "You cannot approve your own request.",
        res["message_ts"],
    )
    assert "U0ALICE" not in slack.workspace.ephemerals
    body = await error_of(
        aclient(slack).chat_postEphemeral(channel="C0APPROVALS", user="U0NOBODY", text="x")
    )
    assert body["error"] == "user_not_found"


async def test_permalink_points_at_the_fake(slack: FakeSlack) -> None:
    client = aclient(slack)
    posted = await client.chat_postMessage(channel="C0APPROVALS", text="card")
    res = await client.chat_getPermalink(channel="C0APPROVALS", message_ts=posted["ts"])
    assert (
        res["permalink"] == f"{slack.base_url}archives/C0APPROVALS/p{posted['ts'].replace('.', '')}"
    )


# validation ---------------------------------------------------------------------------------


async def test_unknown_channel_and_auth(slack: FakeSlack) -> None:
    assert (await error_of(aclient(slack).chat_postMessage(channel="#nope", text="x")))[
        "error"
    ] == ("channel_not_found")
    no_token = AsyncWebClient(base_url=slack.url)
    assert (await error_of(no_token.chat_postMessage(channel="C0GENERAL", text="x")))[
        "error"
    ] == "not_authed"
    bad = AsyncWebClient(token="not-a-token", base_url=slack.url)
    assert (await error_of(bad.auth_test()))["error"] == "invalid_auth"
    assert not slack.workspace.channels["C0GENERAL"].messages


async def test_configured_tokens_only() -> None:
    async with FakeSlack.running(tokens={"xoxb-right"}) as slack:
        assert (await AsyncWebClient(token="xoxb-right", base_url=slack.url).auth_test())["ok"]
        wrong = AsyncWebClient(token="xoxb-wrong", base_url=slack.url)
        assert (await error_of(wrong.auth_test()))["error"] == "invalid_auth"


@pytest.mark.parametrize(
    ("blocks", "text", "error", "pointer"),
    [
        ([section("x")] * (limits.MAX_MESSAGE_BLOCKS + 1), "t", "invalid_blocks", "/blocks"),
        (
            [section("x" * 3000)] * 4 + [section("one too many")],
            "t",
            "msg_blocks_too_long",
            "/blocks",
        ),
        ([section("x", color="red")], "t", "invalid_blocks", "/blocks/0"),
        (
            [{"type": "section", "text": {"type": "mrkdwn", "text": "x", "emoji": True}}],
            "t",
            "invalid_blocks",
            "/blocks/0/text",
        ),
        (
            [{"type": "actions", "elements": [button("a", "v", color="red")]}],
            "t",
            "invalid_blocks",
            "/blocks/0/elements/0",
        ),
        (
            [section("x" * (limits.MAX_SECTION_TEXT + 1))],
            "t",
            "invalid_blocks",
            "/blocks/0/text/text",
        ),
        (
            [{"type": "actions", "elements": [button("a", "v" * (limits.MAX_BUTTON_VALUE + 1))]}],
            "t",
            "invalid_blocks",
            "/blocks/0/elements/0/value",
        ),
        (
            [{"type": "actions", "elements": [button("a" * (limits.MAX_ACTION_ID + 1), "v")]}],
            "t",
            "invalid_blocks",
            "/blocks/0/elements/0/action_id",
        ),
        (
            [section("x", block_id="b" * (limits.MAX_BLOCK_ID + 1))],
            "t",
            "invalid_blocks",
            "/blocks/0/block_id",
        ),
        (
            [section("x", block_id="same"), section("y", block_id="same")],
            "t",
            "invalid_blocks",
            "/blocks/1/block_id",
        ),
        (None, "", "no_text", None),
    ],
    ids=[
        "51-blocks",
        "blocks-text-12001",
        "unknown-block-property",
        "emoji-on-mrkdwn",
        "unknown-element-property",
        "section-3001",
        "value-2001",
        "action-id-256",
        "block-id-256",
        "dup-block-id",
        "empty",
    ],
)
async def test_messages_over_slack_limits_are_refused(
    slack: FakeSlack, blocks: Any, text: str, error: str, pointer: str | None
) -> None:
    args = {"channel": "C0APPROVALS", "text": text, **({"blocks": blocks} if blocks else {})}
    body = await error_of(aclient(slack).api_call("chat.postMessage", json=args))

    assert body["error"] == error
    if pointer:
        [line] = body["response_metadata"]["messages"]
        assert line.startswith("[ERROR] ") and line.endswith(f"[json-pointer:{pointer}]")
    assert not slack.workspace.channels["C0APPROVALS"].messages


async def test_a_long_post_is_cut_at_40000_characters_and_an_update_refused_past_4000(
    slack: FakeSlack,
) -> None:
    client = aclient(slack)
    posted = await client.chat_postMessage(channel="C0APPROVALS", text="x" * 40_001)
    msg = slack.workspace.channels["C0APPROVALS"].messages[posted["ts"]]
    assert len(msg.text) == limits.MAX_MESSAGE_TEXT
    body = await error_of(
        client.chat_update(channel="C0APPROVALS", ts=posted["ts"], text="y" * 4_001)
    )
    assert body["error"] == "msg_too_long"
    assert (await client.chat_update(channel="C0APPROVALS", ts=posted["ts"], text="y" * 4_000))[
        "ok"
    ]


# views --------------------------------------------------------------------------------------


async def test_views_open_needs_a_fresh_trigger_and_a_short_title(slack: FakeSlack) -> None:
    client = aclient(slack)
    long_title = "x" * (limits.MAX_MODAL_TITLE + 1)
    body = await error_of(
        client.views_open(trigger_id=slack.triggers.issue("U0ALICE"), view=modal(long_title))
    )
    assert body["error"] == "invalid_arguments"
    assert body["response_metadata"]["messages"] == [
        "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]"
    ]
    assert not slack.workspace.views

    trigger = slack.triggers.issue("U0ALICE")
    opened = await client.views_open(
        trigger_id=trigger, view=modal("Reject refund", callback_id="reject")
    )
    [view] = slack.workspace.views["U0ALICE"]
    assert opened["view"]["id"] == view.id and opened["view"]["callback_id"] == "reject"
    assert (await error_of(client.views_open(trigger_id=trigger, view=modal("Again"))))[
        "error"
    ] == ("exchanged_trigger_id")
    assert (await error_of(client.views_open(trigger_id="1.2.3", view=modal("No"))))["error"] == (
        "invalid_trigger_id"
    )


async def test_trigger_ids_expire() -> None:
    now = [1000.0]
    async with FakeSlack.running(tokens={TOKEN}, clock=lambda: now[0]) as slack:
        trigger = slack.triggers.issue("U0ALICE")
        now[0] += limits.TRIGGER_ID_TTL + 0.1
        body = await error_of(aclient(slack).views_open(trigger_id=trigger, view=modal("Late")))
        assert body["error"] == "expired_trigger_id"


async def test_views_push_update_and_publish(slack: FakeSlack) -> None:
    client = aclient(slack)
    opened = await client.views_open(trigger_id=slack.triggers.issue("U0BOB"), view=modal("One"))
    pushed = await client.views_push(trigger_id=slack.triggers.issue("U0BOB"), view=modal("Two"))
    assert [v.spec["title"]["text"] for v in slack.workspace.views["U0BOB"]] == ["One", "Two"]
    assert pushed["view"]["root_view_id"] == opened["view"]["id"]

    updated = await client.views_update(view_id=opened["view"]["id"], view=modal("One, edited"))
    assert updated["view"]["hash"] != opened["view"]["hash"]
    stale = client.views_update(
        view_id=opened["view"]["id"], hash=opened["view"]["hash"], view=modal("No")
    )
    assert (await error_of(stale))["error"] == "hash_conflict"

    home = {"type": "home", "blocks": [section("Pending: 1")]}
    published = await client.views_publish(user_id="U0BOB", view=home)
    assert slack.workspace.home["U0BOB"].id == published["view"]["id"]
    assert (await error_of(client.views_publish(user_id="U0BOB", view=modal("Not home"))))[
        "error"
    ] == ("invalid_arguments")


# users and groups ---------------------------------------------------------------------------


async def test_users_groups_and_conversations(slack: FakeSlack) -> None:
    client = aclient(slack)
    assert (await client.usergroups_users_list(usergroup="S0APPROVERS"))["users"] == [
        "U0ALICE",
        "U0BOB",
    ]
    assert (await error_of(client.usergroups_users_list(usergroup="S0NONE")))[
        "error"
    ] == "no_such_subteam"
    user = (await client.users_info(user="U0CAROL"))["user"]
    assert (user["id"], user["name"], user["is_bot"]) == ("U0CAROL", "carol", False)
    assert (await client.conversations_info(channel="C0APPROVALS"))["channel"][
        "name"
    ] == "approvals"
    names = [c["name"] for c in (await client.conversations_list())["channels"]]
    assert names == ["approvals", "general"]
    auth = await client.auth_test()
    assert (auth["user_id"], auth["bot_id"], auth["team_id"]) == (
        "U0SIGNOFF",
        "B0SIGNOFF",
        "T0SANDBOX",
    )


async def test_unknown_method(slack: FakeSlack) -> None:
    assert (await error_of(aclient(slack).api_call("files.upload")))["error"] == "unknown_method"


# recording and faults -----------------------------------------------------------------------


async def test_calls_are_recorded_without_the_token(slack: FakeSlack) -> None:
    await aclient(slack).chat_postMessage(channel="C0APPROVALS", text="hello")
    await aclient(slack).users_info(user="U0ALICE")

    [post] = slack.calls_to("chat.postMessage")
    assert post.params == {"channel": "C0APPROVALS", "text": "hello"}
    assert post.status == 200 and post.response["ok"] and post.time > 0
    assert [c.method for c in slack.calls] == ["chat.postMessage", "users.info"]


async def test_429_with_retry_after_is_retried_by_slack_sdk(slack: FakeSlack) -> None:
    slack.fail_next("chat.postMessage", status=429, retry_after=1)
    client = aclient(slack, retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)])

    res = await client.chat_postMessage(channel="C0APPROVALS", text="after the limit")

    first, second = slack.calls_to("chat.postMessage")
    assert (first.status, first.response) == (429, {"ok": False, "error": "ratelimited"})
    assert second.status == 200 and res["ok"]
    assert second.time - first.time >= 1.0  # slack_sdk waited Retry-After
    assert [m.text for m in slack.workspace.channels["C0APPROVALS"].messages.values()] == [
        "after the limit"
    ]


async def test_429_without_retry_handler_surfaces_retry_after(slack: FakeSlack) -> None:
    slack.fail_next("chat.update", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as info:
        await aclient(slack).chat_update(channel="C0APPROVALS", ts="1.1", text="x")
    assert info.value.response.status_code == 429
    assert info.value.response.headers["Retry-After"] == "7"


async def test_sync_client_retries_429(slack: FakeSlack) -> None:
    slack.fail_next("usergroups.users.list", status=429, retry_after=1)
    client = WebClient(
        token=TOKEN, base_url=slack.url, retry_handlers=[RateLimitErrorRetryHandler(1)]
    )
    res = await asyncio.to_thread(client.usergroups_users_list, usergroup="approvers")
    assert res["users"] == ["U0ALICE", "U0BOB"]
    assert [c.status for c in slack.calls_to("usergroups.users.list")] == [429, 200]


async def test_500_fails_then_is_retried(slack: FakeSlack) -> None:
    slack.fail_next("chat.postMessage", status=500, count=2)
    with pytest.raises(SlackApiError) as info:
        await aclient(slack).chat_postMessage(channel="C0APPROVALS", text="x")
    assert info.value.response.status_code == 500
    assert info.value.response["error"] == "internal_error"

    retrying = aclient(slack, retry_handlers=[AsyncServerErrorRetryHandler(max_retry_count=1)])
    assert (await retrying.chat_postMessage(channel="C0APPROVALS", text="y"))["ok"]
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [500, 500, 200]


async def test_fail_next_with_a_slack_error_and_reset(slack: FakeSlack) -> None:
    slack.fail_next("chat.update", error="message_not_found")
    posted = await aclient(slack).chat_postMessage(channel="C0APPROVALS", text="x")
    body = await error_of(
        aclient(slack).chat_update(channel="C0APPROVALS", ts=posted["ts"], text="y")
    )
    assert body == {"ok": False, "error": "message_not_found"}

    slack.fail_next("chat.postMessage", status=503)
    slack.reset()
    assert not slack.calls and not slack.faults
    assert not slack.workspace.channels["C0APPROVALS"].messages
    assert (await aclient(slack).chat_postMessage(channel="C0APPROVALS", text="z"))["ok"]


def test_fail_next_refuses_a_method_the_fake_does_not_answer() -> None:
    with pytest.raises(ValueError, match="unknown method 'chat.postmessage'"):
        FakeSlack().fail_next("chat.postmessage", status=500)


async def test_reset_of_a_given_workspace_keeps_its_people_and_drops_conversations() -> None:
    from bot.sandbox import User, UserGroup, Workspace

    ws = Workspace([User("U1", "ann")], [("C1", "ops")], [UserGroup("S1", "leads", ["U1"])])
    async with FakeSlack.running(tokens={TOKEN}, workspace=ws) as slack:
        client = aclient(slack)
        await client.chat_postMessage(channel="ops", text="x")
        await client.chat_postMessage(channel="U1", text="dm")  # opens a DM channel
        slack.reset()
        assert [c.id for c in slack.workspace.channels.values()] == ["C1"]
        assert not slack.workspace.channels["C1"].messages
        assert (await client.usergroups_users_list(usergroup="leads"))["users"] == ["U1"]


async def test_lengths_count_utf16_code_units(slack: FakeSlack) -> None:
    client = aclient(slack)
    fits = [section("\N{GRINNING FACE}" * (limits.MAX_SECTION_TEXT // 2))]
    assert (await client.chat_postMessage(channel="C0APPROVALS", text="t", blocks=fits))["ok"]
    over = [section("\N{GRINNING FACE}" * (limits.MAX_SECTION_TEXT // 2) + "x")]
    body = await error_of(client.chat_postMessage(channel="C0APPROVALS", text="t", blocks=over))
    assert body["error"] == "invalid_blocks"


async def test_served_by_someone_else_it_learns_its_url() -> None:
    from aiohttp import web

    fake = FakeSlack(tokens={TOKEN})
    runner = web.AppRunner(fake.app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        host, port = runner.addresses[0][:2]
        client = AsyncWebClient(token=TOKEN, base_url=f"http://{host}:{port}/api/")
        posted = await client.chat_postMessage(channel="C0GENERAL", text="x")
        link = await client.chat_getPermalink(channel="C0GENERAL", message_ts=posted["ts"])
        assert fake.url == f"http://{host}:{port}/api/"
        assert link["permalink"].startswith(f"http://{host}:{port}/archives/C0GENERAL/p")
    finally:
        await runner.cleanup()


# who is away: dnd.info, users.info's status, and their scopes -------------------------------


async def test_dnd_info_and_users_info_say_what_the_person_set(slack: FakeSlack) -> None:
    alice = slack.workspace.user("alice")
    client = aclient(slack)
    dnd = await client.dnd_info(user=alice.id)
    assert (dnd["dnd_enabled"], dnd["snooze_enabled"]) == (False, False)
    profile = (await client.users_info(user=alice.id))["user"]["profile"]
    assert (profile["status_emoji"], profile["status_text"], profile["status_expiration"]) == (
        "",
        "",
        0,
    )

    alice.status_emoji, alice.status_text, alice.status_expiration = ":palm_tree:", "Off", 99
    alice.dnd_start, alice.dnd_end = 10, 20
    dnd = await client.dnd_info(user=alice.id)
    assert (dnd["dnd_enabled"], dnd["next_dnd_start_ts"], dnd["next_dnd_end_ts"]) == (True, 10, 20)
    profile = (await client.users_info(user=alice.id))["user"]["profile"]
    assert (profile["status_emoji"], profile["status_text"], profile["status_expiration"]) == (
        ":palm_tree:",
        "Off",
        99,
    )
    assert (await error_of(client.dnd_info(user="U0NOBODY")))["error"] == "user_not_found"


@pytest.mark.parametrize(
    ("method", "scope"), [("dnd_info", "dnd:read"), ("users_info", "users:read")]
)
async def test_dnd_and_users_info_need_their_scope_as_slack_does(
    slack: FakeSlack, method: str, scope: str
) -> None:
    team = slack.workspace.team
    team.scopes = tuple(s for s in team.scopes if s != scope)
    body = await error_of(getattr(aclient(slack), method)(user="U0ALICE"))
    assert body["error"] == "missing_scope"
    assert body["needed"] == scope and scope not in body["provided"].split(",")


async def test_users_list_pages_with_a_cursor(slack: FakeSlack) -> None:
    client = aclient(slack)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await client.users_list(limit=2, cursor=cursor)
        seen += [m["name"] for m in page["members"]]
        pages += 1
        cursor = page["response_metadata"]["next_cursor"] or None
        if cursor is None:
            break
    assert seen == [u.name for u in slack.workspace.users.values()] and pages == 3
    assert (await error_of(client.users_list(cursor="junk")))["error"] == "invalid_cursor"
