"""What a tool is handed besides the model's arguments: `InjectedState` (the state, or one key
of it), `InjectedStore`, langchain_core's `InjectedToolCallId` and `ToolRuntime`, hidden from
the schema the model is shown, filled by the `ToolNode` when the call runs, also after the
call was paused for a person (a SQLite file, a new saver resuming it)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field
from typing_extensions import TypedDict

from graphs import Command, InMemorySaver, interrupt
from graphs.checkpoint.sql import SQLSaver
from graphs.graph.message import add_messages
from graphs.prebuilt import (
    InjectedState,
    InjectedStore,
    ToolNode,
    ToolRuntime,
    create_react_agent,
)
from graphs.store import BaseStore, InMemoryStore


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """Its n-th reply answers a conversation holding n replies already; it keeps the tool
    schemas it was bound with, as a provider would send them."""

    script: list[AIMessage]
    schemas: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=self.script[turn])])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.schemas = [convert_to_openai_tool(t)["function"] for t in tools]
        return self


class State(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]
    customer: str


@tool
def greet(greeting: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Greet the customer."""
    return f"{greeting}, {state['customer']} ({len(state['messages'])} messages)"


@tool
def whoami(customer: Annotated[str, InjectedState("customer")]) -> str:
    """Say who the customer is."""
    return customer


