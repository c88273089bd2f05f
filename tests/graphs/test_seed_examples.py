"""The code of the two seed documents, run with `graphs` in place of `infy` / `langgraph`.

`000_287486670664f880.txt` documents the checkpointing and human-in-the-loop API; `003_...`
is an article on `interrupt()` / `Command(resume=...)` with a refund-approval service. Their
PostgreSQL and FastAPI parts belong to later issues; the handlers' bodies are kept here as
plain async functions. Imports the documents take from `infy.graph`, `langgraph.graph` or
`langgraph.types` come from `graphs`; `langgraph.checkpoint.memory` is `graphs.checkpoint.memory`.
"""

import operator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypedDict

import pytest

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    GraphRecursionError,
    InMemorySaver,
    NodeInterrupt,
    ResumeError,
    StateGraph,
    interrupt,
)
from graphs.checkpoint import serde
from graphs.checkpoint.memory import MemorySaver

# ---- document 000: "Checkpointing and human-in-the-loop" ------------------------------------


@dataclass(frozen=True)
class HumanMessage:
    content: str


@dataclass(frozen=True)
class AIMessage:
    content: str


# Message types are the application's; it tells the checkpoint format how to store them.
for _cls in (HumanMessage, AIMessage):
    serde.register_type(_cls, f"test.{_cls.__name__}", lambda m: m.content, _cls, replace=True)


class State(TypedDict):
    messages: Annotated[list, operator.add]
    approved: bool
    amount: int


def call_model(state: State) -> dict[str, Any]:
    last = state["messages"][-1].content
    return {"messages": [AIMessage(content=f"you said: {last}")]}


def make_graph() -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("agent", call_model)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph


def test_enable_checkpointing_and_threads() -> None:
    graph = make_graph()
    app = graph.compile(checkpointer=InMemorySaver())

    config = {"configurable": {"thread_id": "conversation-1"}}
    app.invoke({"messages": [HumanMessage(content="hello")]}, config=config)
    app.invoke({"messages": [HumanMessage(content="again")]}, config=config)

    # Every invocation that shares a thread_id accumulates on the same thread...
    assert app.get_state(config).values["messages"] == [
        HumanMessage("hello"),
        AIMessage("you said: hello"),
        HumanMessage("again"),
        AIMessage("you said: again"),
    ]
    # ...a different thread_id starts a fresh, isolated history.
    other = {"configurable": {"thread_id": "conversation-2"}}
    app.invoke({"messages": [HumanMessage(content="hi")]}, config=other)
    assert len(app.get_state(other).values["messages"]) == 2
    # checkpoint_ns namespaces checkpoints within a thread.
    namespaced = {"configurable": {"thread_id": "conversation-1", "checkpoint_ns": "draft"}}
    assert app.get_state(namespaced).values == {}


def test_inspect_state_with_get_state() -> None:
    app = make_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "conversation-1"}}
    app.invoke({"messages": [HumanMessage(content="hello")]}, config=config)

    snapshot = app.get_state(config)

    assert snapshot.values == {"messages": [HumanMessage("hello"), AIMessage("you said: hello")]}
    assert snapshot.next == ()
    assert snapshot.metadata["step"] == 1
    with pytest.raises(AttributeError):  # frozen
        snapshot.values = {}  # type: ignore[misc]
    empty = app.get_state({"configurable": {"thread_id": "no-such-thread"}})
    assert (empty.values, empty.next) == ({}, ())


def test_update_state_replaces_instead_of_appending() -> None:
    app = make_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "conversation-1"}}
    app.invoke({"messages": [HumanMessage(content="hello")]}, config=config)

    new_config = app.update_state(config, {"messages": [HumanMessage(content="use metric units")]})

    snapshot = app.get_state(config)
    assert snapshot.values["messages"] == [HumanMessage("use metric units")]
    assert snapshot.metadata["source"] == "update"
    assert snapshot.config == new_config


