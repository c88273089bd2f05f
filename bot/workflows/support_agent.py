"""An AI support agent: reads a ticket, looks the order up, and proposes a refund and an email.

The model (see `bot.workflows.llm`: any OpenAI-compatible chat API, or by default a scripted
model that needs no network) has three tools. `lookup_order` is read-only and free (`[agents]
free_tools` in the policy); `send_refund` and `email_customer` are actions of the policy, so
each call asks for its approval with the call's arguments, through `approval_gate()`. The
model proposes both in one turn: one card for the turn, each call with its own buttons. An
approver may edit a call (it runs with the edited values, and the model is told), or reject it
(it does not run, and the model is told who and why). The demo policy says the email runs
after the refund (`after = ["send_refund"]`): a rejected refund keeps the email in, and an
edited one asks for the email's approval again. The agent's final answer is the run's outcome,
posted in the card's thread.

The refund and the email are signoff's effects: each runs at most once per tool call (and, at
the provider, once per order or message of the run).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool

from graphs import END, START, StateGraph
from graphs.graph import MessagesState
from graphs.prebuilt import ToolNode, tools_condition

from ..approvals.effects import DuplicateEffect, services
from ..approvals.gate import approval_gate
from ..approvals.policy.schema import Field, Schema
from .llm import ChatModel, model_from_env

__all__ = ["INPUTS", "MAX_TURNS", "PROMPT", "TOOLS", "build", "scripted_reply"]

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"

INPUTS = Schema(
    {
        "ticket": Field("string", required=True, min_length=1, max_length=4000),
        "customer_id": Field("string", pattern=_ID),
    }
)
"""What a run takes: the ticket's text, and the customer's id when known."""

MAX_TURNS = 8
"""Model turns before the agent stops, whatever the model wants next."""

PROMPT = (
    "You are a support agent. Look the customer's order up with lookup_order, then, if a "
    "refund is due, propose it with send_refund and tell the customer with email_customer. "
    "A person approves each refund and email: a call may come back edited or rejected; say so "
    "honestly. End with a short reply summarising what was done."
)
"""The system prompt."""

TITLES = {
    "send_refund": "Refund {amount:.2f} to {customer_id}",
    "email_customer": "Email {to}: {subject}",
}
"""The cards' titles, filled with the values that run."""


class SupportState(MessagesState, total=False):
    ticket: str
    customer_id: str
    outcome: str


# ---- the tools -------------------------------------------------------------------------

_ORDERS: dict[str, dict[str, Any]] = {
    "o-1001": {"customer_id": "cust_9", "item": "kettle", "total": 42.5},
    "o-1002": {"customer_id": "cust_12", "item": "headphones", "total": 129.0},
}
"""The demo shop's orders; any other id is a made-up but stable order (the demo has no shop)."""


def _order(order_id: str, customer_id: str) -> dict[str, Any]:
    if not order_id:
        order_id = f"o-{1000 + zlib.crc32(customer_id.encode()) % 9000}"
    known = _ORDERS.get(order_id)
    seed = zlib.crc32(order_id.encode())
    found = known or {
        "customer_id": customer_id or f"cust_{seed % 1000}",
        "item": ("lamp", "chair", "backpack", "blender")[seed % 4],
        "total": round(10 + (seed % 20000) / 100, 2),
    }
    owner = str(found["customer_id"])
    return {
        "order_id": order_id,
        **found,
        "email": f"{owner}@example.com",
        "status": "delivered",
    }


@tool
def lookup_order(order_id: str = "", customer_id: str = "") -> str:
    """Look an order up by its id (or the customer's latest order): item, total, email."""
    return json.dumps(_order(order_id.strip(), customer_id.strip()))


@tool
def send_refund(
    customer_id: str, order_id: str, amount: float, reason: str, config: RunnableConfig
) -> str:
    """Refund `amount` of order `order_id` to the customer (needs a person's approval)."""
    svc = services(config)
    data = {"customer_id": customer_id, "amount": amount, "reason": reason, "order_id": order_id}
    try:
        svc.effects.record("refund", f"{svc.thread_id}:{order_id}", data, thread_id=svc.thread_id)
    except DuplicateEffect:
        return f"order {order_id} was refunded already in this conversation; not refunded again"
    return f"refunded {amount:.2f} to {customer_id} for order {order_id}"


