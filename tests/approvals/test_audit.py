"""The hash-chained audit log: appends (written to the inbox, linked into the chain afterwards),
tampering found and located, concurrent writers and linkers that never fork the chain, export.
On a SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals.audit import EVENT_KINDS, GENESIS_HASH, AuditLog, AuditReport
from bot.approvals.db import Database
from bot.approvals.tables import audit_events as ae
from tests.kit.together import run_together

KINDS = sorted(EVENT_KINDS)


async def fill(db: Database, log: AuditLog, n: int, start: float = 1_700_000_000.0) -> None:
    for i in range(n):
        async with db.transaction() as conn:
            await log.append(
                conn,
                KINDS[i % len(KINDS)],  # type: ignore[arg-type]
                approval_id=f"ap{i // 3}",
                thread_id=f"t{i // 6}",
                actor=f"U{i % 4}" if i % 5 else None,
                data={"i": i, "note": "café", "amount": i * 1.25, "nested": {"z": [1, 2]}},
                at=start + i,
            )
    await link(db, log)


async def link(db: Database, log: AuditLog) -> int:
    """Link everything committed, as the bot's linker does; how many entries were linked."""
    linked = 0
    while True:
        async with db.transaction() as conn:
            n = await log.link(conn)
        linked += n
        if not n:
            return linked


async def rows(db: Database) -> list[Any]:
    async with db.read() as conn:
        return list(await conn.execute(sa.select(ae).order_by(ae.c.seq)))


async def execute(db: Database, *statements: Any) -> None:
    async with db.transaction() as conn:
        for statement in statements:
            await conn.execute(statement)


def content_of(row: Any) -> dict[str, Any]:
    """Every column but `seq`."""
    return {k: v for k, v in row._mapping.items() if k != "seq"}


# ---- the chain ----------------------------------------------------------------------------


def test_the_event_kinds() -> None:
    assert KINDS == sorted(
        [
            "requested",
            "api_refused",
            "webhook_delivered",
            "webhook_failed",
            "denied",
            "auto_approved",
            "vote",
            "vote_refused",
            "approved",
            "rejected",
            "expired",
            "escalated",
            "reminded",
            "edited",
            "resumed",
            "resume_refused",
            "cancelled",
            "conflict",
            "run_started",
            "start_refused",
            "run_completed",
            "run_failed",
            "outcome_unknown",
            "purged",
            "run_retried",
            "run_cancelled",
            "run_control_refused",
            "redelivered",
            "payload_viewed",
            "check_failed",
            "recheck_refused",
            "granted",
            "grant_used",
            "grant_revoked",
            "grant_refused",
            "away_set",
            "away_ended",
            "all_away",
        ]
    )


async def test_the_hash_is_pinned(db: Database) -> None:
    """The exact hashed bytes; changing them would make every stored log fail to verify."""
    async with db.transaction() as conn:
        await AuditLog().append(
            conn,
            "requested",
            approval_id="ap1",
            thread_id="t1",
            actor="U1",
            data={"b": [1, "é"], "amount": 12.5},
            at=1700000000.5,
        )
    assert await link(db, AuditLog()) == 1
    content = (
        '{"actor":"U1","approval_id":"ap1","at":1700000000.5,"data":{"amount":12.5,'
        '"b":[1,"é"]},"kind":"requested","seq":1,"thread_id":"t1"}'
    )
    [row] = await rows(db)
    assert row.data == '{"amount":12.5,"b":[1,"é"]}'
    assert row.prev_hash == GENESIS_HASH == "0" * 64
    assert row.hash == hashlib.sha256((GENESIS_HASH + content).encode()).hexdigest()


async def test_a_chain_verifies_and_reports_its_head(db: Database) -> None:
    log = AuditLog()
    assert await log.verify(db.engine) == AuditReport(ok=True, checked=0)
    await fill(db, log, 25)
    stored = await rows(db)
    assert [r.seq for r in stored] == list(range(1, 26))
    assert [r.prev_hash for r in stored] == [GENESIS_HASH] + [r.hash for r in stored[:-1]]
    expected = AuditReport(ok=True, checked=25, head_seq=25, head_hash=stored[-1].hash)
    assert await log.verify(db.engine) == expected
    async with db.read() as conn:
        assert await log.verify(conn) == expected


async def test_data_that_json_would_change_verifies(db: Database) -> None:
    log = AuditLog()
    async with db.transaction() as conn:
        await log.append(conn, "vote", data={1: "int key", 10: "sorts after 2 as text", 2: "x"})
        await log.append(conn, "edited", data={"t": (1, 2), "f": 0.1 + 0.2, "big": 2**70})
    await link(db, log)
    assert (await log.verify(db.engine)).ok