def tools_graph(tool_calls: list[str]) -> StateGraph:
    def tools(state: State) -> dict[str, Any]:
        tool_calls.append(state["messages"][-1].content)
        return {"messages": [AIMessage(content=f"done, approved={state.get('approved')}")]}

    graph = StateGraph(State)
    graph.add_node("agent", call_model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", END)
    return graph


def test_pause_before_a_node() -> None:
    tool_calls: list[str] = []
    app = tools_graph(tool_calls).compile(
        checkpointer=InMemorySaver(),
        interrupt_before=["tools"],
    )

    config = {"configurable": {"thread_id": "run-42"}}

    printed = []
    try:
        app.invoke({"messages": [HumanMessage(content="delete the row")]}, config=config)
    except GraphInterrupt:
        snapshot = app.get_state(config)
        printed.append(("paused before:", snapshot.next))
    assert printed == [("paused before:", ("tools",))]
    assert tool_calls == []


def test_interrupt_from_inside_a_node() -> None:
    def review(state: State) -> dict:
        if state["amount"] > 10_000:
            raise NodeInterrupt({"reason": "amount exceeds auto-approve limit"})
        return {"approved": True}

    graph = StateGraph(State)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "run-43"}}

    with pytest.raises(GraphInterrupt) as info:  # a single handler catches both kinds
        app.invoke({"amount": 20_000}, config=config)
    assert info.value.interrupts[0].value == {"reason": "amount exceeds auto-approve limit"}
    assert app.invoke({"amount": 500}, config=config) == {
        "amount": 500,
        "approved": True,
        "messages": [],
    }


def test_resume_by_reinvoking() -> None:
    tool_calls: list[str] = []
    app = tools_graph(tool_calls).compile(checkpointer=InMemorySaver(), interrupt_before=["tools"])
    config = {"configurable": {"thread_id": "run-42"}}

    # 1. runs, then pauses at interrupt_before=["tools"]
    try:
        app.invoke({"messages": [HumanMessage(content="...")]}, config=config)
    except GraphInterrupt:
        pass

    # 2. optionally amend the persisted state
    app.update_state(config, {"approved": True})

    # 3. resume: same thread_id, continues from where it paused
    final = app.invoke(None, config=config)

    assert final["messages"][-1] == AIMessage("done, approved=True")
    assert tool_calls == ["you said: ..."]


async def test_the_async_api_restores_and_persists_identically() -> None:
    tool_calls: list[str] = []
    app = tools_graph(tool_calls).compile(checkpointer=InMemorySaver(), interrupt_before=["tools"])
    config = {"configurable": {"thread_id": "run-44"}}
    with pytest.raises(GraphInterrupt):
        await app.ainvoke({"messages": [HumanMessage(content="hi")]}, config=config)
    steps = [step async for step in app.astream(None, config=config)]
    # Each step is what a node returned (LangGraph's default `updates` mode).
    assert steps == [{"tools": {"messages": [AIMessage("done, approved=None")]}}]
    assert tool_calls == ["you said: hi"]
    saved = await app.aget_state(config)
    assert saved.values["messages"][-1] == AIMessage("done, approved=None")
    assert saved.next == ()


def looping_graph() -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("model", lambda s: {"amount": s["amount"] + 1})
    graph.add_node("tool", lambda s: {})
    graph.add_edge(START, "model")
    graph.add_edge("model", "tool")
    graph.add_edge("tool", "model")
    return graph


def test_bound_runaway_loops_with_recursion_limit() -> None:
    app = looping_graph().compile(checkpointer=InMemorySaver(), recursion_limit=50)
    inputs = {"amount": 0}
    with pytest.raises(GraphRecursionError) as info:
        app.invoke(inputs, config={"configurable": {"thread_id": "0"}})
    assert info.value.limit == 50

    config = {"recursion_limit": 100, "configurable": {"thread_id": "1"}}
    printed = []
    try:
        app.invoke(inputs, config=config)
    except GraphRecursionError as e:
        printed.append(f"stopped after {e.current} of {e.limit} steps")
    assert printed == ["stopped after 100 of 100 steps"]
    assert issubclass(GraphRecursionError, RecursionError)


def test_custom_checkpoint_backends_have_the_documented_methods() -> None:
    # The whole contract runs against a user-written saver in checkpoint/test_contract.py.
    for method in ("get_tuple", "put", "put_writes", "list", "delete_thread"):
        assert callable(getattr(BaseCheckpointSaver, method))
    saver = InMemorySaver()
    make_graph().compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "t"}}
    )
    # the input checkpoint, step 0 (the input applied), the node's step
    assert len(list(saver.list({"configurable": {"thread_id": "t"}}, limit=10))) == 3


# ---- document 003: durable human approval with interrupt() and Command -----------------------


class AgentState(TypedDict):
    refund_amount: float
    customer_id: str
    reason: str
    approved: bool


def request_approval(state: AgentState):  # type: ignore[no-untyped-def]
    decision = interrupt(
        {
            "action": "send_refund",
            "amount": state["refund_amount"],
            "customer": state["customer_id"],
            "reason": state["reason"],
        }
    )
    return {"approved": decision["approved"]}