@tool
def email_customer(to: str, subject: str, body: str, config: RunnableConfig) -> str:
    """Send the customer an email (needs a person's approval)."""
    svc = services(config)
    digest = zlib.crc32(f"{to}\n{subject}".encode())
    key = f"{svc.thread_id}:{digest:08x}"
    data = {"to": to, "subject": subject, "text": body}
    try:
        svc.effects.record("email", key, data, thread_id=svc.thread_id)
    except DuplicateEffect:
        return f"this email to {to} was sent already; not sent again"
    return f"emailed {to}: {subject}"


TOOLS: list[BaseTool] = [lookup_order, send_refund, email_customer]
"""The agent's tools: one free, two gated by the policy."""


# ---- the scripted model ------------------------------------------------------------------

_ORDER_ID = re.compile(r"\b[oO]-\d{3,}\b")
_CUSTOMER = re.compile(r"^Customer: (\S+)$", re.MULTILINE)


def _ticket_message(state: SupportState) -> str:
    customer = state.get("customer_id") or "unknown"
    return f"Customer: {customer}\nTicket:\n{state['ticket']}"


def scripted_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model: look up, then propose a refund and an email in one turn, then sum
    up. Depends only on the conversation, so a replay gets the same reply."""
    ticket = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
    turn = sum(isinstance(m, AIMessage) for m in messages)
    if turn == 0:
        found = _ORDER_ID.search(ticket)
        customer = _CUSTOMER.search(ticket)
        args = {"order_id": found.group(0) if found else ""}
        if customer and customer.group(1) != "unknown":
            args["customer_id"] = customer.group(1)
        return AIMessage("", tool_calls=[_call("lookup_order", "call_lookup", args)])
    results = _last_results(messages)
    if turn == 1:
        (looked,) = results or [ToolMessage("", tool_call_id="none", status="error")]
        if looked.status == "error":
            return AIMessage(f"I could not look the order up: {looked.content}")
        order = json.loads(str(looked.content))
        reason = ticket.partition("Ticket:\n")[2].strip()[:200] or "customer request"
        refund = {
            "customer_id": order["customer_id"],
            "order_id": order["order_id"],
            "amount": order["total"],
            "reason": reason,
        }
        email = {
            "to": order["email"],
            "subject": f"Your refund for order {order['order_id']}",
            "body": (
                f"Hello, we are sorry about your {order['item']}. We are refunding "
                f"{order['total']:.2f} for order {order['order_id']}."
            ),
        }
        return AIMessage(
            "",
            tool_calls=[
                _call("send_refund", "call_refund", refund),
                _call("email_customer", "call_email", email),
            ],
        )
    lines = [f"- {m.name}: {_summary(m)}" for m in results]
    return AIMessage("Handled the ticket.\n" + "\n".join(lines))


def _call(name: str, call_id: str, args: dict[str, Any]) -> Any:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _last_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    out: list[ToolMessage] = []
    for m in reversed(messages):
        if not isinstance(m, ToolMessage):
            break
        out.append(m)
    return out[::-1]


def _summary(m: ToolMessage) -> str:
    text = str(m.content)
    if m.status == "error":
        return f"not done. {text}"
    note, _, result = text.rpartition("\n\n")
    return f"{result} (an approver changed the arguments first)" if note else text


# ---- the graph ---------------------------------------------------------------------------


def _agent(model: ChatModel) -> Any:
    async def agent(state: SupportState) -> dict[str, Any]:
        reply = await model.reply([SystemMessage(PROMPT), *state["messages"]], TOOLS)
        return {"messages": [reply]}

    return agent


def intake(state: SupportState) -> dict[str, Any]:
    return {"messages": [HumanMessage(_ticket_message(state))]}


def route(state: SupportState) -> str:
    turns = sum(isinstance(m, AIMessage) for m in state["messages"])
    if turns >= MAX_TURNS:
        return "finish"
    return "tools" if tools_condition(state) == "tools" else "finish"


def finish(state: SupportState) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return {"outcome": f"stopped after {MAX_TURNS} model turns without a final answer"}
    return {"outcome": str(last.content) or "the agent gave no answer"}


def build(model: ChatModel | None = None) -> StateGraph:
    """The agent's graph. `model`: default the one the environment configures."""
    chosen = model if model is not None else model_from_env(os.environ, scripted_reply)
    g = StateGraph(SupportState)
    g.add_node("intake", intake)
    g.add_node("agent", _agent(chosen))
    g.add_node("tools", ToolNode(TOOLS, before_call=approval_gate(titles=TITLES)))
    g.add_node("finish", finish)
    g.add_edge(START, "intake")
    g.add_edge("intake", "agent")
    g.add_conditional_edges("agent", route, ["tools", "finish"])
    g.add_edge("tools", "agent")
    g.add_edge("finish", END)
    return g
