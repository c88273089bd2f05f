"""`signoff show` prints a long value's start and says it was cut (and where the whole is),
never a cut JSON that reads as the value; `--json` has it whole."""

from __future__ import annotations

import asyncio
import json

from tests.kit.signoff import Kit


async def test_a_long_value_is_said_to_be_cut_and_json_has_it_whole(kit: Kit) -> None:
    note = "a" * 450
    report = await kit.ask("deploy", {"service": "api", "note": note})
    shown = await asyncio.to_thread(kit.cli, "show", report.thread_id)
    assert shown.returncode == 0, shown.stderr
    (args_line,) = [line for line in shown.stdout.splitlines() if line.startswith("  args = ")]
    whole = json.dumps({"service": "api", "note": note})
    assert args_line == (
        f"  args = {whole[:200]}… (cut: {len(whole) - 200} more characters; "
        f"`signoff show {report.thread_id} --json` has it all)"
    )
    (short,) = [line for line in shown.stdout.splitlines() if line.startswith("  action = ")]
    assert short == '  action = "deploy"'
    full = await asyncio.to_thread(kit.cli, "show", report.thread_id, "--json")
    assert json.loads(full.stdout)["values"]["args"]["note"] == note
