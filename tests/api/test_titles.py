"""A request's title over the approvals API: its placeholders name arguments and ask only for
what a display needs (refused with 422 naming `title` otherwise), a title is bounded once filled
(rows stored before included), and what the service wrote is its note, never the title."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from tests.api.conftest import REFUND, Api

ASK = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}


@pytest.mark.parametrize(
    ("title", "problem"),
    [
        (
            "{amount:>99999999}",
            (
                "placeholder {amount:>99999999}: format spec '>99999999' pads to 99999999 "
                "characters; at most 40"
            ),
        ),
        (
            "{amount:.500f}",
            (
                "placeholder {amount:.500f}: format spec '.500f' asks for a precision of 500; "
                "at most 20"
            ),
        ),
        (
            "Refund {total}",
            (
                "placeholder {total} does not name an argument of the request; a title shows only "
                "argument values, like {amount}"
            ),
        ),
        (
            "{amount.__class__}",
            (
                "placeholder {amount.__class__} does not name an argument of the request; a title "
                "shows only argument values, like {amount}"
            ),
        ),
        ("{amount:{amount}}", "placeholder {amount:{amount}}: nested placeholders are not allowed"),
    ],
)
async def test_a_title_asking_for_more_than_a_display_needs_is_refused(
    api: Api, title: str, problem: str
) -> None:
    status, body = await api.post({**ASK, "title": title})
    assert status == 422, body
    assert body["problems"] == [{"field": "title", "message": problem}]
    assert (await api.counts())["runs"] == 0


async def test_a_title_a_display_needs_is_taken(api: Api) -> None:
    status, body = await api.post({**ASK, "title": "Refund {amount:>10,.2f} to {customer_id}"})
    assert status == 202, body
    assert body["note"] == "Refund      42.50 to cust_1"


async def test_a_stored_title_is_bounded_when_it_is_read(api: Api) -> None:
    _, body = await api.post(ASK)
    # A row stored before titles were checked: its spec asks for ten million characters.
    async with api.kit.db.transaction() as conn:
        await conn.execute(
            sa.update(t.approvals).values(title="{amount:>9999999}", note="{amount:>9999999}")
        )
    status, seen = await api.get(f"/api/approvals/{body['approval_id']}")
    assert status == 200
    assert (seen["title"], seen["note"]) == ("42.5", "42.5")


async def test_a_long_title_is_cut_once_filled(api: Api) -> None:
    reason = "x" * 190
    _, body = await api.post(
        {**ASK, "args": {**REFUND, "reason": reason}, "title": "{reason}" * 10}
    )
    assert len(body["note"]) == 500 and body["note"].endswith("…")
