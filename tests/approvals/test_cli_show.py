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


async def test_an_agent_runs_messages_read_as_role_and_content(kit: Kit) -> None:
    """A support_agent run's messages, in `show --json` and in the stored result, are their
    fields (type, content, tool calls), not the `str()` of langchain objects."""
    ticket = "My kettle from order o-1001 arrived broken."
    report = await kit.start("support_agent", {"ticket": ticket, "customer_id": "cust_9"})
    refund, email = await kit.approvals(report.thread_id)
    await kit.app.decide(refund["id"], "U_ALICE", True)
    await kit.app.decide(email["id"], "U_BOB", False, note="we phone customers first")
    while await kit.app.run_jobs():
        pass

    shown = await asyncio.to_thread(kit.cli, "show", report.thread_id, "--json")
    assert shown.returncode == 0, shown.stderr
    out = json.loads(shown.stdout)
    assert out["status"] == "completed"
    messages = out["values"]["messages"]
    assert messages[0]["type"] == "human" and ticket in messages[0]["content"]
    calls = [c for m in messages if m["type"] == "ai" for c in m.get("tool_calls", [])]
    assert {c["name"] for c in calls} >= {"send_refund", "email_customer"}
    [proposed] = [c for c in calls if c["name"] == "send_refund"]
    assert proposed["args"]["order_id"] == "o-1001"
    tools = {m["tool_call_id"]: m for m in messages if m["type"] == "tool"}
    assert tools[email_call(calls)]["status"] == "error"
    assert "U_BOB rejected the call to email_customer" in tools[email_call(calls)]["content"]
    reply = messages[-1]
    assert reply["type"] == "ai" and reply["content"] == out["values"]["outcome"]

    run = await kit.run(report.thread_id)
    stored = json.loads(run["result"])
    assert stored["messages"] == messages  # the stored result reads the same


def email_call(calls: list[dict[str, object]]) -> object:
    return next(c["id"] for c in calls if c["name"] == "email_customer")
