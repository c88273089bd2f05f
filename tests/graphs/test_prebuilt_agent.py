"""create_react_agent as LangGraph's: `remaining_steps` (the agent stops in good order before
the recursion limit), `name`, `pre_model_hook`, `post_model_hook` and `response_format`, with
a scripted langchain_core chat model and real tools; the pause before a call still holds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from graphs import Command, InMemorySaver, interrupt
from graphs.checkpoint.sql import SQLSaver
from graphs.graph.message import REMOVE_ALL_MESSAGES
from graphs.prebuilt import create_react_agent


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """Its n-th reply answers a conversation holding n replies already (`by_call`: its n-th
    call); it keeps what it was sent."""

    script: list[AIMessage]
    by_call: bool = False
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        self.seen.append(list(messages))
        turn = (
            len(self.seen) - 1 if self.by_call else sum(isinstance(m, AIMessage) for m in messages)
        )
        reply = self.script[min(turn, len(self.script) - 1)]
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def search(query: str) -> str:
    """Search."""
    return f"results for {query}"


def _always_searching() -> ScriptedChatModel:
    """A model that never stops asking for a search (each call a new id)."""
    return ScriptedChatModel(
        script=[
            AIMessage("", id=f"a{i}", tool_calls=[_call("search", f"s{i}", query="x")])
            for i in range(40)
        ]
    )


def test_the_agent_says_it_needs_more_steps_instead_of_failing() -> None:
    agent = create_react_agent(_always_searching(), [search])
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 2})
    assert [(type(m).__name__, m.content) for m in out["messages"]] == [
        ("HumanMessage", "go"),
        ("AIMessage", "Sorry, need more steps to process this request."),
    ]
    assert out["messages"][-1].id == "a0"  # the model's reply, replaced

    out = agent.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 7})
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage"] + ["AIMessage", "ToolMessage"] * 3 + ["AIMessage"]
    assert out["messages"][-1].content == "Sorry, need more steps to process this request."
    assert "remaining_steps" not in out


def test_name_names_the_graph_and_the_models_messages() -> None:
    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("search", "s1", query="q")]), AIMessage("found")]
    )
    agent = create_react_agent(model, [search], name="researcher")
    assert agent.name == "researcher"
    out = agent.invoke({"messages": [HumanMessage("go")]})
    assert [m.name for m in out["messages"] if isinstance(m, AIMessage)] == [
        "researcher",
        "researcher",
    ]


def test_pre_model_hook_chooses_what_the_model_is_sent() -> None:
    model = ScriptedChatModel(
        script=[AIMessage("", tool_calls=[_call("search", "s1", query="q")]), AIMessage("found")],
        by_call=True,
    )

    def last_two(state: Any) -> dict[str, Any]:
        # what the model reads this time; the conversation itself is kept whole
        return {"llm_input_messages": [SystemMessage("summary"), *state["messages"][-2:]]}

    agent = create_react_agent(model, [search], pre_model_hook=last_two)
    history = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    out = agent.invoke({"messages": history})
    assert [[m.content for m in sent] for sent in model.seen] == [
        ["summary", "b", "c"],
        ["summary", "", "results for q"],
    ]
    assert len(out["messages"]) == 6 and "llm_input_messages" not in out


def test_a_pre_model_hook_may_rewrite_the_conversation() -> None:
    model = ScriptedChatModel(script=[AIMessage("ok")])

    def keep_last(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), last]}

    agent = create_react_agent(model, [search], pre_model_hook=keep_last)
    out = agent.invoke({"messages": [HumanMessage("old"), HumanMessage("new")]})
    assert [m.content for m in out["messages"]] == ["new", "ok"]


def test_post_model_hook_runs_after_each_model_call_and_may_answer_a_call() -> None:
    ran: list[str] = []

    @tool
    def delete(table: str) -> str:
        """Delete a table."""
        ran.append(f"delete {table}")
        return "deleted"

    model = ScriptedChatModel(
        script=[
            AIMessage(
                "",
                tool_calls=[_call("search", "s1", query="q"), _call("delete", "d1", table="users")],
            ),
            AIMessage("done"),
        ]
    )
    hooked: list[int] = []

    def guard(state: Any) -> dict[str, Any]:
        hooked.append(len(state["messages"]))
        last = state["messages"][-1]
        refused = [
            ToolMessage("refused by the guardrail", tool_call_id=c["id"], status="error")
            for c in getattr(last, "tool_calls", [])
            if c["name"] == "delete"
        ]
        return {"messages": refused}

    agent = create_react_agent(model, [search, delete], post_model_hook=guard)
    out = agent.invoke({"messages": [HumanMessage("go")]})
    assert hooked == [2, 5] and ran == []
    results = {m.tool_call_id: m.content for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results == {"d1": "refused by the guardrail", "s1": "results for q"}
    assert out["messages"][-1].content == "done"


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    degrees: int


def _weather_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        script=[
            AIMessage("", tool_calls=[_call("search", "s1", query="weather in Oslo")]),
            AIMessage("It is 3 degrees in Oslo."),
            # the structured call: the model answers with the schema's tool
            AIMessage("", tool_calls=[_call("Weather", "w1", city="Oslo", degrees=3)]),
        ],
        by_call=True,
    )


def test_response_format_adds_a_structured_response_after_the_loop() -> None:
    model = _weather_model()
    agent = create_react_agent(model, [search], response_format=Weather)
    out = agent.invoke({"messages": [HumanMessage("weather in Oslo?")]})
    assert out["structured_response"] == Weather(city="Oslo", degrees=3)
    assert out["messages"][-1].content == "It is 3 degrees in Oslo."
    assert len(model.seen) == 3 and model.seen[2] == out["messages"]


def test_response_format_with_a_prompt_sends_it_first() -> None:
    model = _weather_model()
    agent = create_react_agent(model, [search], response_format=("Answer as JSON.", Weather))
    out = agent.invoke({"messages": [HumanMessage("weather in Oslo?")]})
    assert out["structured_response"].degrees == 3
    assert isinstance(model.seen[2][0], SystemMessage)
    assert model.seen[2][0].content == "Answer as JSON."


def test_a_state_schema_without_the_agents_keys_is_refused() -> None:
    class Bare(BaseModel):
        messages: list[Any]

    with pytest.raises(ValueError) as e:
        create_react_agent(_weather_model(), [search], state_schema=Bare, response_format=Weather)
    assert str(e.value) == (
        "create_react_agent: state_schema "
        "test_a_state_schema_without_the_agents_keys_is_refused.<locals>.Bare has no key(s) "
        "['structured_response']; the agent writes them"
    )


def test_the_pause_before_a_call_holds_with_the_hooks(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    ran: list[int] = []

    @tool
    def refund(amount: int) -> str:
        """Refund."""
        ran.append(amount)
        return f"refunded {amount}"

    def gate(call: Any, state: Any, config: Any) -> Any:
        interrupt({"tool": call["name"], "args": call["args"]})
        return None

    def agent(saver: Any) -> Any:
        model = ScriptedChatModel(
            script=[AIMessage("", tool_calls=[_call("refund", "r1", amount=5)]), AIMessage("ok")]
        )
        return create_react_agent(
            model,
            [refund],
            checkpointer=saver,
            before_call=gate,
            pre_model_hook=lambda s: {"llm_input_messages": s["messages"]},
            post_model_hook=lambda s: None,
        )

    config: Any = {"configurable": {"thread_id": "t"}}
    s1 = SQLSaver(url)
    s1.setup()
    assert "__interrupt__" in agent(s1).invoke({"messages": [HumanMessage("refund")]}, config)
    s1.close()
    s2 = SQLSaver(url)
    out = agent(s2).invoke(Command(resume=True), config)
    s2.close()
    assert ran == [5] and out["messages"][-1].content == "ok"


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version must be 'v1' or 'v2'"):
        create_react_agent(_weather_model(), [search], version="v3")  # type: ignore[arg-type]
    agent = create_react_agent(
        _weather_model(), [search], version="v1", checkpointer=InMemorySaver()
    )
    assert set(agent.get_graph().nodes) >= {"agent", "tools"}


def test_the_hooks_structured_response_and_step_count_under_ainvoke() -> None:
    model = _weather_model()
    sent: list[int] = []

    async def pre(state: Any) -> dict[str, Any]:
        sent.append(state["remaining_steps"])
        return {"llm_input_messages": state["messages"]}

    agent = create_react_agent(model, [search], response_format=Weather, pre_model_hook=pre)
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("weather in Oslo?")]}))
    assert out["structured_response"] == Weather(city="Oslo", degrees=3)
    assert sent == [24, 21]  # pre, agent, tools, pre: LangGraph's numbers for the limit of 25

    out = asyncio.run(
        create_react_agent(_always_searching(), [search]).ainvoke(
            {"messages": [HumanMessage("go")]}, {"recursion_limit": 4}
        )
    )
    assert out["messages"][-1].content == "Sorry, need more steps to process this request."


def test_a_conversation_with_an_unanswered_tool_call_is_refused_before_the_model() -> None:
    model = ScriptedChatModel(script=[AIMessage("hello")])
    agent = create_react_agent(model, [search])
    pending = AIMessage("", tool_calls=[_call("search", "s1", query="x")])
    with pytest.raises(ValueError) as e:
        agent.invoke({"messages": [HumanMessage("hi"), pending, HumanMessage("and?")]})
    assert str(e.value).startswith(
        "create_react_agent: the messages have tool calls that no ToolMessage answers (the "
        "first of them: [{'name': 'search', 'args': {'query': 'x'}, 'id': 's1', 'type': "
        "'tool_call'}]); every tool call needs its ToolMessage before the model is called again"
    )
    assert model.seen == []  # the model was not called

    answered = ToolMessage("results for x", tool_call_id="s1")
    out = agent.invoke({"messages": [HumanMessage("hi"), pending, answered, HumanMessage("and?")]})
    assert out["messages"][-1].content == "hello"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_return_direct_tool_ends_the_run_with_its_result(version: Any) -> None:
    @tool(return_direct=True)
    def final(answer: str) -> str:
        """Answer the user directly."""
        return f"final: {answer}"

    model = ScriptedChatModel(
        script=[
            AIMessage(
                "", tool_calls=[_call("search", "s1", query="x"), _call("final", "f1", answer="42")]
            ),
            AIMessage("never asked"),
        ]
    )
    agent = create_react_agent(model, [search, final], version=version)
    out = agent.invoke({"messages": [HumanMessage("go")]})
    assert [(type(m).__name__, m.content) for m in out["messages"][2:]] == [
        ("ToolMessage", "results for x"),
        ("ToolMessage", "final: 42"),
    ]
    assert len(model.seen) == 1  # the model was not called after the direct tool
