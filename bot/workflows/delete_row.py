"""Delete one row of a table, after a person approves it.

Deleting is irreversible: the row's content is shown to the approver and nothing is deleted
unless the approval says so.
"""

from __future__ import annotations

from typing import Any, TypedDict

from graphs import END, START, StateGraph, once

from ..approvals.effects import services
from ..approvals.policy.schema import Field, Schema
from ..approvals.request import request_approval

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
"""An id: letters, digits and _ . : -, at most 64."""

INPUTS = Schema(
    {
        "table": Field("string", required=True, pattern=r"[A-Za-z_][A-Za-z0-9_]{0,62}"),
        "row_id": Field("string", required=True, pattern=_ID),
        "reason": Field("string", max_length=500),
    }
)
"""What a run takes: a table name and the id of the row (as text)."""


class DeleteRowState(TypedDict, total=False):
    table: str
    row_id: str
    reason: str
    decision: dict[str, Any]
    outcome: str


def ask(state: DeleteRowState) -> dict[str, Any]:
    decision = request_approval(
        "delete_row",
        {
            "table": state["table"],
            "row_id": str(state["row_id"]),
            "reason": state.get("reason", ""),
        },
        title="Delete row {row_id} of {table}",
        dedupe_key=f"delete:{state['table']}:{state['row_id']}",
    )
    return {"decision": {**decision.to_json(), "args": decision.args}}


def act(state: DeleteRowState, config: Any) -> dict[str, Any]:
    decision, svc = state["decision"], services(config)
    if not decision["approved"]:
        return {"outcome": f"kept ({decision['status']}): {decision['note'] or 'no reason given'}"}
    args, key = decision["args"], decision["idempotency_key"]
    once(
        f"delete:{key}",
        svc.effects.record,
        "delete_row",
        key,
        {"table": args["table"], "row_id": args["row_id"]},
        thread_id=svc.thread_id,
    )
    return {"outcome": f"deleted row {args['row_id']} of {args['table']}"}


def build() -> StateGraph:
    g = StateGraph(DeleteRowState)
    g.add_node("request_approval", ask)
    g.add_node("act", act)
    g.add_edge(START, "request_approval")
    g.add_edge("request_approval", "act")
    g.add_edge("act", END)
    return g