async def test_append_belongs_to_the_callers_transaction(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 3)
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await log.append(conn, "vote", data={"lost": True})
            raise RuntimeError("the decision failed")
    async with db.transaction() as conn:
        await log.append(conn, "approved", data={})
    assert await link(db, log) == 1
    assert (await log.verify(db.engine)).checked == 4


async def test_entries_wait_in_the_inbox_until_linked_in_the_order_written(db: Database) -> None:
    """What a transaction appends (savepoints that roll back leave nothing) is counted by
    `verify` as unlinked, then linked after the chain's head, in the order it was written."""
    log = AuditLog()
    await fill(db, log, 2)
    async with db.transaction() as conn:
        await log.append(conn, "vote", data={"n": 3})
        await AuditLog().append(conn, "approved", data={"n": 4})  # another log, same chain
        savepoint = await conn.begin_nested()
        await log.append(conn, "edited", data={"undone": True})
        await savepoint.rollback()
        async with conn.begin_nested():
            await log.append(conn, "vote", data={"n": 5})
    before = await log.verify(db.engine)
    assert (before.ok, before.checked, before.head_seq, before.unlinked) == (True, 2, 2, 3)
    assert await link(db, log) == 3
    stored = await rows(db)
    assert [(r.seq, json.loads(r.data).get("n")) for r in stored[2:]] == [(3, 3), (4, 4), (5, 5)]
    assert stored[2].prev_hash == before.head_hash
    after = await log.verify(db.engine)
    assert (after.ok, after.checked, after.unlinked) == (True, 5, 0)
    assert await link(db, log) == 0


async def test_link_moves_a_batch_at_a_time(db: Database) -> None:
    log = AuditLog()
    async with db.transaction() as conn:
        for i in range(7):
            await log.append(conn, "vote", data={"i": i})
    async with db.transaction() as conn:
        assert await log.link(conn, limit=5) == 5
    assert (await log.verify(db.engine)).unlinked == 2
    async with db.transaction() as conn:
        assert await log.link(conn, limit=5) == 2
    assert [json.loads(r.data)["i"] for r in await rows(db)] == list(range(7))


async def test_append_refuses_what_it_cannot_record(db: Database) -> None:
    log = AuditLog()
    async with db.transaction() as conn:
        with pytest.raises(ValueError, match=r"unknown audit event kind 'approve'; expected one"):
            await log.append(conn, "approve", data={})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="data of audit event 'vote' holds NaN or infinity"):
            await log.append(conn, "vote", data={"x": float("nan")})
        with pytest.raises(TypeError, match="data of audit event 'vote' is not JSON-serializable"):
            await log.append(conn, "vote", data={"x": object()})
    assert await rows(db) == []


# ---- tampering ----------------------------------------------------------------------------


async def test_an_altered_row_is_found(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 12)
    await execute(db, ae.update().where(ae.c.seq == 7).values(data='{"amount":1}'))
    assert await log.verify(db.engine) == AuditReport(
        ok=False,
        checked=7,
        first_bad_seq=7,
        problem="row 7 was altered: its hash does not match its content",
    )


@pytest.mark.parametrize(
    "change",
    [{"actor": "U-mallory"}, {"at": 1.0}, {"kind": "approved"}, {"data": "not json"}],
    ids=["actor", "at", "kind", "data-not-json"],
)
async def test_any_altered_column_is_found(db: Database, change: dict[str, Any]) -> None:
    log = AuditLog()
    await fill(db, log, 6)
    await execute(db, ae.update().where(ae.c.seq == 4).values(**change))
    report = await log.verify(db.engine)
    assert (report.ok, report.first_bad_seq) == (False, 4)
    assert report.problem == "row 4 was altered: its hash does not match its content"


async def test_a_deleted_row_is_found(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 12)
    await execute(db, ae.delete().where(ae.c.seq == 7))
    assert await log.verify(db.engine) == AuditReport(
        ok=False,
        checked=7,
        first_bad_seq=8,
        problem="a row before row 8 was removed or reordered: its prev_hash does not match the "
        "hash of row 6 (row 7 is missing)",
    )
    await execute(db, ae.delete().where(ae.c.seq.in_([8, 9])))
    report = await log.verify(db.engine)
    assert report.first_bad_seq == 10
    assert report.problem is not None and report.problem.endswith("(rows 7 to 9 are missing)")
    # Renumbered to hide the gap: the first renumbered row no longer matches its hash.
    await execute(db, ae.update().where(ae.c.seq >= 10).values(seq=ae.c.seq - 3))
    report = await log.verify(db.engine)
    assert (report.first_bad_seq, report.problem) == (
        7,
        "row 7 holds the content of row 10: rows were reordered",
    )


