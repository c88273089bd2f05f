"""One agent turn, one decision: the gated calls a model proposes in one turn are decided
together, and a call the policy says runs `after` another of the turn (`email_customer` after
`send_refund`, in the demo policy) never runs on a refusal of that one, nor on an approval of
other values than those that run. Through the governance core on a real database, with the
bundled `support_agent` and a user's own LangGraph-style agent (both `ToolNode` shapes).
"""

from __future__ import annotations

import json

import pytest

from bot.approvals import parse_policy
from bot.approvals.errors import PolicyError
from tests.approvals.test_agent_gate import (
    TICKET,
    _call,
    probe,  # noqa: F401 -- a fixture
    ran,
    settle,
    start_probe,
    tool_messages,
)
from tests.kit.signoff import Kit


async def told(kit: Kit, workflow: str, thread_id: str) -> dict[str, tuple[str, str]]:
    """What the model was told of each of its calls: call id -> (status, content)."""
    info = await kit.app.runs.graph(workflow).aget_state({"configurable": {"thread_id": thread_id}})
    return {m.tool_call_id: (m.status, str(m.content)) for m in tool_messages(info.values)}


async def test_the_turn_s_calls_are_one_turn_and_the_email_runs_after_the_refund(kit: Kit) -> None:
    report = await kit.start("support_agent", TICKET)
    refund, email = await kit.approvals(report.thread_id)
    assert refund["turn_id"] and refund["turn_id"] == email["turn_id"]
    assert json.loads(email["turn"]) == {"call": "call_email", "position": 1,
                                         "after": ["call_refund"]}  # fmt: skip
    assert json.loads(refund["turn"])["after"] == []


async def test_a_rejected_refund_keeps_the_email_from_going_out_and_the_model_is_told(
    kit: Kit,
) -> None:
    report = await kit.start("support_agent", TICKET)
    refund, email = await kit.approvals(report.thread_id)
    await kit.app.decide(refund["id"], "U_BOB", False, note="the kettle was not returned")
    await settle(kit)

    run = await kit.run(report.thread_id)
    assert run["status"] == "completed", run["error"]
    assert await kit.effects() == []  # neither the refund nor the email about it
    assert (await kit.app.get(email["id"])).status == "rejected"
    said = await told(kit, "support_agent", report.thread_id)
    assert said["call_refund"] == (
        "error",
        (
            "Rejected: U_BOB rejected the call to send_refund, so it did not run. "
            "Reason: the kettle was not returned"
        ),
    )
    status, content = said["call_email"]
    assert status == "error"
    assert content == (
        "Not run: email_customer runs only after send_refund, which was rejected by U_BOB: "
        "the kettle was not returned"
    )
    # on the audit log: denied by policy, saying why
    [denied] = [e for e in await kit.audit("denied") if e["approval_id"] == email["id"]]
    assert "send_refund, which was rejected by U_BOB" in denied["data"]["reason"]


async def test_an_email_approved_before_its_refund_waits_and_is_asked_again_after_an_edit(
    kit: Kit,
) -> None:
    report = await kit.start("support_agent", TICKET)
    refund, email = await kit.approvals(report.thread_id)

    # Alice approves the email first: it waits for the refund, nothing is resumed
    await kit.app.decide(email["id"], "U_ALICE", True)
    await settle(kit)
    held = await kit.app.get(email["id"])
    assert held.status == "pending" and [v.user_id for v in held.votes] == ["U_ALICE"]
    assert await kit.effects() == []

    # Bob approves the refund at 40.00 instead of 42.50: Alice's approval of the email (which
    # says "We are refunding 42.50") counts no more; it is asked again
    await kit.app.decide(refund["id"], "U_BOB", True, edits={"amount": 40.0})
    await settle(kit)
    again = await kit.app.get(email["id"])
    assert again.status == "pending" and again.votes == ()
    assert (await kit.run(report.thread_id))["status"] == "paused"
    [asked] = [
        e for e in await kit.audit("requested")
        if e["approval_id"] == email["id"] and e["data"].get("again")
    ]  # fmt: skip
    assert asked["data"]["votes_dropped"] == ["U_ALICE"]
    assert asked["data"]["because"] == "send_refund was approved with edits"

    # decided again, against the refund that runs: the email goes out once, after the refund
    await kit.app.decide(email["id"], "U_ALICE", True, edits={"body": "We are refunding 40.00."})
    await settle(kit)
    assert (await kit.run(report.thread_id))["status"] == "completed"
    done = await kit.effects()
    assert sorted(
        (e["kind"], str(e["data"].get("amount") or e["data"].get("text"))) for e in done
    ) == [
        ("email", "We are refunding 40.00."),
        ("refund", "40.0"),
    ]


