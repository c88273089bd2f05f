"""Webhooks from a real `signoff run`, as a service's receiver sees them and `signoff show`
tells them: a receiver that never answers holds up only its own deliveries (cards go out
beside them), and every delivery's tries, next try or give-up are on `signoff show`."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
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
    free_port,
    sqlite_url,
    write_policy,
)

POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }

[services.billing]
token_env = "HOOK_BILLING_TOKEN"
actions = ["send_refund"]
{allow}
"""
ALLOW_LOOPBACK = """callback_urls = ["http://127.0.0.1:*/"]
callback_private = true
"""
TOKEN = "hook-billing-token-0123456789abcdef"


class Silent:
    """A receiver that takes each webhook's connection and request and never answers: how
    many requests arrived, and how many of those the bot gave up waiting on (closed)."""

    def __init__(self) -> None:
        self.arrived = 0
        self.closed = 0
        self.url = ""
        self._writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        if not await reader.read(1):
            return
        self.arrived += 1
        while await reader.read(65536):
            pass
        self.closed += 1


@pytest.fixture
async def silent() -> AsyncIterator[Silent]:
    found = Silent()
    port = free_port()
    server = await asyncio.start_server(found.handle, "127.0.0.1", port)
    found.url = f"http://127.0.0.1:{port}/hooks/signoff"
    yield found
    server.close()
    for writer in found._writers:
        writer.close()


