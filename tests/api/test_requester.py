"""Who a service's request is asked as, over the approvals API: the person it names when its
`[services.NAME] may_act_for` lists them, else the service itself, so a service cannot put a
person's name on its request (and take that person's approval away from them); and its
`owners`, who hold its token, may not approve what it asks. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from bot.approvals.errors import SelfApprovalError
from bot.approvals.policy import parse_policy
from tests.api.conftest import OPS_TOKEN, REFUND, Api


async def test_a_named_person_the_service_may_not_act_for_is_not_the_requester(api: Api) -> None:
    status, body = await api.post({"action": "send_refund", "args": REFUND, "requester": "U_ALICE"})
    assert status == 202 and body["requester"] == "billing"
    (row,) = await api.kit.approvals()
    assert row["requester"] == "billing"
    # Alice was only named: she is an approver like any other, and her vote counts.
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    _, seen = await api.get(f"/api/approvals/{body['approval_id']}")
    assert seen["approved"] is True


async def test_a_person_it_may_act_for_is_the_requester(api: Api) -> None:
    status, body = await api.post({"action": "send_refund", "args": REFUND, "requester": "U_CAROL"})
    assert status == 202 and body["requester"] == "U_CAROL"


async def test_an_owner_of_the_service_may_not_approve_what_it_asks(api: Api) -> None:
    # ops-bot's owner is Dave, one of @ops, who approve deletions.
    request = {"action": "delete_row", "args": {"table": "users", "row_id": "7"}}
    _, body = await api.post({**request, "requester": "U_CAROL"}, token=OPS_TOKEN)
    (row,) = await api.kit.approvals()
    with pytest.raises(SelfApprovalError, match=r"you own the service ops-bot"):
        await api.kit.app.decide(row["id"], "U_DAVE", True)
    assert len(await api.kit.audit("vote_refused")) == 1
    await api.kit.app.decide(row["id"], "U_ERIN", True)
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    _, seen = await api.get(f"/api/approvals/{body['approval_id']}", token=OPS_TOKEN)
    assert seen["approved"] is True


def test_may_act_for_and_owners_are_read_from_the_services_section() -> None:
    policy = parse_policy(
        '[actions.send_refund]\napprovers = ["U_A"]\n'
        '[services.billing]\ntoken_env = "T"\nactions = ["send_refund"]\n'
        'may_act_for = ["U_CAROL", "@support"]\nowners = ["U_DAVE"]\n'
    )
    svc = policy.services["billing"]
    assert (svc.may_act_for, svc.owners) == (("U_CAROL", "@support"), ("U_DAVE",))
