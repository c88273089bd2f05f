"""A service's check through a real `signoff run` process: the bot asks the service's
`check_url` (a local aiohttp receiver) when the request comes in, the card shows the facts, and
after a click on Approve the facts are read again; changed, the service reads `pending` with what
changed, a second card asks, and no webhook says "approved"."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import sqlalchemy as sa
from aiohttp import web

from bot.approvals import tables as t
from bot.sandbox.client import SandboxClient
from bot.slack.payloads import APPROVE
from tests.kit.e2e import (
    ALICE,
    CAROL,
    CHANNEL,
    E2E,
    WAIT,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    action_ids,
    free_port,
    sqlite_url,
    text_of,
    write_policy,
)

POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]

[actions.send_refund.args]
customer_id = {{ type = "string", required = true }}
amount = {{ type = "number", required = true, exclusive_minimum = 0 }}

[services.billing]
token_env = "CHECK_BILLING_TOKEN"
actions = ["send_refund"]
callback_urls = ["http://127.0.0.1:*"]
callback_private = true
check_url = "{url}/facts"
"""
TOKEN = "check-billing-token-0123456789abcdef"


class Service:
    """Answers the check with `facts`; keeps the webhooks."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {"balance": "120.00"}
        self.asked = 0
        self.hooks: list[dict[str, Any]] = []
        self.url = ""

    async def check(self, request: web.Request) -> web.Response:
        await request.read()
        self.asked += 1
        return web.json_response(self.facts)

    async def hook(self, request: web.Request) -> web.Response:
        self.hooks.append(json.loads(await request.read())["approval"])
        return web.Response(status=204)


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    found = Service()
    app = web.Application()
    app.router.add_post("/facts", found.check)
    app.router.add_post("/hook", found.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    found.url = f"http://127.0.0.1:{port}"
    yield found
    await runner.cleanup()


@pytest.fixture
def bot(fake_slack: FakeSlackProcess, tmp_path: Path, service: Service) -> Iterator[BotProcess]:
    policy = write_policy(tmp_path, POLICY.format(url=service.url))
    found = BotProcess(
        tmp_path, sqlite_url(tmp_path), fake_slack.url, policy, CHECK_BILLING_TOKEN=TOKEN
    )
    yield found
    found.stop()


@pytest.fixture
def db(bot: BotProcess) -> Iterator[BotDatabase]:
    found = BotDatabase(bot.db_url)
    yield found
    found.close()


async def read(http: aiohttp.ClientSession, bot: BotProcess, approval_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with http.get(f"{bot.url}/api/approvals/{approval_id}", headers=headers) as resp:
        assert resp.status == 200
        return dict(await resp.json())


def approvals_of(db: BotDatabase, thread_id: str) -> list[dict[str, Any]]:
    query = sa.select(t.approvals).where(t.approvals.c.thread_id == thread_id)
    return db.rows(query.order_by(t.approvals.c.created_at))


async def test_signoff_run_reads_the_check_again_and_a_changed_fact_asks_again(
    fake_slack: FakeSlackProcess,
    bot: BotProcess,
    db: BotDatabase,
    http: aiohttp.ClientSession,
    service: Service,
) -> None:
    body = {
        "action": "send_refund",
        "args": {"customer_id": "cust-9", "amount": 42.5},
        "requester": CAROL,
        "callback_url": f"{service.url}/hook",
    }
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with http.post(bot.url + "/api/approvals", json=body, headers=headers) as resp:
        assert resp.status == 202
        asked = await resp.json()
    assert asked["checked"]["facts"] == {"balance": "120.00"}
    thread = asked["approval_id"]

    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, bot.events_url)
        e2e = E2E(slack, bot, db, http)
        (first,) = approvals_of(db, thread)
        card = await e2e.card(first["id"])
        assert "balance 120.00" in text_of(card)

        service.facts = {"balance": "80.00"}  # the world changes while the card waits
        assert (await slack.click(ALICE, CHANNEL, card["ts"], APPROVE))["status"] == 200

        deadline = asyncio.get_running_loop().time() + WAIT
        while len(approvals_of(db, thread)) < 2:
            assert asyncio.get_running_loop().time() < deadline, bot.output()
            await asyncio.sleep(0.05)
        again = approvals_of(db, thread)[1]
        card = await e2e.card(again["id"])
        assert "balance 120.00 → 80.00" in text_of(card) and APPROVE in action_ids(card)

    seen = await read(http, bot, thread)
    assert seen["status"] == "pending" and seen["approved"] is False
    assert seen["checked"]["changed"] == {"balance": ["120.00", "80.00"]}
    assert service.asked >= 2
    assert service.hooks == []
