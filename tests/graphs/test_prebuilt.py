"""`graphs.prebuilt`: ToolNode, tools_condition, create_react_agent, and the pause before a
tool call (`before_call`) on a SQLite file, resumed by a new saver (a new process)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from pydantic import Field

from graphs import END, START, Command, Send, StateGraph, interrupt
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import MessagesState
from graphs.prebuilt import (
    InjectedState,
    Rejected,
    ToolNode,
    create_react_agent,
    tools_condition,
)


def _config(thread_id: str = "t") -> Any:
    return {"configurable": {"thread_id": thread_id}}


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """Plays `script` like a tool-calling LLM: its n-th reply answers a conversation holding n
    replies already, so a replay or another process gets the same reply."""

    script: list[AIMessage]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        self.seen.append(list(messages))
        turn = sum(isinstance(m, AIMessage) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=self.script[turn])])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = [t.name for t in tools]
        return self


@pytest.fixture
def db(tmp_path: Any) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'agent.db'}"


def _saver(url: str) -> SQLSaver:
    s = SQLSaver(url)
    s.setup()
    return s


# ---- ToolNode -----------------------------------------------------------------------


def test_tool_node_answers_each_call_of_the_last_ai_message_by_its_id() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    node = ToolNode([add, shout])
    ai = AIMessage("", tool_calls=[_call("add", "c1", a=1, b=2), _call("shout", "c2", text="hi")])
    out = node.invoke({"messages": [HumanMessage("go"), ai]})
    assert [(m.tool_call_id, m.name, m.content) for m in out["messages"]] == [
        ("c1", "add", "3"),
        ("c2", "shout", "HI"),
    ]
    assert node.invoke([ai])[0].content == "3"  # a list in, a list out


def test_tool_node_errors_follow_langgraphs_defaults() -> None:
    @tool
    def div(a: int, b: int) -> float:
        """Divide."""
        return a / b

    bad_args = AIMessage("", tool_calls=[_call("div", "c1", a="x", b=1)])
    (msg,) = ToolNode([div]).invoke({"messages": [bad_args]})["messages"]
    assert msg.status == "error" and msg.tool_call_id == "c1"
    assert msg.content.startswith("Error invoking tool 'div' with kwargs {'a': 'x', 'b': 1}")

    unknown = AIMessage("", tool_calls=[_call("nope", "c2")])
    (msg,) = ToolNode([div]).invoke({"messages": [unknown]})["messages"]
    assert (msg.status, msg.content) == (
        "error",
        "Error: nope is not a valid tool, try one of [div].",
    )

    zero = AIMessage("", tool_calls=[_call("div", "c3", a=1, b=0)])
    with pytest.raises(ZeroDivisionError):  # an error of the tool itself fails the node
        ToolNode([div]).invoke({"messages": [zero]})
    (msg,) = ToolNode([div], handle_tool_errors=True).invoke({"messages": [zero]})["messages"]
    assert msg.status == "error"
    assert msg.content == "Error: ZeroDivisionError('division by zero')\n Please fix your mistakes."
    (msg,) = ToolNode([div], handle_tool_errors="no").invoke({"messages": [zero]})["messages"]
    assert msg.content == "no"


def test_a_tool_may_return_a_command_answering_its_call() -> None:
    @tool
    def pick(choice: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Pick."""
        done = {"role": "tool", "content": f"picked {choice}", "tool_call_id": tool_call_id}
        return Command(update={"messages": [done], "choice": choice}, goto="after")

    ai = AIMessage("", tool_calls=[_call("pick", "c1", choice="b")])
    out = ToolNode([pick]).invoke({"messages": [ai]})
    assert isinstance(out, Command) and out.goto == ["after"]
    (msg,) = out.update["messages"]
    assert (type(msg), msg.content, msg.tool_call_id, msg.name) == (
        ToolMessage,
        "picked b",
        "c1",
        "pick",  # named after the tool, as LangGraph names it
    )
    assert out.update["choice"] == "b"


def test_a_command_without_the_calls_tool_message_is_refused() -> None:
    @tool
    def pick(choice: str) -> Command:
        """Pick."""
        return Command(update={"choice": choice}, goto="after")

    ai = AIMessage("", tool_calls=[_call("pick", "c1", choice="b")])
    with pytest.raises(ValueError) as e:
        ToolNode([pick]).invoke({"messages": [ai]})
    assert str(e.value).startswith(
        "ToolNode: tool 'pick' returned a Command without a ToolMessage for its call 'c1' in "
        "update['messages'] (it has []); every tool call needs its ToolMessage"
    )
    (msg,) = ToolNode([pick], handle_tool_errors=True).invoke({"messages": [ai]})["messages"]
    assert msg.status == "error" and msg.tool_call_id == "c1"


