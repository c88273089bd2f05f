"""Pay a vendor invoice: approve the invoice, then release the payment (two approvals).

The second approval is asked only after the first is granted; either rejection ends the run
without paying.
"""

from __future__ import annotations

from typing import Any, TypedDict

from graphs import END, START, StateGraph, once

from ..approvals.effects import services
from ..approvals.policy.schema import Field, Schema
from ..approvals.request import request_approval

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
"""An id: letters, digits and _ . : -, at most 64."""
_ID_WORDS = "letters, digits and _ . : -, no spaces"

INPUTS = Schema(
    {
        "vendor": Field(
            "string", required=True, pattern=_ID, description=f"the vendor's id: {_ID_WORDS}"
        ),
        "invoice_id": Field(
            "string", required=True, pattern=_ID, description=f"the invoice's id: {_ID_WORDS}"
        ),
        "amount": Field(
            "number", required=True, exclusive_minimum=0, maximum=1_000_000, format="money"
        ),
    }
)
"""What a run takes: the vendor, the invoice and its positive amount."""


class PaymentState(TypedDict, total=False):
    vendor: str
    invoice_id: str
    amount: float
    invoice_decision: dict[str, Any]
    payment_decision: dict[str, Any]
    outcome: str


def approve_invoice(state: PaymentState) -> dict[str, Any]:
    d = request_approval(
        "approve_invoice",
        {
            "vendor": state["vendor"],
            "invoice_id": state["invoice_id"],
            "amount": float(state["amount"]),
        },
        title="Invoice {invoice_id} from {vendor}",
    )
    return {"invoice_decision": {**d.to_json(), "args": d.args}}


def release_payment(state: PaymentState) -> dict[str, Any]:
    inv = state["invoice_decision"]["args"]
    d = request_approval(
        "release_payment",
        {"vendor": inv["vendor"], "invoice_id": inv["invoice_id"], "amount": inv["amount"]},
        title="Pay {amount:.2f} to {vendor}",  # filled with the values that run
    )
    return {"payment_decision": {**d.to_json(), "args": d.args}}


def pay(state: PaymentState, config: Any) -> dict[str, Any]:
    d, svc = state["payment_decision"], services(config)
    args, key = d["args"], d["idempotency_key"]
    once(
        f"pay:{key}",
        svc.effects.record,
        "payment",
        key,
        {"vendor": args["vendor"], "amount": args["amount"], "invoice_id": args["invoice_id"]},
        thread_id=svc.thread_id,
    )
    return {"outcome": f"paid {args['amount']:.2f} to {args['vendor']}"}


def stop(state: PaymentState) -> dict[str, Any]:
    d = state.get("payment_decision") or state["invoice_decision"]
    return {"outcome": f"not paid ({d['action']} {d['status']}): {d['note'] or 'no reason given'}"}


def build() -> StateGraph:
    g = StateGraph(PaymentState)
    g.add_node("approve_invoice", approve_invoice)
    g.add_node("release_payment", release_payment)
    g.add_node("pay", pay)
    g.add_node("stop", stop)
    g.add_edge(START, "approve_invoice")
    g.add_conditional_edges(
        "approve_invoice",
        lambda s: "release_payment" if s["invoice_decision"]["approved"] else "stop",
        ["release_payment", "stop"],
    )
    g.add_conditional_edges(
        "release_payment",
        lambda s: "pay" if s["payment_decision"]["approved"] else "stop",
        ["pay", "stop"],
    )
    g.add_edge("pay", END)
    g.add_edge("stop", END)
    return g
