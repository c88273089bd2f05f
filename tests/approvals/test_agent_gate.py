"""An agent's tool calls gated by the policy (`approval_gate`), and the bundled `support_agent`,
through the governance core on a real database: what each approver decides is what runs, once,
and what the model is told.

The real-provider path runs the `openai` client against a chat-completions stand-in on
127.0.0.1 (aiohttp), which plays a tool-calling model from the conversation it is sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from bot.approvals import approval_gate, parse_policy
from bot.approvals.effects import services
from bot.approvals.errors import PolicyError
from bot.workflows.llm import ScriptedChat, model_from_env
from graphs.prebuilt import create_react_agent
from tests.kit.chat_api import ChatAPI, chat_api  # noqa: F401 -- a fixture
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

TICKET = {"ticket": "My kettle from order o-1001 arrived broken.", "customer_id": "cust_9"}


async def settle(kit: Kit) -> None:
    while await kit.app.run_jobs():
        pass


def tool_messages(values: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in values.get("messages", []) if isinstance(m, ToolMessage)]


# ---- support_agent: edit one call, reject the other, restart in the middle -----------------


async def test_support_agent_asks_once_per_call_and_runs_what_was_decided(kit: Kit) -> None:
    report = await kit.start("support_agent", TICKET)

    # one model turn proposed two gated calls: two approvals, with the calls' arguments
    assert report.status == "paused" and len(report.approvals) == 2
    refund, email = await kit.approvals(report.thread_id)
    assert (refund["action"], json.loads(refund["payload"])) == (
        "send_refund",
        {"customer_id": "cust_9", "order_id": "o-1001", "amount": 42.5,
         "reason": "My kettle from order o-1001 arrived broken."},
    )  # fmt: skip
    assert email["action"] == "email_customer"
    assert json.loads(email["payload"])["to"] == "cust_9@example.com"
    assert await kit.effects() == []  # the free lookup ran; nothing gated has

    # Alice approves the refund with an edit in one process ...
    await kit.app.decide(refund["id"], "U_ALICE", True, edits={"amount": 40.0})
    # ... the process dies; another one, on the same file, takes the rejection and resumes
    await kit.aclose()
    kit.app = kit.new_app(share_db=False)
    await kit.app.decide(email["id"], "U_BOB", False, note="we phone customers first")
    await settle(kit)

    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    outcome = json.loads(run["result"])["outcome"]
    assert "refunded 40.00 to cust_9 for order o-1001" in outcome
    assert "U_BOB rejected the call to email_customer" in outcome
    assert "we phone customers first" in outcome
    [done] = await kit.effects()
    assert (done["kind"], done["data"]["amount"]) == ("refund", 40.0)

    # what the model was told
    info = await kit.app.runs.graph("support_agent").aget_state(
        {"configurable": {"thread_id": report.thread_id}}
    )
    by_call = {m.tool_call_id: m for m in tool_messages(info.values)}
    assert by_call["call_refund"].status == "success"
    assert str(by_call["call_refund"].content).startswith(
        "Edited: U_ALICE approved the call to send_refund with changed arguments: "
        "amount=40.0 (you proposed 42.5)."
    )
    assert by_call["call_email"].status == "error"
    assert str(by_call["call_email"].content) == (
        "Rejected: U_BOB rejected the call to email_customer, so it did not run. "
        "Reason: we phone customers first"
    )

    # resumed again (a duplicate resume, a replay): the refund is not done twice
    await settle(kit)
    assert len(await kit.effects("refund")) == 1


# ---- the gate: free, unnamed and schema-refused tools -------------------------------------

# The probe is imported by its dotted path (as a user's workflow is), so it shares no globals
# with this module as pytest imported it: its model reads the calls to make from the user's
# message, and its tools record effects.


def _ran(config: RunnableConfig, what: str) -> str:
    svc = services(config)
    svc.effects.record("ran", f"{svc.thread_id}:{what}", {"what": what}, thread_id=svc.thread_id)
    return what


@tool
def lookup_order(order_id: str, config: RunnableConfig) -> str:
    """Look an order up."""
    return _ran(config, f"lookup {order_id}")


@tool
def send_refund(customer_id: str, amount: float, config: RunnableConfig) -> str:
    """Refund."""
    return _ran(config, f"refund {amount}")


@tool
def drop_table(name: str, config: RunnableConfig) -> str:
    """Drop a table."""
    return _ran(config, f"drop {name}")


@tool
def email_customer(to: str, subject: str, body: str, config: RunnableConfig) -> str:
    """Email a customer."""
    return _ran(config, f"email {to}")


def _probe_script(messages: Any) -> AIMessage:
    if not any(isinstance(m, AIMessage) for m in messages):
        return AIMessage("", tool_calls=json.loads(str(messages[0].content)))
    return AIMessage("done")


async def ran(kit: Kit) -> list[str]:
    return [e["data"]["what"] for e in await kit.effects("ran")]


async def start_probe(kit: Kit, *calls: dict[str, Any], workflow: str = "probe") -> Any:
    return await kit.start(workflow, {"messages": [("user", json.dumps(list(calls)))]})


def _model(messages: list[BaseMessage]) -> AIMessage:
    return _probe_script(messages)


PROBE_TOOLS = [lookup_order, send_refund, drop_table, email_customer]


def build_probe() -> Any:
    """A user's own agent: LangGraph's prebuilt agent (`version="v2"`, its default: a task per
    tool call), the gate in one call."""
    agent = create_react_agent(_model, PROBE_TOOLS, before_call=approval_gate())
    return agent.builder


def build_probe_v1() -> Any:
    """The same agent in LangGraph's `version="v1"` shape: one task for a turn's calls."""
    agent = create_react_agent(_model, PROBE_TOOLS, before_call=approval_gate(), version="v1")
    return agent.builder


PROBE_POLICY = (
    POLICY
    + """