def approval_graph() -> Any:
    builder = StateGraph(AgentState)
    builder.add_node("request_approval", request_approval)
    builder.add_edge(START, "request_approval")
    # "the payload you passed is returned to the caller as part of the invocation result"
    return builder.compile(checkpointer=MemorySaver(), interrupt_mode="return")


def test_interrupt_returns_the_payload_to_the_caller() -> None:
    graph = approval_graph()
    config = {"configurable": {"thread_id": "refund-1"}}
    result = graph.invoke(
        {"refund_amount": 42.50, "customer_id": "cust_9", "reason": "damaged item"}, config
    )
    printed = []
    if "__interrupt__" in result:
        interrupt_data = result["__interrupt__"][0].value
        printed.append(interrupt_data)
    assert printed == [
        {"action": "send_refund", "amount": 42.5, "customer": "cust_9", "reason": "damaged item"}
    ]
    # Nothing after the interrupt() call has run yet.
    assert "approved" not in graph.get_state(config).values


def test_resuming_with_command() -> None:
    graph = approval_graph()
    refund_id = "r_123"
    config = {"configurable": {"thread_id": f"refund-{refund_id}"}}

    # First call: pauses at request_approval
    result = graph.invoke(
        {"refund_amount": 42.50, "customer_id": "cust_9", "reason": "damaged item"}, config
    )
    assert result["__interrupt__"]
    # A dashboard can show what the thread waits on.
    assert graph.get_state(config).next == ("request_approval",)

    # Second call: resumes and completes
    final = graph.invoke(Command(resume={"approved": True}), config)
    assert final == {
        "refund_amount": 42.5,
        "customer_id": "cust_9",
        "reason": "damaged item",
        "approved": True,
    }


def test_two_approvals_across_a_graphs_lifetime() -> None:
    class TwoStep(TypedDict):
        reviewed: bool
        confirmed: bool

    builder = StateGraph(TwoStep)
    builder.add_node("review", lambda s: {"reviewed": interrupt("review")["approved"]})
    builder.add_node("confirm", lambda s: {"confirmed": interrupt("confirm")["approved"]})
    builder.add_edge(START, "review").add_edge("review", "confirm")
    graph = builder.compile(checkpointer=MemorySaver(), interrupt_mode="return")
    config = {"configurable": {"thread_id": "refund-2"}}

    first = graph.invoke({"reviewed": False}, config)
    second = graph.invoke(Command(resume={"approved": True}), config)
    final = graph.invoke(Command(resume={"approved": True}), config)

    assert [first["__interrupt__"][0].value, second["__interrupt__"][0].value] == [
        "review",
        "confirm",
    ]
    assert final == {"reviewed": True, "confirmed": True}


# The full approval flow, end to end (the article's FastAPI handlers, without FastAPI).


class RefundState(TypedDict):
    customer_id: str
    amount: float
    reason: str
    approved: bool | None


class Outside:
    """The payment provider and the mail server the refund service talks to."""

    refunds: ClassVar[list[tuple[str, float]]] = []
    emails: ClassVar[list[tuple[str, str]]] = []


def process_payment_refund(customer_id: str, amount: float) -> None:
    Outside.refunds.append((customer_id, amount))


def send_customer_email(customer_id: str, text: str) -> None:
    Outside.emails.append((customer_id, text))


def draft_refund(state: RefundState):  # type: ignore[no-untyped-def]
    # Any model calls or business logic that decide the refund amount happen here.
    return {"amount": round(state["amount"], 2)}


def request_refund_approval(state: RefundState):  # type: ignore[no-untyped-def]
    decision = interrupt(
        {
            "action": "approve_refund",
            "customer_id": state["customer_id"],
            "amount": state["amount"],
            "reason": state["reason"],
        }
    )
    return {"approved": decision["approved"]}


def issue_refund(state: RefundState):  # type: ignore[no-untyped-def]
    process_payment_refund(state["customer_id"], state["amount"])
    return {}


def notify_rejection(state: RefundState):  # type: ignore[no-untyped-def]
    send_customer_email(state["customer_id"], "Your refund request was declined.")
    return {}


def route_on_approval(state: RefundState) -> str:
    return "issue_refund" if state["approved"] else "notify_rejection"


