"""A rejection reason made only of characters nobody can see is no reason: refused like a blank
one, and nothing is recorded."""

from __future__ import annotations

import pytest

from bot.approvals.errors import InvalidEditError
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


@pytest.mark.parametrize(
    "reason",
    ["\u200b", "\ufeff", "\x00", "\u3164", "\u2800", " \u200b\ufeff\x00\u3164\u2800\u00a0 "],
    ids=["zero-width space", "BOM", "NUL", "Hangul filler", "Braille blank", "all of them"],
)
async def test_an_invisible_rejection_reason_is_refused_as_blank(kit: Kit, reason: str) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    with pytest.raises(InvalidEditError, match="a rejection needs a reason"):
        await kit.app.decide(approval_id, "U_ALICE", False, note=reason)
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    await kit.app.decide(approval_id, "U_ALICE", False, note="\u200bwrong customer")
    assert (await kit.app.get(approval_id)).status == "rejected"
