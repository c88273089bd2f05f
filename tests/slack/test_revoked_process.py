"""A revoked bot token, with `signoff run` as a real process: once Slack refuses the token the bot
calls Slack no more (every call would be refused), says so once in its log and on `/healthz`,
and keeps what it had to post; restarted with a new token, it posts each of those once."""

from __future__ import annotations

import asyncio
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp

from bot.sandbox.client import SandboxClient
from bot.slack.notify import TOKEN_HELD
from tests.kit.e2e import (
    E2E,
    WAIT,
    BotDatabase,
    BotProcess,
    FakeSlackProcess,
    messages_of,
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
approvers = ["U0ALICE", "U0BOB"]
expire_after = "1h"
"""


def health(bot: BotProcess) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{bot.url}/healthz", timeout=5) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def until(predicate: object, what: str, bot: BotProcess) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not happen in {WAIT:g}s; the bot said:\n{bot.output()}"
            )
        await asyncio.sleep(0.05)


def all_held(db: BotDatabase) -> bool:
    """Whether the bot has jobs left and every one waits for a new token (held for days)."""
    undone = db.jobs(undone=True)
    return bool(undone) and all(
        (j["last_error"] or "").startswith(TOKEN_HELD) and j["available_at"] > time.time() + 3600
        for j in undone
    )


def cards_of(state: dict[str, object], approval_id: str) -> int:
    return sum(
        1
        for m in messages_of(state)
        if m.get("thread_ts") in (None, m["ts"])
        and f"`{approval_id}`" in text_of(m.get("blocks") or [])
    )


async def test_a_revoked_token_stops_every_call_and_a_restart_with_a_new_one_posts_each_card_once(
    fake_slack: FakeSlackProcess, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    policy, db_url = write_policy(tmp_path, POLICY), sqlite_url(tmp_path)
    db = BotDatabase(db_url)
    token = f"xoxb-revoked-{secrets.token_hex(4)}"  # this test's own: the fake is shared
    async with SandboxClient(fake_slack.url) as installs:  # the workspace issues both
        await installs.issue_token(token)
        await installs.issue_token(token + "-new")
    first = BotProcess(tmp_path, db_url, fake_slack.url, policy, SLACK_BOT_TOKEN=token)
    second = None
    try:
        async with SandboxClient(fake_slack.url) as slack:
            e2e = E2E(slack, first, db, http)
            await e2e.refund("cust-before-revoke")
            await e2e.idle()

            await slack.revoke_token(token)
            held = await e2e.start(
                "refund", {"customer_id": "cust-held-1", "amount": 2}, card=False
            )
            await until(lambda: health(first)[0] == 503, "/healthz answering 503", first)
            _, body = health(first)
            assert "token_revoked" in body and "calls Slack no more until it restarts" in body

            calls_before = len(await slack.calls())
            later = await e2e.start(
                "refund", {"customer_id": "cust-held-2", "amount": 3}, card=False
            )
            await until(
                lambda: any(
                    (j["last_error"] or "").startswith("Slack refused the bot token")
                    for j in db.jobs(thread_id=later.thread_id, undone=True)
                ),
                "the later card held back",
                first,
            )
            # Every card and update it still has is held for days (until a restart): none
            # is due, so no worker takes one to retry it, and no call can go out for it.
            await until(lambda: all_held(db), "every job held back by the token", first)
            assert await slack.calls(since=calls_before) == [], "no call after the refusal"
            assert first.output().count("calls Slack no more") == 1  # said once
            first.stop()

            second = BotProcess(
                tmp_path, db_url, fake_slack.url, policy, SLACK_BOT_TOKEN=token + "-new"
            )
            e2e = E2E(slack, second, db, http)
            for run in (held, later):
                await e2e.card(run.approval_id)
            await e2e.idle()
            state = await slack.state()
            assert [cards_of(state, r.approval_id) for r in (held, later)] == [1, 1]
            assert health(second)[0] == 200
    finally:
        first.kill()
        if second is not None:
            second.stop()
        db.close()
