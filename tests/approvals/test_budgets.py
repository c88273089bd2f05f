"""Budgets on auto-approval: a rule judges one request at a time, its budget what it approved
lately. The demo policy's "small refunds" (amount at most 5) may approve at most 5 refunds, and
20.00 of them, per requester in a day; past either cap a person is asked, the card and the audit
log say which cap, and the rule approves again once the window has moved on. Through the
governance core on SQLite and PostgreSQL, the policy file as written, the kit's clock.
"""

from __future__ import annotations

import pytest

from bot.approvals.errors import PolicyError
from bot.approvals.policy import parse_policy
from tests.kit.signoff import Kit

DAY = 86_400.0


def refund(n: int, amount: float = 5.0, customer: str = "cust_1") -> dict[str, object]:
    return {"customer_id": customer, "order_id": f"o-{n}", "amount": amount, "reason": "broken"}


async def status_of(kit: Kit, workflow_report: object) -> tuple[str, str | None]:
    (approval_id,) = workflow_report.approvals  # type: ignore[attr-defined]
    a = await kit.app.get(approval_id)
    return a.status, a.asked_because


async def test_past_the_count_a_person_is_asked_and_told_which_cap(kit: Kit) -> None:
    for n in range(5):
        small = await kit.start("refund", refund(n, 1.0), "U_CAROL")
        assert (await status_of(kit, small))[0] == "approved"
        kit.clock.advance(60)
    sixth = await kit.start("refund", refund(5, amount=1.0), "U_CAROL")
    status, why = await status_of(kit, sixth)
    assert status == "pending"
    assert why == (
        "the rule 'small refunds' is past its budget (at most 5 approvals and 20 of amount per "
        "requester in 1d): it approved 5 already, so a person decides this one"
    )
    (asked,) = [e for e in await kit.audit("requested") if e["approval_id"] == sixth.approvals[0]]
    assert asked["data"]["budget"] == why
    # another requester has a budget of their own
    other = await kit.start("refund", refund(6), "U_DAVE")
    assert (await status_of(kit, other))[0] == "approved"


async def test_past_the_total_a_person_is_asked(kit: Kit) -> None:
    for n, amount in enumerate((5.0, 5.0, 5.0, 4.0)):
        assert (await status_of(kit, await kit.start("refund", refund(n, amount))))[0] == (
            "approved"
        )
    status, why = await status_of(kit, await kit.start("refund", refund(9, 2.0)))
    assert status == "pending"
    assert why is not None
    assert "it approved 19 of amount already, and this asks 2" in why
    # what still fits is approved
    assert (await status_of(kit, await kit.start("refund", refund(10, 1.0))))[0] == "approved"


async def test_people_s_approvals_do_not_spend_the_rule_s_budget_and_the_window_moves_on(
    kit: Kit,
) -> None:
    for n in range(5):
        await kit.start("refund", refund(n, 1.0))
    capped = await kit.start("refund", refund(5, 1.0))
    assert (await status_of(kit, capped))[0] == "pending"
    await kit.app.decide(capped.approvals[0], "U_ALICE", True)  # a person's, not the rule's
    kit.clock.advance(DAY + 1)
    again = await kit.start("refund", refund(6, 1.0))
    assert await status_of(kit, again) == ("approved", None)


def test_a_budget_that_cannot_work_is_refused_when_the_policy_loads() -> None:
    head = """
[actions.send_refund]
approvers = ["U_ALICE"]
tier = "low"
[[actions.send_refund.auto_approve]]
name = "small"
when = { amount = { le = 5 } }
"""
    with pytest.raises(PolicyError, match="window"):
        parse_policy(head + "budget = { count = 5 }\n")
    with pytest.raises(PolicyError, match="needs count"):
        parse_policy(head + 'budget = { window = "1d" }\n')
    with pytest.raises(PolicyError, match="total needs of"):
        parse_policy(head + 'budget = { total = 20, window = "1d" }\n')
    with pytest.raises(PolicyError, match="budget.cap: unknown key; allowed: count, total"):
        parse_policy(head + 'budget = { count = 5, window = "1d", cap = 3 }\n')
    rule = parse_policy(head + 'budget = { count = 2, per = "customer_id", window = "2h" }\n')
    budget = rule.actions["send_refund"].auto_approve[0].budget
    assert budget is not None
    assert budget.describe() == "at most 2 approvals per customer_id in 2h"