def test_tools_condition_routes_on_the_last_messages_tool_calls() -> None:
    assert tools_condition({"messages": [AIMessage("", tool_calls=[_call("a", "1")])]}) == "tools"
    assert tools_condition({"messages": [AIMessage("done")]}) == END
    assert tools_condition([HumanMessage("hi")]) == END


# ---- create_react_agent -------------------------------------------------------------


def _lookup_tools(log: list[str]) -> list[Any]:
    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        log.append(f"lookup {order}")
        return f"{order}: shipped"

    @tool
    def refund(order: str, amount: int) -> str:
        """Refund an order."""
        log.append(f"refund {order} {amount}")
        return f"refunded {amount}"

    @tool
    def email(to: str) -> str:
        """Email a customer."""
        log.append(f"email {to}")
        return "sent"

    return [lookup, refund, email]


def test_react_agent_loops_model_and_tools_until_a_plain_answer() -> None:
    log: list[str] = []
    model = ScriptedChatModel(
        script=[
            AIMessage("", tool_calls=[_call("lookup", "c1", order="A1")]),
            AIMessage("A1 has shipped"),
        ]
    )
    agent = create_react_agent(model, _lookup_tools(log), prompt="be brief")
    out = agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert [type(m).__name__ for m in out["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert out["messages"][-1].content == "A1 has shipped" and log == ["lookup A1"]
    assert model.bound == ["lookup", "refund", "email"]
    assert isinstance(model.seen[0][0], SystemMessage)


def test_react_agent_takes_a_plain_function_as_model_and_interrupt_before() -> None:
    def model(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("ok")
        return AIMessage("", tool_calls=[_call("lookup", "c1", order="A1")])

    log: list[str] = []
    saver = InMemory()
    agent = create_react_agent(
        model, _lookup_tools(log), checkpointer=saver, interrupt_before=["tools"]
    )
    # As LangGraph: the pause returns the state (LangGraph's dialect, graphs.prebuilt's).
    paused = agent.invoke({"messages": [HumanMessage("hi")]}, _config())
    assert paused["messages"][-1].tool_calls[0]["name"] == "lookup"
    assert agent.get_state(_config()).next == ("tools",) and log == []
    out = agent.invoke(None, _config())
    assert out["messages"][-1].content == "ok" and log == ["lookup A1"]


def InMemory() -> Any:
    from graphs import InMemorySaver

    return InMemorySaver()


# ---- the pause before a call --------------------------------------------------------


def _ask(call: Any, state: Any, config: Any) -> Any:
    """A gate: `lookup` runs freely; every other call waits for a person."""
    if call["name"] == "lookup":
        return None
    answer = interrupt({"tool": call["name"], "args": call["args"]})
    if answer["approved"]:
        return {**call, "args": answer.get("args", call["args"])}
    return Rejected(f"rejected by {answer['by']}: {answer['why']}")


def _turn_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        script=[
            AIMessage(
                "",
                tool_calls=[
                    _call("lookup", "c1", order="A1"),
                    _call("refund", "c2", order="A1", amount=50),
                    _call("email", "c3", to="ann@example.com"),
                ],
            ),
            AIMessage("all settled"),
        ]
    )


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_gated_calls_pause_once_each_and_are_answered_independently_across_processes(
    db: str, version: Any
) -> None:
    log: list[str] = []
    tools = _lookup_tools(log)
    s1 = _saver(db)
    agent = create_react_agent(
        _turn_model(), tools, checkpointer=s1, before_call=_ask, version=version
    )
    paused = agent.invoke({"messages": [HumanMessage("refund A1")]}, _config())
    refund_i, email_i = paused["__interrupt__"]  # as LangGraph, the pause returns
    assert (refund_i.value["tool"], email_i.value["tool"]) == ("refund", "email")
    assert refund_i.id != email_i.id
    tasks = agent.get_state(_config()).tasks
    if version == "v1":
        # one `tools` task for the turn: nothing ran, it waits for both decisions
        assert log == [] and [len(t.interrupts) for t in tasks] == [2]
    else:
        # a `Send` per call: the free lookup ran in its own task, the gated ones wait
        assert log == ["lookup A1"] and [len(t.interrupts) for t in tasks] == [0, 1, 1]
    ran_first = list(log)
    s1.close()

    # Another process approves the refund with edited arguments; the email still waits.
    s2 = _saver(db)
    agent2 = create_react_agent(
        _turn_model(), _lookup_tools(log), checkpointer=s2, before_call=_ask, version=version
    )
    ans = {"approved": True, "args": {"order": "A1", "amount": 20}}
    still = agent2.invoke(Command(resume={refund_i.id: ans}), _config())
    assert [i.id for i in still["__interrupt__"]] == [email_i.id]
    # v1 runs nothing until the turn is settled; v2 ran the approved refund in its task
    assert log == (ran_first if version == "v1" else [*ran_first, "refund A1 20"])
    assert [i.id for i in agent2.get_state(_config()).interrupts] == [email_i.id]
    s2.close()

    # A third process rejects the email: the turn runs, the model reads the rejection.
    s3 = _saver(db)
    model = _turn_model()
    agent3 = create_react_agent(
        model, _lookup_tools(log), checkpointer=s3, before_call=_ask, version=version
    )
    rej = {"approved": False, "by": "bob", "why": "no emails today"}
    out = agent3.invoke(Command(resume={email_i.id: rej}), _config())
    assert log == ["lookup A1", "refund A1 20"]
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status, m.content) for m in tool_msgs] == [
        ("c1", "success", "A1: shipped"),
        ("c2", "success", "refunded 20"),
        ("c3", "error", "rejected by bob: no emails today"),
    ]
    assert out["messages"][-1].content == "all settled"
    s3.close()


