"""create_react_agent with models that are not chat models: an object with only `invoke`, a
plain function, a coroutine function; each run synchronously and asynchronously; and a model
given by name (`"openai:gpt-4o"`), made by langchain's `init_chat_model` when it is installed;
one chosen for each call by a function of the state and runtime; binding the tools."""

from __future__ import annotations

import asyncio
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from graphs.prebuilt import create_react_agent
from graphs.runtime import Runtime


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order}: shipped"


def _reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """First a tool call, then an answer quoting the tool's result."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return AIMessage("", tool_calls=[{"name": "lookup", "args": {"order": "A1"}, "id": "c1"}])
    return AIMessage(f"done: {results[-1].content}")


class InvokeOnlyModel:
    """A model object with `invoke` and nothing else (no `ainvoke`, not callable)."""

    def __init__(self) -> None:
        self.configs: list[Any] = []
        self.threads: list[int] = []

    def invoke(self, messages: Sequence[BaseMessage], config: Any = None) -> AIMessage:
        self.configs.append(config)
        self.threads.append(threading.get_ident())
        return _reply(messages)


def _answer(result: dict[str, Any]) -> str:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return str(last.content)


def test_invoke_only_model_runs_sync() -> None:
    model = InvokeOnlyModel()
    agent = create_react_agent(model, [lookup])
    result = agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert _answer(result) == "done: A1: shipped"
    assert len(model.configs) == 2


def test_invoke_only_model_runs_async_off_the_event_loop() -> None:
    model = InvokeOnlyModel()
    agent = create_react_agent(model, [lookup])

    async def run() -> tuple[dict[str, Any], int]:
        result = await agent.ainvoke(
            {"messages": [HumanMessage("where is A1?")]}, {"configurable": {"who": "me"}}
        )
        return result, threading.get_ident()

    result, loop_thread = asyncio.run(run())
    assert _answer(result) == "done: A1: shipped"
    assert len(model.configs) == 2
    assert all(c["configurable"]["who"] == "me" for c in model.configs)
    assert loop_thread not in model.threads  # the event loop was not blocked by the model


@pytest.mark.parametrize("kind", ["function", "coroutine"])
def test_callable_models_run_async(kind: str) -> None:
    async def areply(messages: Sequence[BaseMessage]) -> AIMessage:
        return _reply(messages)

    model = _reply if kind == "function" else areply
    agent = create_react_agent(model, [lookup])
    result = asyncio.run(agent.ainvoke({"messages": [HumanMessage("where is A1?")]}))
    assert _answer(result) == "done: A1: shipped"


# ---- a model given by name ------------------------------------------------------------------


class _NamedChatModel(BaseChatModel):
    """What `init_chat_model` makes of a name here: a chat model that takes tools."""

    name_given: str
    bound: list[str] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_reply(messages))])

    @property
    def _llm_type(self) -> str:
        return "named"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = [t.name for t in tools]
        return self


def test_a_model_name_without_langchain_says_what_to_install_or_pass() -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "langchain", None)  # not installed, wherever this runs
        mp.setitem(sys.modules, "langchain.chat_models", None)
        with pytest.raises(ImportError) as e:
            create_react_agent("openai:gpt-4o", [lookup])
    assert str(e.value) == (
        "create_react_agent: model 'openai:gpt-4o' is a model name, and making a chat model of "
        "a name needs the langchain package (its init_chat_model), which is not installed; "
        "install it (pip install langchain, and the provider's package, such as "
        "langchain-openai), or pass a chat model object instead: "
        "create_react_agent(ChatOpenAI(model='gpt-4o'), tools)"
    )


def test_a_model_name_is_made_a_chat_model_by_langchains_init_chat_model() -> None:
    made: list[_NamedChatModel] = []

    def init_chat_model(model: str) -> _NamedChatModel:
        made.append(_NamedChatModel(name_given=model))
        return made[-1]

    chat_models = types.ModuleType("langchain.chat_models")
    chat_models.init_chat_model = init_chat_model  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "langchain", types.ModuleType("langchain"))
        mp.setitem(sys.modules, "langchain.chat_models", chat_models)
        agent = create_react_agent("openai:gpt-4o", [lookup])
    result = agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert _answer(result) == "done: A1: shipped"
    assert [(m.name_given, m.bound) for m in made] == [("openai:gpt-4o", ["lookup"])]


# ---- binding the tools ----------------------------------------------------------------------


class _BindingChatModel(BaseChatModel):
    """A chat model whose `bind_tools` binds as a provider's does (a `RunnableBinding` with the
    tools in OpenAI's form); it counts its bindings."""

    bindings: list[list[str]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_reply(messages))])

    @property
    def _llm_type(self) -> str:
        return "binding"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        forms = [t if isinstance(t, dict) else convert_to_openai_tool(t) for t in tools]
        self.bindings.append([f.get("function", f).get("name", f.get("type")) for f in forms])
        return self.bind(tools=forms)


