"""Refund a customer, after a person approves the amount.

The article's flow: draft the refund, ask for approval, then issue it or tell the customer it
was declined. The approver may edit the amount and the reason; the refund runs with the edited
values.

The approval rests on a fact, read by `refund_facts` (its check): whether the customer was
refunded before. The card shows it; if a refund to the same customer is made while the card
waits, the approved refund does not run and the approvers are asked again, shown what changed.
"""

from __future__ import annotations

from typing import Any, TypedDict

from graphs import END, START, StateGraph, once

from ..approvals.effects import Effects, services
from ..approvals.policy.schema import Field, Schema
from ..approvals.request import request_approval

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
"""An id: letters, digits and _ . : -, at most 64."""

INPUTS = Schema(
    {
        "customer_id": Field("string", required=True, pattern=_ID),
        "order_id": Field("string", pattern=_ID),
        "amount": Field(
            "number", required=True, exclusive_minimum=0, maximum=10_000, format="money"
        ),
        "reason": Field("string", max_length=500),
    }
)
"""What a run takes: a refund of a positive amount, at most 10,000, to a customer."""


class RefundState(TypedDict, total=False):
    customer_id: str
    order_id: str
    amount: float
    reason: str
    decision: dict[str, Any]
    outcome: str


def draft_refund(state: RefundState) -> dict[str, Any]:
    # Model calls or pricing rules that decide the amount would go here.
    return {"amount": round(float(state["amount"]), 2)}


def refund_facts(effects: Effects, customer_id: str) -> dict[str, str]:
    """The check of `send_refund`: the facts the approver decides on, read from the outside
    world's stand-in (the refunds recorded so far). It changes nothing."""
    done = [
        e for e in effects.list() if e["kind"] == "refund" and e.get("customer_id") == customer_id
    ]
    if not done:
        return {"refunded_before": "no"}
    total = sum(float(e.get("amount") or 0) for e in done)
    return {"refunded_before": f"yes, {len(done)} refund(s), {total:.2f} in all"}


def ask(state: RefundState, config: Any) -> dict[str, Any]:
    effects = services(config).effects
    decision = request_approval(
        "send_refund",
        {
            "customer_id": state["customer_id"],
            "order_id": state.get("order_id", ""),
            "amount": state["amount"],
            "reason": state.get("reason", ""),
        },
        title="Refund {amount:.2f} to {customer_id}",  # filled with the values that run
        dedupe_key=f"refund:{state['order_id']}" if state.get("order_id") else None,
        check=lambda args: refund_facts(effects, args["customer_id"]),
    )
    return {"decision": {**decision.to_json(), "args": decision.args}}


def route(state: RefundState) -> str:
    return "issue_refund" if state["decision"]["approved"] else "notify_rejection"


def issue_refund(state: RefundState, config: Any) -> dict[str, Any]:
    decision, svc = state["decision"], services(config)
    args = decision["args"]
    key = decision["idempotency_key"]
    # once(): if the process dies mid-refund, the next attempt reports "outcome unknown"
    # instead of refunding again; the key lets the provider refuse a duplicate too.
    once(
        f"refund:{key}",
        svc.effects.record,
        "refund",
        key,
        {"customer_id": args["customer_id"], "amount": args["amount"], "reason": args["reason"]},
        thread_id=svc.thread_id,
    )
    return {"outcome": f"refunded {args['amount']:.2f} to {args['customer_id']}"}


def notify_rejection(state: RefundState, config: Any) -> dict[str, Any]:
    decision, svc = state["decision"], services(config)
    key = f"declined:{decision['approval_id']}"
    once(
        key,
        svc.effects.record,
        "email",
        key,
        {"to": state["customer_id"], "text": "Your refund request was declined."},
        thread_id=svc.thread_id,
    )
    return {"outcome": f"declined ({decision['status']}): {decision['note'] or 'no reason given'}"}


def build() -> StateGraph:
    g = StateGraph(RefundState)
    g.add_node("draft_refund", draft_refund)
    g.add_node("request_approval", ask)
    g.add_node("issue_refund", issue_refund)
    g.add_node("notify_rejection", notify_rejection)
    g.add_edge(START, "draft_refund")
    g.add_edge("draft_refund", "request_approval")
    g.add_conditional_edges("request_approval", route, ["issue_refund", "notify_rejection"])
    g.add_edge("issue_refund", END)
    g.add_edge("notify_rejection", END)
    return g
