"""A request that could reach no one who may approve it is refused at the door, saying which and
what to configure, never answered 201 "paused" (or 202) with no card: no channel for its card
(no `SIGNOFF_DEFAULT_CHANNEL`, none in the request or the service's section), or fewer people
who may approve it than it needs (a misspelt `@group`, the requester as the only approver).
Nothing is recorded but the refusal, on the audit log."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import API_POLICY, BILLING_TOKEN, REFUND, Api, bearer, serve_api
from tests.kit.signoff import Kit

RUN = {"workflow": "refund", "input": REFUND, "requester": "U_CAROL"}
ASK = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}

REACH_POLICY = (
    API_POLICY.replace(
        'actions = ["send_refund", "charge_card"]',
        'actions = ["send_refund", "charge_card", "wire_money", "self_check"]',
    )
    + """
[actions.wire_money]
approvers = ["@finanse"]           # misspelt: [groups] has finance
[actions.wire_money.args]
amount = { type = "number", required = true }

[actions.self_check]
approvers = ["U_CAROL", "U_DAVE"]
required = 2
[actions.self_check.args]
amount = { type = "number", required = true }
"""
)


@pytest.fixture
async def channelless(db_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    """The bot without `SIGNOFF_DEFAULT_CHANNEL`."""
    async for found in serve_api(Kit(db_url, tmp_path), default_channel=None):
        yield found


@pytest.fixture
async def reach(db_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    """The bot with a policy whose actions some requests cannot get approved."""
    async for found in serve_api(Kit(db_url, tmp_path), policy=REACH_POLICY):
        yield found


async def _post(api: Api, path: str, body: Any, token: str) -> tuple[int, Any]:
    resp = await api.client.post(path, json=body, headers=bearer(token))
    return resp.status, await resp.json()


async def test_without_a_channel_a_run_is_refused_saying_what_to_set(channelless: Api) -> None:
    api = channelless
    before = await api.counts()
    status, answer = await _post(api, "/api/runs", RUN, "runs-token")
    assert status == 400, answer
    assert answer["error"].startswith("no channel to post the run's cards in")
    assert '"channel"' in answer["error"] and "SIGNOFF_DEFAULT_CHANNEL" in answer["error"]
    assert await api.counts() == {**before, "start_refused": 1}
    (refusal,) = await api.kit.audit("start_refused")
    assert (refusal["actor"], refusal["data"]["workflow"]) == ("U_CAROL", "refund")
    assert refusal["data"]["refusal"] == "unreachable"
    # Named in the request, the channel is enough.
    status, answer = await _post(api, "/api/runs", {**RUN, "channel": "C0X"}, "runs-token")
    assert (status, answer["status"]) == (201, "paused"), answer


async def test_without_a_channel_a_service_request_is_refused_naming_its_section(
    channelless: Api,
) -> None:
    api = channelless
    before = await api.counts()
    status, answer = await _post(api, "/api/approvals", ASK, BILLING_TOKEN)
    assert status == 400, answer
    assert "no channel to post the card in" in answer["error"]
    assert "[services.billing]" in answer["error"] and "SIGNOFF_DEFAULT_CHANNEL" in answer["error"]
    assert await api.counts() == {**before, "api_refused": 1}
    (refusal,) = await api.kit.audit("api_refused")
    assert refusal["actor"] == "billing" and refusal["data"]["refusal"] == "Unreachable"
    assert refusal["data"]["action"] == "send_refund"
    # The door's other refusals come first: an action the service may not ask for is a 403.
    status, answer = await _post(
        api, "/api/approvals", {**ASK, "action": "delete_row"}, BILLING_TOKEN
    )
    assert status == 403, answer


async def test_a_request_no_one_may_approve_is_refused_saying_why(reach: Api) -> None:
    api = reach
    before = await api.counts()
    status, answer = await _post(
        api, "/api/approvals", {**ASK, "action": "wire_money", "args": {"amount": 5}}, BILLING_TOKEN
    )
    assert status == 400, answer
    assert answer["error"].startswith(
        "nobody may approve wire_money for U_CAROL, and it needs 1; its approvers are @finanse; "
        "@finanse has no members (defined neither under [groups] in the policy nor as a Slack "
        "user group with members: a typo?)"
    )
    assert "add people to [actions.wire_money] approvers" in answer["error"]
    # Two must approve, and one of the two approvers is the requester.
    status, answer = await _post(
        api, "/api/approvals", {**ASK, "action": "self_check", "args": {"amount": 5}}, BILLING_TOKEN
    )
    assert status == 400, answer
    assert answer["error"].startswith("only U_DAVE may approve self_check for U_CAROL")
    assert "U_CAROL asks, and may not approve their own request" in answer["error"]
    # the second refusal of the kind from billing within the audit's window is counted, not logged
    assert await api.counts() == {**before, "api_refused": 1}
    assert await api.kit.approvals() == []
    # Someone else asking, both may approve: it is asked.
    status, answer = await _post(
        api,
        "/api/approvals",
        {**ASK, "action": "self_check", "args": {"amount": 5}, "requester": "agent"},
        BILLING_TOKEN,
    )
    assert status == 202, answer


async def test_an_mcp_call_no_one_may_approve_is_a_tool_error_saying_why(reach: Api) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "request_approval",
            "arguments": {"action": "wire_money", "args": {"amount": 5}, "wait_seconds": 0},
        },
    }
    headers = {
        **bearer(BILLING_TOKEN),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    resp = await reach.client.post("/mcp", json=call, headers=headers)
    text = await resp.text()
    assert resp.status == 200, text
    (data,) = [
        line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data:")
    ]
    result = json.loads(data)["result"]
    assert result["isError"], result
    assert "nobody may approve wire_money for billing" in result["content"][0]["text"]
    assert await reach.kit.approvals() == []
    (refusal,) = await reach.kit.audit("api_refused")
    assert refusal["data"]["refusal"] == "Unreachable"
