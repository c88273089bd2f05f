"""create_react_agent's `prompt` in each form LangGraph takes (a string, a `SystemMessage`, a
function of the state, with the config and the store if it asks, async, a Runnable), under
`invoke` and `ainvoke`, against a chat model that answers with what it was sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda

from graphs.prebuilt import create_react_agent
from graphs.store import BaseStore, InMemoryStore


class EchoModel(BaseChatModel):
    """Answers with the contents of the messages it was sent, joined by `-`."""

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        reply = AIMessage("-".join(str(m.content) for m in messages))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "echo"


def _answer(prompt: Any, *, asynchronous: bool = False, **kw: Any) -> str:
    agent = create_react_agent(EchoModel(), [], prompt=prompt, **kw)
    config: Any = {"configurable": {"user_id": "1"}}
    inputs = {"messages": [HumanMessage("hi?")]}
    if asynchronous:
        out = asyncio.run(agent.ainvoke(inputs, config))
    else:
        out = agent.invoke(inputs, config)
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage"]
    return str(out["messages"][-1].content)


def _bar(state: Any) -> list[BaseMessage]:
    return [HumanMessage(f"Bar {state['messages'][-1].content}")]


async def _abar(state: Any) -> list[BaseMessage]:
    return _bar(state)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        (None, "hi?"),
        ("Foo", "Foo-hi?"),
        (SystemMessage("Foo"), "Foo-hi?"),
        (_bar, "Bar hi?"),
        (RunnableLambda(lambda state: [HumanMessage(f"Baz {state['messages'][-1].content}")]), "Baz hi?"),
        # a prompt template made of a message and the state's messages, run on the state
        (lambda state: SystemMessage("foo") + state["messages"], "foo-hi?"),
    ],
    ids=["none", "str", "system_message", "function", "runnable", "template"],
)  # fmt: skip
def test_each_prompt_form_decides_what_the_model_is_sent(
    prompt: Any, sent: str, asynchronous: bool
) -> None:
    assert _answer(prompt, asynchronous=asynchronous) == sent


def test_an_async_prompt_runs_under_ainvoke_and_is_refused_under_invoke() -> None:
    assert _answer(_abar, asynchronous=True) == "Bar hi?"
    with pytest.raises(TypeError) as e:
        _answer(_abar)
    assert str(e.value) == (
        "create_react_agent: the prompt is an async function, and the agent was run with "
        "invoke()/stream(): run it with ainvoke()/astream(), or give a sync prompt"
    )


def _memories() -> InMemoryStore:
    store = InMemoryStore()
    store.put(("memories", "1"), "user_name", {"data": "User name is Alice"})
    return store


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_prompt_function_is_handed_the_config_and_the_store_it_asks_for(
    asynchronous: bool,
) -> None:
    def prompt(state: Any, config: RunnableConfig, *, store: BaseStore) -> list[BaseMessage]:
        user_id = config["configurable"]["user_id"]
        item = store.get(("memories", user_id), "user_name")
        assert item is not None
        return [SystemMessage(item.value["data"]), *state["messages"]]

    async def aprompt(state: Any, config: RunnableConfig, *, store: BaseStore) -> list[BaseMessage]:
        return prompt(state, config, store=store)

    chosen = aprompt if asynchronous else prompt
    sent = _answer(chosen, asynchronous=asynchronous, store=_memories())
    assert sent == "User name is Alice-hi?"

    def by_keyword(state: Any, *, config: RunnableConfig) -> list[BaseMessage]:
        return [SystemMessage(config["configurable"]["user_id"]), *state["messages"]]

    assert _answer(by_keyword, asynchronous=asynchronous) == "1-hi?"


def test_a_prompt_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError) as e:
        create_react_agent(EchoModel(), [], prompt=42)
    assert str(e.value) == (
        "create_react_agent: prompt must be a str, a SystemMessage, a function or a Runnable, "
        "got int 42"
    )
