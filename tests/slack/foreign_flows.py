"""Two workflows that pause in another library's shape, for `test_foreign_requests`:

- `langchain_agent`: a real LangChain v1 agent (`create_agent` with `HumanInTheLoopMiddleware`,
  its model `ChatOpenAI` talking to the chat-completions stand-in) run by a signoff workflow:
  each time the agent pauses, the workflow pauses with the agent's own interrupt value (a HITL
  request) and resumes the agent with whatever it is answered. The agent and its middleware
  are LangChain's, unchanged: what runs is what their code does with signoff's answer.
- `inbox_agent`: a LangGraph-style node asking Agent Inbox's way (`HumanInterrupt`s, answered
  with `HumanResponse`s), as code written for Agent Inbox reads the answer.

`RAN` records every tool that ran, with its arguments, in this process.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import HITLRequest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.graph import END, START, StateGraph
from graphs.types import interrupt

if TYPE_CHECKING:
    from langgraph.prebuilt.interrupt import HumanInterrupt, HumanResponse

RAN: list[tuple[str, dict[str, Any]]] = []
"""(tool, arguments) of each tool call that ran, in order."""


@tool
def send_refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    RAN.append(("send_refund", {"order_id": order_id, "amount": amount}))
    return f"refunded {amount} on {order_id}"


@tool
def email_customer(to: str, body: str) -> str:
    """Email a customer."""
    RAN.append(("email_customer", {"to": to, "body": body}))
    return f"emailed {to}"


_AGENTS: dict[str, Any] = {}


def _agent() -> Any:
    """The LangChain agent, built once per model endpoint (the stand-in's, from the
    environment `chat_api` sets), its own checkpoints in this process."""
    url = os.environ["SIGNOFF_LLM_BASE_URL"]
    if url not in _AGENTS:
        model = ChatOpenAI(
            model=os.environ["SIGNOFF_LLM_MODEL"],
            api_key=os.environ["SIGNOFF_LLM_API_KEY"],  # type: ignore[arg-type]
            base_url=url,
            max_retries=0,
        )
        review = HumanInTheLoopMiddleware(
            interrupt_on={
                "send_refund": {"allowed_decisions": ["approve", "edit", "reject"]},
                "email_customer": {"allowed_decisions": ["approve", "reject"]},
            }
        )
        _AGENTS[url] = create_agent(
            model, [send_refund, email_customer], middleware=[review], checkpointer=InMemorySaver()
        )
    return _AGENTS[url]


class Bridge(TypedDict, total=False):
    request: str
    pending: Any
    """The agent's interrupt value, while it waits."""
    answer: Any
    """What that interrupt was answered with, for the agent's next step."""
    reply: str


async def _step(state: Bridge, config: Any) -> dict[str, Any]:
    agent = _agent()
    inner = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
    if state.get("answer") is not None:
        result = await agent.ainvoke(Command(resume=state["answer"]), inner)
    else:
        result = await agent.ainvoke({"messages": [("user", state["request"])]}, inner)
    pauses = result.get("__interrupt__") or []
    if pauses:
        return {"pending": pauses[0].value, "answer": None}
    return {"pending": None, "answer": None, "reply": result["messages"][-1].content}


def _ask(state: Bridge) -> dict[str, Any]:
    return {"answer": interrupt(state["pending"])}


def langchain_agent() -> StateGraph[Bridge]:
    """A LangChain agent whose tool calls its HITL middleware asks about."""
    g: StateGraph[Bridge] = StateGraph(Bridge)
    g.add_node("step", _step)
    g.add_node("ask", _ask)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "ask" if s.get("pending") else END)
    g.add_edge("ask", "step")
    return g


class Inbox(TypedDict, total=False):
    order_id: str
    outcome: list[str]


def _inbox_node(state: Inbox) -> dict[str, Any]:
    order = state["order_id"]
    refund: HumanInterrupt = {
        "action_request": {"action": "send_refund", "args": {"order_id": order, "amount": 42.5}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True,
                   "allow_ignore": False},
        "description": "The kettle arrived broken.",
    }  # fmt: skip
    email: HumanInterrupt = {
        "action_request": {"action": "email_customer",
                           "args": {"to": "kim@example.com", "body": "Refunded."}},
        "config": {"allow_accept": True, "allow_edit": False, "allow_respond": False,
                   "allow_ignore": True},
        "description": "Tell the customer.",
    }  # fmt: skip
    responses: list[HumanResponse] = interrupt([refund, email])
    outcome = []
    tools = {"send_refund": send_refund, "email_customer": email_customer}
    for asked, response in zip((refund, email), responses, strict=True):
        name = asked["action_request"]["action"]
        if response["type"] == "accept":
            outcome.append(tools[name].invoke(asked["action_request"]["args"]))
        elif response["type"] == "edit":
            edited = response["args"]
            assert isinstance(edited, dict) and edited["action"] == name
            outcome.append(tools[name].invoke(edited["args"]))
        else:  # "response" (the reviewer's words) or "ignore": not run
            outcome.append(f"{name} {response['type']}: {response['args']}")
    return {"outcome": outcome}


def inbox_agent() -> StateGraph[Inbox]:
    """A node that asks Agent Inbox's way before it refunds and emails."""
    g: StateGraph[Inbox] = StateGraph(Inbox)
    g.add_node("act", _inbox_node)
    g.add_edge(START, "act")
    g.add_edge("act", END)
    return g


class Asked(TypedDict, total=False):
    decisions: list[dict[str, Any]]


def _hitl_node(state: Asked) -> dict[str, Any]:
    """Asks LangChain's way by hand (its own types): a refund it may only approve, and an
    account deletion (which the policy does not name), then runs what was approved."""
    request: HITLRequest = {
        "action_requests": [
            {"name": "send_refund", "args": {"order_id": "o-9", "amount": 5.0}},
            {"name": "delete_account", "args": {"customer_id": "cust_9"}},
        ],
        "review_configs": [
            {"action_name": "send_refund", "allowed_decisions": ["approve"]},
            {"action_name": "delete_account", "allowed_decisions": ["approve", "reject"]},
        ],
    }
    decisions = interrupt(request)["decisions"]
    for asked, decision in zip(request["action_requests"], decisions, strict=True):
        if decision["type"] == "approve":
            RAN.append((asked["name"], dict(asked["args"])))
    return {"decisions": decisions}


def hitl_by_hand() -> StateGraph[Asked]:
    """A node that asks with a LangChain HITL request it builds itself."""
    g: StateGraph[Asked] = StateGraph(Asked)
    g.add_node("ask", _hitl_node)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g


def _inbox_one_node(state: Inbox) -> dict[str, Any]:
    refund: HumanInterrupt = {
        "action_request": {"action": "send_refund",
                           "args": {"order_id": state["order_id"], "amount": 42.5}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True,
                   "allow_ignore": True},
        "description": "One refund, asked alone.",
    }  # fmt: skip
    response: HumanResponse = interrupt(refund)  # one request, not a list: one response
    if response["type"] == "edit":
        edited = response["args"]
        assert isinstance(edited, dict)
        return {"outcome": [send_refund.invoke(edited["args"])]}
    if response["type"] == "accept":
        return {"outcome": [send_refund.invoke(refund["action_request"]["args"])]}
    return {"outcome": [f"{response['type']}: {response['args']}"]}


def inbox_one() -> StateGraph[Inbox]:
    """A node that asks one Agent Inbox request, not in a list."""
    g: StateGraph[Inbox] = StateGraph(Inbox)
    g.add_node("act", _inbox_one_node)
    g.add_edge(START, "act")
    g.add_edge("act", END)
    return g
