"""A field the policy marks `secret` never leaves the run's checkpoint in clear: not as a field,
and not quoted in what is derived from it (a title, the run's outcome, an error message).

Each run is started with a card number no other text contains; once it has been approved (and
completed or failed), every table but the checkpoint's, the database file's bytes, every Web API
call the bot made to the fake Slack, Home, `/agent status` and the CLI are searched for it.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

from bot.approvals.request import request_approval
from bot.sandbox.processes import CHANNEL, sqlite_url
from bot.slack.payloads import APPROVE
from graphs import END, START, StateGraph
from tests.kit.flows import env
from tests.kit.scenario import Scenario, running_scenario

POLICY = """
[workflows.charge]
path = "tests.slack.test_secrets:build_charge"
starters = ["U0CAROL"]

[actions.charge_card]
title = "Charge {amount} to card {card_number} ({note})"
tier = "high"
approvers = ["@approvers"]
secret = ["card_number"]
editable = ["amount"]

[actions.charge_card.args]
card_number = { type = "string", required = true, pattern = "[0-9]{16}" }
amount = { type = "number", required = true, exclusive_minimum = 0, maximum = 1000 }
note = { type = "string" }
"""


class ChargeState(TypedDict, total=False):
    card_number: str
    amount: float
    own_title: bool
    fail: bool
    outcome: str
    charged: dict[str, Any]


def _charge(state: ChargeState) -> dict[str, Any]:
    card = state["card_number"]
    d = request_approval(
        "charge_card",
        {"card_number": card, "amount": state["amount"], "note": f"card {card} on file"},
        title=f"Charge {state['amount']} to {card}" if state.get("own_title") else None,
    )
    if not d.approved:
        return {"outcome": "declined"}
    if state.get("fail"):
        raise RuntimeError(f"the bank declined card {card}")
    return {"outcome": f"charged {d.args['amount']} to {card}", "charged": {"to": card}}


def build_charge() -> StateGraph:
    g = StateGraph(ChargeState)
    g.add_node("charge", _charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    return g


def leaks(db: Path, marker: str) -> list[str]:
    """Where `marker` is found in the database outside the checkpoint tables, as
    `table.column`, and `file` if the bytes of a copy without them (vacuumed) hold it."""
    found = []
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        assert "checkpoint_blobs" in tables, tables
        in_checkpoint = 0
        for table in tables:
            columns = [r[1] for r in conn.execute(f'pragma table_info("{table}")')]
            for column in columns:
                hits = conn.execute(
                    f'select count(*) from "{table}" where instr(cast("{column}" as blob), ?) > 0',
                    (marker.encode(),),
                ).fetchone()[0]
                if hits and table.startswith("checkpoint_"):
                    in_checkpoint += hits
                elif hits:
                    found.append(f"{table}.{column}")
        assert in_checkpoint, "the search finds nothing: the checkpoint holds the card in clear"
    copy = db.with_name("copy.db")
    shutil.copyfile(db, copy)
    for suffix in ("-wal", "-shm"):
        if db.with_name(db.name + suffix).exists():
            shutil.copyfile(db.with_name(db.name + suffix), copy.with_name(copy.name + suffix))
    with sqlite3.connect(copy) as conn:
        for (table,) in conn.execute(
            "select name from sqlite_master where type='table' and name like 'checkpoint_%'"
        ).fetchall():
            conn.execute(f'delete from "{table}"')
    with sqlite3.connect(copy) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
        conn.execute("vacuum")
    if marker.encode() in copy.read_bytes():
        found.append("file")
    return found


def cli(bot: Scenario, directory: Path, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=env(sqlite_url(directory), directory / "policy.toml"),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


async def test_a_secret_is_never_in_clear_outside_the_checkpoint(tmp_path: Path) -> None:
    card = "4" + "".join(secrets.choice("0123456789") for _ in range(15))
    async with running_scenario(tmp_path, POLICY) as bot:
        threads = []
        for own_title, fail in ((False, False), (True, False), (False, True)):
            report = await bot.signoff.start(
                "charge",
                {"card_number": card, "amount": 12.5, "own_title": own_title, "fail": fail},
                requester="U0CAROL",
                channel=CHANNEL,
            )
            (approval_id,) = report.approvals
            await bot.settle()
            approval = await bot.signoff.get(approval_id)
            answer = await bot.slack.click("alice", CHANNEL, approval.message_ts or "", APPROVE)
            assert answer.status == 200
            await bot.settle()
            threads.append(report.thread_id)
        runs = [await bot.signoff.run_info(t) or {} for t in threads]
        assert [r["status"] for r in runs] == ["completed", "completed", "failed"]
        assert json.loads(runs[0]["result"])["outcome"] == "charged 12.5 to •••"
        assert "the bank declined card •••" in runs[2]["error"]

        await bot.slack.open_home("alice")
        answers = [await bot.slack.command("dave", CHANNEL, f"status {t}") for t in threads]
        answers.append(await bot.slack.command("alice", CHANNEL, "status"))
        await bot.signoff.link_audit()
        said = json.dumps(
            [[c.to_json() for c in bot.slack.calls], [a.body for a in answers]],
            ensure_ascii=False,
        )
        assert "charged 12.5 to •••" in said  # the completion was told, hidden
        assert card not in said

        printed = [
            cli(bot, tmp_path, "audit", "export"),
            cli(bot, tmp_path, "show", threads[0]),
            cli(bot, tmp_path, "show", threads[2], "--json"),
        ]
        assert "charged 12.5 to •••" in printed[1]
        assert not [p for p in printed if card in p]

        db = tmp_path / "signoff.db"
    assert leaks(db, card) == []
