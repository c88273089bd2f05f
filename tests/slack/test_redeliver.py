"""Given up, then redelivered: a message Slack refused for good (the channel archived) is listed
by `signoff pending` and `signoff show` (what, where, which error, when), and `signoff redeliver`
sends it once the cause is fixed: audited as the CLI's, posted once, never twice."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select, update

from bot.approvals import tables as t
from bot.approvals.jobs import UNDELIVERABLE
from bot.sandbox.processes import CHANNEL, sqlite_url
from tests.kit.scenario import Scenario, running_scenario

CAROL = "U0CAROL"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def signoff(bot: Scenario, directory: Path, *args: str) -> tuple[int, str]:
    """`signoff ARGS` as a process on the scenario's database, while the scenario's worker (the
    bot) does what falls due meanwhile."""
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": sqlite_url(directory),
        "SIGNOFF_POLICY": str(directory / "policy.toml"),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = asyncio.ensure_future(proc.communicate())
    while not output.done():
        await bot.settle()
        await asyncio.sleep(0.05)
    out, _ = await output
    return int(proc.returncode or 0), out.decode()


def cards(bot: Scenario, approval_id: str) -> int:
    channel = bot.slack.workspace.channels[CHANNEL]
    return sum(1 for m in channel.messages.values() if f"`{approval_id}`" in json.dumps(m.blocks))


async def test_a_card_given_up_in_an_archived_channel_is_listed_and_redelivered_once(
    bot: Scenario, tmp_path: Path
) -> None:
    bot.slack.workspace.channels[CHANNEL].is_archived = True
    report = await bot.signoff.start(
        "refund",
        {"customer_id": "C-archived", "order_id": "o-1", "amount": 3, "reason": "damaged"},
        requester=CAROL,
        channel=CHANNEL,
    )
    await bot.settle()
    (approval_id,) = report.approvals
    assert cards(bot, approval_id) == 0

    status, listed = await signoff(bot, tmp_path, "pending")
    assert status == 0, listed
    assert "not delivered to Slack (1:" in listed and "signoff redeliver THREAD" in listed
    (row,) = [line for line in listed.splitlines() if line.startswith(tuple("0123456789"))]
    assert row.split()[1:6] == [
        report.thread_id, "approval_requested", CHANNEL, "is_archived", "chat.postMessage"
    ]  # fmt: skip
    status, shown = await signoff(bot, tmp_path, "show", report.thread_id)
    assert status == 0, shown
    assert (
        f"of approval {approval_id}: Slack answered is_archived to chat.postMessage in {CHANNEL}"
        in shown
    )
    assert f"signoff redeliver {report.thread_id}" in shown
    _, as_json = await signoff(bot, tmp_path, "show", report.thread_id, "--json")
    (entry,) = json.loads(as_json)["undelivered"]
    assert (entry["error"], entry["channel"], entry["approval_id"]) == (
        "is_archived", CHANNEL, approval_id
    )  # fmt: skip
    # `pending --json` lists it as its table does, beside the approval that waits
    status, pending_json = await signoff(bot, tmp_path, "pending", "--json")
    assert status == 0, pending_json
    listed_json = json.loads(pending_json)
    assert [a["id"] for a in listed_json["approvals"]] == [approval_id]
    (given_up,) = listed_json["undelivered"]
    assert given_up == entry
    assert str(given_up["job_id"]) == row.split()[0]
    assert (given_up["thread_id"], given_up["event"], given_up["method"]) == (
        report.thread_id, "approval_requested", "chat.postMessage"
    )  # fmt: skip

    # still archived: Slack refuses again, and the command says so (a job id works as well)
    status, again = await signoff(bot, tmp_path, "redeliver", row.split()[0])
    assert status == 1 and "Slack refused it again" in again and "is_archived" in again, again
    assert cards(bot, approval_id) == 0

    bot.slack.workspace.channels[CHANNEL].is_archived = False
    status, redelivered = await signoff(bot, tmp_path, "redeliver", report.thread_id)
    assert status == 0 and redelivered.rstrip().endswith("delivered"), redelivered
    assert cards(bot, approval_id) == 1
    assert (await bot.signoff.get(approval_id)).message_ts is not None
    _, listed = await signoff(bot, tmp_path, "pending")
    assert "not delivered" not in listed
    _, pending_json = await signoff(bot, tmp_path, "pending", "--json")
    assert json.loads(pending_json)["undelivered"] == []

    async with bot.signoff.db.read() as conn:
        audited = [
            json.loads(r.data)
            for table in (t.audit_inbox, t.audit_events)
            for r in await conn.execute(select(table.c.data).where(table.c.kind == "redelivered"))
        ]
    assert [(a["via"], a["events"], a["errors"]) for a in audited] == [
        ("cli", ["approval_requested"], ["is_archived"])
    ] * 2  # the refused try and the delivered one

    # nothing is left to redeliver: said, and nothing is posted
    status, nothing = await signoff(bot, tmp_path, "redeliver", report.thread_id)
    assert status == 1 and "nothing of" in nothing, nothing

    # a message recorded as given up that did land (an operator's second try raced the first)
    # is found in the channel, and not posted a second time
    async with bot.signoff.db.transaction() as conn:
        await conn.execute(
            update(t.jobs)
            .where(t.jobs.c.thread_id == report.thread_id, t.jobs.c.kind == "event")
            .values(last_error=UNDELIVERABLE + json.dumps({"error": "is_archived"}))
        )
    status, landed = await signoff(bot, tmp_path, "redeliver", report.thread_id)
    assert status == 0, landed
    assert cards(bot, approval_id) == 1


async def test_a_card_for_a_public_channel_the_bot_is_not_in_waits_for_the_invite(
    bot: Scenario, tmp_path: Path
) -> None:
    """Without `chat:write.public` the bot posts only where it can also read back what it
    posted: the card is listed as not delivered (`not_in_channel`) and, once the bot is
    invited, `signoff redeliver` posts it once."""
    bot.slack.workspace.add_channel("C0ELSEWHERE", "elsewhere", member=False)
    report = await bot.signoff.start(
        "refund",
        {"customer_id": "C-uninvited", "order_id": "o-1", "amount": 3, "reason": "damaged"},
        requester=CAROL,
        channel="C0ELSEWHERE",
    )
    await bot.settle()
    elsewhere = bot.slack.workspace.channels["C0ELSEWHERE"]
    assert not elsewhere.messages, "the bot posted in a channel it was not invited to"
    _, listed = await signoff(bot, tmp_path, "pending")
    assert "not_in_channel" in listed and "C0ELSEWHERE" in listed, listed

    elsewhere.is_member = True  # /invite @signoff
    status, redelivered = await signoff(bot, tmp_path, "redeliver", report.thread_id)
    assert status == 0, redelivered
    (approval_id,) = report.approvals
    posted = [m for m in elsewhere.messages.values() if f"`{approval_id}`" in json.dumps(m.blocks)]
    assert len(posted) == 1
