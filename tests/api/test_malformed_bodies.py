"""A body that is not strict JSON within the documented limits (`bot.http._limits`) is a 400 that
says what was wrong, on every route that reads one: `POST /api/approvals`, `POST /api/runs` and
`POST /mcp`. Nested too deep, a number too long or not finite, bytes that are not UTF-8, a key
twice, a lone surrogate: never a 500, never recorded, and each refusal on the audit log."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.api.conftest import BILLING_TOKEN, REFUND, Api, bearer

APPROVAL = json.dumps({"action": "send_refund", "args": REFUND, "requester": "U_CAROL"})
RUN = json.dumps({"workflow": "refund", "input": REFUND, "requester": "U_CAROL"})
CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "request_approval",
            "arguments": {"action": "send_refund", "args": REFUND},
        },
    }
)


def spoil(good: str, how: str) -> bytes:
    """`good` (a JSON request naming the refund's `amount` of 42.5) made malformed by `how`."""
    amount = '"amount": 42.5'
    assert amount in good
    replaced = {
        "nested 100 deep": '"amount": 42.5, "deep": ' + "[" * 100 + "]" * 100,
        "nested 100,000 deep": '"amount": 42.5, "deep": ' + "[" * 100_000 + "]" * 100_000,
        "a 5,000-digit number": '"amount": ' + "9" * 5000,
        "a 65-character number": '"amount": 0.' + "1" * 63,
        "a number beyond a float": '"amount": 1e999',
        "NaN": '"amount": NaN',
        "Infinity": '"amount": -Infinity',
        "a key twice": '"amount": 42.5, "amount": 4250',
        "a lone surrogate": '"amount": 42.5, "note": "broken \\ud800"',
    }
    if how == "invalid UTF-8":
        return (
            good.replace(amount, '"amount": 42.5, "note": "caf\u00e9"')
            .encode("utf-8")
            .replace(b"\xc3\xa9", b"\xe9")
        )
    return good.replace(amount, replaced[how]).encode()


SAID = {
    "nested 100 deep": "nested deeper than 64 levels",
    "nested 100,000 deep": "nested deeper than 64 levels",
    "a 5,000-digit number": "written with 5,000 characters (999999999999...); at most 64",
    "a 65-character number": "written with 65 characters",
    "a number beyond a float": "1e999 in the JSON body is beyond what a 64-bit float holds",
    "NaN": "NaN is not JSON",
    "Infinity": "-Infinity is not JSON",
    "a key twice": 'the key "amount" twice in one object',
    "a lone surrogate": "lone surrogate (\\ud800)",
    "invalid UTF-8": "not UTF-8: byte 0xe9 at offset",
}
CASES = list(SAID)


async def _refused(api: Api, path: str, body: bytes, token: str) -> tuple[int, Any]:
    headers = {
        **bearer(token),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    resp = await api.client.post(path, data=io.BytesIO(body), headers=headers)
    return resp.status, await resp.json()


@pytest.mark.parametrize("how", CASES)
async def test_a_malformed_request_for_an_approval_is_a_400_saying_what_was_wrong(
    api: Api, how: str
) -> None:
    before = await api.counts()
    status, answer = await _refused(api, "/api/approvals", spoil(APPROVAL, how), BILLING_TOKEN)
    assert status == 400, answer
    assert SAID[how] in answer["error"] and "the body must be a JSON object" in answer["error"]
    assert await api.counts() == {**before, "api_refused": before.get("api_refused", 0) + 1}
    (refusal,) = await api.kit.audit("api_refused")
    assert refusal["actor"] == "billing" and refusal["data"]["refusal"] == "malformed"
    assert SAID[how] in refusal["data"]["reason"]


@pytest.mark.parametrize("how", CASES)
async def test_a_malformed_request_to_start_a_run_is_a_400_saying_what_was_wrong(
    api: Api, how: str
) -> None:
    before = await api.counts()
    status, answer = await _refused(api, "/api/runs", spoil(RUN, how), "runs-token")
    assert status == 400, answer
    assert SAID[how] in answer["error"] and '"workflow": str' in answer["error"]
    assert await api.counts() == {**before, "start_refused": before.get("start_refused", 0) + 1}
    (refusal,) = await api.kit.audit("start_refused")
    assert refusal["data"]["refusal"] == "malformed" and SAID[how] in refusal["data"]["reason"]


@pytest.mark.parametrize("how", CASES)
async def test_a_malformed_mcp_call_is_a_json_rpc_parse_error(api: Api, how: str) -> None:
    before = await api.counts()
    status, answer = await _refused(api, "/mcp", spoil(CALL, how), BILLING_TOKEN)
    assert status == 400, answer
    assert answer["error"]["code"] == -32700 and SAID[how] in answer["error"]["message"]
    assert await api.counts() == {**before, "api_refused": before.get("api_refused", 0) + 1}


async def test_a_body_over_one_mib_is_a_413_in_json_saying_the_limit(api: Api) -> None:
    big = APPROVAL.replace('"damaged"', '"' + "x" * (1024 * 1024) + '"').encode()
    status, answer = await _refused(api, "/api/approvals", big, BILLING_TOKEN)
    assert status == 413
    assert "larger than 1,048,576 bytes (1 MiB)" in answer["error"]
    status, answer = await _refused(api, "/api/runs", big.replace(b"action", b"x"), "runs-token")
    assert status == 413 and "1 MiB" in answer["error"]
    assert await api.kit.approvals() == []


async def test_strict_json_within_the_limits_is_taken(api: Api) -> None:
    """What the limits let through: 64 levels, a 64-character number, a character outside the
    BMP escaped as a pair."""
    args = {**REFUND, "reason": "broken \ud83d\udce6"}
    body = json.dumps({"action": "send_refund", "args": args, "requester": "U_CAROL"})
    assert "\\ud83d\\udce6" in body  # json.dumps escapes it as a surrogate pair
    status, answer = await _refused(api, "/api/approvals", body.encode(), BILLING_TOKEN)
    assert status == 202, answer
    assert answer["args"]["reason"] == "broken \U0001f4e6"
    deep = {**REFUND, "amount": 12.5}
    start = json.dumps({"workflow": "refund", "input": deep, "requester": "U_CAROL"})
    start = start.replace('"amount": 12.5', '"amount": 12.5' + "0" * 60)  # 64 characters
    status, answer = await _refused(api, "/api/runs", start.encode(), "runs-token")
    assert status == 201, answer