async def test_an_email_approved_before_an_unchanged_refund_runs_once_the_refund_is_approved(
    kit: Kit,
) -> None:
    report = await kit.start("support_agent", TICKET)
    refund, email = await kit.approvals(report.thread_id)
    await kit.app.decide(email["id"], "U_ALICE", True)
    await kit.app.decide(refund["id"], "U_BOB", True)
    await settle(kit)
    assert (await kit.run(report.thread_id))["status"] == "completed"
    assert sorted(e["kind"] for e in await kit.effects()) == ["email", "refund"]
    settled = await kit.app.get(email["id"])
    assert settled.status == "approved" and settled.decided_by == ["U_ALICE"]
    assert [e["approval_id"] for e in await kit.audit("approved")] == [refund["id"], email["id"]]


REFUND = _call("send_refund", "c2", customer_id="cust_9", amount=12.5)
EMAIL = _call("email_customer", "c3", to="ann@example.com", subject="Refund", body="Refunded")


@pytest.mark.parametrize("workflow", ["probe", "probe_v1"])
async def test_a_dependent_call_never_runs_before_its_dependency_in_both_agent_shapes(
    probe: Kit,  # noqa: F811
    workflow: str,
) -> None:
    report = await start_probe(probe, REFUND, EMAIL, workflow=workflow)
    refund, email = await probe.approvals(report.thread_id)
    assert refund["turn_id"] == email["turn_id"]

    # approved first, the email waits, whatever the ToolNode's shape (one task per call or not)
    await probe.app.decide(email["id"], "U_ALICE", True)
    await settle(probe)
    assert await ran(probe) == []
    assert (await probe.run(report.thread_id))["status"] == "paused"

    # the refund is rejected: the email never runs, and the model is told why
    await probe.app.decide(refund["id"], "U_BOB", False, note="no refunds today")
    await settle(probe)
    assert (await probe.run(report.thread_id))["status"] == "completed"
    assert await ran(probe) == []
    said = await told(probe, workflow, report.thread_id)
    assert said["c3"] == (
        "error",
        (
            "Not run: email_customer runs only after send_refund, which was rejected by U_BOB: "
            "no refunds today"
        ),
    )
    assert (await probe.app.get(email["id"])).decided_by == ["policy"]


async def test_a_lone_gated_call_is_not_a_turn(probe: Kit) -> None:  # noqa: F811
    report = await start_probe(probe, _call("lookup_order", "c1", order_id="o-1"), EMAIL)
    [email] = await probe.approvals(report.thread_id)
    assert email["turn_id"] is None and email["turn"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[actions.a]\napprovers = ["U_A"]\nafter = ["b"]\n',
         "signoff.toml:3: actions.a.after: 'b' is not an action of this policy ([actions.b])"),
        ('[actions.a]\napprovers = ["U_A"]\nafter = ["a"]\n',
         "signoff.toml:3: actions.a.after: 'a' cannot run after itself"),
        ('[actions.a]\napprovers = ["U_A"]\nafter = "b"\n',
         "signoff.toml:3: actions.a.after: must be an array of action names, got 'b'"),
        (('[actions.a]\napprovers = ["U_A"]\nafter = ["b"]\n[actions.b]\napprovers = ["U_A"]\n'
         'after = ["a"]\n'),
         "signoff.toml:3: actions.a.after: the actions wait for each other (a -> b -> a)"),
    ],
)  # fmt: skip
def test_after_in_the_policy_is_checked(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(text)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("workflow", ["probe", "probe_v1"])
async def test_a_refund_the_policy_denies_keeps_its_email_in_with_nobody_asked(
    probe: Kit,  # noqa: F811
    workflow: str,
) -> None:
    refused = _call("send_refund", "c2", customer_id="cust_9", amount=-5)
    report = await start_probe(probe, refused, EMAIL, workflow=workflow)
    await settle(probe)

    assert (await probe.run(report.thread_id))["status"] == "completed"
    assert await ran(probe) == []
    refund, email = await probe.approvals(report.thread_id)
    assert (refund["status"], email["status"]) == ("rejected", "rejected")
    status, content = (await told(probe, workflow, report.thread_id))["c3"]
    assert status == "error"
    assert content.startswith(
        "Not run: email_customer runs only after send_refund, which was denied by policy: "
    )
    assert "amount" in content  # the schema's reason, passed on


async def test_an_approved_email_runs_only_after_its_refund_ran_though_the_model_put_it_first(
    probe: Kit,  # noqa: F811
) -> None:
    """One `ToolNode` for the turn (`version="v1"`, as `support_agent` has): under `ainvoke` its
    calls run concurrently, but the email waits for the refund it announces to have run."""
    report = await start_probe(probe, EMAIL, REFUND, workflow="probe_v1")
    email, refund = await probe.approvals(report.thread_id)
    assert (email["action"], refund["action"]) == ("email_customer", "send_refund")
    await probe.app.decide(email["id"], "U_ALICE", True)
    await probe.app.decide(refund["id"], "U_BOB", True)
    await settle(probe)
    assert (await probe.run(report.thread_id))["status"] == "completed"
    assert await ran(probe) == ["refund 12.5", "email ann@example.com"]
