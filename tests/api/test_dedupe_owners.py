"""A dedupe key belongs to whoever made it: a service joins only its own pending requests, a
workflow only the workflows'. So one click never acts twice (a service joined a workflow's
pending refund), a service cannot take an order's key first and have a person's refund refused,
and a conflict names only the service's own approval, by the id the API gave it. Through the
approvals API (SQLite and PostgreSQL)."""

from __future__ import annotations

from tests.api.conftest import REFUND, Api

KEYED = {
    "action": "send_refund",
    "args": REFUND,
    "requester": "U_CAROL",
    "dedupe_key": "refund:o-1",
}


async def test_a_service_does_not_join_a_workflows_pending_refund(api: Api) -> None:
    person = await api.kit.start("refund", REFUND)
    status, body = await api.post(KEYED)
    assert status == 202 and body["status"] == "pending"
    assert len(await api.kit.approvals()) == 2  # its own card, not the workflow's
    await api.kit.app.decide(person.approvals[0], "U_ALICE", True)
    await api.kit.app.run_jobs(("resume",))
    # Alice's click approved the workflow's refund only: the service's still waits for a person.
    _, seen = await api.get(f"/api/approvals/{body['approval_id']}")
    assert (seen["status"], seen["approved"]) == ("pending", False)
    assert len(await api.kit.effects("refund")) == 1


async def test_a_service_cannot_take_an_orders_key_from_a_persons_refund(api: Api) -> None:
    status, body = await api.post({**KEYED, "args": {**REFUND, "amount": 900}})
    assert status == 202 and body["status"] == "pending"
    person = await api.kit.start("refund", REFUND)
    assert person.status == "paused"
    (asked,) = await api.kit.approvals(person.thread_id)
    assert asked["status"] == "pending"
    assert await api.kit.audit("conflict") == []


async def test_a_services_conflict_names_only_its_own_approval(api: Api) -> None:
    person = await api.kit.start("refund", REFUND)
    _, first = await api.post(KEYED)
    status, second = await api.post({**KEYED, "args": {**REFUND, "amount": 900}})
    assert status == 202 and second["status"] == "rejected"
    note = second["decision"]["note"]
    assert note == (
        f"conflicts with your pending approval {first['approval_id']} for 'refund:o-1', which "
        "proposes different arguments; decide that one first"
    )
    assert person.approvals[0] not in str(second)


async def test_workflows_still_join_each_others_pending_refund(api: Api) -> None:
    first = await api.kit.start("refund", REFUND)
    _, _ = await api.post(KEYED)
    second = await api.kit.start("refund", REFUND, requester="U_BOB")
    assert second.approvals == first.approvals