def test_injected_state_is_hidden_from_the_model_and_filled_by_the_node() -> None:
    model = ScriptedChatModel(
        script=[
            AIMessage(
                "",
                tool_calls=[
                    _call("greet", "c1", greeting="hello"),
                    # a model that forges an injected argument: the node drops it
                    _call("whoami", "c2", customer="mallory"),
                ],
            ),
            AIMessage("done"),
        ]
    )
    agent = create_react_agent(model, [greet, whoami], state_schema=State)
    out = agent.invoke({"messages": [HumanMessage("hi")], "customer": "ann"})
    assert [s["parameters"] for s in model.schemas] == [
        {
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"],
            "type": "object",
        },
        {"properties": {}, "type": "object"},
    ]
    results = [(m.tool_call_id, m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results == [("c1", "hello, ann (2 messages)"), ("c2", "ann")]


def test_a_missing_state_key_names_the_tool_and_the_key() -> None:
    ai = AIMessage("", tool_calls=[_call("whoami", "c1")])
    with pytest.raises(ValueError) as e:
        ToolNode([whoami]).invoke({"messages": [ai]})
    assert str(e.value) == (
        "ToolNode: tool 'whoami' takes state key 'customer' (parameter 'customer', "
        "InjectedState), and the state has none; it has: ['messages']"
    )


@tool
def remember(fact: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Remember a fact."""
    store.put(("facts",), fact, {"fact": fact})
    return f"remembered {fact}"


def test_injected_store_is_the_graphs_store() -> None:
    store = InMemoryStore()
    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("remember", "c1", fact="blue")]), AIMessage("ok")]
    )
    agent = create_react_agent(model, [remember], store=store)
    out = agent.invoke({"messages": [HumanMessage("my colour is blue")]})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["remembered blue"]
    item = store.get(("facts",), "blue")
    assert item is not None and item.value == {"fact": "blue"}
    assert model.schemas[0]["parameters"]["properties"] == {"fact": {"type": "string"}}

    ai = AIMessage("", tool_calls=[_call("remember", "c2", fact="red")])
    with pytest.raises(ValueError, match="takes the store .* and the graph has none"):
        ToolNode([remember]).invoke({"messages": [ai]})


class Routed(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]
    team: str


@tool
def hand_off(team: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to a team."""
    done = ToolMessage(f"handed to {team}", tool_call_id=tool_call_id)
    return Command(update={"messages": [done], "team": team})


def test_a_tool_with_the_call_id_returns_a_command_answering_its_call() -> None:
    model = ScriptedChatModel(
        script=[
            AIMessage("", tool_calls=[_call("hand_off", "h1", team="billing")]),
            AIMessage("ok"),
        ]
    )
    agent = create_react_agent(model, [hand_off], state_schema=Routed)
    out = agent.invoke({"messages": [HumanMessage("refund please")]})
    assert out["team"] == "billing"
    (msg,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert (msg.tool_call_id, msg.content) == ("h1", "handed to billing")
    assert model.schemas[0]["parameters"]["properties"] == {"team": {"type": "string"}}


@tool
def inspect_run(note: str, runtime: ToolRuntime) -> str:
    """Report what the tool was handed."""
    runtime.stream_writer({"note": note})
    assert runtime.store is not None
    return (
        f"{note}: call {runtime.tool_call_id}, {len(runtime.state['messages'])} messages, "
        f"context {runtime.context}, thread {runtime.config['configurable']['thread_id']}, "
        f"tools {[t.name for t in runtime.tools]}"
    )


def test_tool_runtime_carries_state_call_id_context_store_and_config() -> None:
    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("inspect_run", "r1", note="hi")]), AIMessage("ok")]
    )
    agent = create_react_agent(
        model, [inspect_run], checkpointer=InMemorySaver(), store=InMemoryStore()
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    chunks = list(
        agent.stream(
            {"messages": [HumanMessage("go")]},
            config,
            context={"user": "ann"},
            stream_mode=["custom", "values"],
        )
    )
    assert ("custom", {"note": "hi"}) in chunks
    last = [c for mode, c in chunks if mode == "values"][-1]
    (msg,) = [m for m in last["messages"] if isinstance(m, ToolMessage)]
    assert msg.content == (
        "hi: call r1, 2 messages, context {'user': 'ann'}, thread t1, tools ['inspect_run']"
    )
    assert model.schemas[0]["parameters"]["properties"] == {"note": {"type": "string"}}


def test_a_gated_call_to_an_injected_tool_shows_only_the_models_arguments(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    ran: list[str] = []

    @tool
    def refund(amount: int, customer: Annotated[str, InjectedState("customer")]) -> str:
        """Refund the customer."""
        ran.append(f"{customer} {amount}")
        return f"refunded {amount} to {customer}"

    asked: list[Any] = []

    def gate(call: Any, state: Any, config: Any) -> Any:
        asked.append(call["args"])
        interrupt({"tool": call["name"], "args": call["args"]})
        return None

    def agent(saver: SQLSaver) -> Any:
        model = ScriptedChatModel(
            script=[
                AIMessage("", tool_calls=[_call("refund", "r1", amount=20)]),
                AIMessage("refunded"),
            ]
        )
        return create_react_agent(
            model, [refund], state_schema=State, checkpointer=saver, before_call=gate
        )

    config: Any = {"configurable": {"thread_id": "t"}}
    s1 = SQLSaver(url)
    s1.setup()
    paused = agent(s1).invoke({"messages": [HumanMessage("refund me")], "customer": "ann"}, config)
    assert paused["__interrupt__"][0].value == {"tool": "refund", "args": {"amount": 20}}
    s1.close()

    s2 = SQLSaver(url)  # another process approves
    out = agent(s2).invoke(Command(resume=True), config)
    s2.close()
    assert ran == ["ann 20"]
    assert asked == [{"amount": 20}, {"amount": 20}]
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "refunded 20 to ann"
    ]


def test_an_argument_error_names_only_what_the_model_sent() -> None:
    @tool
    def charge(amount: int, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Charge."""
        return "charged"

    ai = AIMessage("", tool_calls=[_call("charge", "c1", amount="lots")])
    (msg,) = ToolNode([charge]).invoke({"messages": [ai], "secret": "s3cr3t"})["messages"]
    assert msg.status == "error"
    assert msg.content == (
        "Error invoking tool 'charge' with kwargs {'amount': 'lots'} with error:\n"
        " amount: Input should be a valid integer, unable to parse string as an integer\n"
        " Please fix the error and try again."
    )


def test_injections_under_ainvoke() -> None:
    @tool
    async def where(
        runtime: ToolRuntime, customer: Annotated[str, InjectedState("customer")]
    ) -> str:
        """Say where the call runs."""
        thread = runtime.config["configurable"]["thread_id"]
        return f"{customer} in call {runtime.tool_call_id} of thread {thread}"

    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("where", "w1")]), AIMessage("ok")]
    )
    agent = create_react_agent(model, [where], state_schema=State, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t2"}}
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")], "customer": "bo"}, config))
    (msg,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert msg.content == "bo in call w1 of thread t2"
    assert model.schemas[0]["parameters"] == {"properties": {}, "type": "object"}


def test_a_tool_with_the_call_id_and_the_runtime_returns_a_command() -> None:
    @tool
    def route(
        team: str, tool_call_id: Annotated[str, InjectedToolCallId], runtime: ToolRuntime
    ) -> Command:
        """Route to a team."""
        n = len(runtime.state["messages"])
        done = ToolMessage(f"routed to {team} after {n}", tool_call_id=tool_call_id)
        return Command(update={"messages": [done], "team": team})

    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("route", "r1", team="ops")]), AIMessage("ok")]
    )
    out = create_react_agent(model, [route], state_schema=Routed).invoke(
        {"messages": [HumanMessage("help")]}
    )
    assert out["team"] == "ops"
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "routed to ops after 2"
    ]
    assert model.schemas[0]["parameters"]["properties"] == {"team": {"type": "string"}}
