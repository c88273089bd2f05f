"""Typed state (pydantic models, dataclasses), input/output schemas, context and `Runtime`."""

import dataclasses
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from graphs import (
    END,
    START,
    Command,
    GraphSetupError,
    InMemorySaver,
    InvalidUpdateError,
    StateGraph,
)
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import add_messages
from graphs.runtime import Runtime, get_runtime
from graphs.types import StreamWriter


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


# ---- pydantic ----------------------------------------------------------------------------


class Chat(BaseModel):
    topic: str
    turns: int = 0
    notes: Annotated[list[str], operator.add] = []
    messages: Annotated[list[AnyMessage], add_messages] = []


def chat_graph() -> StateGraph:
    seen: list[type] = []

    def reply(state: Chat) -> dict[str, Any]:
        seen.append(type(state))
        return {
            "turns": state.turns + 1,
            "notes": [f"{state.topic}#{state.turns}"],
            "messages": [AIMessage(f"about {state.topic}")],
        }

    def again(state: Chat) -> str:
        seen.append(type(state))
        return END if state.turns >= 2 else "reply"

    g = StateGraph(Chat)
    g.add_node("reply", reply).add_edge(START, "reply")
    g.add_conditional_edges("reply", again, ["reply", END])
    g.seen = seen  # type: ignore[attr-defined]
    return g


def test_a_pydantic_state_gives_nodes_and_routers_instances_with_defaults() -> None:
    g = chat_graph()
    out = g.compile().invoke({"topic": "refunds"})
    assert g.seen == [Chat] * 4  # type: ignore[attr-defined]
    assert out["turns"] == 2 and out["notes"] == ["refunds#0", "refunds#1"]
    assert [m.content for m in out["messages"]] == ["about refunds", "about refunds"]


async def test_a_pydantic_instance_as_input_under_ainvoke_with_sqlite(tmp_path: Any) -> None:
    saver = SQLSaver(f"sqlite+aiosqlite:///{tmp_path / 'typed.db'}")
    await saver.asetup()
    app = chat_graph().compile(checkpointer=saver)
    out = await app.ainvoke(Chat(topic="email", messages=[HumanMessage("hi")]), thread("p"))
    assert out["turns"] == 2 and [type(m) for m in out["messages"]] == [
        HumanMessage,
        AIMessage,
        AIMessage,
    ]
    state = await app.aget_state(thread("p"))
    assert state.values["notes"] == ["email#0", "email#1"]
    await saver.aclose()


def test_a_pydantic_state_validates_what_nodes_read() -> None:
    app = chat_graph().compile()
    with pytest.raises(ValidationError, match="topic"):
        app.invoke({"turns": 1})


def test_a_node_may_return_a_model_instance() -> None:
    class Counter(BaseModel):
        count: int = 0
        label: str | None = None

    def bump(state: Counter) -> Counter:
        # As LangGraph: fields set or not None are the update; `label` stays unwritten.
        return Counter(count=state.count + 5)

    g = StateGraph(Counter)
    g.add_node("bump", bump).add_edge(START, "bump")
    assert g.compile().invoke({"count": 1}) == {"count": 6}


def test_a_pydantic_instance_with_no_field_set_is_an_empty_input_or_update(tmp_path: Any) -> None:
    class Draft(BaseModel):
        title: str | None = None
        body: str | None = None

    def write(state: Draft) -> Draft:
        return Draft(title="Refund")

    def review(state: Draft) -> Command[Any]:
        return Command(update=Draft())  # nothing set: nothing written

    g = StateGraph(Draft).add_node("write", write).add_node("review", review)
    g.add_edge(START, "write").add_edge("write", "review")
    assert g.compile().invoke(Draft()) == {"title": "Refund"}
    saver = SQLSaver(f"sqlite:///{tmp_path / 'draft.db'}")
    saver.setup()
    try:
        app = g.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        assert app.invoke(Draft(), config) == {"title": "Refund"}
        assert app.get_state(config).values == {"title": "Refund"}
    finally:
        saver.close()


# ---- dataclasses -------------------------------------------------------------------------


