"""The `signoff` command: the refund flow end to end in separate processes, `audit verify` on a
tampered log, redaction of secret fields in what the CLI prints and stores, and one-line errors.
SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.cli import main as cli_main
from tests.kit.signoff import Kit

REFUND_A = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}
REFUND_B = {"customer_id": "cust_2", "order_id": "o-2", "amount": 80.0, "reason": "late"}


def start_args(data: dict[str, Any]) -> list[str]:
    return ["start", "refund", "--as", "U_CAROL", "--json", "--input", json.dumps(data)]


def together(kit: Kit, *argvs: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Several `signoff` processes at once (they share nothing but the database)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bot.cli", *argv],
            env=kit.env(),
            cwd=kit.tmp_path,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for argv in argvs
    ]
    out = []
    for proc, argv in zip(procs, argvs):
        stdout, stderr = proc.communicate(timeout=90)
        out.append(subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr))
    return out


async def test_refund_end_to_end_in_separate_processes(kit: Kit) -> None:
    a, b = await asyncio.to_thread(together, kit, start_args(REFUND_A), start_args(REFUND_B))
    started = []
    for r in (a, b):
        assert r.returncode == 0, r.stderr
        started.append(json.loads(r.stdout))
    assert [s["status"] for s in started] == ["paused", "paused"]
    (approval_a,), (approval_b,) = started[0]["approvals"], started[1]["approvals"]

    listed = await asyncio.to_thread(kit.cli, "pending", "--json")
    assert listed.returncode == 0, listed.stderr
    pending = {p["id"]: p for p in json.loads(listed.stdout)["approvals"]}
    assert set(pending) == {approval_a, approval_b}
    assert pending[approval_a]["args"] == REFUND_A
    assert (pending[approval_a]["status"], pending[approval_a]["approvers"]) == (
        "pending",
        ["@finance"],
    )
    assert pending[approval_b]["thread_id"] == started[1]["thread_id"]

    approve, reject = await asyncio.to_thread(
        together,
        kit,
        ["approve", approval_a, "--as", "U_ALICE", "--note", "fine"],
        ["reject", approval_b, "--as", "U_BOB", "--note", "past the return window"],
    )
    assert approve.returncode == 0, approve.stderr
    assert approve.stdout.splitlines() == [
        f"approval {approval_a}: approved by U_ALICE",
        f"thread {started[0]['thread_id']}: completed: refunded 42.50 to cust_1",
    ]
    assert reject.returncode == 0, reject.stderr
    assert reject.stdout.splitlines()[-1] == (
        f"thread {started[1]['thread_id']}: completed: declined (rejected): past the return window"
    )

    refunds = await kit.effects("refund")
    assert [(e["thread_id"], e["data"]["amount"]) for e in refunds] == [
        (started[0]["thread_id"], 42.5)
    ]
    emails = await kit.effects("email")
    assert [(e["thread_id"], e["data"]["to"]) for e in emails] == [
        (started[1]["thread_id"], "cust_2")
    ]

    # A late click from another process changes nothing and says who decided.
    late = await asyncio.to_thread(kit.cli, "approve", approval_a, "--as", "U_BOB")
    assert late.returncode == 1
    assert late.stdout == ""
    assert late.stderr.startswith(
        f"signoff: approval {approval_a} was approved already by U_ALICE at "
    )
    assert len(late.stderr.strip().splitlines()) == 1
    assert len(await kit.effects("refund")) == 1
    assert await kit.app.pending() == []


# ---- in-process CLI (same code as the `signoff` script, without a process per call) ---------


class CLI:
    def __init__(
        self, kit: Kit, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        for key, value in kit.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(kit.tmp_path)
        self.capsys = capsys

    async def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = await asyncio.to_thread(self._main, list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    @staticmethod
    def _main(argv: list[str]) -> int:
        try:
            return cli_main(argv)
        except SystemExit as e:  # argparse's way out, as the `signoff` script exits
            return e.code if isinstance(e.code, int) else 1


@pytest.fixture
def cli(kit: Kit, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CLI:
    return CLI(kit, monkeypatch, capsys)


async def test_listing_commands_print_a_table_or_json(kit: Kit, cli: CLI) -> None:
    code, out, _ = await cli("db", "upgrade")
    assert code == 0 and out.startswith("database ") and out.rstrip().endswith("is up to date")
    assert await cli("pending") == (0, "nothing is waiting for approval\n", "")
    code, out, err = await cli("pending", "--json")
    assert (code, json.loads(out), err) == (0, {"approvals": [], "undelivered": []}, "")

    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    code, out, _ = await cli("pending")
    header, row = out.splitlines()
    assert header.split() == [
        "APPROVAL",
        "ACTION",
        "TIER",
        "REQUESTER",
        "VOTES",
        "AGE",
        "APPROVERS",
        "THREAD",
    ]
    assert row.split()[:5] == [approval_id, "send_refund", "high", "U_CAROL", "0/1"]
    assert row.split()[-2:] == ["@finance", report.thread_id]

    code, out, _ = await cli("show", report.thread_id)
    lines = out.splitlines()
    assert lines[0] == f"thread {report.thread_id}: paused"
    assert "  waiting to run: request_approval" in lines
    assert f"  approval {approval_id} send_refund: pending" in lines

    code, out, _ = await cli("audit", "export")
    exported = [json.loads(line) for line in out.splitlines()]
    assert [e["kind"] for e in exported] == ["run_started", "requested"]
    assert exported[1]["approval_id"] == approval_id and exported[1]["data"]["args"] == REFUND_A
    code, out, err = await cli("audit", "export", "--out", "audit.jsonl")
    assert (code, out, err.strip()) == (0, "", "wrote 2 events to audit.jsonl")
    assert (kit.tmp_path / "audit.jsonl").read_text().splitlines() == [
        json.dumps(e, ensure_ascii=False, sort_keys=True) for e in exported
    ]


async def test_errors_are_one_line_and_a_non_zero_exit(kit: Kit, cli: CLI) -> None:
    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    cases = [
        (["approve", "apr_nope", "--as", "U_ALICE"], "signoff: no approval has id 'apr_nope'"),
        (["approve", approval_id, "--as", "U_CAROL"], "signoff: you asked for this"),
        (["approve", approval_id, "--as", "U_DAVE"], "signoff: you (U_DAVE) are not an approver"),
        (
            ["approve", approval_id, "--as", "U_ALICE", "--edit", "customer_id=x"],
            "signoff: 'customer_id' cannot be edited",
        ),
        (["start", "nope", "--input", "{}"], "signoff: no workflow named 'nope'"),
        (["show", "no-such-thread"], "signoff: no run has thread id 'no-such-thread'"),
        (
            ["start", "refund", "--thread-id", report.thread_id, "--input", json.dumps(REFUND_B)],
            f"signoff: thread {report.thread_id!r} exists already",
        ),
    ]
    for argv, message in cases:
        code, out, err = await cli(*argv)
        assert (code, out) == (1, ""), argv
        assert err.startswith(message), (argv, err)
        assert len(err.strip().splitlines()) == 1, err
    assert (await kit.app.get(approval_id)).votes == ()


async def test_a_command_written_wrong_is_a_usage_error_and_records_nothing(
    kit: Kit, cli: CLI
) -> None:
    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    cases = [
        (
            ["approve", approval_id, "--as", "U_ALICE", "--edit", "amount"],
            "signoff approve: error: argument --edit: 'amount': write it as field=value",
        ),
        (
            ["start", "refund", "--input", "{nope"],
            "signoff start: error: argument --input: not valid JSON",
        ),
        (
            ["start", "refund", "--input", "[1, 2]"],
            "signoff start: error: argument --input: must be a JSON object",
        ),
        (
            ["audit", "verify", "--anchor", "head"],
            "signoff audit verify: error: argument --anchor: 'head': write it as SEQ:HASH",
        ),
    ]
    for argv, message in cases:
        code, out, err = await cli(*argv)
        assert (code, out) == (2, ""), argv
        lines = err.strip().splitlines()
        assert lines[0].startswith(f"usage: {message.split(':')[0]} "), (argv, err)
        assert lines[-1].startswith(message), (argv, err)
    assert (await kit.app.get(approval_id)).votes == ()
    assert [a.id for a in await kit.app.pending()] == [approval_id]


async def test_bad_settings_are_one_line_errors(
    kit: Kit, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad_policy = kit.tmp_path / "bad.toml"
    bad_policy.write_text('[actions.x]\ntier = "hgh"\napprovers = ["U_A"]\n')
    bad_path = kit.tmp_path / "bad_path.toml"
    bad_path.write_text('[workflows.mine]\npath = "no_such_module_here:build"\n')
    cases = [
        (
            {"SIGNOFF_POLICY": str(bad_policy)},
            f"signoff: {bad_policy}:2: actions.x.tier: must be one of low, medium, high",
        ),
        (
            {"SIGNOFF_POLICY": str(bad_path)},
            "signoff: workflow 'mine': cannot import 'no_such_module_here:build'",
        ),
        (
            {"SIGNOFF_DATABASE_URL": "mysql://u@h/db"},
            "signoff: unsupported database URL 'mysql://u@h/db'",
        ),
    ]
    for env, message in cases:
        with monkeypatch.context() as m:
            for key, value in env.items():
                m.setenv(key, value)
            code, out, err = await cli("pending")
        assert (code, out) == (1, ""), env
        assert err.startswith(message), err
        assert len(err.strip().splitlines()) == 1, err


async def test_edit_then_approve_from_the_cli(kit: Kit, cli: CLI) -> None:
    report = await kit.start("refund", REFUND_A)
    (approval_id,) = report.approvals
    code, out, err = await cli(
        "approve", approval_id, "--as", "U_ALICE", "--edit", "amount=40", "--note", "partial"
    )
    assert code == 0, err
    assert out.splitlines()[-1] == f"thread {report.thread_id}: completed: refunded 40.00 to cust_1"
    assert [e["data"]["amount"] for e in await kit.effects("refund")] == [40.0]
    code, out, _ = await cli("show", report.thread_id, "--json")
    shown = json.loads(out)
    assert shown["status"] == "completed"
    (vote,) = shown["approvals"][0]["votes"]
    assert (vote["user"], vote["edits"], vote["note"]) == ("U_ALICE", {"amount": 40.0}, "partial")


# ---- audit verify -------------------------------------------------------------------------


async def tamper(kit: Kit, sql: str, **params: Any) -> None:
    async with kit.db.transaction() as conn:
        await conn.execute(sa.text(sql), params)


async def test_audit_verify_finds_an_altered_a_deleted_and_a_swapped_row(
    kit: Kit, cli: CLI
) -> None:
    report = await kit.start("refund", REFUND_A)
    await kit.app.decide(report.approvals[0], "U_ALICE", True, note="ok")
    await kit.app.run_jobs(("resume",))
    rows = await kit.audit()
    assert len(rows) == 6
    code, out, err = await cli("audit", "verify")
    assert (code, err) == (0, "")
    assert out.startswith("audit log intact: 6 events verified")

    # Altered: the vote now says Bob. The real `signoff` process exits non-zero too.
    await tamper(kit, "UPDATE audit_events SET actor = 'U_BOB' WHERE seq = 3")
    proc = await asyncio.to_thread(kit.cli, "audit", "verify")
    assert proc.returncode == 1 and proc.stdout == ""
    assert (
        proc.stderr.strip()
        == "audit log BROKEN: row 3 was altered: its hash does not match its content"
    )
    await tamper(kit, "UPDATE audit_events SET actor = 'U_ALICE' WHERE seq = 3")
    assert (await cli("audit", "verify"))[0] == 0

    # Deleted: the approval disappears from the record.
    async with kit.db.read() as conn:
        saved = dict(
            (await conn.execute(sa.select(t.audit_events).where(t.audit_events.c.seq == 4)))
            .mappings()
            .one()
        )
    await tamper(kit, "DELETE FROM audit_events WHERE seq = 4")
    code, out, err = await cli("audit", "verify")
    assert (code, out) == (1, "")
    assert "row 4 is missing" in err and "row 5" in err
    async with kit.db.transaction() as conn:
        await conn.execute(t.audit_events.insert().values(**saved))
    assert (await cli("audit", "verify"))[0] == 0

    # Swapped: the vote and the approval change places (each row keeps its seq).
    cols = ["at", "kind", "approval_id", "thread_id", "actor", "data", "prev_hash", "hash"]
    three, four = rows[2], rows[3]
    for seq, row in ((3, four), (4, three)):
        values = {c: row[c] for c in cols}
        values["data"] = json.dumps(values["data"], sort_keys=True, separators=(",", ":"))
        await tamper(
            kit,
            f"UPDATE audit_events SET {', '.join(f'{c} = :{c}' for c in cols)} WHERE seq = :seq",
            seq=seq,
            **values,
        )
    code, out, err = await cli("audit", "verify")
    assert (code, out) == (1, "")
    assert err.strip() == "audit log BROKEN: row 3 holds the content of row 4: rows were reordered"


# ---- redaction ------------------------------------------------------------------------------

CARD = "4111111111111111"


async def test_a_secret_field_is_never_stored_or_printed_in_clear(kit: Kit, cli: CLI) -> None:
    code, out, err = await cli(
        "start",
        "ask",
        "--as",
        "U_CAROL",
        "--input",
        json.dumps({"action": "charge_card", "args": {"card_number": CARD, "amount": 12.0}}),
    )
    assert code == 0, err
    (a,) = await kit.approvals()
    payload = json.loads(a["payload"])
    assert payload["card_number"]["redacted"].startswith("sha256:")
    assert payload["amount"] == 12.0

    outputs = [out]
    for argv in (
        ["pending"],
        ["pending", "--json"],
        ["show", a["thread_id"]],
        ["show", a["thread_id"], "--json"],
        ["approve", a["id"], "--as", "U_ALICE", "--edit", "amount=11"],
        ["show", a["thread_id"]],
        ["show", a["thread_id"], "--json"],
        ["audit", "export"],
    ):
        code, out, err = await cli(*argv)
        assert code == 0, (argv, err)
        outputs.append(out + err)
    for text in outputs:
        assert CARD not in text
    assert "sha256:" in outputs[2]  # pending --json shows the hash

    # Nor in the governance tables (only the run's checkpoint keeps it), nor in the events
    # that become Slack cards.
    kit.clock.advance(60)  # to when the CLI (on the real clock) queued them
    await kit.app.run_jobs(("event",))
    assert [e.kind for e in kit.sink.events] == ["approval_requested", "decided", "run_completed"]
    assert CARD not in json.dumps([e.data for e in kit.sink.events])
    for table in (t.approvals, t.votes, t.audit_events, t.runs, t.jobs):
        for row in await kit.rows(sa.select(table)):
            assert CARD not in json.dumps(row, default=str), table.name
    # The action itself ran with the real value and the edited amount.
    (act,) = await kit.effects("act")
    assert act["data"] == {"card_number": CARD, "amount": 11.0}
