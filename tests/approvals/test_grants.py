"""Grants ("Approve, and allow up to N more like this for T") on SQLite and PostgreSQL: a later
request inside a live grant is approved by it, nobody asked; one outside it is asked; the last
use goes to one request only, however many ask at once; a grant ends when it expires, when its
uses run out, when it is revoked, and when the policy it rests on changes. Each step is on the
audit log."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from bot.approvals import GrantRefused, PolicyError, parse_policy
from bot.approvals.grants import GrantAsk
from bot.approvals.policy.grants import GrantLimits, outside_grant
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

ALICE, BOB, CAROL, DAVE = "U_ALICE", "U_BOB", "U_CAROL", "U_DAVE"
HOUR = dt.timedelta(hours=1)


def refund(amount: float, customer: str = "c1", order: str = "o-1") -> dict[str, Any]:
    return {"customer_id": customer, "order_id": order, "amount": amount, "reason": "damaged"}


async def granted(kit: Kit, uses: int, window: dt.timedelta = HOUR, amount: float = 40.0) -> str:
    """Carol asks for a refund of `amount` to c1; Alice approves it and grants `uses` more."""
    report = await kit.ask("send_refund", refund(amount))
    (approval_id,) = report.approvals
    result = await kit.app.decide(approval_id, ALICE, True, grant=GrantAsk(uses, window))
    assert result.approval.status == "approved"
    (grant,) = await kit.app.live_grants()
    return grant.id


async def status_of(kit: Kit, args: dict[str, Any], requester: str = CAROL) -> str:
    report = await kit.ask("send_refund", args, requester)
    return (await kit.app.get(report.approvals[0])).status


async def test_a_request_inside_the_grant_is_approved_by_it_and_one_outside_is_asked(
    kit: Kit,
) -> None:
    grant_id = await granted(kit, 5)
    assert await status_of(kit, refund(30.0, order="o-2")) == "approved"  # less, other order
    assert await status_of(kit, refund(40.0)) == "approved"  # the approved amount itself
    assert await status_of(kit, refund(40.01)) == "pending"  # more than approved
    assert await status_of(kit, refund(10.0, customer="c2")) == "pending"  # another customer
    assert await status_of(kit, refund(10.0), requester=DAVE) == "pending"  # another requester
    assert await status_of(kit, {**refund(10.0), "reason": "other"}) == "approved"  # vary
    used = await kit.audit("grant_used")
    assert [e["actor"] for e in used] == [f"grant:{grant_id}"] * 3
    assert [e["data"]["grant"]["left"] for e in used] == [4, 3, 2]
    approval = await kit.app.get(used[0]["approval_id"])
    assert approval.decided_by == [f"grant:{grant_id}"]
    assert approval.reason is not None and f"approved under {ALICE}'s grant" in approval.reason
    assert approval.granted is not None and approval.granted["left"] == 4
    (made,) = await kit.audit("granted")
    assert (made["actor"], made["data"]["uses"], made["data"]["key"]) == (ALICE, 5, ["customer_id"])


async def test_a_grant_ends_when_its_uses_run_out_and_when_it_expires(kit: Kit) -> None:
    await granted(kit, 1)
    assert await status_of(kit, refund(20.0)) == "approved"
    assert await status_of(kit, refund(20.0)) == "pending"  # its one use is taken
    await granted(kit, 3, dt.timedelta(minutes=30))
    kit.clock.advance(31 * 60)
    assert await status_of(kit, refund(20.0)) == "pending"
    assert await kit.app.live_grants() == []


async def test_purge_deletes_grants_that_ended_long_enough_ago_and_never_a_live_one(
    kit: Kit,
) -> None:
    await granted(kit, 3, dt.timedelta(minutes=30))  # ends in half an hour
    kit.clock.advance(2 * 3600)
    live = await granted(kit, 3, dt.timedelta(hours=4))
    assert await kit.app.purge_grants(3600) == 1  # the first ended 90 minutes ago
    assert [g.id for g in await kit.app.live_grants()] == [live]
    assert await kit.app.purge_grants(0) == 0  # the live one, however old it is asked to be
    (purged,) = await kit.audit("purged")
    assert purged["actor"] == "retention" and len(purged["data"]["grants"]) == 1
    assert await status_of(kit, refund(20.0)) == "approved"  # the live one still approves
    listed = (await asyncio.to_thread(kit.cli, "purge", "--older-than", "1h")).stdout
    assert listed.strip().endswith("and 0 ended grant(s) older than 1h")


async def test_signoff_approve_grant_makes_a_grant_as_the_card_does(kit: Kit) -> None:
    report = await kit.ask("send_refund", refund(40.0))
    (approval_id,) = report.approvals
    done = await asyncio.to_thread(
        kit.cli, "approve", approval_id, "--as", ALICE, "--grant", "2/1h"
    )
    assert done.returncode == 0, done.stderr
    (grant,) = await kit.app.live_grants()
    assert (grant.grantor, grant.uses, grant.approval_id) == (ALICE, 2, approval_id)
    assert f"grant {grant.id}: 2 more like this until " in done.stdout
    assert await status_of(kit, refund(35.0, order="o-2")) == "approved"
    wrong = await asyncio.to_thread(kit.cli, "approve", approval_id, "--as", ALICE, "--grant", "5")
    assert wrong.returncode == 2 and "USES/DURATION, e.g. --grant 5/4h" in wrong.stderr


async def test_concurrent_requests_take_the_last_use_once(kit: Kit) -> None:
    await granted(kit, 1)
    others = [kit.new_app() for _ in range(3)]  # processes of their own, each with its pool
    reports = await asyncio.gather(
        *(
            app.start("ask", {"action": "send_refund", "args": refund(10.0)}, requester=CAROL)
            for app in [kit.app, *others]
        )
    )
    statuses = sorted([(await kit.app.get(r.approvals[0])).status for r in reports])
    assert statuses == ["approved", "pending", "pending", "pending"]
    assert len(await kit.audit("grant_used")) == 1


async def test_a_revoked_grant_approves_nothing_and_only_its_grantor_or_an_approver_revokes(
    kit: Kit,
) -> None:
    grant_id = await granted(kit, 5)
    with pytest.raises(GrantRefused, match="only U_ALICE, who granted it, or an approver"):
        await kit.app.revoke_grant(grant_id, DAVE)
    assert await status_of(kit, refund(10.0)) == "approved"  # Dave's attempt changed nothing
    await kit.app.revoke_grant(grant_id, BOB)  # another approver of send_refund
    assert await status_of(kit, refund(10.0)) == "pending"
    with pytest.raises(GrantRefused, match="over already"):
        await kit.app.revoke_grant(grant_id, ALICE)
    (refused, again) = await kit.audit("grant_refused")
    assert (refused["actor"], refused["data"]["grant"]) == (DAVE, grant_id)
    assert again["actor"] == ALICE
    (revoked,) = await kit.audit("grant_revoked")
    assert (revoked["actor"], revoked["data"]["grant"]) == (BOB, grant_id)


async def test_a_policy_change_that_would_not_allow_the_grant_ends_it(kit: Kit) -> None:
    grant_id = await granted(kit, 5)
    fewer = POLICY.replace("grants = { most = 5,", "grants = { most = 2,", 1)
    assert fewer != POLICY
    changed = kit.new_app(policy_text=fewer)
    report = await changed.start(
        "ask", {"action": "send_refund", "args": refund(10.0)}, requester=CAROL
    )
    assert (await changed.get(report.approvals[0])).status == "pending"
    (ended,) = await kit.audit("grant_revoked")
    assert (ended["actor"], ended["data"]["grant"]) == ("policy", grant_id)
    assert "policy changed" in ended["data"]["why"]
    # and the process still on the old policy finds it ended too
    assert await status_of(kit, refund(10.0)) == "pending"


async def test_the_sweep_ends_a_grant_a_policy_change_left_without_ground(kit: Kit) -> None:
    grant_id = await granted(kit, 5)
    line = 'grants = { most = 5, longest = "4h", key = ["customer_id"], vary = ["order_id", "reason"] }'
    assert line in POLICY
    changed = kit.new_app(policy_text=POLICY.replace(line, "", 1))  # grants no longer allowed
    await changed.sweep()
    (ended,) = await kit.audit("grant_revoked")
    assert (ended["actor"], ended["data"]["grant"]) == ("policy", grant_id)
    await changed.sweep()  # once
    assert len(await kit.audit("grant_revoked")) == 1
    assert await kit.app.live_grants() == []


async def test_a_grant_the_policy_does_not_allow_is_refused_with_the_approval(kit: Kit) -> None:
    report = await kit.ask("send_refund", refund(40.0))
    (approval_id,) = report.approvals
    for ask, words in (
        (GrantAsk(6, HOUR), "allows grants of 1 to 5 more requests, not 6"),
        (GrantAsk(2, dt.timedelta(hours=5)), "allows grants for at most 4h, not 5h"),
    ):
        with pytest.raises(GrantRefused, match=words):
            await kit.app.decide(approval_id, ALICE, True, grant=ask)
    assert (await kit.app.get(approval_id)).status == "pending"
    assert [e["data"]["refusal"] for e in await kit.audit("vote_refused")] == ["grant_refused"] * 2
    assert await kit.app.live_grants() == []


def test_critical_actions_and_quorums_cannot_have_grants() -> None:
    base = '[actions.wipe]\napprovers = ["U1", "U2"]\n'
    grants = 'grants = { most = 2, longest = "1h" }\n'
    with pytest.raises(PolicyError, match=r"actions\.wipe\.grants: not allowed for critical"):
        parse_policy(base + 'tier = "critical"\n' + grants)
    with pytest.raises(PolicyError, match=r"actions\.wipe\.grants: needs required = 1"):
        parse_policy(base + "required = 2\n" + grants)
    with pytest.raises(PolicyError, match=r"actions\.wipe\.grants\.longest: must be at most 1w"):
        parse_policy(base + 'grants = { most = 2, longest = "8d" }\n')
    with pytest.raises(PolicyError, match=r"actions\.wipe\.grants\.mots: unknown key"):
        parse_policy(base + 'grants = { mots = 2, longest = "1h" }\n')


def test_outside_a_grant_each_number_is_at_most_the_approved_one_and_the_rest_equal() -> None:
    limits = GrantLimits(most=5, longest=HOUR, key=("customer_id",), vary=("reason",))
    bound = {"customer_id": "c1", "amount": 40.0, "currency": "EUR", "reason": "x"}
    assert outside_grant(bound, {**bound, "amount": 0, "reason": "y"}, limits) is None
    assert outside_grant(bound, {**bound, "amount": -5}, limits) == (
        "amount -5 is more than the approved 40.0"
    )
    assert outside_grant(bound, {**bound, "amount": True}, limits) == "amount is not a number"
    assert outside_grant(bound, {**bound, "currency": "USD"}, limits) == "currency is not 'EUR'"
    assert outside_grant(bound, {**bound, "force": True}, limits) == (
        "force was not in the approved call"
    )
    without = {k: v for k, v in bound.items() if k != "customer_id"}
    assert outside_grant(bound, without, limits) == "customer_id is not 'c1'"
