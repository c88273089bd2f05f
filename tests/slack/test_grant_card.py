"""Grants from the card, through the front door (signed payloads into the real Bolt app, the
strict stand-in): "Allow more like this" opens a modal of what the policy allows; the request
is approved and the grant made; the next matching request is approved under it, its card says
whose grant and what is left; one outside it gets a card with buttons; Home lists the grant
with Revoke, which only its grantor or an approver may press (anyone else is refused, and
audited); a revoked grant approves nothing."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.interactions import find_element
from bot.sandbox.processes import CHANNEL
from bot.sandbox.signing import view_block_actions
from bot.slack.payloads import (
    APPROVE,
    GRANT,
    GRANT_FOR_BLOCK,
    GRANT_USES_BLOCK,
    REVOKE_GRANT,
)
from tests.kit.e2e import text_of
from tests.kit.scenario import POLICY, Scenario, running_scenario

ALICE, DAVE = "U0ALICE", "U0DAVE"

GRANTS = (
    POLICY
    + 'grants = { most = 5, longest = "4h", key = ["customer_id"], vary = ["order_id"] }\n'
    + """
[workflows.delete_row]
starters = ["U0CAROL"]

[actions.delete_row]
tier = "critical"
approvers = ["@approvers"]
"""
)


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, GRANTS) as scenario:
        yield scenario


async def ask(
    bot: Scenario, customer: str, amount: float, order: str, requester: str = "U0CAROL"
) -> str:
    """Carol (or `requester`) asks for a refund; its approval's id once the bot has done its
    jobs."""
    report = await bot.signoff.start(
        "refund",
        {"customer_id": customer, "order_id": order, "amount": amount, "reason": "damaged"},
        requester=requester,
        channel=CHANNEL,
    )
    await bot.settle()
    return report.approvals[0]


async def grant_from_card(bot: Scenario, uses: str, seconds: str) -> tuple[str, dict[str, Any]]:
    """Alice approves a refund of 40.00 to cust_a with a grant of `uses` for `seconds`; the
    approval's id and the modal she saw."""
    approval, card = await bot.refund("cust_a", 40.0)
    answer = await bot.slack.click("alice", CHANNEL, card.ts, GRANT)
    assert answer.status == 200
    await bot.slack.wait_for(lambda s: s.workspace.views.get(ALICE))
    (modal,) = bot.slack.workspace.views[ALICE]
    shown = modal.to_api(bot.slack.workspace.team)
    done = await bot.slack.submit("alice", {GRANT_USES_BLOCK: uses, GRANT_FOR_BLOCK: seconds})
    assert done.errors == {}
    await bot.settle()
    return approval.id, shown


async def audit(bot: Scenario, kind: str) -> list[dict[str, Any]]:
    await bot.signoff.link_audit()
    async with bot.signoff.db.read() as conn:
        rows = await conn.execute(
            sa.select(t.audit_events)
            .where(t.audit_events.c.kind == kind)
            .order_by(t.audit_events.c.seq)
        )
        return [{**r, "data": json.loads(r["data"])} for r in rows.mappings()]


async def test_a_grant_from_the_card_approves_the_next_matching_request_and_says_whose(
    bot: Scenario,
) -> None:
    first, modal = await grant_from_card(bot, "3", "3600")
    modal_text = text_of(modal["blocks"])
    assert "let up to 5 more like it be approved without asking anyone" in modal_text
    (uses,) = [b for b in modal["blocks"] if b.get("block_id") == GRANT_USES_BLOCK]
    assert [o["value"] for o in uses["element"]["options"]] == ["1", "2", "3", "4", "5"]
    (windows,) = [b for b in modal["blocks"] if b.get("block_id") == GRANT_FOR_BLOCK]
    assert windows["element"]["options"][-1]["value"] == "14400"  # 4h, the policy's longest
    assert (await bot.signoff.get(first)).status == "approved"

    later = await ask(bot, "cust_a", 25.0, "o-2")
    a = await bot.signoff.get(later)
    assert a.status == "approved"
    card = text_of(bot.card(a).blocks)
    assert f"Approved under <@{ALICE}>'s grant (2 of 3 left, until" in card
    assert "*Note:*" not in card  # said once, by the grant's line
    with pytest.raises(LookupError):
        find_element(bot.card(a).blocks, APPROVE)  # nobody is asked: no buttons

    # outside it: a bigger amount, another customer, another requester; each asked as usual
    for customer, amount, order, requester in (
        ("cust_a", 40.5, "o-3", "U0CAROL"),
        ("cust_b", 10.0, "o-4", "U0CAROL"),
        ("cust_a", 10.0, "o-5", DAVE),
    ):
        outside = await bot.signoff.get(await ask(bot, customer, amount, order, requester))
        assert outside.status == "pending"
        find_element(bot.card(outside).blocks, APPROVE)
    (made,) = await audit(bot, "granted")
    (used,) = await audit(bot, "grant_used")
    assert (made["actor"], used["approval_id"]) == (ALICE, later)

    # its last two uses, then none
    statuses = [
        (await bot.signoff.get(await ask(bot, "cust_a", 5.5, f"o-{n}"))).status for n in (6, 7, 8)
    ]
    assert statuses == ["approved", "approved", "pending"]
    last = await bot.signoff.get((await audit(bot, "grant_used"))[-1]["approval_id"])
    assert f"<@{ALICE}>'s grant (0 of 3 left" in text_of(bot.card(last).blocks)


