"""LangGraph (the library itself, not signoff's `graphs`): a node that asks a person through
signoff before the refund node runs.

`approve` calls `bot.client.request_approval` and stores the decision in the state; the graph
goes on to `refund` only when it is approved, with the decision's `args` (the approvers' edits
applied), and to `declined` otherwise. The idempotency key is the thread's id, so a run that
crashed while waiting and is invoked again on the same thread (a checkpointer remembers where
it was) waits on the same approval instead of opening a second one. When the wait runs out,
`StillPending` leaves the node: invoke the thread again later to keep waiting.

Run it against `signoff demo` (its bot's URL and the service token the demo prints).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from bot.client import request_approval


class RefundState(TypedDict, total=False):
    customer_id: str
    amount: float
    decision: dict[str, Any]
    outcome: str


def build_graph(*, url: str, token: str, wait: float = 300.0) -> StateGraph[RefundState]:
    def approve(state: RefundState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = config["configurable"]["thread_id"]
        decision = request_approval(
            "send_refund",
            {"customer_id": state["customer_id"], "amount": state["amount"]},
            url=url,
            token=token,
            requester="langgraph-refund",
            wait=wait,
            idempotency_key=f"langgraph:{thread_id}:send_refund",
        )
        return {"decision": decision.to_json()}

    def refund(state: RefundState) -> dict[str, Any]:
        args = state["decision"]["args"]
        return {"outcome": f"refunded {args['amount']} to {args['customer_id']}"}

    def declined(state: RefundState) -> dict[str, Any]:
        d = state["decision"]
        return {"outcome": f"not refunded: {d['status']} by {', '.join(d['by'])}: {d['note']}"}

    graph: StateGraph[RefundState] = StateGraph(RefundState)
    graph.add_node("approve", approve)
    graph.add_node("refund", refund)
    graph.add_node("declined", declined)
    graph.add_edge(START, "approve")
    graph.add_conditional_edges(
        "approve", lambda s: "refund" if s["decision"]["approved"] else "declined"
    )
    graph.add_edge("refund", END)
    graph.add_edge("declined", END)
    return graph
