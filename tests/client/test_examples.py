"""The examples in examples/, each run against a real `signoff run` with its SDK's own test
model (no model, no network): the model calls the refund tool, signoff posts a card, a click
in the fake Slack approves it (or rejects it), and the tool runs (or the model is told why
not)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from bot.client import StillPending
from bot.slack.payloads import EDIT
from tests.client.external_kit import (
    BILLING_TOKEN,
    approvals_naming,
    approve,
    card_naming,
    reject,
)
from tests.kit.e2e import ALICE, CHANNEL, E2E, WAIT, BotProcess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> ModuleType:
    """examples/NAME.py, loaded afresh (its REFUNDS list empty)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def meanwhile(run: asyncio.Future[Any], person: Any) -> Any:
    """Let `person` (a coroutine: the clicks) act while `run` waits, then `run`'s result; a
    run that fails first (it never asked) fails the test with its own error."""
    clicks = asyncio.ensure_future(person)
    await asyncio.wait({run, clicks}, return_when=asyncio.FIRST_COMPLETED)
    if run.done() and not clicks.done():
        clicks.cancel()
        return run.result()
    await clicks
    async with asyncio.timeout(WAIT * 2):
        return await run


async def edit_and_approve(e2e: E2E, customer: str, amount: float) -> None:
    """Alice edits the amount in the card's modal and approves."""
    card = await card_naming(e2e, customer)
    assert (await e2e.slack.click(ALICE, CHANNEL, card["ts"], EDIT))["status"] == 200
    await e2e.wait(lambda s: s["views"].get(ALICE), "the edit modal")
    done = await e2e.slack.submit(ALICE, {"edit:amount": str(amount)})
    assert done["response"]["status"] == 200, done


# ---- Pydantic AI ---------------------------------------------------------------------------


def pydantic_ai_model(customer: str, amount: float) -> Any:
    """A FunctionModel that asks for one refund, then says what the tool answered."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"tool said: {last.content}")])
        args = {"customer_id": customer, "amount": amount}
        return ModelResponse(parts=[ToolCallPart("send_refund", args, tool_call_id="call-1")])

    return FunctionModel(reply)


async def test_pydantic_ai_runs_the_tool_with_the_approver_s_edit(
    e2e: E2E, bot: BotProcess
) -> None:
    ex = example("pydantic_ai_refund")
    agent = ex.build_agent(pydantic_ai_model("ex-pai-ok", 40.0))
    run = asyncio.ensure_future(
        ex.run_with_approvals(
            agent, "Refund order 7", url=bot.url, token=BILLING_TOKEN, conversation_id="conv-pai-1"
        )
    )
    assert (
        await meanwhile(run, edit_and_approve(e2e, "ex-pai-ok", 30.0))
        == "tool said: refunded 30.0 to ex-pai-ok"
    )
    assert ex.REFUNDS == [{"customer_id": "ex-pai-ok", "amount": 30.0, "reason": ""}]


async def test_pydantic_ai_tells_the_model_of_a_rejection_and_runs_nothing(
    e2e: E2E, bot: BotProcess
) -> None:
    ex = example("pydantic_ai_refund")
    agent = ex.build_agent(pydantic_ai_model("ex-pai-no", 500.0))
    run = asyncio.ensure_future(
        ex.run_with_approvals(
            agent, "Refund order 8", url=bot.url, token=BILLING_TOKEN, conversation_id="conv-pai-2"
        )
    )
    said = await meanwhile(run, reject(e2e, "ex-pai-no", "over the limit for this customer"))
    assert said.startswith("tool said: rejected by U0ALICE: over the limit for this customer.")
    assert ex.REFUNDS == []


# ---- OpenAI Agents -------------------------------------------------------------------------


def openai_agents_model(customer: str, amount: float) -> Any:
    """A scripted `agents.Model`: one call of send_refund, then the tool's answer as text."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class Scripted(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            items = args[1] if len(args) > 1 else kwargs["input"]
            outputs = [
                i["output"]
                for i in items
                if isinstance(i, dict) and i.get("type") == "function_call_output"
            ]
            if outputs:
                text = ResponseOutputText(
                    type="output_text", text=f"tool said: {outputs[-1]}", annotations=[]
                )
                out: list[Any] = [
                    ResponseOutputMessage(
                        type="message", id="msg-1", role="assistant", status="completed",
                        content=[text],
                    )
                ]  # fmt: skip
            else:
                arguments = f'{{"customer_id": "{customer}", "amount": {amount}}}'
                out = [
                    ResponseFunctionToolCall(
                        type="function_call", id="fc-1", call_id=f"call-{customer}",
                        name="send_refund", arguments=arguments, status="completed",
                    )
                ]  # fmt: skip
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the example runs without streaming")

    return Scripted()


