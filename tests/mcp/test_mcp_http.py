"""The MCP server at `/mcp` in a real `signoff run`, spoken to over streamable HTTP by the MCP
SDK's own client with a service's bearer token; the fake Slack's clicks decide."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx2
import pytest
import sqlalchemy as sa
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from bot.approvals import tables as t
from tests.client.external_kit import BILLING_TOKEN, OPS_TOKEN, approve
from tests.kit.e2e import ALICE, E2E, WAIT, BotProcess

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@asynccontextmanager
async def session(bot: BotProcess, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(WAIT * 3)) as http,
        streamable_http_client(f"{bot.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        yield s


async def call(s: ClientSession, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
    return await s.call_tool(tool, arguments, read_timeout_seconds=WAIT * 3, **kw)


async def test_a_request_over_http_waits_for_the_click_and_returns_the_decision(
    e2e: E2E, bot: BotProcess
) -> None:
    async with session(bot, BILLING_TOKEN) as s:
        asked = asyncio.ensure_future(
            call(
                s,
                "request_approval",
                {
                    "action": "send_refund",
                    "args": {"customer_id": "mcp-http-1", "amount": 20},
                    "wait_seconds": WAIT * 2,
                },
            )
        )
        await approve(e2e, "mcp-http-1")
        result = await asked
    assert not result.is_error, result.content
    answer = result.structured_content
    assert (answer["status"], answer["approved"], answer["service"]) == (
        "approved",
        True,
        "billing",
    )
    assert answer["decision"]["by"] == [ALICE]
    assert e2e.db.approval(answer["decision"]["approval_id"])["status"] == "approved"


async def test_a_wait_that_runs_out_sends_progress_on_the_call_s_own_stream(
    e2e: E2E, bot: BotProcess
) -> None:
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with session(bot, BILLING_TOKEN) as s:
        result = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-http-wait", "amount": 2},
             "wait_seconds": 1},
            progress_callback=on_progress,
        )  # fmt: skip
    assert result.structured_content["status"] == "pending"
    assert progress and progress[-1][1] == 1.0


async def test_each_token_sees_only_its_own_service_s_approvals(e2e: E2E, bot: BotProcess) -> None:
    async with session(bot, BILLING_TOKEN) as s:
        asked = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-http-own", "amount": 4},
             "wait_seconds": 0},
        )  # fmt: skip
        mine = await call(s, "list_my_pending", {})
    approval_id = asked.structured_content["approval_id"]
    assert approval_id in [a["approval_id"] for a in mine.structured_content["approvals"]]
    async with session(bot, OPS_TOKEN) as s:
        theirs = await call(s, "list_my_pending", {})
        peek = await call(s, "get_approval", {"approval_id": approval_id})
        refund = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-http-ops", "amount": 4}},
        )
    assert approval_id not in [a["approval_id"] for a in theirs.structured_content["approvals"]]
    assert peek.is_error and refund.is_error


def mcp_refusals(e2e: E2E) -> list[str]:
    """The reasons of the audit's unauthenticated refusals (linked or not yet), each as many
    times as it was refused: an entry is one refusal, or the `count` of those that repeated it
    within the window after it; the repeats of a window still open are counted in
    `audit_repeats`."""
    refused = [t.audit_events, t.audit_inbox]
    *entries, repeats = e2e.db.rows_at_once(  # one moment: the bot moves rows between them
        *(sa.select(table).where(table.c.kind == "api_refused") for table in refused),
        sa.select(t.audit_repeats),
    )
    found = []
    for row in (row for rows in entries for row in rows):
        data = json.loads(row["data"])
        if data.get("refusal") == "unauthenticated":
            found += [data["reason"]] * int(data.get("count", 1))
    for row in repeats:
        data = json.loads(row["data"])
        if data.get("refusal") == "unauthenticated":
            found += [data["reason"]] * int(row["count"])
    return found


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {BILLING_TOKEN}", "Bearer ", BILLING_TOKEN],
)
async def test_a_missing_or_wrong_token_is_401_and_nothing_is_recorded(
    e2e: E2E, bot: BotProcess, http: aiohttp.ClientSession, authorization: str | None
) -> None:
    before = (e2e.db.approval_counts(), e2e.db.runs_count())
    refused = Counter(mcp_refusals(e2e))
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    call_tool = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "request_approval",
            "arguments": {"action": "send_refund", "args": {"customer_id": "x", "amount": 1}},
        },
    }
    for message in (INITIALIZE, call_tool):
        async with http.post(f"{bot.url}/mcp", json=message, headers=headers) as res:
            assert res.status == 401
            assert res.headers["WWW-Authenticate"].startswith("Bearer")
            assert "bearer token" in json.loads(await res.text())["error"]
    assert (e2e.db.approval_counts(), e2e.db.runs_count()) == before
    reason = "no bearer token" if authorization is None else "a wrong bearer token"
    # each refusal is on the audit log (counted: the linker moves entries from the inbox to the
    # chain meanwhile, so their order across the two tables is not stable)
    assert Counter(mcp_refusals(e2e)) - refused == Counter({reason: 2})


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for e in error.exceptions for leaf in leaves(e)]
    return [error]


async def test_the_sdk_client_with_a_wrong_token_cannot_even_initialize(
    e2e: E2E, bot: BotProcess
) -> None:
    before = (e2e.db.approval_counts(), e2e.db.runs_count())
    with pytest.raises(BaseExceptionGroup) as raised:
        async with session(bot, "wrong-token") as s:
            await call(s, "list_my_pending", {})
    assert [type(e) for e in leaves(raised.value)] == [MCPError]
    assert (e2e.db.approval_counts(), e2e.db.runs_count()) == before
