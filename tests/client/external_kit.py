"""What the external-approval tests share (tests/client, tests/mcp): a policy with services,
their tokens, a bot that knows them, and a person's clicks on the cards those requests post.

The bot is `signoff run` as a real process against the fake Slack (`tests.kit.e2e`); each
test module starts one and tells its requests apart by the customer they name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.slack.payloads import APPROVE, REJECT
from tests.kit.e2e import (
    ALICE,
    CHANNEL,
    E2E,
    JSON,
    BotProcess,
    FakeSlackProcess,
    action_ids,
    messages_of,
    sqlite_url,
    text_of,
    write_policy,
)

__all__ = [
    "BILLING_TOKEN",
    "LOCAL_TOKEN",
    "OPS_TOKEN",
    "POLICY",
    "TOKENS",
    "approvals_naming",
    "approve",
    "bot",
    "card_naming",
    "reject",
    "start_bot",
]

POLICY = """
[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "1h"

[actions.send_refund.args]
customer_id = { type = "string", required = true }
amount = { type = "number", required = true, exclusive_minimum = 0 }
reason = { type = "string", max_length = 200 }

[actions.delete_row]
title = "Delete a database row"
tier = "critical"
approvers = ["@approvers"]
expire_after = "1h"

[services.billing]
token_env = "SIGNOFF_SERVICE_BILLING_TOKEN"
actions = ["send_refund"]

[services.ops]
token_env = "SIGNOFF_SERVICE_OPS_TOKEN"
actions = ["delete_row"]

[services.local]
token_env = "SIGNOFF_SERVICE_LOCAL_TOKEN"
actions = ["send_refund"]
"""
"""Approvers are the fake's user group @approvers (alice, bob). `billing` may ask for refunds,
`ops` for deletions, `local` (what `signoff mcp` asks as by default) for refunds."""

BILLING_TOKEN = "billing-token-for-tests"
OPS_TOKEN = "ops-token-for-tests"
LOCAL_TOKEN = "local-token-for-tests"
TOKENS = {
    "SIGNOFF_SERVICE_BILLING_TOKEN": BILLING_TOKEN,
    "SIGNOFF_SERVICE_OPS_TOKEN": OPS_TOKEN,
    "SIGNOFF_SERVICE_LOCAL_TOKEN": LOCAL_TOKEN,
}


def start_bot(directory: Path, fake_slack: FakeSlackProcess) -> BotProcess:
    """`signoff run` on a fresh SQLite file with `POLICY` and the services' tokens."""
    return BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, POLICY),
        **TOKENS,
    )  # fmt: skip


def _card_naming(state: JSON, needle: str) -> JSON | None:
    for m in messages_of(state):
        if m.get("thread_ts") in (None, m["ts"]) and action_ids(m) and needle in text_of(m):
            return m
    return None


async def card_naming(e2e: E2E, needle: str) -> JSON:
    """The card with buttons whose text has `needle` (a customer id unique to the test), once
    it is posted: how a test finds a request whose approval id the asker has not yet got."""
    state = await e2e.wait(lambda s: _card_naming(s, needle), f"a card naming {needle!r}")
    card = _card_naming(state, needle)
    assert card is not None
    return card


def approvals_naming(e2e: E2E, needle: str) -> list[JSON]:
    """The approvals (rows) whose arguments mention `needle`."""
    return [row for row in e2e.db.rows(sa.select(t.approvals)) if needle in str(row["payload"])]


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    """The module's bot (a conftest imports this fixture)."""
    process = start_bot(tmp_path_factory.mktemp("external"), fake_slack)
    yield process
    process.stop()


async def approve(e2e: E2E, needle: str, user: str = ALICE) -> dict[str, Any]:
    """`user` clicks Approve on the card naming `needle` (an approval id or a customer id),
    once it is posted; the click's answer."""
    card = await card_naming(e2e, needle)
    answer = await e2e.slack.click(user, CHANNEL, card["ts"], APPROVE)
    assert answer["status"] == 200, answer
    return answer


async def reject(e2e: E2E, needle: str, reason: str, user: str = ALICE) -> None:
    """`user` clicks Reject on the card naming `needle` and gives `reason` in the modal."""
    card = await card_naming(e2e, needle)
    assert (await e2e.slack.click(user, CHANNEL, card["ts"], REJECT))["status"] == 200
    await e2e.wait(lambda s: s["views"].get(user), "the reject modal")
    done = await e2e.slack.submit(user, {"reason": reason})
    assert done["response"]["status"] == 200, done