@dataclasses.dataclass
class Order:
    order_id: str
    lines: Annotated[list[int], operator.add] = dataclasses.field(default_factory=list)
    status: str = "new"


def order_graph() -> StateGraph:
    def price(state: Order) -> dict[str, Any]:
        assert isinstance(state, Order)
        return {"lines": [len(state.order_id)], "status": f"priced from {state.status}"}

    async def ship(state: Order) -> Order:
        assert isinstance(state, Order)
        return dataclasses.replace(state, lines=[], status="shipped")

    g = StateGraph(Order)
    g.add_node("price", price).add_node("ship", ship)
    g.add_edge(START, "price").add_edge("price", "ship").add_edge("ship", END)
    return g


async def test_a_dataclass_state_sync_and_async_with_a_checkpointer() -> None:
    app = order_graph().compile(checkpointer=InMemorySaver())
    out = await app.ainvoke({"order_id": "A-17"}, thread("d"))
    assert out == {"order_id": "A-17", "lines": [4], "status": "shipped"}
    second = await app.ainvoke({"order_id": "B-2"}, thread("d"))
    assert second["lines"] == [4, 3]  # the reducer kept the first run's line

    with pytest.raises(RuntimeError, match="is async"):
        app.invoke({"order_id": "x"}, thread("d"))  # from a running loop: a clear refusal


def test_a_dataclass_state_under_invoke() -> None:
    app = order_graph().compile()
    assert app.invoke(Order("Z-1")) == {"order_id": "Z-1", "lines": [3], "status": "shipped"}


def test_a_schema_of_another_kind_is_refused() -> None:
    # A type (`int`, `Annotated[list, add]`) is a root channel; an object that is none is refused.
    with pytest.raises(GraphSetupError, match="a TypedDict, a dataclass or a pydantic model"):
        StateGraph(3)  # type: ignore[arg-type]


# ---- input and output schemas ------------------------------------------------------------


class Question(TypedDict):
    question: str


class Answer(TypedDict):
    answer: str


class Overall(TypedDict):
    question: str
    answer: str
    scratch: str


def qa_graph(**schemas: Any) -> StateGraph:
    def think(state: Overall) -> dict[str, Any]:
        return {"scratch": state["question"][::-1]}

    def answer(state: Overall) -> dict[str, Any]:
        return {"answer": state["scratch"].upper()}

    g = StateGraph(Overall, **schemas)
    g.add_node("think", think).add_node("answer", answer)
    g.add_edge(START, "think").add_edge("think", "answer").add_edge("answer", END)
    return g


async def test_input_and_output_schemas_narrow_what_goes_in_and_comes_out() -> None:
    app = qa_graph(input_schema=Question, output_schema=Answer).compile(
        checkpointer=InMemorySaver()
    )
    assert app.invoke({"question": "abc"}, thread("q")) == {"answer": "CBA"}
    assert await app.ainvoke({"question": "xy"}, thread("q2")) == {"answer": "YX"}
    assert list(app.stream({"question": "ok"}, thread("q3"), "values")) == [
        {},
        {},
        {"answer": "KO"},
    ]
    # The whole state is kept.
    assert app.get_state(thread("q")).values == {
        "question": "abc",
        "scratch": "cba",
        "answer": "CBA",
    }
    with pytest.raises(InvalidUpdateError) as e:
        app.invoke({"question": "abc", "scratch": "sneaky"}, thread("q4"))
    assert str(e.value) == (
        "the input has key(s) ['scratch'] that the graph's input_schema does not have; it "
        "takes: ['question']"
    )


def test_a_resume_command_may_update_keys_outside_the_input_schema() -> None:
    app = qa_graph(input_schema=Question, output_schema=Answer).compile(
        checkpointer=InMemorySaver(), interrupt_before=["answer"], interrupt_mode="return"
    )
    app.invoke({"question": "abc"}, thread("r"))
    # An operator's correction of a private key, as LangGraph allows with Command(update=).
    assert app.invoke(Command(update={"scratch": "fixed"}), thread("r")) == {"answer": "FIXED"}


