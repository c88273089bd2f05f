"""A click's vote (`vote(..., seen=a)`, the approval as the click read it a moment before): while
it holds the write lock it does not read the approval again when nothing changed since, writes
its audit entries in one statement, and is judged on the row as it is now when something did
change. SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import store, tables
from bot.approvals.errors import AlreadyDecidedError, AlreadyVotedError
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}
DEPLOY = {"service": "api", "version": "1.2.3"}


def statements(kit: Kit) -> list[str]:
    """The SQL the bot's async engine runs from now on (not transaction control)."""
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        first = sql.lstrip().split(None, 1)[0].upper()
        control = ("BEGIN", "PRAGMA", "SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT")
        if first not in control and "set_config" not in sql:
            seen.append(" ".join(sql.split()))

    sa.event.listen(kit.db.engine.sync_engine, "before_cursor_execute", before)
    return seen


async def test_a_click_that_settles_reads_nothing_again_while_it_writes(kit: Kit) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    a = await kit.app.get(approval_id)
    ran = statements(kit)
    assert await kit.app.vote(a.id, "U_ALICE", True, wait=5, revision=a.revision, seen=a)
    assert not [s for s in ran if s.startswith("SELECT") and "FROM approvals " in s + " "], ran
    assert len([s for s in ran if s.startswith("INSERT INTO audit_inbox")]) == 1, ran
    assert len(ran) <= 6, ran  # settle, the vote, its waiters, the resume, the event, the audit
    assert (await kit.app.get(approval_id)).status == "approved"
    assert [e["kind"] for e in await kit.audit(approval_id=approval_id)] == [
        "requested",
        "vote",
        "approved",
    ]
    assert await kit.pending_jobs("resume") == 1


async def test_a_click_on_an_approval_that_changed_since_is_judged_on_it_as_it_is(
    kit: Kit,
) -> None:
    (approval_id,) = (await kit.ask("deploy", DEPLOY)).approvals  # two of three
    before = await kit.app.get(approval_id)
    assert not await kit.app.vote(approval_id, "U_BOB", True)  # after the click read it
    assert await kit.app.vote(approval_id, "U_ALICE", True, seen=before)  # the second: settles
    a = await kit.app.get(approval_id)
    assert (a.status, sorted(a.decided_by)) == ("approved", ["U_ALICE", "U_BOB"])
    assert [v.user_id for v in a.votes] == ["U_BOB", "U_ALICE"]

    (other,) = (await kit.ask("deploy", {**DEPLOY, "version": "2"})).approvals
    seen = await kit.app.get(other)
    assert not await kit.app.vote(other, "U_BOB", True)
    with pytest.raises(AlreadyVotedError):  # the click read no vote of his
        await kit.app.vote(other, "U_BOB", True, seen=seen)
    assert await kit.app.vote(other, "U_DAVE", False, note="no", seen=seen)  # a rejection
    with pytest.raises(AlreadyDecidedError):  # rejected since the click read it
        await kit.app.vote(other, "U_ALICE", True, seen=seen)
    assert (await kit.app.get(other)).status == "rejected"
    refused = await kit.audit("vote_refused", approval_id=other)
    assert [(e["actor"], e["data"]["refusal"]) for e in refused] == [
        ("U_BOB", "already_voted"),
        ("U_ALICE", "already_decided"),
    ]


async def test_a_change_to_a_column_the_table_lacks_is_refused_not_left_out(kit: Kit) -> None:
    """The vote's statements are built once and given their values as parameters, which
    SQLAlchemy would quietly leave out of the statement when they name no column."""
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    a = await kit.app.get(approval_id)
    async with kit.db.transaction() as conn:
        with pytest.raises(TypeError, match=r"approvals has no column\(s\) \['remindedat'\]"):
            await store.bump(conn, a, 1.0, remindedat=1.0)
        with pytest.raises(TypeError, match=r"votes has no column\(s\) \['usr'\]"):
            await store._insert_once(conn, tables.votes, approval_id=a.id, usr="U_ALICE")
        assert await store.bump(conn, a, 2.0, reminded_at=2.0)  # a column it has: set
    after = await kit.app.get(approval_id)
    assert (after.version, after.reminded_at, after.votes) == (a.version + 1, 2.0, ())