class Answering:
    """A receiver that answers every webhook with `status`."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.tries = 0
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.tries += 1
        return web.Response(status=self.status)


@pytest.fixture
async def failing() -> AsyncIterator[Answering]:
    found = Answering(500)
    app = web.Application()
    app.router.add_post("/hooks/signoff", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    found.url = f"http://127.0.0.1:{port}/hooks/signoff"
    yield found
    await runner.cleanup()


@pytest.fixture
def bot(fake_slack: FakeSlackProcess, tmp_path: Path) -> Iterator[BotProcess]:
    policy = write_policy(tmp_path, POLICY.replace("{allow}", ALLOW_LOOPBACK))
    found = BotProcess(
        tmp_path,
        sqlite_url(tmp_path),
        fake_slack.url,
        policy,
        HOOK_BILLING_TOKEN=TOKEN,
        SIGNOFF_WORKERS="2",
        SIGNOFF_WEBHOOK_TIMEOUT="300",  # no try ends while the test looks
    )
    yield found
    found.stop()


@pytest.fixture
def db(bot: BotProcess) -> Iterator[BotDatabase]:
    found = BotDatabase(bot.db_url)
    yield found
    found.close()


async def ask(http: aiohttp.ClientSession, bot: BotProcess, **extra: Any) -> tuple[int, Any]:
    body = {
        "action": "send_refund",
        "args": {"customer_id": "cust-hook", "amount": 42.5},
        "requester": CAROL,
        **extra,
    }
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with http.post(bot.url + "/api/approvals", json=body, headers=headers) as resp:
        return resp.status, await resp.json()


def card_id(db: BotDatabase, approval_id: str) -> str:
    (row,) = db.rows(sa.select(t.approvals).where(t.approvals.c.thread_id == approval_id))
    return str(row["id"])


async def approved(e2e: E2E, http: aiohttp.ClientSession, callback_url: str) -> str:
    """A request with `callback_url`, approved by a click on its card: its approval id."""
    status, asked = await ask(http, e2e.bot, callback_url=callback_url)
    assert status == 202, asked
    approval_id = str(asked["approval_id"])
    card = await e2e.card(card_id(e2e.db, approval_id))
    assert (await e2e.slack.click(ALICE, CHANNEL, card["ts"], APPROVE))["status"] == 200
    return approval_id


def webhook_jobs(db: BotDatabase) -> list[dict[str, Any]]:
    return db.rows(sa.select(t.jobs).where(t.jobs.c.kind == "webhook").order_by(t.jobs.c.id))


def show(bot: BotProcess, thread_id: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "show", thread_id, *flags],
        env=bot.env,
        cwd=bot.log.parent,
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )


async def until(predicate: Any, what: str, bot: BotProcess) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} did not happen; the bot said:\n{bot.output()}")
        await asyncio.sleep(0.05)


async def test_a_receiver_that_never_answers_holds_up_no_card(
    fake_slack: FakeSlackProcess,
    bot: BotProcess,
    db: BotDatabase,
    http: aiohttp.ClientSession,
    silent: Silent,
) -> None:
    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, bot.events_url)
        e2e = E2E(slack, bot, db, http)
        # As many webhooks to the silent receiver as the bot has workers (SIGNOFF_WORKERS),
        # each of them waiting on it.
        hooked = [await approved(e2e, http, silent.url) for _ in range(2)]
        await until(lambda: silent.arrived == 2, "both webhooks reaching the receiver", bot)

        status, asked = await ask(http, bot)
        assert status == 202, asked
        card = await e2e.card(card_id(db, asked["approval_id"]))
        assert card["channel"] == CHANNEL

        # The card went out while both deliveries were still waiting on the receiver: no try
        # had ended (none failed, none was closed) to free a worker for it.
        jobs = webhook_jobs(db)
        assert [(j["thread_id"], j["done_at"], j["last_error"]) for j in jobs] == [
            (thread, None, None) for thread in hooked
        ]
        assert silent.closed == 0

    shown = show(bot, hooked[0])
    assert shown.returncode == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if "webhook dlv_" in ln]
    assert line.endswith(f"to {silent.url}: being tried now"), line


async def test_signoff_show_tells_a_webhooks_tries_and_next_try(
    fake_slack: FakeSlackProcess,
    bot: BotProcess,
    db: BotDatabase,
    http: aiohttp.ClientSession,
    failing: Answering,
) -> None:
    async with SandboxClient(fake_slack.url) as slack:
        await fake_slack.connect(slack, bot.events_url)
        approval_id = await approved(E2E(slack, bot, db, http), http, failing.url)
        await until(lambda: any(j["last_error"] for j in webhook_jobs(db)), "a failed try", bot)

    shown = show(bot, approval_id, "--json")
    assert shown.returncode == 0, shown.stderr
    (hook,) = json.loads(shown.stdout)["webhooks"]
    assert hook["url"] == failing.url
    assert hook["state"] == "retrying"
    assert hook["tries"] >= 1
    assert hook["most_tries"] == 30
    assert hook["error"] == "the receiver answered HTTP 500"
    assert hook["next_try"] is not None

    (line,) = [ln for ln in show(bot, approval_id).stdout.splitlines() if "webhook dlv_" in ln]
    assert re.search(
        rf"to {re.escape(failing.url)}: try \d+ of 30 failed \(the receiver answered HTTP 500\); "
        r"(next try in \d+s|being tried now)$",
        line,
    ), line


# ---- where webhooks may go -------------------------------------------------------------------

LOOPBACK_NAMED = """callback_urls = ["http://127.0.0.1:*", "http://localhost:*", "https://hooks.billing.example"]
"""
"""Origins on this machine listed, but `callback_private` not said: loopback stays refused."""


@pytest.fixture
def strict_bot(fake_slack: FakeSlackProcess, tmp_path: Path) -> Iterator[BotProcess]:
    policy = write_policy(tmp_path, POLICY.replace("{allow}", LOOPBACK_NAMED))
    found = BotProcess(
        tmp_path, sqlite_url(tmp_path), fake_slack.url, policy, HOOK_BILLING_TOKEN=TOKEN
    )
    yield found
    found.stop()


async def test_a_callback_url_off_the_allow_list_or_at_a_private_address_is_refused(
    strict_bot: BotProcess, http: aiohttp.ClientSession
) -> None:
    bot = strict_bot
    status, body = await ask(http, bot, callback_url="https://attacker.example/hook")
    assert status == 422, body
    ((field, message),) = [(p["field"], p["message"]) for p in body["problems"]]
    assert field == "callback_url"
    assert message == (
        "https://attacker.example:443 is not allowed for service billing (allowed: "
        "http://127.0.0.1:*, http://localhost:*, https://hooks.billing.example); add its origin "
        "to callback_urls in [services.billing] of the policy to allow it"
    )

    # The scheme and the port are part of the origin: http:// or another port is not allowed.
    for url in ("http://hooks.billing.example/h", "https://hooks.billing.example:8443/h"):
        status, body = await ask(http, bot, callback_url=url)
        assert status == 422 and body["problems"][0]["field"] == "callback_url", body

    # Its own /metrics, on loopback: listed, but loopback is not allowed without saying so.
    status, body = await ask(http, bot, callback_url=bot.url + "/metrics")
    assert status == 422, body
    assert body["problems"] == [
        {
            "field": "callback_url",
            "message": "127.0.0.1 is a loopback address; webhooks go to such addresses only "
            "when [services.billing] says callback_private = true",
        }
    ]
    db = BotDatabase(bot.db_url)
    try:
        assert db.runs_count() == 0  # nothing was asked of anyone
    finally:
        db.close()


async def test_a_name_that_resolves_to_loopback_is_refused_at_delivery_and_shown(
    fake_slack: FakeSlackProcess,
    strict_bot: BotProcess,
    http: aiohttp.ClientSession,
    failing: Answering,
) -> None:
    bot = strict_bot
    db = BotDatabase(bot.db_url)
    url = failing.url.replace("127.0.0.1", "localhost")
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, bot.events_url)
            approval_id = await approved(E2E(slack, bot, db, http), http, url)
            await until(lambda: any(j["done_at"] for j in webhook_jobs(db)), "the give-up", bot)
        (job,) = webhook_jobs(db)
    finally:
        db.close()
    assert failing.tries == 0  # the receiver on loopback was never reached
    reason = (
        "refused: localhost resolves to 127.0.0.1, a loopback address; webhooks go to such "
        "addresses only when [services.billing] says callback_private = true"
    )
    assert (job["attempts"], job["last_error"]) == (1, reason)

    (hook,) = json.loads(show(bot, approval_id, "--json").stdout)["webhooks"]
    assert (hook["state"], hook["tries"], hook["error"]) == ("given up", 1, reason)
    (line,) = [ln for ln in show(bot, approval_id).stdout.splitlines() if "webhook dlv_" in ln]
    assert f"to {url}: given up after 1 try ({reason})" in line


async def test_a_redirect_is_not_followed(
    fake_slack: FakeSlackProcess,
    bot: BotProcess,
    db: BotDatabase,
    http: aiohttp.ClientSession,
    failing: Answering,
) -> None:
    moved = web.Application()

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(failing.url)

    moved.router.add_post("/hooks/signoff", redirect)
    runner = web.AppRunner(moved)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with SandboxClient(fake_slack.url) as slack:
            await fake_slack.connect(slack, bot.events_url)
            approval_id = await approved(
                E2E(slack, bot, db, http), http, f"http://127.0.0.1:{port}/hooks/signoff"
            )
            await until(lambda: any(j["last_error"] for j in webhook_jobs(db)), "a try", bot)
        (hook,) = json.loads(show(bot, approval_id, "--json").stdout)["webhooks"]
    finally:
        await runner.cleanup()
    assert failing.tries == 0  # where it was redirected to was never posted
    assert hook["error"] == "the receiver answered HTTP 302"
    assert hook["state"] == "retrying"
