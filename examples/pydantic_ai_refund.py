"""Pydantic AI: an agent's refund tool, approved by a person through signoff.

The tool is declared `requires_approval=True`, Pydantic AI's own hook: when the model calls
it, the run ends with `DeferredToolRequests` instead of running it. `run_with_approvals` asks
signoff for each such call (`bot.client.arequest_approval`), then continues the run with the
answers: approved calls run with the decision's `args` (the approvers' edits applied), and a
rejection goes back to the model as the tool's result, with the approver's note.

The idempotency key is the conversation's id and the tool call's id, so running this again
after a crash (with the same message history) waits on the same approval, never a second.

Run it against `signoff demo` (its bot's URL and the service token the demo prints) with a
real model, e.g. `build_agent("openai:gpt-5")`; the test runs it with a FunctionModel.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.models import Model

from bot.client import arequest_approval

REFUNDS: list[dict[str, Any]] = []
"""Refunds sent (stands in for your payment provider's API)."""


def build_agent(model: Model | str) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        instructions="You help customers. Refunds need a person's approval.",
    )

    @agent.tool_plain(requires_approval=True)
    def send_refund(customer_id: str, amount: float, reason: str = "") -> str:
        """Refund `amount` to the customer. Irreversible: a person approves it first."""
        REFUNDS.append({"customer_id": customer_id, "amount": amount, "reason": reason})
        return f"refunded {amount} to {customer_id}"

    return agent


async def run_with_approvals(
    agent: Agent[None, str | DeferredToolRequests],
    prompt: str,
    *,
    url: str,
    token: str,
    conversation_id: str,
) -> str:
    """Run `agent` on `prompt`, asking signoff for every call that needs approval."""
    result = await agent.run(prompt)
    while isinstance(result.output, DeferredToolRequests):
        answers = DeferredToolResults()
        for call in result.output.approvals:
            decision = await arequest_approval(
                call.tool_name,
                call.args_as_dict(),
                url=url,
                token=token,
                requester="pydantic-ai-support",
                idempotency_key=f"{conversation_id}:{call.tool_call_id}",
            )
            answers.approvals[call.tool_call_id] = (
                ToolApproved(override_args=decision.args)
                if decision.approved
                else ToolDenied(
                    f"{decision.status} by {', '.join(decision.by)}: {decision.note}. This is "
                    "final for these arguments; do not ask again with the same ones."
                )
            )
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=answers
        )
    return result.output
