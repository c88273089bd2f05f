"""Requests no Slack client would send, made byte by byte: odd signing headers and bearer
tokens are a 401 and a deeply nested JSON body a 400 with what is wrong, never a 500 (a
traceback per request in the log), and nothing is recorded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from aiohttp import web

from bot.approvals import tables as t
from bot.config import Settings
from bot.http import Metrics, build_web_app
from bot.sandbox.processes import SIGNING_SECRET
from bot.sandbox.signing import SlackSigner
from tests.kit.scenario import Scenario, running_scenario

TOKEN = "api-token"


class _Runner:
    def kick(self) -> None:
        pass


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Scenario, str, int]]:
    """The bot's web app (Slack route and runs API) on 127.0.0.1, in front of a scenario."""
    async with running_scenario(tmp_path) as bot:
        settings = Settings(
            database_url=str(bot.signoff.db.url),
            policy_path=str(tmp_path / "policy.toml"),
            slack_signing_secret=SIGNING_SECRET,
            api_token=TOKEN,
        )
        app = build_web_app(
            bot.signoff,
            settings,
            bolt_app=bot.app,
            runner=_Runner(),  # type: ignore[arg-type]
            metrics=Metrics(),
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        try:
            yield bot, host, port
        finally:
            await runner.cleanup()


async def raw(
    host: str, port: int, path: str, headers: list[bytes], body: bytes
) -> tuple[int, str]:
    """POST `body` to `path` with exactly these header lines; the status and the body."""
    reader, writer = await asyncio.open_connection(host, port)
    head = [
        f"POST {path} HTTP/1.1".encode(),
        f"Host: {host}:{port}".encode(),
        f"Content-Length: {len(body)}".encode(),
        b"Connection: close",
        *headers,
    ]
    writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode(errors="replace")


COMMAND = b"command=%2Fagent&text=help&user_id=U0CAROL&channel_id=C0APPROVALS&team_id=T0DEMO"


def signature(timestamp: str, body: bytes) -> bytes:
    return SlackSigner(SIGNING_SECRET).signature(timestamp, body.decode()).encode()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param([b"X-Slack-Request-Timestamp: " + b"9" * 309], id="309-digit timestamp"),
        pytest.param([b"X-Slack-Request-Timestamp: " + b"1" * 5000], id="5000-digit timestamp"),
        pytest.param([b"X-Slack-Signature: v0=\xc3\xa9\xff" + b"0" * 60], id="non-ASCII signature"),
        pytest.param([b"X-Slack-Request-Timestamp: \xd9\xa1\xd9\xa2"], id="Arabic-Indic digits"),
    ],
)
async def test_odd_slack_signing_headers_are_a_401(
    served: tuple[Scenario, str, int], headers: list[bytes]
) -> None:
    _, host, port = served
    now = str(int(time.time()))
    given = {h.split(b":")[0] for h in headers}
    if b"X-Slack-Request-Timestamp" not in given:
        headers = [b"X-Slack-Request-Timestamp: " + now.encode(), *headers]
    if b"X-Slack-Signature" not in given:
        headers = [*headers, b"X-Slack-Signature: " + signature(now, COMMAND)]
    status, body = await raw(
        host,
        port,
        "/slack/events",
        [b"Content-Type: application/x-www-form-urlencoded", *headers],
        COMMAND,
    )
    assert status == 401, body
    assert "signature" in json.loads(body)["error"]


async def test_a_non_ascii_bearer_token_is_a_401(served: tuple[Scenario, str, int]) -> None:
    _, host, port = served
    status, body = await raw(
        host,
        port,
        "/api/runs",
        [b"Content-Type: application/json", b"Authorization: Bearer \xc3\xa9\xff" + TOKEN.encode()],
        b"{}",
    )
    assert status == 401, body
    assert "bearer token" in json.loads(body)["error"]


@pytest.mark.parametrize("depth", [100, 500, 5000])
async def test_a_deeply_nested_runs_api_body_is_a_400_saying_so(
    served: tuple[Scenario, str, int], depth: int
) -> None:
    bot, host, port = served
    nested = "[" * depth + "]" * depth
    body = (
        '{"workflow": "refund", "requester": "U0CAROL", "input": {"customer_id": "c1", '
        f'"order_id": "o1", "amount": 1, "reason": {nested}}}}}'
    ).encode()
    status, answer = await raw(
        host,
        port,
        "/api/runs",
        [b"Content-Type: application/json", f"Authorization: Bearer {TOKEN}".encode()],
        body,
    )
    assert status == 400, answer
    assert "nested" in json.loads(answer)["error"]
    async with bot.signoff.db.read() as conn:
        assert (await conn.execute(sa.select(sa.func.count()).select_from(t.runs))).scalar() == 0
