"""The approvals API end to end, in real processes: `signoff run` with the fake Slack, a service
asking over HTTP, a person clicking in the fake, the service reading the decision, and a
webhook receiver (a real aiohttp server here) that verifies each signature and sees the
decision once, by delivery id, though the bot was SIGKILLed between the decision and the
delivery. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
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
    free_port,
    pg_schema,
    pg_server,
    pg_url,
    sqlite_url,
    write_policy,
)

POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
editable = ["amount"]
expire_after = "1h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }

[services.billing]
token_env = "E2E_BILLING_TOKEN"
webhook_secret_env = "E2E_BILLING_WEBHOOK_SECRET"
actions = ["send_refund"]
callback_urls = ["http://127.0.0.1:*"]  # the receiver below, on this machine
callback_private = true
may_act_for = ["U0CAROL"]
"""
TOKEN = "e2e-billing-token-0123456789abcdef"
WEBHOOK_SECRET = "whsec-e2e-0123456789"
ENV = {"E2E_BILLING_TOKEN": TOKEN, "E2E_BILLING_WEBHOOK_SECRET": WEBHOOK_SECRET}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield sqlite_url(tmp_path)
        return
    pg_server()
    schema, drop = pg_schema("api")
    yield pg_url(schema)
    drop()


class Bots:
    """`signoff run` processes on the test's database, started when the test says; each one
    stopped (or left killed) at the end."""

    def __init__(self, directory: Path, db_url: str, slack_url: str) -> None:
        self.args = (directory, db_url, slack_url, write_policy(directory, POLICY))
        self.started: list[BotProcess] = []

    def start(self) -> BotProcess:
        bot = BotProcess(*self.args, **ENV)
        self.started.append(bot)
        return bot


@pytest.fixture
def bots(fake_slack: FakeSlackProcess, tmp_path: Path, db_url: str) -> Iterator[Bots]:
    found = Bots(tmp_path, db_url, fake_slack.url)
    yield found
    for bot in found.started:
        bot.stop()


@pytest.fixture
def db(db_url: str) -> Iterator[BotDatabase]:
    found = BotDatabase(db_url)
    yield found
    found.close()


class Receiver:
    """A service's webhook endpoint: checks the signature as the README says to, answers 500
    until told to accept, and keeps what it accepted by delivery id."""

    def __init__(self) -> None:
        self.accepting = False
        self.attempts: list[tuple[bool, str]] = []
        """(signature valid, delivery id) of every POST, in order."""
        self.accepted: dict[str, Any] = {}
        self.answered_200 = 0
        self.tried = asyncio.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        header = request.headers.get("Signoff-Signature", "")
        fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
        expected = hmac.new(
            WEBHOOK_SECRET.encode(), f"{fields.get('t', '')}.".encode() + body, hashlib.sha256
        ).hexdigest()
        fresh = fields.get("t", "").isdigit() and abs(time.time() - int(fields["t"])) < 300
        valid = fresh and hmac.compare_digest(expected, fields.get("v1", ""))
        event = json.loads(body)
        self.attempts.append((valid, event["delivery_id"]))
        self.tried.set()
        if not valid:
            return web.Response(status=401)
        if not self.accepting:
            return web.Response(status=500, text="not now")
        self.accepted.setdefault(event["delivery_id"], event)  # exactly-once, by delivery id
        self.answered_200 += 1
        return web.Response(status=200)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hooks/signoff", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    found.url = f"http://127.0.0.1:{port}/hooks/signoff"
    yield found
    await runner.cleanup()