@tool
def email(to: str) -> str:
    """Email."""
    return "sent"


def test_provider_tools_are_bound_with_the_tools_and_left_to_the_provider() -> None:
    model = _BindingChatModel()
    search = {"type": "web_search_preview"}
    agent = create_react_agent(model, [lookup, search])
    assert model.bindings == [["lookup", "web_search_preview"]]
    assert "tools" in agent.get_graph().nodes  # the node runs lookup only
    result = agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert _answer(result) == "done: A1: shipped"

    only = create_react_agent(_BindingChatModel(), [search])
    assert "tools" not in only.get_graph().nodes  # nothing for the node to run


def test_a_model_bound_to_the_tools_already_is_not_bound_again() -> None:
    model = _BindingChatModel()
    bound = model.bind_tools([lookup])
    agent = create_react_agent(bound, [lookup])
    assert model.bindings == [["lookup"]]
    assert (
        _answer(agent.invoke({"messages": [HumanMessage("where is A1?")]})) == "done: A1: shipped"
    )

    with pytest.raises(ValueError) as e:
        create_react_agent(bound, [lookup, email])
    assert str(e.value) == (
        "create_react_agent: the model was bound to 1 tool(s) (model.bind_tools(...)) and is "
        "given 2: give it the same tools, or pass the model unbound (the agent binds them)"
    )
    with pytest.raises(ValueError) as e:
        create_react_agent(bound, [email])
    assert str(e.value) == (
        "create_react_agent: the model was bound (model.bind_tools(...)) without the tool(s) "
        "['email'] it is given: bind the same tools, or pass the model unbound"
    )


# ---- a model-choosing function ----------------------------------------------------------------


@dataclass
class Plan:
    tier: str


def test_a_function_of_the_state_and_runtime_chooses_the_model_for_each_call() -> None:
    chosen: list[tuple[int, str]] = []

    def choose(state: Any, runtime: Runtime[Plan]) -> Any:
        chosen.append((len(state["messages"]), runtime.context.tier))
        return _BindingChatModel().bind_tools([lookup])  # bound by the chooser, as LangGraph

    agent = create_react_agent(choose, [lookup], context_schema=Plan)
    result = agent.invoke({"messages": [HumanMessage("where is A1?")]}, context=Plan("pro"))
    assert _answer(result) == "done: A1: shipped"
    assert chosen == [(1, "pro"), (3, "pro")]  # once per model call, on the state of the time


def test_an_async_chooser_runs_under_ainvoke_and_is_refused_under_invoke() -> None:
    async def choose(state: Any, runtime: Any) -> Any:
        return _BindingChatModel()

    agent = create_react_agent(choose, [lookup])
    result = asyncio.run(agent.ainvoke({"messages": [HumanMessage("where is A1?")]}))
    assert _answer(result) == "done: A1: shipped"
    with pytest.raises(RuntimeError) as e:
        agent.invoke({"messages": [HumanMessage("where is A1?")]})
    assert str(e.value).startswith(
        "create_react_agent: the model-choosing function is async, and the agent was run with "
        "invoke()/stream(): run it with ainvoke()/astream()"
    )
