"""The HTTP route's Bolt request (`bot.slack._request.bolt_request`, a click's form decoded in C)
is the one Bolt builds from the same body: the same body, raw body (what Bolt verifies),
context, headers and mode, for clicks, modal submissions, commands and events, and for the
forms whose escapes urllib decodes its own way (which go to Bolt's parser)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote_plus, unquote_plus, urlencode

import pytest
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.sandbox.signing import block_actions, slash_command, view_submission
from bot.slack._request import bolt_request, form_unquote

MESSAGE = {
    "ts": "1796231496.443182",
    "text": "Refund ✅ $120 to «Ünïcode» customer \\ back\\slash",
    "blocks": [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"line {i}: 100% & more = +"}}
        for i in range(40)
    ],
}


def _click(**over: Any) -> str:
    return block_actions(
        action_id="signoff.approve",
        value='{"a": "ap-1", "t": "th-1"}',
        user_id="U0BOB",
        channel_id="C0APPROVALS",
        message={**MESSAGE, **over},
        trigger_id="1.2.abc",
        response_url="http://127.0.0.1:1/response/R1",
    ).body


BODIES = {
    "click": _click(),
    "click, plain ASCII": _click(text="plain", blocks=[]),
    "modal submission": view_submission(
        user_id="U0BOB",
        view={"id": "V1", "callback_id": "signoff.reject", "blocks": []},
        values={"reason": {"text": {"type": "plain_text_input", "value": "no, 50% off"}}},
        trigger_id="1.2.abc",
    ).body,
    "slash command": slash_command(
        text="status payload",
        user_id="U0BOB",
        channel_id="C0APPROVALS",
        trigger_id="1.2.abc",
        response_url="http://127.0.0.1:1/response/R2",
    ).body,
    "a % urllib keeps as it is": "payload=" + quote_plus('{"a": "x') + "%zz" + quote_plus('"}'),
    "a % and one hex digit": "payload=" + quote_plus('{"a": "x') + "%4" + quote_plus('"}'),
    "unescaped characters": 'payload={"type":+"block_actions",+"user":+{"id":+"ü"}}',
    "an unescaped backslash": 'payload={"a":+"\\u00fc"}',
    "invalid UTF-8 escaped": "payload=" + quote_plus('{"a": "') + "%C3%28" + quote_plus('"}'),
    "two fields": "payload=" + quote_plus('{"a": 1}') + "&other=2",
}


def _headers(content_type: str) -> dict[str, str]:
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": str(int(time.time())),
        "X-Slack-Signature": "v0=abc",
    }


def _same(ours: AsyncBoltRequest, bolts: AsyncBoltRequest) -> None:
    assert ours.body == bolts.body
    assert ours.raw_body == bolts.raw_body
    assert dict(ours.context) == dict(bolts.context)
    assert ours.headers == bolts.headers
    assert ours.query == bolts.query
    assert ours.content_type == bolts.content_type
    assert ours.mode == bolts.mode == "http"
    assert (ours.lazy_only, ours.lazy_function_name) == (
        bolts.lazy_only,
        bolts.lazy_function_name,
    )


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_request_is_the_one_bolt_builds(name: str) -> None:
    text = BODIES[name]
    headers = _headers("application/x-www-form-urlencoded")
    ours = bolt_request(text, query="a=1", headers=headers, context={"received": 1.5})
    bolts = AsyncBoltRequest(body=text, query="a=1", headers=headers, context={"received": 1.5})
    _same(ours, bolts)
    assert ours.context["received"] == 1.5


def test_a_click_carries_its_message_and_who_clicked() -> None:
    text = BODIES["click"]
    ours = bolt_request(
        text,
        query="",
        headers=_headers("application/x-www-form-urlencoded; charset=utf-8"),
        context={},
    )
    assert ours.body["message"]["text"] == MESSAGE["text"]
    assert ours.body["actions"][0]["action_id"] == "signoff.approve"
    assert (ours.context["user_id"], ours.context["channel_id"]) == ("U0BOB", "C0APPROVALS")
    assert ours.context["response_url"] == "http://127.0.0.1:1/response/R1"


def test_an_event_as_json() -> None:
    text = json.dumps({"type": "event_callback", "team_id": "T1", "event": {"type": "x"}})
    headers = _headers("application/json")
    _same(
        bolt_request(text, query="", headers=headers, context={}),
        AsyncBoltRequest(body=text, query="", headers=headers, context={}),
    )


def test_a_form_sent_as_json_fails_as_bolts_does() -> None:
    text = BODIES["click, plain ASCII"]
    headers = _headers("application/json")
    with pytest.raises(ValueError):
        AsyncBoltRequest(body=text, query="", headers=headers, context={})
    with pytest.raises(ValueError):
        bolt_request(text, query="", headers=headers, context={})


@pytest.mark.parametrize(
    "payload, error",
    [("not json", ValueError), ("[1, 2]", AttributeError), ('"text"', AttributeError)],
)
def test_a_payload_that_is_not_an_object_fails_as_bolts_does(
    payload: str, error: type[Exception]
) -> None:
    text = urlencode({"payload": payload})
    headers = _headers("application/x-www-form-urlencoded")
    with pytest.raises(error):
        AsyncBoltRequest(body=text, query="", headers=headers, context={})
    with pytest.raises(error):
        bolt_request(text, query="", headers=headers, context={})


@pytest.mark.parametrize(
    "value",
    ["", "a+b", "%41%42", "100%25", "%E2%9C%85+done", "%C3%28", "%c3%bc", "x%2", "%zz", "\\x41"],
)
def test_form_unquote_is_unquote_plus_or_says_it_cannot(value: str) -> None:
    fast = form_unquote(value)
    assert fast is None or fast == unquote_plus(value)
    if value in ("%zz", "x%2", "\\x41"):
        assert fast is None  # urllib keeps these as they are: left to it
    else:
        assert fast == unquote_plus(value)