def test_an_approved_call_runs_at_most_once_across_a_crash(db: str) -> None:
    log: list[str] = []
    crash = {"on": True}

    @tool
    def refund(order: str) -> str:
        """Refund."""
        log.append(f"refund {order}")
        return "refunded"

    @tool
    def audit(order: str) -> str:
        """Audit, after the refund; the first time the process dies here."""
        if crash["on"]:
            raise ConnectionResetError("process died")
        log.append(f"audit {order}")
        return "audited"

    def gate(call: Any, state: Any, config: Any) -> Any:
        return None if call["name"] == "audit" else (interrupt(call["name"]) and None)

    model = ScriptedChatModel(
        script=[
            AIMessage(
                "", tool_calls=[_call("refund", "r1", order="A1"), _call("audit", "a1", order="A1")]
            ),
            AIMessage("done"),
        ]
    )
    # v1: the turn's calls share one task, so the audit runs (and dies) after the approval
    s1 = _saver(db)
    agent = create_react_agent(
        model, [refund, audit], checkpointer=s1, before_call=gate, version="v1"
    )
    assert "__interrupt__" in agent.invoke({"messages": [HumanMessage("go")]}, _config())
    with pytest.raises(ConnectionResetError):
        agent.invoke(Command(resume=True), _config())
    assert log == ["refund A1"]
    s1.close()

    crash["on"] = False
    s2 = _saver(db)
    agent2 = create_react_agent(
        model, [refund, audit], checkpointer=s2, before_call=gate, version="v1"
    )
    out = agent2.invoke(None, _config())  # a new process resumes the failed step
    assert log == ["refund A1", "audit A1"]  # the refund did not run again
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "refunded",
        "audited",
    ]
    s2.close()


def test_v2_an_approved_call_runs_at_most_once_when_a_sibling_call_dies(db: str) -> None:
    log: list[str] = []
    crash = {"on": True}

    @tool
    def refund(order: str) -> str:
        """Refund."""
        log.append(f"refund {order}")
        return "refunded"

    @tool
    def audit(order: str) -> str:
        """Audit; the first time the process dies here."""
        if crash["on"]:
            raise ConnectionResetError("process died")
        log.append(f"audit {order}")
        return "audited"

    def gate(call: Any, state: Any, config: Any) -> Any:
        interrupt(call["name"])
        return None

    model = ScriptedChatModel(
        script=[
            AIMessage(
                "", tool_calls=[_call("refund", "r1", order="A1"), _call("audit", "a1", order="A1")]
            ),
            AIMessage("done"),
        ]
    )
    s1 = _saver(db)
    agent = create_react_agent(model, [refund, audit], checkpointer=s1, before_call=gate)
    paused = agent.invoke({"messages": [HumanMessage("go")]}, _config())
    # both approved in one resume: each call's task runs its tool, and the audit's dies
    with pytest.raises(ConnectionResetError):
        agent.invoke(Command(resume={i.id: True for i in paused["__interrupt__"]}), _config())
    assert log == ["refund A1"]
    s1.close()

    crash["on"] = False
    s2 = _saver(db)
    agent2 = create_react_agent(model, [refund, audit], checkpointer=s2, before_call=gate)
    out = agent2.invoke(None, _config())  # a new process resumes the failed step
    assert log == ["refund A1", "audit A1"]  # the refund did not run again
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "refunded",
        "audited",
    ]
    assert out["messages"][-1].content == "done"
    s2.close()