async def test_a_deleted_first_row_is_found(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 4)
    await execute(db, ae.delete().where(ae.c.seq == 1))
    assert await log.verify(db.engine) == AuditReport(
        ok=False,
        checked=1,
        first_bad_seq=2,
        problem="a row before row 2 was removed or reordered: row 2 is the first row, but its "
        "prev_hash is not the genesis hash",
    )


async def test_two_swapped_rows_are_found(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 12)
    by_seq = {r.seq: r for r in await rows(db)}
    await execute(
        db,
        ae.update().where(ae.c.seq == 7).values(**content_of(by_seq[8])),
        ae.update().where(ae.c.seq == 8).values(**content_of(by_seq[7])),
    )
    assert await log.verify(db.engine) == AuditReport(
        ok=False,
        checked=7,
        first_bad_seq=7,
        problem="row 7 holds the content of row 8: rows were reordered",
    )


async def test_two_rows_with_swapped_data_are_found(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 12)
    by_seq = {r.seq: r for r in await rows(db)}
    await execute(
        db,
        ae.update().where(ae.c.seq == 7).values(data=by_seq[8].data),
        ae.update().where(ae.c.seq == 8).values(data=by_seq[7].data),
    )
    report = await log.verify(db.engine)
    assert (report.first_bad_seq, report.problem) == (
        7,
        "row 7 was altered: its hash does not match its content",
    )


async def test_a_different_key_is_told_apart_from_tampering(db: Database) -> None:
    await fill(db, AuditLog(b"the right key"), 5)
    assert (await AuditLog(b"the right key").verify(db.engine)).ok
    for wrong, described in ((AuditLog(b"a wrong key"), "a key"), (AuditLog(), "no key")):
        assert await wrong.verify(db.engine) == AuditReport(
            ok=False,
            checked=1,
            first_bad_seq=1,
            problem="row 1 was altered: its hash does not match its content, nor do the next "
            "rows', though the rows are linked; the log was probably written with a different "
            f"SIGNOFF_AUDIT_KEY than the one verifying it ({described})",
        )


def test_the_key_comes_from_the_environment_and_stays_out_of_repr() -> None:
    keyed = AuditLog.from_env({"SIGNOFF_AUDIT_KEY": "s3cret"})
    assert keyed.keyed and "s3cret" not in repr(keyed)
    assert repr(keyed) == "AuditLog(HMAC-SHA256, keyed)"
    assert not AuditLog.from_env({}).keyed
    assert not AuditLog.from_env({"SIGNOFF_AUDIT_KEY": ""}).keyed


async def test_keyed_hashes_are_hmac_sha256(db: Database) -> None:
    async with db.transaction() as conn:
        await AuditLog(b"k").append(conn, "denied", data={}, at=5.0)
    await link(db, AuditLog(b"k"))
    [row] = await rows(db)
    content = (
        '{"actor":null,"approval_id":null,"at":5.0,"data":{},"kind":"denied","seq":1,'
        '"thread_id":null}'
    )
    assert row.hash == hmac.new(b"k", (GENESIS_HASH + content).encode(), "sha256").hexdigest()


async def test_truncation_needs_an_anchor(db: Database) -> None:
    """What a chain alone cannot see: the newest rows removed, or the tail rewritten."""
    log = AuditLog()
    await fill(db, log, 10)
    head = await log.verify(db.engine)
    assert head.head_seq == 10 and head.head_hash is not None
    anchor = (head.head_seq, head.head_hash)
    await fill(db, log, 2, start=1_800_000_000.0)
    assert (await log.verify(db.engine, anchor=anchor)).ok

    await execute(db, ae.delete().where(ae.c.seq >= 9))
    assert (await log.verify(db.engine)).ok  # the chain alone cannot tell
    assert await log.verify(db.engine, anchor=anchor) == AuditReport(
        ok=False,
        checked=8,
        first_bad_seq=10,
        problem="the anchored row 10 is missing (the log ends at row 8): the newest rows were "
        "removed",
    )

    await fill(db, log, 4, start=1_900_000_000.0)  # a rewritten tail, hashes recomputed
    assert (await log.verify(db.engine)).ok
    report = await log.verify(db.engine, anchor=anchor)
    assert (report.ok, report.first_bad_seq) == (False, 10)
    assert report.problem == (
        f"row 10 does not have the anchored hash {anchor[1]}: the log was rewritten from row 10 "
        "or earlier"
    )