async def test_a_grant_approves_nothing_once_it_has_expired(bot: Scenario) -> None:
    await grant_from_card(bot, "5", "900")  # 15 minutes
    assert (await bot.signoff.get(await ask(bot, "cust_a", 10.0, "o-2"))).status == "approved"
    an_hour_on = time.time() + 3600
    bot.signoff.pauses.clock = lambda: an_hour_on  # the clock requests are judged by
    assert (await bot.signoff.get(await ask(bot, "cust_a", 10.0, "o-3"))).status == "pending"


async def test_home_lists_the_grant_with_revoke_and_a_revoked_grant_approves_nothing(
    bot: Scenario,
) -> None:
    await grant_from_card(bot, "5", "3600")
    await bot.slack.open_home("alice")
    await bot.slack.wait_for(lambda s: ALICE in s.workspace.home)
    home = bot.slack.workspace.home[ALICE].to_api(bot.slack.workspace.team)
    assert "Live grants you may revoke" in text_of(home["blocks"])
    block_id, button = find_element(home["blocks"], REVOKE_GRANT)
    grant_id = button["value"]

    # Dave is no approver of send_refund and did not grant it: his forged click is refused
    await bot.slack.open_home("dave")
    await bot.slack.wait_for(lambda s: DAVE in s.workspace.home)
    dave_home = bot.slack.workspace.home[DAVE].to_api(bot.slack.workspace.team)
    assert "Live grants" not in text_of(dave_home["blocks"])
    forged = view_block_actions(
        action_id=REVOKE_GRANT, value=grant_id, user_id=DAVE, block_id=block_id,
        view=dave_home,
        trigger_id=bot.slack.triggers.issue(DAVE),
    )  # fmt: skip
    assert (await bot.send(forged)).status == 200
    await bot.slack.wait_for(
        lambda s: "only" in text_of(s.workspace.home[DAVE].to_api(s.workspace.team))
    )
    (refused,) = await audit(bot, "grant_refused")
    assert (refused["actor"], refused["data"]["grant"]) == (DAVE, grant_id)
    assert (await bot.signoff.get(await ask(bot, "cust_a", 10.0, "o-2"))).status == "approved"

    answer = await bot.slack.click_home("alice", REVOKE_GRANT, value=grant_id)
    assert answer.status == 200
    await bot.slack.wait_for(
        lambda s: "is revoked" in text_of(s.workspace.home[ALICE].to_api(s.workspace.team))
    )
    home = bot.slack.workspace.home[ALICE].to_api(bot.slack.workspace.team)
    with pytest.raises(LookupError):
        find_element(home["blocks"], REVOKE_GRANT)
    (revoked,) = await audit(bot, "grant_revoked")
    assert (revoked["actor"], revoked["data"]["grant"]) == (ALICE, grant_id)
    assert (await bot.signoff.get(await ask(bot, "cust_a", 10.0, "o-3"))).status == "pending"


async def test_a_critical_card_offers_no_grant_and_the_refund_card_does(bot: Scenario) -> None:
    _, card = await bot.refund("cust_a", 40.0)
    find_element(card.blocks, GRANT)
    report = await bot.signoff.start(
        "delete_row", {"table": "users", "row_id": "7", "reason": "gdpr"}, requester="U0CAROL",
        channel=CHANNEL,
    )  # fmt: skip
    await bot.settle()
    critical = await bot.signoff.get(report.approvals[0])
    assert (critical.status, critical.risk_tier) == ("pending", "critical")
    find_element(bot.card(critical).blocks, APPROVE)
    with pytest.raises(LookupError):
        find_element(bot.card(critical).blocks, GRANT)
