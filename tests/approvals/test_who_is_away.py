"""Who is away, in the governance core alone (no Slack): `/agent away` recorded and audited,
an approval whose approvers are all away escalated at once, Slack's facts judged with the
policy, and a delegate's vote recorded with both names. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from bot.approvals.away import SlackFacts, absence_from
from bot.approvals.errors import AwayRefused, DelegationRefused
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

HOUR, DAY = 3600.0, 86400.0
# send_refund in the demo policy: @finance (Alice, Bob) decide; escalate to @ops after 1d.
REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def test_all_approvers_away_escalates_at_once_and_is_audited(kit: Kit) -> None:
    now = kit.clock()
    await kit.app.away.set("U_ALICE", until=now + DAY, delegate=None)
    await kit.app.away.set("U_BOB", until=None, delegate="U_DAVE")
    assert [e["data"] for e in await kit.audit("away_set")] == [
        {"until": now + DAY, "delegate": None},
        {"until": None, "delegate": "U_DAVE"},
    ]

    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    a = await kit.app.get(approval_id)
    assert a.escalated and a.approvers == ("@finance", "@ops")
    assert [(x["user"], x["until"], x["why"]) for x in a.away] == [
        ("U_ALICE", now + DAY, "away"),
        ("U_BOB", None, "away"),
    ]
    [entry] = await kit.audit("escalated", approval_id)
    assert entry["actor"] == "away" and entry["data"]["early"] is True
    assert entry["data"]["to"] == ["@ops"]
    assert await kit.app.run_jobs()  # the card hears of it: an `escalated` event
    assert [e.kind for e in kit.sink.events if e.approval_id == approval_id].count("escalated") == 1

    await kit.app.away.end("U_BOB")
    with pytest.raises(AwayRefused, match="you had not said you were away"):
        await kit.app.away.end("U_BOB")
    assert [e["actor"] for e in await kit.audit("away_ended")] == ["U_BOB"]


async def test_one_approver_present_is_enough_and_a_past_away_is_over(kit: Kit) -> None:
    await kit.app.away.set("U_ALICE", until=kit.clock() + HOUR, delegate=None)
    (first,) = (await kit.start("refund", REFUND)).approvals
    assert not (await kit.app.get(first)).escalated  # Bob is there

    await kit.app.away.set("U_BOB", until=kit.clock() + HOUR, delegate=None)
    kit.clock.advance(2 * HOUR)  # both are back by now
    other = {**REFUND, "order_id": "o-2"}
    (second,) = (await kit.start("refund", other)).approvals
    assert not (await kit.app.get(second)).escalated
    assert await kit.app.away.of(["U_ALICE", "U_BOB"]) == {}


async def test_away_refuses_the_past_and_oneself_as_delegate(kit: Kit) -> None:
    with pytest.raises(AwayRefused, match="is not in the future"):
        await kit.app.away.set("U_ALICE", until=kit.clock() - 1, delegate=None)
    with pytest.raises(AwayRefused, match="cannot be your own delegate"):
        await kit.app.away.set("U_ALICE", until=None, delegate="U_ALICE")
    assert await kit.audit("away_set") == []


async def test_a_delegate_votes_for_the_away_approver_where_the_policy_allows_it(
    kit: Kit,
) -> None:
    refusing = POLICY.replace("delegation = true", "delegation = false", 1)
    assert refusing != POLICY  # the demo's send_refund allows delegation
    app = kit.app
    await app.away.set("U_ALICE", until=None, delegate="U_ERIN")
    (approval_id,) = (await app.start("refund", REFUND, requester="U_CAROL")).approvals
    # Bob is there: no early escalation, but Alice's delegate may decide for her
    assert not (await app.get(approval_id)).escalated

    with pytest.raises(DelegationRefused):  # where the policy does not allow it: refused
        await kit.new_app(share_db=True, policy_text=refusing).decide(approval_id, "U_ERIN", True)
    result = await app.decide(approval_id, "U_ERIN", True)
    assert result.settled and result.approval.status == "approved"
    a = await app.get(approval_id)
    assert [(v.user_id, v.for_user) for v in a.votes] == [("U_ERIN", "U_ALICE")]
    assert a.decision is not None and a.decision["on_behalf"] == {"U_ERIN": "U_ALICE"}
    [vote] = await kit.audit("vote", approval_id)
    assert vote["actor"] == "U_ERIN" and vote["data"]["for"] == "U_ALICE"


def test_slack_facts_are_judged_with_the_policy_s_statuses() -> None:
    now = 1_000_000.0
    statuses = (":palm_tree:", "vacation")
    palm = SlackFacts(status_emoji=":palm_tree:", status_text="", status_expiration=now + 60)
    found = absence_from("U1", palm, statuses, now)
    assert found is not None and (found.why, found.until) == ("status", now + 60)
    assert absence_from("U1", palm, statuses, now + 61) is None  # the status expired
    words = SlackFacts(status_text="On VACATION until Monday")
    assert absence_from("U1", words, statuses, now) is not None
    assert absence_from("U1", SlackFacts(status_emoji=":coffee:"), statuses, now) is None
    later_dnd = SlackFacts(dnd_from=now + 10, dnd_until=now + 100)
    assert absence_from("U1", later_dnd, statuses, now) is None  # not started yet
    found = absence_from("U1", later_dnd, statuses, now + 10)
    assert found is not None and (found.why, found.until) == ("dnd", now + 100)
    assert absence_from("U1", None, statuses, now) is None  # Slack could not say: present


async def test_the_sweep_escalates_what_everyone_went_away_from_since(kit: Kit) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    assert not (await kit.app.get(approval_id)).escalated
    assert await kit.app.sweep() == {"reminded": 0, "escalated": 0, "expired": 0}

    await kit.app.away.set("U_ALICE", until=None, delegate=None)
    await kit.app.away.set("U_BOB", until=None, delegate=None)
    assert (await kit.app.sweep())["escalated"] == 1
    a = await kit.app.get(approval_id)
    assert a.escalated and [x["user"] for x in a.away] == ["U_ALICE", "U_BOB"]
    assert (await kit.app.sweep())["escalated"] == 0  # once
