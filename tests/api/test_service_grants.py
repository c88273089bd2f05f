"""A grant over the approvals API: a service's request approved with a grant lets the same
service's later requests like it through, answered approved at once; the same person asking
through the service, or the service asking for someone else, is asked as usual. SQLite and
PostgreSQL."""

from __future__ import annotations

import datetime as dt

from bot.approvals.grants import GrantAsk
from tests.api.conftest import REFUND, Api


async def test_a_grant_on_a_service_s_request_covers_that_service_s_own_requests(api: Api) -> None:
    status, body = await api.post({"action": "send_refund", "args": REFUND, "requester": "bot"})
    assert status == 202 and body["requester"] == "billing", body
    (row,) = await api.kit.approvals()
    ask = GrantAsk(2, dt.timedelta(hours=1))
    await api.kit.app.decide(row["id"], "U_ALICE", True, grant=ask)

    later = {**REFUND, "order_id": "o-2", "amount": 20.0}
    status, body = await api.post({"action": "send_refund", "args": later, "requester": "bot"})
    assert status == 202
    _, seen = await api.get(f"/api/approvals/{body['approval_id']}")
    assert seen["approved"] is True
    (grant,) = await api.kit.app.live_grants()
    assert seen["decision"]["by"] == [f"grant:{grant.id}"]
    assert seen["decision"]["note"].startswith("approved under U_ALICE's grant")

    # Carol asking through the same service is not the service asking for itself
    carol = {**REFUND, "order_id": "o-3", "amount": 20.0}
    _, body = await api.post({"action": "send_refund", "args": carol, "requester": "U_CAROL"})
    _, seen = await api.get(f"/api/approvals/{body['approval_id']}")
    assert seen["status"] == "pending"
    assert len(await api.kit.audit("grant_used")) == 1
