"""`bot.client` against a real `signoff run` (the fake Slack's clicks decide): the decision
comes back as the `Decision` a graph gets, one idempotency key is one approval however many
callers and retries use it, and a refusal records nothing."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bot import client
from bot.approvals.models import Decision
from bot.client import (
    RequestRefused,
    SignoffUnavailable,
    StillPending,
    arequest_approval,
    request_approval,
)
from tests.client.external_kit import (
    BILLING_TOKEN,
    approvals_naming,
    approve,
    card_naming,
    reject,
)
from tests.kit.e2e import ALICE, E2E, WAIT, BotProcess


def refund(customer: str, amount: float = 10.0) -> dict[str, object]:
    return {"customer_id": customer, "amount": amount}


async def test_the_sync_client_gets_the_decision_a_graph_would(e2e: E2E, bot: BotProcess) -> None:
    asked = asyncio.ensure_future(
        asyncio.to_thread(
            request_approval, "send_refund", refund("client-sync"),
            url=bot.url, token=BILLING_TOKEN, title="Refund 10 to client-sync", wait=WAIT * 2,
        )
    )  # fmt: skip
    await approve(e2e, "client-sync")
    decision = await asked
    assert isinstance(decision, Decision)
    assert (decision.approved, decision.status, decision.action) == (
        True,
        "approved",
        "send_refund",
    )
    assert decision.by == (ALICE,)
    assert decision.args == refund("client-sync")
    assert e2e.db.approval(decision.approval_id)["status"] == "approved"


async def test_a_rejection_is_a_decision_not_an_exception(e2e: E2E, bot: BotProcess) -> None:
    asked = asyncio.ensure_future(
        arequest_approval(
            "send_refund", refund("client-rej"), url=bot.url, token=BILLING_TOKEN, wait=WAIT * 2
        )
    )
    await reject(e2e, "client-rej", "duplicate of an earlier refund")
    decision = await asked
    assert (decision.approved, decision.status) == (False, "rejected")
    assert decision.note == "duplicate of an earlier refund"


async def test_one_idempotency_key_from_two_clients_is_one_approval(
    e2e: E2E, bot: BotProcess
) -> None:
    key = "refund:order-4711"
    args = refund("client-twice", 33.0)
    sync = asyncio.ensure_future(
        asyncio.to_thread(
            request_approval, "send_refund", args,
            url=bot.url, token=BILLING_TOKEN, wait=WAIT * 2, idempotency_key=key,
        )
    )  # fmt: skip
    async_ = asyncio.ensure_future(
        arequest_approval(
            "send_refund", args, url=bot.url, token=BILLING_TOKEN, wait=WAIT * 2,
            idempotency_key=key,
        )
    )  # fmt: skip
    await card_naming(e2e, "client-twice")
    await approve(e2e, "client-twice")
    first, second = await asyncio.gather(sync, async_)
    assert first == second and first.approved
    assert [a["id"] for a in approvals_naming(e2e, "client-twice")] == [first.approval_id]


async def test_still_pending_says_which_key_waits_on_the_same_approval(
    e2e: E2E, bot: BotProcess
) -> None:
    with pytest.raises(StillPending) as raised:
        await arequest_approval(
            "send_refund", refund("client-later"), url=bot.url, token=BILLING_TOKEN, wait=0
        )
    pending = raised.value
    assert pending.idempotency_key in str(pending) and pending.approval_id in str(pending)
    await approve(e2e, "client-later")
    decision = await arequest_approval(
        "send_refund", refund("client-later"), url=bot.url, token=BILLING_TOKEN, wait=WAIT,
        idempotency_key=pending.idempotency_key,
    )  # fmt: skip
    assert decision.approved
    assert [a["id"] for a in approvals_naming(e2e, "client-later")] == [decision.approval_id]


@pytest.mark.parametrize(
    ("token", "action", "args", "status"),
    [
        ("wrong-token", "send_refund", refund("client-401"), 401),
        (BILLING_TOKEN, "delete_row", {"table": "users"}, 403),
        (BILLING_TOKEN, "send_money", {"amount": 1}, 403),
        (BILLING_TOKEN, "send_refund", refund("client-422", -1), 422),
    ],
)
async def test_a_refused_request_raises_and_records_nothing(
    e2e: E2E, bot: BotProcess, token: str, action: str, args: dict[str, object], status: int
) -> None:
    before = (e2e.db.approval_counts(), e2e.db.runs_count())
    with pytest.raises(RequestRefused) as raised:
        await asyncio.to_thread(request_approval, action, args, url=bot.url, token=token, wait=1)
    assert raised.value.status == status
    if status == 422:
        assert [p["field"] for p in raised.value.problems] == ["args.amount"]
    with pytest.raises(RequestRefused):
        await arequest_approval(action, args, url=bot.url, token=token, wait=1)
    assert (e2e.db.approval_counts(), e2e.db.runs_count()) == before


async def test_no_signoff_there_is_unavailable_after_the_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client, "BACKOFF", 0.01)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(SignoffUnavailable, match="same idempotency_key is safe"):
        await asyncio.to_thread(request_approval, "send_refund", {}, url=url, token="t")
    with pytest.raises(SignoffUnavailable):
        await arequest_approval("send_refund", {}, url=url, token="t")


def test_mistakes_in_the_call_are_said_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="http"):
        request_approval("send_refund", {}, url="127.0.0.1:3000", token="t")
    with pytest.raises(ValueError, match="token is empty"):
        request_approval("send_refund", {}, url="http://127.0.0.1:3000", token="")
