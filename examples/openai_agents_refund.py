"""OpenAI Agents: an agent's refund tool that asks a person through signoff before it acts.

The tool itself asks (`bot.client.arequest_approval`) and runs the refund only when it is
approved, with the decision's `args`: an approver may have edited the amount, which the SDK's
own `needs_approval` hook could not carry (its `approve()` takes no arguments). A rejection
is the tool's result, so the model reads the approver's note and does not try again.

The idempotency key is derived from the tool call's id, so a retry of the same call (the SDK's
or yours, after a crash with the same conversation) waits on the same approval.

Run it against `signoff demo` (its bot's URL and the service token the demo prints) with a
real model; the test runs it with a scripted `agents.Model`.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, RunContextWrapper, function_tool
from agents.models.interface import Model
from agents.tool_context import ToolContext

from bot.client import arequest_approval

REFUNDS: list[dict[str, Any]] = []
"""Refunds sent (stands in for your payment provider's API)."""


def build_agent(model: Model | str, *, url: str, token: str) -> Agent[Any]:
    @function_tool
    async def send_refund(
        ctx: RunContextWrapper[Any], customer_id: str, amount: float, reason: str = ""
    ) -> str:
        """Refund `amount` to the customer. Irreversible: a person approves it first.

        Args:
            customer_id: The customer's id.
            amount: How much to refund.
            reason: Why, for the approver.
        """
        call_id = ctx.tool_call_id if isinstance(ctx, ToolContext) else ""
        decision = await arequest_approval(
            "send_refund",
            {"customer_id": customer_id, "amount": amount, "reason": reason},
            url=url,
            token=token,
            requester="openai-agents-support",
            idempotency_key=f"openai-agents:{call_id}" if call_id else None,
        )
        if not decision.approved:
            return (
                f"refund {decision.status} by {', '.join(decision.by)}: {decision.note}. This is "
                "final for these arguments; do not ask again with the same ones."
            )
        REFUNDS.append(decision.args)
        return f"refunded {decision.args['amount']} to {decision.args['customer_id']}"

    return Agent(
        name="support",
        instructions="You help customers. Refunds need a person's approval.",
        tools=[send_refund],
        model=model,
    )
