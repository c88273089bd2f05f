"""The fake Slack plays the user against a real Bolt AsyncApp served over HTTP.

The app is a small stand-in for the bot: its Web API client points at the fake (`base_url`),
the fake sends it signed clicks, modal submissions, slash commands and `app_home_opened`, and
the app answers through acks, response_urls and Web API calls, all of which land in the fake's
workspace. Bolt acknowledges before the listener finishes, so effects are awaited with
`slack.wait_for`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import Ephemeral, FakeSlack, SandboxClient, block_actions, limits
from bot.sandbox.interactions import REQUIRED_FIELD

TOKEN = "xoxb-sandbox-test"
SECRET = "bolt-test-signing-secret"

CARD: list[dict[str, Any]] = [
    {"type": "section", "block_id": "what", "text": {"type": "mrkdwn", "text": "*Refund* $20"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {"type": "button", "action_id": "approve", "value": "ap-1", "style": "primary",
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": "reject", "value": "ap-1", "style": "danger",
             "text": {"type": "plain_text", "text": "Reject"}},
        ],
    },
]  # fmt: skip

REASON_MODAL = {
    "type": "modal",
    "callback_id": "reject_reason",
    "title": {"type": "plain_text", "text": "Reject refund"},
    "submit": {"type": "plain_text", "text": "Reject"},
    "blocks": [
        {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": "Why?"},
         "element": {"type": "plain_text_input", "action_id": "text"}},
    ],
}  # fmt: skip


def build_app(slack_url: str) -> AsyncApp:
    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=slack_url), signing_secret=SECRET)

    @app.action("approve")
    async def approve(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        who = body["user"]["id"]
        await respond(replace_original=True, text=f"Approved by <@{who}>", blocks=[])

    @app.action("reject")
    async def reject(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        ref = f"{body['channel']['id']}/{body['message']['ts']}"
        await client.views_open(
            trigger_id=body["trigger_id"], view={**REASON_MODAL, "private_metadata": ref}
        )

    @app.view("reject_reason")
    async def reason(ack: AsyncAck, view: dict[str, Any], client: AsyncWebClient) -> None:
        text = view["state"]["values"]["reason"]["text"]["value"]
        if len(text) < 5:
            await ack(response_action="errors", errors={"reason": "Say a little more."})
            return
        await ack()
        channel, ts = view["private_metadata"].split("/")
        await client.chat_postMessage(channel=channel, thread_ts=ts, text=f"Rejected: {text}")

    @app.command("/agent")
    async def agent(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        await ack(f"Nothing waits on <@{command['user_id']}>.")
        await respond(text="(and this came through the response_url)")

    @app.event("app_home_opened")
    async def home(event: dict[str, Any], client: AsyncWebClient) -> None:
        blocks = [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"Hello <@{event['user']}>"}}
        ]
        await client.views_publish(user_id=event["user"], view={"type": "home", "blocks": blocks})

    return app


@pytest.fixture
async def bolt(slack: FakeSlack) -> AsyncIterator[str]:
    """A real Bolt app served on a free port; the fake is connected to it. Yields its URL."""
    runner = web.AppRunner(build_app(slack.url).web_app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    url = f"http://{host}:{port}/slack/events"
    slack.connect_app(url, SECRET)
    yield url
    await runner.cleanup()


async def post_card(slack: FakeSlack) -> str:
    client = AsyncWebClient(token=TOKEN, base_url=slack.url)
    return str(
        (await client.chat_postMessage(channel="C0APPROVALS", text="Refund?", blocks=CARD))["ts"]
    )


async def test_click_approve_replaces_the_card_through_response_url(
    slack: FakeSlack, bolt: str
) -> None:
    ts = await post_card(slack)

    answer = await slack.click("alice", "approvals", ts, "approve")

    assert answer.status == 200
    [call] = await slack.wait_for(lambda s: s.calls_to("response_url"))
    assert call.params["replace_original"] is True and call.status == 200
    msg = slack.workspace.channels["C0APPROVALS"].messages[ts]
    assert (msg.text, msg.blocks) == ("Approved by <@U0ALICE>", [])
    assert msg.edits[0]["blocks"][1]["elements"][0]["action_id"] == "approve"


async def test_reject_opens_a_modal_whose_submission_is_validated(
    slack: FakeSlack, bolt: str
) -> None:
    ts = await post_card(slack)
    await slack.click("bob", "C0APPROVALS", ts, "reject")
    [modal] = await slack.wait_for(lambda s: s.workspace.views.get("U0BOB"))
    assert modal.spec["callback_id"] == "reject_reason"

    empty = await slack.submit("bob", {})
    assert (empty.response, empty.errors) == (None, {"reason": REQUIRED_FIELD})  # never sent

    short = await slack.submit("bob", {"reason": "no"})
    assert short.response is not None and short.response.status == 200
    assert short.errors == {"reason": "Say a little more."} and short.view is not None

    done = await slack.submit("bob", {"reason": "over the limit"})
    assert done.errors == {} and done.view is None and not slack.workspace.views["U0BOB"]
    reply = await slack.wait_for(
        lambda s: [m for m in s.workspace.channels["C0APPROVALS"].messages.values() if m.is_reply]
    )
    assert [(m.text, m.thread_ts) for m in reply] == [("Rejected: over the limit", ts)]


async def test_slash_command_ack_and_response_url_are_ephemeral(
    slack: FakeSlack, bolt: str
) -> None:
    answer = await slack.command("carol", "approvals", "status")

    assert answer.status == 200

    def both_arrived(s: FakeSlack) -> list[Ephemeral] | None:
        got = s.workspace.ephemerals.get("U0CAROL", [])
        return got if len(got) == 2 else None

    ephemerals = await slack.wait_for(both_arrived)
    # Bolt acks and responds concurrently: either may land first, as with real Slack.
    assert sorted((e.source, e.text) for e in ephemerals) == [
        ("command_ack", "Nothing waits on <@U0CAROL>."),
        ("response_url", "(and this came through the response_url)"),
    ]
    assert not slack.workspace.channels["C0APPROVALS"].messages


async def test_app_home_opened_publishes_home(slack: FakeSlack, bolt: str) -> None:
    assert (await slack.open_home("dave")).status == 200
    home = await slack.wait_for(lambda s: s.workspace.home.get("U0DAVE"))
    assert home.spec["blocks"][0]["text"]["text"] == "Hello <@U0DAVE>"


async def test_bad_signature_and_stale_timestamp_are_refused(slack: FakeSlack, bolt: str) -> None:
    ts = await post_card(slack)
    msg = slack.workspace.channels["C0APPROVALS"].messages[ts].to_api()
    request = block_actions(
        action_id="approve", value="ap-1", user_id="U0ALICE", channel_id="C0APPROVALS", message=msg,
        trigger_id=slack.triggers.issue("U0ALICE"),
        response_url=slack.responses.issue("C0APPROVALS", "U0ALICE", ts),
    )  # fmt: skip
    signer = slack.driver.signer

    forged = await signer.send(bolt, request, signature="v0=" + "0" * 64)
    stale = await signer.send(
        bolt, request, timestamp=int(time.time()) - limits.SIGNATURE_MAX_AGE - 60
    )

    assert (forged.status, stale.status) == (401, 401)
    assert not slack.calls_to("response_url")
    assert slack.workspace.channels["C0APPROVALS"].messages[ts].edited_ts is None


async def test_click_on_a_missing_button_names_what_is_there(slack: FakeSlack, bolt: str) -> None:
    ts = await post_card(slack)
    with pytest.raises(
        LookupError, match=r"no element with action_id 'edit'.*\['approve', 'reject'\]"
    ):
        await slack.click("alice", "C0APPROVALS", ts, "edit")


async def test_without_an_app_the_error_says_how_to_connect() -> None:
    async with FakeSlack.running(tokens={TOKEN}) as slack:
        with pytest.raises(RuntimeError, match="connect_app"):
            await slack.open_home("alice")
        async with SandboxClient(slack.url) as client:
            with pytest.raises(Exception, match="409"):
                await client.open_home("alice")
