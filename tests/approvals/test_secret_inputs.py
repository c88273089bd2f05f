"""A workflow input its `INPUTS` schema marks `secret` is never in clear outside the run's
checkpoint, from the moment the run is started, before it pauses or the concealer could learn it
from an approval: not in `runs.input`, not on the audit log, not in any other table or in the
database file's bytes; nor once the run has been approved and ended, though the input becomes the
action's secret argument under another name and is quoted in texts the run writes."""

from __future__ import annotations

import asyncio
import importlib
import json
import secrets
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any, TypedDict

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.policy.schema import Field, Schema
from bot.approvals.request import request_approval
from graphs import END, START, StateGraph
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

WORKFLOW = """
[workflows.pay_by_card]
path = "tests.approvals.test_secret_inputs:build"
starters = ["U_CAROL"]
"""

INPUTS = Schema(
    {
        "card": Field("string", required=True, pattern="[0-9]{16}", secret=True),
        "amount": Field("number", required=True, exclusive_minimum=0, maximum=1000),
    }
)
"""The card comes in as `card`, a name the policy's `secret` (card_number) does not know."""

HOLD = threading.Event()
"""Set by the test to let a started run go on past its first step."""


class PayState(TypedDict, total=False):
    card: str
    amount: float
    outcome: str


def _hold(state: PayState) -> dict[str, Any]:
    assert HOLD.wait(60), "the test never let the run go on"
    return {}


def _pay(state: PayState) -> dict[str, Any]:
    card = state["card"]
    d = request_approval(
        "charge_card", {"card_number": card, "amount": state["amount"], "note": f"card {card}"}
    )
    return {"outcome": f"charged {state['amount']} to {card}" if d.approved else "declined"}


def build() -> StateGraph:
    g = StateGraph(PayState)
    g.add_node("hold", _hold)
    g.add_node("pay", _pay)
    g.add_edge(START, "hold")
    g.add_edge("hold", "pay")
    g.add_edge("pay", END)
    return g


def found_in(db: Path, marker: str) -> tuple[list[str], int]:
    """Where `marker` is outside the checkpoint tables, as `table.column` (and `file` if the
    bytes of a vacuumed copy without those tables hold it), and in how many checkpoint rows
    (which hold the run's state in clear: what shows the search finds it)."""
    found: list[str] = []
    in_checkpoint = 0
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        for table in tables:
            for column in [r[1] for r in conn.execute(f'pragma table_info("{table}")')]:
                hits = conn.execute(
                    f'select count(*) from "{table}" where instr(cast("{column}" as blob), ?) > 0',
                    (marker.encode(),),
                ).fetchone()[0]
                if hits and table.startswith("checkpoint"):
                    in_checkpoint += hits
                elif hits:
                    found.append(f"{table}.{column}")
    copy = db.with_name("copy.db")
    for suffix in ("", "-wal", "-shm"):
        if db.with_name(db.name + suffix).exists():
            shutil.copyfile(db.with_name(db.name + suffix), copy.with_name(copy.name + suffix))
    with sqlite3.connect(copy) as conn:
        names = conn.execute(
            "select name from sqlite_master where type='table' and name like 'checkpoint%'"
        ).fetchall()
        for (table,) in names:
            conn.execute(f'delete from "{table}"')
    with sqlite3.connect(copy) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
        conn.execute("vacuum")
    if marker.encode() in copy.read_bytes():
        found.append("file")
    return found, in_checkpoint


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_secret_input_is_hidden_from_the_start(
    kit: Kit, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    card = "5" + "".join(secrets.choice("0123456789") for _ in range(15))
    app = kit.new_app(policy_text=POLICY + WORKFLOW)
    db = tmp_path / "signoff.db"
    # The module as the workflow loader imported it (pytest may import this file by another name).
    hold = importlib.import_module("tests.approvals.test_secret_inputs").HOLD
    hold.clear()
    started = asyncio.create_task(
        app.start("pay_by_card", {"card": card, "amount": 12.5}, requester="U_CAROL")
    )
    try:
        for _ in range(600):  # the run is started (recorded) and held at its first step
            outside, in_checkpoint = found_in(db, card)
            if in_checkpoint and await kit.rows(sa.select(t.runs)):
                break
            await asyncio.sleep(0.05)
        assert in_checkpoint, "the search finds nothing: the checkpoint holds the card in clear"
        (run,) = await kit.rows(sa.select(t.runs))
        assert run["status"] == "running"
        assert '"card":{"redacted":"' in run["input"].replace(" ", "")
        assert outside == []
    finally:
        hold.set()
    report = await started
    assert report.status == "paused"
    (approval_id,) = report.approvals
    await app.decide(approval_id, "U_ALICE", True)
    await app.run_jobs(("resume",))
    done = await kit.run(report.thread_id)
    assert done["status"] == "completed"
    assert json.loads(done["result"])["outcome"] == "charged 12.5 to •••"
    await app.link_audit()
    assert found_in(db, card)[0] == []
    assert card not in caplog.text