async def call(
    http: aiohttp.ClientSession,
    bot: BotProcess,
    verb: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = None,
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    async with http.request(verb, bot.url + path, json=body, headers=headers) as resp:
        return resp.status, await resp.json()


async def until(predicate: Callable[[], Any], what: str, bot: BotProcess) -> None:
    deadline = time.monotonic() + WAIT * 2
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; the bot said:\n{bot.output()}")
        await asyncio.sleep(0.05)


async def waiting_reads(http: aiohttp.ClientSession, bot: BotProcess) -> float:
    async with http.get(bot.url + "/metrics") as resp:
        for line in (await resp.text()).splitlines():
            if line.startswith("signoff_api_waiting_reads "):
                return float(line.split()[1])
    raise AssertionError("/metrics has no signoff_api_waiting_reads")


def card_id(db: BotDatabase, approval_id: str) -> str:
    """signoff's own id of the approval the API's `approval_id` names (the card shows it)."""
    (row,) = db.rows(sa.select(t.approvals).where(t.approvals.c.thread_id == approval_id))
    return str(row["id"])


async def test_a_click_approves_a_service_request_and_its_webhook_arrives_once_after_a_kill(
    fake_slack: FakeSlackProcess,
    bots: Bots,
    db: BotDatabase,
    http: aiohttp.ClientSession,
    receiver: Receiver,
) -> None:
    first = bots.start()
    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, first.events_url)
        request = {
            "action": "send_refund",
            "args": {"customer_id": "cust-hook", "amount": 42.5},
            "requester": CAROL,
            "title": "Refund {amount} to {customer_id}",
            "callback_url": receiver.url,
        }
        status, asked = await call(http, first, "POST", "/api/approvals", request, key="r-1")
        assert status == 202, asked
        approval_id = asked["approval_id"]
        card = await E2E(slack, first, db, http).card(card_id(db, approval_id))
        assert "Refund 42.5 to cust-hook" in json.dumps(card)
        assert (await slack.click(ALICE, CHANNEL, card["ts"], APPROVE))["status"] == 200

        status, seen = await call(http, first, "GET", f"/api/approvals/{approval_id}?wait=30")
        assert status == 200
        assert (seen["status"], seen["approved"]) == ("approved", True)
        assert seen["decision"]["by"] == [ALICE]
        assert seen["decision"]["args"] == request["args"]
        # The link is known once the bot has stored where its card is. Slack shows the card
        # before chat.postMessage's answer reaches the bot, so under load a click can decide
        # the approval first: the link then follows within moments.
        deadline = time.monotonic() + WAIT
        while seen["card_url"] is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            seen = (await call(http, first, "GET", f"/api/approvals/{approval_id}"))[1]
        assert seen["card_url"] and card["ts"].replace(".", "") in seen["card_url"]

        # The receiver refuses the first delivery; the bot dies before it is made again.
        async with asyncio.timeout(WAIT):
            await receiver.tried.wait()
        first.kill()
        assert receiver.accepted == {}

        receiver.accepting = True
        second = bots.start()
        await until(lambda: receiver.accepted, "the webhook's delivery", second)
        await E2E(slack, second, db, http).idle()
        status, again = await call(http, second, "GET", f"/api/approvals/{approval_id}")
        assert again["status"] == "approved"

    (delivery_id,) = receiver.accepted
    assert all(valid for valid, _ in receiver.attempts), receiver.attempts
    assert {d for _, d in receiver.attempts} == {delivery_id}  # the same id on every try
    assert receiver.answered_200 == 1
    event = receiver.accepted[delivery_id]
    assert event["event"] == "approval.settled"
    assert event["approval"]["approval_id"] == approval_id
    assert event["approval"]["status"] == "approved"
    assert event["approval"]["decision"]["by"] == [ALICE]


async def test_a_long_poll_outliving_the_bot_returns_pending_and_the_next_bot_answers(
    fake_slack: FakeSlackProcess, bots: Bots, db: BotDatabase, http: aiohttp.ClientSession
) -> None:
    first = bots.start()
    request = {
        "action": "send_refund",
        "args": {"customer_id": "cust-poll", "amount": 7},
        "requester": CAROL,
    }
    status, asked = await call(http, first, "POST", "/api/approvals", request)
    assert status == 202
    path = f"/api/approvals/{asked['approval_id']}?wait=60"
    poll = asyncio.ensure_future(call(http, first, "GET", path))
    while await waiting_reads(http, first) < 1:
        await asyncio.sleep(0.05)
    first.stop()  # SIGTERM: the waiting read is answered, not cut
    status, seen = await poll
    assert (status, seen["status"], seen["approved"]) == (200, "pending", False)

    second = bots.start()
    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, second.events_url)
        card = await E2E(slack, second, db, http).card(card_id(db, asked["approval_id"]))
        poll = asyncio.ensure_future(call(http, second, "GET", path))
        while await waiting_reads(http, second) < 1:
            await asyncio.sleep(0.05)
        assert (await slack.click(ALICE, CHANNEL, card["ts"], APPROVE))["status"] == 200
        status, seen = await poll
    assert (status, seen["status"]) == (200, "approved")


async def test_two_clients_on_two_replicas_with_one_idempotency_key_get_one_approval(
    bots: Bots, db: BotDatabase
) -> None:
    replicas = [bots.start(), bots.start()]
    request = {
        "action": "send_refund",
        "args": {"customer_id": "cust-twice", "amount": 3},
        "requester": CAROL,
    }
    async with aiohttp.ClientSession() as one, aiohttp.ClientSession() as two:
        answers = await asyncio.gather(
            *(
                call(session, bot, "POST", "/api/approvals", request, key="same-key")
                for session, bot in ((one, replicas[0]), (two, replicas[1]))
                for _ in range(3)
            )
        )
    assert {status for status, _ in answers} <= {200, 202}
    assert [status for status, _ in answers].count(202) == 1
    assert len({body["approval_id"] for _, body in answers}) == 1
    assert len(db.rows(sa.select(t.approvals))) == 1
