"""SlackSigner's signatures, checked by slack_sdk's own SignatureVerifier, and the payloads."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from bot.sandbox import (
    SlackRequest,
    SlackSigner,
    app_home_opened,
    block_actions,
    limits,
    slash_command,
    state_values,
    view_submission,
)

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"

MESSAGE = {"type": "message", "ts": "1700000000.000100", "text": "Refund?", "blocks": []}
REQUESTS: dict[str, SlackRequest] = {
    "block_actions": block_actions(
        action_id="approve",
        value="a1|t1",
        user_id="U0ALICE",
        channel_id="C0APPROVALS",
        message=MESSAGE,
        trigger_id="1.2.abc",
        response_url="http://127.0.0.1:1/_sandbox/response/x",
    ),
    "view_submission": view_submission(
        user_id="U0ALICE",
        view={"id": "V1", "callback_id": "reject"},
        values={},
        trigger_id="1.2.abc",
    ),
    "slash_command": slash_command(
        text="status", user_id="U0ALICE", channel_id="C0APPROVALS", trigger_id="t", response_url="r"
    ),
    "app_home_opened": app_home_opened(user_id="U0ALICE", channel_id="D0ALICE"),
}


@pytest.mark.parametrize("kind", REQUESTS)
def test_slack_sdk_verifies_the_signature(kind: str) -> None:
    request = REQUESTS[kind]
    headers = SlackSigner(SECRET).headers(request)

    verifier = SignatureVerifier(SECRET)
    assert verifier.is_valid_request(request.body, headers)
    assert verifier.is_valid(
        request.body, headers["X-Slack-Request-Timestamp"], headers["X-Slack-Signature"]
    )
    assert not SignatureVerifier("another-secret").is_valid_request(request.body, headers)
    assert not verifier.is_valid_request(request.body + "x", headers)


def test_signature_is_v0_hmac_of_timestamp_and_body() -> None:
    signer = SlackSigner(SECRET)
    expected = SignatureVerifier(SECRET).generate_signature(timestamp="1531420618", body="a=b")
    assert signer.signature(1531420618, "a=b") == expected
    assert signer.signature("1531420618", b"a=b") == expected


def test_stale_timestamp_fails_slack_sdk_check() -> None:
    request = REQUESTS["slash_command"]
    old = int(time.time()) - limits.SIGNATURE_MAX_AGE - 10
    headers = SlackSigner(SECRET).headers(request, timestamp=old)
    assert not SignatureVerifier(SECRET).is_valid_request(request.body, headers)


def test_secret_is_hidden_and_required() -> None:
    assert SECRET not in repr(SlackSigner(SECRET))
    with pytest.raises(ValueError, match="signing secret"):
        SlackSigner("")


def test_payload_shapes() -> None:
    click = REQUESTS["block_actions"]
    form = parse_qs(click.body)
    assert list(form) == ["payload"] and click.content_type == "application/x-www-form-urlencoded"
    payload = json.loads(form["payload"][0])
    assert payload == click.payload
    assert payload["type"] == "block_actions" and payload["user"]["id"] == "U0ALICE"
    assert payload["container"] == {
        "type": "message",
        "message_ts": MESSAGE["ts"],
        "channel_id": "C0APPROVALS",
        "is_ephemeral": False,
    }
    assert payload["actions"][0]["action_id"] == "approve"
    assert payload["actions"][0]["value"] == "a1|t1"
    assert (payload["trigger_id"], payload["message"]) == ("1.2.abc", MESSAGE)

    command = {k: v[0] for k, v in parse_qs(REQUESTS["slash_command"].body).items()}
    assert (command["command"], command["text"], command["user_id"]) == (
        "/agent",
        "status",
        "U0ALICE",
    )
    assert command["trigger_id"] == "t" and command["response_url"] == "r"

    event = json.loads(REQUESTS["app_home_opened"].body)
    assert REQUESTS["app_home_opened"].content_type == "application/json"
    assert event["type"] == "event_callback"
    assert event["event"]["type"] == "app_home_opened" and event["event"]["user"] == "U0ALICE"


def test_state_values_follow_the_element_types() -> None:
    options = [{"text": {"type": "plain_text", "text": n}, "value": n} for n in ("low", "high")]
    blocks: list[dict[str, Any]] = [
        {
            "type": "input",
            "block_id": "reason",
            "element": {"type": "plain_text_input", "action_id": "text"},
        },
        {
            "type": "input",
            "block_id": "amount",
            "element": {"type": "number_input", "action_id": "n"},
        },
        {
            "type": "input",
            "block_id": "risk",
            "element": {"type": "static_select", "action_id": "pick", "options": options},
        },
        {"type": "section", "text": {"type": "mrkdwn", "text": "not an input"}},
    ]
    values = state_values(blocks, {"reason": "too much", "n": 12, "risk": "high"})
    assert values == {
        "reason": {"text": {"type": "plain_text_input", "value": "too much"}},
        "amount": {"n": {"type": "number_input", "value": "12"}},
        "risk": {"pick": {"type": "static_select", "selected_option": options[1]}},
    }
    submitted = view_submission(user_id="U1", view={"id": "V1"}, values=values, trigger_id="t")
    assert submitted.payload["view"]["state"]["values"] == values


@pytest.fixture
async def verifying_app() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny app that checks signatures with slack_sdk and echoes what it got."""
    seen: list[dict[str, Any]] = []
    verifier = SignatureVerifier(SECRET)

    async def events(request: web.Request) -> web.Response:
        body = await request.text()
        ok = verifier.is_valid_request(body, dict(request.headers))
        seen.append({"ok": ok, "content_type": request.content_type, "body": body})
        return web.json_response({"verified": ok}, status=200 if ok else 401)

    app = web.Application()
    app.router.add_post("/slack/events", events)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/slack/events", seen
    await runner.cleanup()


async def test_send_posts_signed_requests(verifying_app: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = verifying_app
    signer = SlackSigner(SECRET)

    good = await signer.send(url, REQUESTS["block_actions"])
    forged = await signer.send(url, REQUESTS["block_actions"], signature="v0=" + "0" * 64)
    stale = await signer.send(url, REQUESTS["app_home_opened"], timestamp=int(time.time()) - 600)

    assert (good.status, good.json()) == (200, {"verified": True})
    assert (forged.status, stale.status) == (401, 401)
    assert seen[0]["body"] == REQUESTS["block_actions"].body
    assert seen[0]["content_type"] == "application/x-www-form-urlencoded"
    assert seen[2]["content_type"] == "application/json"