# ---- export -------------------------------------------------------------------------------


async def test_export_writes_one_json_object_per_row(db: Database) -> None:
    log = AuditLog()
    await fill(db, log, 7)
    out = io.StringIO()
    assert await log.export(db.engine, out) == 7
    lines = out.getvalue().splitlines()
    assert len(lines) == 7
    stored = await rows(db)
    for line, row in zip(lines, stored):
        record = json.loads(line)
        assert record == {
            "seq": row.seq,
            "at": row.at,
            "kind": row.kind,
            "approval_id": row.approval_id,
            "thread_id": row.thread_id,
            "actor": row.actor,
            "data": json.loads(row.data),
            "prev_hash": row.prev_hash,
            "hash": row.hash,
        }
    assert json.loads(lines[3])["data"]["note"] == "café"


async def test_export_and_verify_walk_long_logs_in_batches(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.approvals import audit

    monkeypatch.setattr(audit, "_BATCH", 4)
    log = AuditLog()
    await fill(db, log, 11)
    assert (await log.verify(db.engine)).checked == 11
    assert await log.export(db.engine, io.StringIO()) == 11
    await execute(db, ae.update().where(ae.c.seq == 9).values(actor="someone"))
    assert (await log.verify(db.engine)).first_bad_seq == 9


# ---- concurrency --------------------------------------------------------------------------

APPEND = """
import asyncio
from bot.approvals.db import Database
from bot.approvals.audit import AuditLog
url, who, n = _sys.argv[1], _sys.argv[2], int(_sys.argv[3])

async def main():
    db = Database(url)
    log = AuditLog(b"k")
    async def one(i):
        async with db.transaction() as conn:
            await log.append(conn, "vote", actor=who, data={"i": i})
        async with db.transaction() as conn:  # and link, as each bot's linker does
            await log.link(conn)
    await db.ping()
    wait_for_go()
    await asyncio.gather(*(one(i) for i in range(n)))
    await db.aclose()

asyncio.run(main())
print("appended", flush=True)
"""


async def test_two_processes_appending_and_linking_at_once_never_fork_the_chain(
    db: Database,
) -> None:
    n = 40
    url = db.url.render_as_string(hide_password=False)
    argvs = [[url, "A", str(n)], [url, "B", str(n)]]
    results = await asyncio.to_thread(run_together, APPEND, argvs)
    for r in results:
        assert r.returncode == 0, r.stderr
    stored = await rows(db)
    assert [r.seq for r in stored] == list(range(1, 2 * n + 1))
    assert sorted((r.actor, json.loads(r.data)["i"]) for r in stored) == sorted(
        (who, i) for who in "AB" for i in range(n)
    )
    report = await AuditLog(b"k").verify(db.engine)
    assert (report.ok, report.checked) == (True, 2 * n)


@pytest.mark.postgres
async def test_two_engines_with_many_tasks_never_fork_the_chain(pg_url: str) -> None:
    first, second = Database(pg_url), Database(pg_url)
    await first.upgrade()
    log = AuditLog(b"k")

    async def one(db: Database, i: int) -> None:
        async with db.transaction() as conn:
            await log.append(conn, "vote", actor=str(i), data={"i": i})
            await asyncio.sleep(0)  # let another task write or link meanwhile
        async with db.transaction() as conn:
            await log.link(conn)
            await asyncio.sleep(0)

    await asyncio.gather(*(one(first if i % 2 else second, i) for i in range(120)))
    report = await log.verify(first.engine)
    assert (report.ok, report.checked, report.unlinked) == (True, 120, 0)
    await first.aclose()
    await second.aclose()


@pytest.mark.postgres
async def test_writers_do_not_wait_on_each_other_and_link_in_commit_order(pg_url: str) -> None:
    """On PostgreSQL a writer's open transaction holds nothing another writer needs: the second
    commits while the first is still open, is linked first, and the first follows when it
    commits (the chain's order is the order entries became visible, never forked)."""
    db = Database(pg_url)
    await db.upgrade()
    log = AuditLog()
    async with db.transaction() as first:
        await log.append(first, "vote", actor="first", data={})
        async with asyncio.timeout(5):  # it used to wait here for the first to commit
            async with db.transaction() as second:
                await log.append(second, "vote", actor="second", data={})
        assert await link(db, log) == 1
    assert await link(db, log) == 1
    assert [r.actor for r in await rows(db)] == ["second", "first"]
    report = await log.verify(db.engine)
    assert (report.ok, report.checked) == (True, 2)
    await db.aclose()
