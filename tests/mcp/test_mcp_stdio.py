"""`signoff mcp` as a real subprocess, spoken to by the MCP SDK's own client over stdio.

The bot (`signoff run` against the fake Slack) shares its database: it posts the cards the
MCP server's requests open, a click in the fake decides, and the tool call that was waiting
gets the decision.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bot.mcp_server import GET_APPROVAL, REQUEST_APPROVAL
from tests.client.external_kit import approve, card_naming, reject
from tests.kit.e2e import ALICE, E2E, WAIT, BotProcess

SIGNOFF = str(Path(sys.executable).with_name("signoff"))


def _env(bot: BotProcess, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    env.update(SIGNOFF_DATABASE_URL=bot.db_url, SIGNOFF_POLICY=bot.env["SIGNOFF_POLICY"], **more)
    return env


@asynccontextmanager
async def session(bot: BotProcess, *args: str, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=SIGNOFF, args=["mcp", *args], env=_env(bot, **env))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def call(s: ClientSession, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
    result = await s.call_tool(tool, arguments, read_timeout_seconds=WAIT * 3, **kw)
    return result


async def test_the_tools_tell_the_model_what_an_approval_means(bot: BotProcess) -> None:
    async with session(bot) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert sorted(tools) == ["get_approval", "list_my_pending", "request_approval"]
    assert tools["request_approval"].description == REQUEST_APPROVAL
    assert tools["get_approval"].description == GET_APPROVAL
    assert "final for those arguments" in REQUEST_APPROVAL
    schema = tools["request_approval"].input_schema
    assert schema["required"] == ["action", "args"]
    assert set(schema["properties"]) == {"action", "args", "title", "wait_seconds"}


async def test_a_request_waits_for_the_click_and_returns_the_decision(
    e2e: E2E, bot: BotProcess
) -> None:
    async with session(bot) as s:
        asked = asyncio.ensure_future(
            call(
                s,
                "request_approval",
                {
                    "action": "send_refund",
                    "args": {"customer_id": "mcp-stdio-1", "amount": 12.5},
                    "title": "Refund 12.50 to mcp-stdio-1",
                    "wait_seconds": WAIT * 2,
                },
            )
        )
        await approve(e2e, "mcp-stdio-1")
        result = await asked
    assert not result.is_error, result.content
    answer = result.structured_content
    assert (answer["status"], answer["approved"], answer["service"]) == ("approved", True, "local")
    assert answer["decision"]["by"] == [ALICE]
    assert answer["decision"]["args"] == {"customer_id": "mcp-stdio-1", "amount": 12.5}
    assert e2e.db.approval(answer["decision"]["approval_id"])["status"] == "approved"


async def test_a_rejection_comes_back_as_a_result_with_the_note(e2e: E2E, bot: BotProcess) -> None:
    async with session(bot) as s:
        asked = asyncio.ensure_future(
            call(
                s,
                "request_approval",
                {
                    "action": "send_refund",
                    "args": {"customer_id": "mcp-stdio-rej", "amount": 99},
                    "wait_seconds": WAIT * 2,
                },
            )
        )
        await reject(e2e, "mcp-stdio-rej", "already refunded by phone")
        result = await asked
    assert not result.is_error, result.content
    answer = result.structured_content
    assert (answer["status"], answer["approved"]) == ("rejected", False)
    assert answer["decision"]["note"] == "already refunded by phone"


async def test_a_wait_that_runs_out_is_pending_with_progress_and_get_approval_finds_it(
    e2e: E2E, bot: BotProcess
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with session(bot) as s:
        first = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-stdio-wait", "amount": 3.5},
             "wait_seconds": 1},
            progress_callback=on_progress,
        )  # fmt: skip
        assert not first.is_error, first.content
        pending = first.structured_content
        assert pending["status"] == "pending"
        assert "get_approval" in pending["next"] and pending["approval_id"] in pending["next"]
        assert progress and progress[-1][1] == 1.0
        assert pending["approval_id"] in (progress[-1][2] or "")

        mine = await call(s, "list_my_pending", {})
        ids = [a["approval_id"] for a in mine.structured_content["approvals"]]
        assert pending["approval_id"] in ids

        await card_naming(e2e, "mcp-stdio-wait")  # the card is up: the bot has it
        waiting = asyncio.ensure_future(
            call(s, "get_approval", {"approval_id": pending["approval_id"], "wait_seconds": WAIT})
        )
        await approve(e2e, "mcp-stdio-wait")
        settled = (await waiting).structured_content
    assert (settled["approval_id"], settled["status"]) == (pending["approval_id"], "approved")


async def test_refusals_are_tool_errors_and_nothing_is_recorded(e2e: E2E, bot: BotProcess) -> None:
    before = (e2e.db.approval_counts(), e2e.db.runs_count())
    async with session(bot) as s:
        unknown = await call(s, "request_approval", {"action": "send_money", "args": {"amount": 1}})
        not_allowed = await call(
            s, "request_approval", {"action": "delete_row", "args": {"table": "users"}}
        )
        bad_args = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-bad", "amount": -5}},
        )
        nobody = await call(s, "get_approval", {"approval_id": "apr_nosuch"})
    for result in (unknown, not_allowed, bad_args, nobody):
        assert result.is_error
    assert "send_money" in unknown.content[0].text
    assert "delete_row" in not_allowed.content[0].text
    assert "amount" in bad_args.content[0].text
    assert "apr_nosuch" in nobody.content[0].text
    assert (e2e.db.approval_counts(), e2e.db.runs_count()) == before


def test_a_service_the_policy_lacks_is_refused_at_start(bot: BotProcess) -> None:
    run = subprocess.run(
        [SIGNOFF, "mcp", "--service", "nosuch"],
        env=_env(bot), input="", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stdout == ""  # stdout is the protocol's: nothing else is ever written there
    assert "[services.nosuch]" in run.stderr and "billing, local, ops" in run.stderr


async def test_the_service_can_come_from_the_environment(e2e: E2E, bot: BotProcess) -> None:
    async with session(bot, SIGNOFF_MCP_SERVICE="ops") as s:
        refund = await call(
            s,
            "request_approval",
            {"action": "send_refund", "args": {"customer_id": "mcp-ops", "amount": 1}},
        )
    assert refund.is_error  # ops may ask for deletions only
    assert "ops" in refund.content[0].text
