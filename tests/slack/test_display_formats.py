"""One format for an amount wherever a person reads it (`format = "money"` in the policy's
declared arguments): the card's fields and title, the Full payload modal, the Edit modal's
input, the edit line of the decided card, the thread's replies, the channel's notice,
`/agent status`, App Home and `signoff show` all say 42.50 and 40.00, never 42.5 or 40.0.

A real `signoff run` in HTTP mode and the fake Slack, every click signed; `signoff show` a real
subprocess on the bot's database.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from bot.slack import messages
from bot.slack.payloads import EDIT, PAYLOAD, PAYLOAD_CALLBACK
from tests.kit.e2e import (
    BOB,
    CHANNEL,
    DAVE,
    E2E,
    BotProcess,
    FakeSlackProcess,
    in_channel,
    sqlite_url,
    text_of,
    write_policy,
)

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "1h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
order_id = { type = "string" }
amount = { type = "number", required = true, exclusive_minimum = 0, format = "money" }
reason = { type = "string" }
"""

AMOUNT = re.compile(r"(?<![\w.])(?:42|40)\.[0-9]+(?![\w.])")
"""The two amounts of the test, however many decimals they are written with."""


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    directory = tmp_path_factory.mktemp("formats")
    process = BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, POLICY)
    )
    yield process
    process.stop()


def amounts(text: str) -> set[str]:
    return set(AMOUNT.findall(text))


def show(bot: BotProcess, thread_id: str) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "bot.cli", "show", thread_id],
        env=bot.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


async def test_an_amount_reads_the_same_on_every_surface(e2e: E2E) -> None:
    run = await e2e.refund("cust-formats", 42.5)
    seen: dict[str, str] = {"card": text_of(run.card)}
    assert "*amount*\n42.50" in seen["card"]
    assert run.card["blocks"][0]["text"]["text"] == "🟠 Refund 42.50 to cust-formats"

    await e2e.slack.click(DAVE, CHANNEL, run.card["ts"], PAYLOAD)
    state = await e2e.wait(lambda s: s["views"].get(DAVE), "the payload modal")
    (payload,) = [v for v in state["views"][DAVE] if v["callback_id"] == PAYLOAD_CALLBACK][-1:]
    seen["payload modal"] = text_of(payload)
    assert '"amount": 42.50,' in seen["payload modal"]

    before = len(await e2e.ephemerals(BOB))
    await e2e.slack.command(BOB, CHANNEL, "status")
    [status] = await e2e.new_ephemerals(BOB, before)
    seen["/agent status"] = text_of(status["blocks"])
    thread = await e2e.slack.command(BOB, CHANNEL, f"status {run.thread_id}")
    seen["/agent status THREAD"] = text_of(thread["json"]["blocks"])
    assert (await e2e.slack.open_home(BOB))["status"] == 200
    state = await e2e.wait(
        lambda s: "cust-formats" in text_of(s["home"].get(BOB, {})), "Bob's Home"
    )
    seen["home"] = text_of(state["home"][BOB])
    seen["signoff show, paused"] = await asyncio.to_thread(show, e2e.bot, run.thread_id)
    assert "  amount = 42.50" in seen["signoff show, paused"]

    await e2e.slack.click(BOB, CHANNEL, run.card["ts"], EDIT)
    state = await e2e.wait(
        lambda s: any(v["callback_id"] != PAYLOAD_CALLBACK for v in s["views"].get(BOB, [])),
        "the edit modal",
    )
    modal = state["views"][BOB][-1]
    initial = {
        b["block_id"]: b["element"].get("initial_value")
        for b in modal["blocks"]
        if b["type"] == "input"
    }
    assert initial["edit:amount"] == "42.50"
    done = await e2e.slack.submit(BOB, {"edit:amount": "40", "edit:reason": "one item kept"})
    assert done["errors"] == {}

    card = await e2e.decided_card(run.approval_id)
    seen["decided card"] = text_of(card)
    assert messages.edit_change("amount", "42.50", "40.00") in seen["decided card"]
    outcome = messages.run_completed("refund", run.thread_id, "refunded 40.00 to cust-formats")
    replies = await e2e.replies(run.card, lambda r: outcome in r, "the refund's outcome")
    seen["thread"] = "\n".join(replies)
    assert messages.run_approved("Refund 40.00 to cust-formats", [BOB]) in replies
    state = await e2e.wait(
        lambda s: outcome in [m["text"] for m in in_channel(s)],
        "the channel's notice",
    )
    seen["channel"] = "\n".join(m["text"] for m in in_channel(state))
    seen["signoff show, done"] = await asyncio.to_thread(show, e2e.bot, run.thread_id)
    assert "    amount: 42.50 → 40.00 (edited by U0BOB)" in seen["signoff show, done"]

    everywhere = {where: amounts(text) for where, text in seen.items()}
    assert {where: found for where, found in everywhere.items() if not found} == {}
    assert set().union(*everywhere.values()) == {"42.50", "40.00"}, everywhere