[workflows.probe]
path = "tests.approvals.test_agent_gate:build_probe"
starters = ["@support"]

[workflows.probe_v1]
path = "tests.approvals.test_agent_gate:build_probe_v1"
starters = ["@support"]
"""
)


@pytest.fixture
def probe(kit: Kit) -> Kit:
    kit.app = kit.new_app(share_db=True, sink=kit.sink, policy_text=PROBE_POLICY)
    return kit


def _call(tool_name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": tool_name, "args": args, "id": call_id, "type": "tool_call"}


async def test_free_tools_run_and_unnamed_ones_are_denied_on_the_audit_log(probe: Kit) -> None:
    report = await start_probe(
        probe, _call("lookup_order", "c1", order_id="o-1"), _call("drop_table", "c2", name="x")
    )
    await settle(probe)

    run = await probe.run(report.thread_id)
    assert run["status"] == "completed", run["error"]
    assert await ran(probe) == ["lookup o-1"]  # the free tool ran once; the unnamed one never
    [denied] = await probe.audit("denied")
    assert denied["data"]["action"] == "drop_table"
    assert "not in the policy" in denied["data"]["reason"]
    [(approval)] = await probe.approvals(report.thread_id)
    assert (approval["action"], approval["status"]) == ("drop_table", "rejected")


async def test_a_call_the_schema_refuses_is_denied_and_the_model_told_why(probe: Kit) -> None:
    report = await start_probe(probe, _call("send_refund", "c1", customer_id="cust_9", amount=-5))
    await settle(probe)

    assert (await probe.run(report.thread_id))["status"] == "completed"
    assert await ran(probe) == []
    info = await probe.app.runs.graph("probe").aget_state(
        {"configurable": {"thread_id": report.thread_id}}
    )
    [told] = tool_messages(info.values)
    assert told.status == "error"
    assert str(told.content).startswith("Denied: signoff's policy refused the call to send_refund")
    assert "amount" in str(told.content)
    assert [e["data"]["action"] for e in await probe.audit("denied")] == ["send_refund"]


async def test_an_approved_call_without_edits_runs_as_proposed(probe: Kit) -> None:
    report = await start_probe(probe, _call("send_refund", "c1", customer_id="cust_9", amount=12.5))
    (approval_id,) = report.approvals
    await probe.app.decide(approval_id, "U_ALICE", True)
    await settle(probe)
    assert (await probe.run(report.thread_id))["status"] == "completed"
    assert await ran(probe) == ["refund 12.5"]


@pytest.mark.parametrize("workflow", ["probe", "probe_v1"])
async def test_each_gated_call_is_decided_on_its_own_in_both_agent_shapes(
    probe: Kit, workflow: str
) -> None:
    refund_call = _call("send_refund", "c2", customer_id="cust_9", amount=12.5)
    email_call = _call("email_customer", "c3", to="ann@example.com", subject="Hi", body="Sorry")
    report = await start_probe(
        probe, _call("lookup_order", "c1", order_id="o-1"), refund_call, email_call,
        workflow=workflow,
    )  # fmt: skip

    # one approval per gated call, with that call's arguments
    assert report.status == "paused" and len(report.approvals) == 2
    refund, email = await probe.approvals(report.thread_id)
    assert (refund["action"], json.loads(refund["payload"])) == (
        "send_refund", {"customer_id": "cust_9", "amount": 12.5},
    )  # fmt: skip
    assert email["action"] == "email_customer"
    # v2 ran the free lookup in its own task; v1's turn waits for every decision
    assert await ran(probe) == (["lookup o-1"] if workflow == "probe" else [])

    # Alice approves the refund in one process; the email still waits
    await probe.app.decide(refund["id"], "U_ALICE", True)
    await settle(probe)
    assert (await probe.run(report.thread_id))["status"] == "paused"
    # v2's refund ran as soon as it was approved; v1 runs the turn once all are decided
    assert await ran(probe) == (["lookup o-1", "refund 12.5"] if workflow == "probe" else [])
    # ... which dies; another one, on the same file, takes Bob's rejection and resumes
    await probe.aclose()
    probe.app = probe.new_app(share_db=False, policy_text=PROBE_POLICY)
    await probe.app.decide(email["id"], "U_BOB", False, note="we phone customers first")
    await settle(probe)

    run = await probe.run(report.thread_id)
    assert run["status"] == "completed", run["error"]
    assert sorted(await ran(probe)) == ["lookup o-1", "refund 12.5"]  # each once; no email
    info = await probe.app.runs.graph(workflow).aget_state(
        {"configurable": {"thread_id": report.thread_id}}
    )
    told = {m.tool_call_id: (m.status, str(m.content)) for m in tool_messages(info.values)}
    rejected = (
        "Rejected: U_BOB rejected the call to email_customer, so it did not run. "
        "Reason: we phone customers first"
    )
    assert told == {
        "c1": ("success", "lookup o-1"),
        "c2": ("success", "refund 12.5"),
        "c3": ("error", rejected),
    }
    # the whole conversation came back across the restart: the user's message, the model's
    # turn with its three calls, one answer per call, then the model's reply
    messages = info.values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "tool", "tool", "ai"]
    assert [c["id"] for c in messages[1].tool_calls] == ["c1", "c2", "c3"]
    assert messages[-1].content == "done"

    # resumed again (a duplicate resume, a replay): nothing runs twice
    await settle(probe)
    assert sorted(await ran(probe)) == ["lookup o-1", "refund 12.5"]


def test_the_gate_outside_signoff_needs_a_policy() -> None:
    gate = approval_gate()
    with pytest.raises(RuntimeError, match="pass one"):
        gate(_call("send_refund", "c1"), {}, {"configurable": {}})
    free = approval_gate(parse_policy('[agents]\nfree_tools = ["lookup_order"]\n'))
    assert free(_call("lookup_order", "c1"), {}, {}) is None


# ---- the policy's [agents] table ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[agents]\nfree_tool = []\n", "signoff.toml:2: agents.free_tool: unknown key; did you mean 'free_tools'?"),
        ('[agents]\nfree_tools = "lookup"\n', "signoff.toml:2: agents.free_tools: must be an array of tool names, got 'lookup'"),
        ('[agents]\nfree_tools = ["a b"]\n', "signoff.toml:2: agents.free_tools: tool names are 1 to 100"),
        (
            '[agents]\nfree_tools = ["send_refund"]\n[actions.send_refund]\napprovers = ["U_A"]\n',
            "signoff.toml:2: agents.free_tools: 'send_refund' is also an action",
        ),
    ],
)  # fmt: skip
def test_the_agents_table_is_checked_like_the_rest(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(text)
    assert str(e.value).startswith(message)


def test_a_policy_without_agents_has_no_free_tools() -> None:
    assert parse_policy('[actions.x]\napprovers = ["U_A"]\n').free_tools == frozenset()


# ---- the model, by configuration -------------------------------------------------------------


def test_with_no_key_the_scripted_model_is_used_and_half_a_configuration_is_refused() -> None:
    assert isinstance(model_from_env({}, _probe_script), ScriptedChat)
    with pytest.raises(RuntimeError, match="SIGNOFF_LLM_API_KEY is not"):
        model_from_env({"SIGNOFF_LLM_BASE_URL": "http://127.0.0.1:1/v1"}, _probe_script)
    with pytest.raises(RuntimeError, match="set SIGNOFF_LLM_MODEL too"):
        model_from_env({"SIGNOFF_LLM_API_KEY": "k"}, _probe_script)


async def test_a_chat_completions_api_drives_the_agent_through_the_openai_client(
    kit: Kit,
    chat_api: ChatAPI,  # noqa: F811 -- the fixture
) -> None:
    report = await kit.start(
        "support_agent", {"ticket": "Headphones from o-1002 are silent.", "customer_id": "cust_12"}
    )
    refund, email = await kit.approvals(report.thread_id)
    assert json.loads(refund["payload"])["amount"] == 129.0
    first = chat_api.requests[0]
    assert first["model"] == "stand-in"
    assert [t["function"]["name"] for t in first["tools"]] == [
        "lookup_order", "send_refund", "email_customer",
    ]  # fmt: skip
    assert "config" not in first["tools"][1]["function"]["parameters"]["properties"]

    await kit.app.decide(refund["id"], "U_ALICE", True)
    await kit.app.decide(email["id"], "U_BOB", False, note="not yet")
    await settle(kit)

    run = await kit.run(report.thread_id)
    assert run["status"] == "completed"
    outcome = json.loads(run["result"])["outcome"]
    assert outcome.startswith(
        "Sorry! refunded 129.00 to cust_12 for order o-1002 | Rejected: U_BOB"
    )
    last = chat_api.requests[-1]["messages"]
    assert [m["role"] for m in last] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "tool",
    ]  # fmt: skip
    assert [e["kind"] for e in await kit.effects()] == ["refund"]