builder = StateGraph(RefundState)
builder.add_node("draft_refund", draft_refund)
builder.add_node("request_approval", request_refund_approval)
builder.add_node("issue_refund", issue_refund)
builder.add_node("notify_rejection", notify_rejection)
builder.add_edge(START, "draft_refund")
builder.add_edge("draft_refund", "request_approval")
builder.add_conditional_edges("request_approval", route_on_approval)
builder.add_edge("issue_refund", END)
builder.add_edge("notify_rejection", END)


class RefundService:
    """The article's two endpoints; each request compiles the graph against the shared store."""

    def __init__(self) -> None:
        self.checkpointer = InMemorySaver()  # the article's AsyncPostgresSaver

    async def start_refund(  # type: ignore[no-untyped-def]
        self, refund_id: str, customer_id: str, amount: float, reason: str
    ):
        graph = builder.compile(checkpointer=self.checkpointer, interrupt_mode="return")
        config = {"configurable": {"thread_id": f"refund-{refund_id}"}}
        result = await graph.ainvoke(
            {"customer_id": customer_id, "amount": amount, "reason": reason, "approved": None},
            config,
        )
        return {"status": "pending_review", "interrupt": result.get("__interrupt__")}

    async def decide_refund(self, refund_id: str, approved: bool):  # type: ignore[no-untyped-def]
        graph = builder.compile(checkpointer=self.checkpointer, interrupt_mode="return")
        config = {"configurable": {"thread_id": f"refund-{refund_id}"}}
        await graph.ainvoke(Command(resume={"approved": approved}), config)
        return {"status": "completed"}


@pytest.fixture
def outside() -> type[Outside]:
    Outside.refunds, Outside.emails = [], []
    return Outside


async def test_full_approval_flow_approved(outside: type[Outside]) -> None:
    service = RefundService()
    started = await service.start_refund("77", "cust_9", 42.499, "damaged item")

    assert started["status"] == "pending_review"
    assert started["interrupt"][0].value == {
        "action": "approve_refund",
        "customer_id": "cust_9",
        "amount": 42.5,
        "reason": "damaged item",
    }
    assert outside.refunds == []  # the side effect only ever runs after a resume

    assert await service.decide_refund("77", approved=True) == {"status": "completed"}
    assert (outside.refunds, outside.emails) == ([("cust_9", 42.5)], [])


async def test_full_approval_flow_rejected(outside: type[Outside]) -> None:
    service = RefundService()
    await service.start_refund("78", "cust_3", 10.0, "changed mind")
    await service.decide_refund("78", approved=False)
    assert (outside.refunds, outside.emails) == (
        [],
        [("cust_3", "Your refund request was declined.")],
    )


# Failure modes the article lists, which signoff handles for its users.


async def test_resuming_with_the_wrong_thread_id_is_an_error(outside: type[Outside]) -> None:
    service = RefundService()
    await service.start_refund("79", "cust_1", 5.0, "late")
    with pytest.raises(ResumeError) as info:
        await service.decide_refund("97", approved=True)  # a typo in the id
    assert str(info.value) == (
        "thread 'refund-97' does not exist (no checkpoint), so there is nothing to resume; "
        "check the thread id, or start a run with an input"
    )
    await service.decide_refund("79", approved=True)
    with pytest.raises(ResumeError) as info:  # a second click on the same card
        await service.decide_refund("79", approved=False)
    assert str(info.value) == (
        "thread 'refund-79' is not paused: its last run finished; start a new run with an input"
    )
    assert (outside.refunds, outside.emails) == ([("cust_1", 5.0)], [])


def test_schema_drift_between_pause_and_resume_is_tolerated_when_additive() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "refund-80"}}
    old = builder.compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        old.invoke({"customer_id": "c", "amount": 1.0, "reason": "r", "approved": None}, config)

    # A deploy adds a field while the thread is paused; node code handles it missing.
    class RefundStateV2(RefundState):
        note: str

    def request_v2(state: RefundStateV2) -> dict[str, Any]:
        decision = interrupt({"amount": state["amount"], "note": state.get("note", "")})
        return {"approved": decision["approved"], "note": decision.get("note", "")}

    new = StateGraph(RefundStateV2)
    new.add_node("request_approval", request_v2)
    new.add_edge(START, "request_approval")
    resumed = new.compile(checkpointer=saver).invoke(
        Command(resume={"approved": False, "note": "duplicate"}), config
    )
    assert resumed == {
        "customer_id": "c",
        "amount": 1.0,
        "reason": "r",
        "approved": False,
        "note": "duplicate",
    }