def test_output_keys_the_state_lacks_are_channels_of_their_own() -> None:
    class Private(TypedDict):
        question: str

    class Out(TypedDict):
        summary: str

    def summarize(state: Private) -> dict[str, Any]:
        return {"summary": f"asked {state['question']}"}

    g = StateGraph(Private, output_schema=Out)
    g.add_node("summarize", summarize).add_edge(START, "summarize")
    assert g.compile().invoke({"question": "why"}) == {"summary": "asked why"}


def test_the_older_input_and_output_keywords_warn_and_work() -> None:
    with pytest.warns(DeprecationWarning, match=r"StateGraph\((input|output)=...\) is deprecated"):
        g = qa_graph(input=Question, output=Answer)
    assert g.compile().invoke({"question": "abc"}) == {"answer": "CBA"}
    with pytest.raises(GraphSetupError, match=r"unknown argument\(s\) \['outputs'\]"):
        StateGraph(Overall, outputs=Answer)


# ---- context and Runtime -----------------------------------------------------------------


@dataclasses.dataclass
class Ctx:
    user_id: str
    locale: str = "en"


class Greeting(TypedDict):
    text: str


def greeting_graph() -> StateGraph:
    def greet(state: Greeting, runtime: Runtime[Ctx]) -> dict[str, Any]:
        assert isinstance(runtime.context, Ctx)
        runtime.stream_writer({"for": runtime.context.user_id})
        return {"text": f"{state['text']} {runtime.context.user_id} ({runtime.context.locale})"}

    async def sign(state: Greeting, config: Any, *, runtime: Runtime[Ctx]) -> dict[str, Any]:
        info = runtime.execution_info
        assert info is not None and info.thread_id == config["configurable"]["thread_id"]
        assert get_runtime(Ctx).context is runtime.context
        return {"text": state["text"] + "!"}

    g = StateGraph(Greeting, context_schema=Ctx)
    g.add_node("greet", greet).add_node("sign", sign)
    g.add_edge(START, "greet").add_edge("greet", "sign").add_edge("sign", END)
    return g


async def test_context_reaches_nodes_through_runtime_sync_and_async() -> None:
    app = greeting_graph().compile(checkpointer=InMemorySaver())
    out = await app.ainvoke({"text": "hi"}, thread("c"), context={"user_id": "u7"})
    assert out == {"text": "hi u7 (en)!"}
    chunks = [
        c
        async for c in app.astream(
            {"text": "yo"}, thread("c2"), ["custom", "values"], context=Ctx("u8", "fr")
        )
    ]
    assert chunks[1] == ("custom", {"for": "u8"}) and chunks[-1] == (
        "values",
        {"text": "yo u8 (fr)!"},
    )


def test_runtime_without_a_context_and_its_execution_info() -> None:
    got: list[Any] = []

    def node(state: Greeting, runtime: Runtime) -> dict[str, Any]:
        got.append(runtime)
        return {}

    g = StateGraph(Greeting)
    g.add_node("node", node).add_edge(START, "node")
    app = g.compile(checkpointer=InMemorySaver())
    app.invoke({"text": "x"}, thread("r"))
    [runtime] = got
    assert runtime.context is None and runtime.store is None and runtime.previous is None
    info = runtime.execution_info
    assert info.thread_id == "r" and info.node_attempt == 1 and info.checkpoint_ns == ""
    # The node ran on step 0's checkpoint (the input applied), the one after the input's.
    step0 = list(app.get_state_history(thread("r")))[-2]
    assert step0.metadata["step"] == 0
    assert info.checkpoint_id == step0.config["configurable"]["checkpoint_id"]
    assert info.task_id == step0.tasks[0].id


def test_a_writer_and_a_runtime_parameter_together() -> None:
    def node(state: Greeting, writer: StreamWriter, runtime: Runtime[Ctx]) -> dict[str, Any]:
        writer(runtime.context.user_id)
        return {"text": "done"}

    g = StateGraph(Greeting, context_schema=Ctx)
    g.add_node("node", node).add_edge(START, "node")
    assert list(g.compile().stream({"text": ""}, None, "custom", context={"user_id": "w"})) == ["w"]


def test_get_runtime_outside_a_node_is_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"get_runtime\(\) can only be called inside"):
        get_runtime()
