"""The bot end to end on PostgreSQL: the approve flow, and `/healthz` while the database is away.

The bot reaches the server through a local TCP relay (`TcpProxy`) so a test can take the
database away from it, and give it back, without touching the server. Its tables live in a
schema of its own (`search_path`). Skipped when the server cannot be reached, except under
`CI=true`, where that fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.slack import messages
from bot.slack.payloads import APPROVE, EDIT, PAYLOAD, REJECT
from tests.kit.e2e import (
    BOB,
    CHANNEL,
    E2E,
    BotProcess,
    FakeSlackProcess,
    TcpProxy,
    action_ids,
    pg_address,
    pg_schema,
    pg_server,
    pg_url,
    text_of,
    write_policy,
)

pytestmark = pytest.mark.postgres

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "1h"
"""


@pytest.fixture(scope="module")
def proxy() -> Iterator[TcpProxy]:
    pg_server()
    relay = TcpProxy(*pg_address())
    yield relay
    relay.close()


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, proxy: TcpProxy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    directory = tmp_path_factory.mktemp("e2e-pg")
    schema, drop = pg_schema("bot")
    process = BotProcess(
        directory, pg_url(schema, port=proxy.port), fake_slack.url, write_policy(directory, POLICY)
    )
    process.read_url = pg_url(schema)  # the test reads past the relay, even while it is cut
    yield process
    process.stop()
    drop()


async def test_a_click_approves_and_the_refund_runs_once_on_postgresql(e2e: E2E) -> None:
    run = await e2e.refund("cust-pg", 17.25)
    assert action_ids(run.card) == [APPROVE, REJECT, EDIT, PAYLOAD]
    assert (await e2e.slack.click(BOB, CHANNEL, run.card["ts"], APPROVE))["status"] == 200

    card = await e2e.decided_card(run.approval_id)
    assert "*Approved* by <@U0BOB>" in text_of(card)
    outcome = messages.run_completed("refund", run.thread_id, "refunded 17.25 to cust-pg")
    replies = await e2e.replies(run.card, lambda r: outcome in r, "the refund's outcome")
    assert replies == [messages.run_approved("Refund 17.25 to cust-pg", [BOB]), outcome]
    assert [(e["kind"], e["data"]["amount"]) for e in e2e.db.effects(run.thread_id)] == [
        ("refund", 17.25)
    ]


async def test_healthz_is_503_while_the_database_is_unreachable_and_200_when_it_is_back(
    e2e: E2E, proxy: TcpProxy
) -> None:
    assert (await e2e.api("GET", "/healthz", token=None))[0] == 200
    proxy.cut()
    try:
        status, body = await e2e.api("GET", "/healthz", token=None)
        assert status == 503, body
        assert body["ok"] is False and "127.0.0.1" in body["error"]
        status, body = await e2e.api("GET", "/metrics", token=None)
        assert status == 503, body
    finally:
        proxy.restore()
    status, body = await e2e.api("GET", "/healthz", token=None)
    assert (status, body["ok"]) == (200, True)