@pytest.fixture
def no_tracing() -> Any:
    """The Agents SDK would send its traces to OpenAI: not from a test."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


async def test_openai_agents_runs_the_tool_once_approved(
    e2e: E2E, bot: BotProcess, no_tracing: None
) -> None:
    from agents import Runner

    ex = example("openai_agents_refund")
    agent = ex.build_agent(openai_agents_model("ex-oa-ok", 25.0), url=bot.url, token=BILLING_TOKEN)
    run = asyncio.ensure_future(Runner.run(agent, "Refund order 9"))
    result = await meanwhile(run, edit_and_approve(e2e, "ex-oa-ok", 20.0))
    assert result.final_output == "tool said: refunded 20.0 to ex-oa-ok"
    assert ex.REFUNDS == [{"customer_id": "ex-oa-ok", "amount": 20.0, "reason": ""}]


async def test_openai_agents_tells_the_model_of_a_rejection(
    e2e: E2E, bot: BotProcess, no_tracing: None
) -> None:
    from agents import Runner

    ex = example("openai_agents_refund")
    agent = ex.build_agent(openai_agents_model("ex-oa-no", 900.0), url=bot.url, token=BILLING_TOKEN)
    run = asyncio.ensure_future(Runner.run(agent, "Refund order 10"))
    result = await meanwhile(run, reject(e2e, "ex-oa-no", "needs a manager"))
    assert result.final_output.startswith("tool said: refund rejected by U0ALICE: needs a manager.")
    assert ex.REFUNDS == []


# ---- LangGraph -----------------------------------------------------------------------------


async def test_a_langgraph_node_waits_for_the_decision_and_the_graph_goes_on(
    e2e: E2E, bot: BotProcess
) -> None:
    ex = example("langgraph_refund")
    graph = ex.build_graph(url=bot.url, token=BILLING_TOKEN).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "lg-thread-1"}}
    run = asyncio.ensure_future(
        asyncio.to_thread(graph.invoke, {"customer_id": "ex-lg-ok", "amount": 15.0}, config)
    )
    final = await meanwhile(run, approve(e2e, "ex-lg-ok"))
    assert final["outcome"] == "refunded 15.0 to ex-lg-ok"


async def test_a_langgraph_thread_invoked_again_waits_on_the_same_approval(
    e2e: E2E, bot: BotProcess
) -> None:
    ex = example("langgraph_refund")
    impatient = ex.build_graph(url=bot.url, token=BILLING_TOKEN, wait=0).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "lg-thread-2"}}
    state = {"customer_id": "ex-lg-again", "amount": 16.0}
    with pytest.raises(StillPending) as first:
        await asyncio.to_thread(impatient.invoke, state, config)
    patient = ex.build_graph(url=bot.url, token=BILLING_TOKEN).compile(checkpointer=InMemorySaver())
    run = asyncio.ensure_future(asyncio.to_thread(patient.invoke, state, config))
    final = await meanwhile(run, approve(e2e, "ex-lg-again"))
    assert first.value.idempotency_key == "langgraph:lg-thread-2:send_refund"
    assert [a["id"] for a in approvals_naming(e2e, "ex-lg-again")] == [
        final["decision"]["approval_id"]
    ]  # the second invocation waited on the approval the first one opened
    assert final["outcome"] == "refunded 16.0 to ex-lg-again"