def test_a_hook_may_answer_a_call_with_its_own_tool_message() -> None:
    log: list[str] = []

    def deny(call: Any, state: Any, config: Any) -> Any:
        return ToolMessage("denied by policy", tool_call_id=call["id"], status="error")

    ai = AIMessage("", tool_calls=[_call("refund", "c1", order="A1", amount=1)])
    (msg,) = ToolNode(_lookup_tools(log), before_call=deny).invoke({"messages": [ai]})["messages"]
    assert (msg.content, log) == ("denied by policy", [])


def test_async_gated_calls_run_concurrently_after_approval(db: str) -> None:
    started: list[str] = []

    @tool
    async def slow(n: int) -> int:
        """Slow."""
        started.append(f"start {n}")
        await asyncio.sleep(0.05)
        started.append(f"end {n}")
        return n

    async def gate(call: Any, state: Any, config: Any) -> Any:
        interrupt(call["id"])
        return None

    model = ScriptedChatModel(
        script=[
            AIMessage("", tool_calls=[_call("slow", "s1", n=1), _call("slow", "s2", n=2)]),
            AIMessage("done"),
        ]
    )

    async def main() -> Any:
        from graphs.checkpoint.sql import SQLSaver

        saver = SQLSaver(db.replace("sqlite:", "sqlite+aiosqlite:"))
        await saver.asetup()
        agent = create_react_agent(model, [slow], checkpointer=saver, before_call=gate)
        paused = await agent.ainvoke({"messages": [HumanMessage("go")]}, _config())
        ids = [i.id for i in paused["__interrupt__"]]
        out = await agent.ainvoke(Command(resume={i: True for i in ids}), _config())
        await saver.aclose()
        return out

    out = asyncio.run(main())
    assert started == ["start 1", "start 2", "end 1", "end 2"]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["1", "2"]


# ---- a Runnable as a node -----------------------------------------------------------


def test_a_tool_node_is_added_by_name_in_a_hand_built_graph() -> None:
    log: list[str] = []

    def model(state: MessagesState) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage("ok")]}
        return {"messages": [AIMessage("", tool_calls=[_call("lookup", "c1", order="B")])]}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node(ToolNode(_lookup_tools(log)))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", tools_condition)
    g.add_edge("tools", "model")
    out = g.compile().invoke({"messages": [HumanMessage("hi")]})
    assert out["messages"][-1].content == "ok" and log == ["lookup B"]


def test_langgraphs_tool_call_with_context_payload_runs_its_call_on_its_state() -> None:
    @tool
    def whose(order: str, state: Annotated[dict, InjectedState]) -> str:
        """Whose order."""
        return f"{order} of {state['customer']}"

    class State(MessagesState):
        customer: str

    def model(state: State) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage("ok")]}
        calls = [_call("whose", "c1", order="A1"), _call("whose", "c2", order="B2")]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    def fan_out(state: State) -> Any:
        last = state["messages"][-1]
        if not getattr(last, "tool_calls", None):
            return END
        # the payload LangGraph 1.2's create_react_agent(version="v2") sends
        return [
            Send("tools", {"__type": "tool_call_with_context", "tool_call": c, "state": state})
            for c in last.tool_calls
        ]

    g = StateGraph(State)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([whose]))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", fan_out, ["tools", END])
    g.add_edge("tools", "model")
    graph = g.compile(checkpointer=InMemory())
    out = graph.invoke({"messages": [HumanMessage("hi")], "customer": "ann"}, _config())
    told = [(m.tool_call_id, m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    assert told == [("c1", "A1 of ann"), ("c2", "B2 of ann")]
    assert out["messages"][-1].content == "ok"
