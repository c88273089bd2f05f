"""LangGraph's dialect, checked against LangGraph itself: each program is written once and
run on LangGraph and on `graphs` at LangGraph's paths, what it records compared whole.

- `MessagesState` in a tool's signature that pydantic validates (an `InjectedState`), which
  pydantic takes on Python 3.11 only from a `typing_extensions.TypedDict`;
- `ToolNode` is a Runnable: `with_fallbacks` (the customer-support tutorial's error handler)
  and `with_retry` make nodes;
- a tool a node calls without a config sees the run's `configurable`;
- a step whose node returned None shows no `values` chunk.
"""

import asyncio
import importlib
import operator
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from typing_extensions import TypedDict

DIALECTS = ("langgraph", "graphs")


def imports(root: str) -> SimpleNamespace:
    graph = importlib.import_module(f"{root}.graph")
    prebuilt = importlib.import_module(f"{root}.prebuilt")
    memory = importlib.import_module(f"{root}.checkpoint.memory")
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        MessagesState=graph.MessagesState,
        START=graph.START,
        END=graph.END,
        ToolNode=prebuilt.ToolNode,
        InjectedState=prebuilt.InjectedState,
        InMemorySaver=memory.InMemorySaver,
    )


def both(program: Any) -> dict[str, Any]:
    """The program's record on each dialect; the test compares them."""
    return {root: program(imports(root)) for root in DIALECTS}


def contents(out: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(type(m).__name__, m.content) for m in out["messages"]]


def calling(name: str, **args: Any) -> dict[str, Any]:
    call = {"name": name, "args": args, "id": "c1"}
    return {"messages": [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=[call], id="a1")]}


def tool_graph(lg: SimpleNamespace, node: Any) -> Any:
    b = lg.StateGraph(lg.MessagesState)
    b.add_node("tools", node)
    b.add_edge(lg.START, "tools")
    b.add_edge("tools", lg.END)
    return b.compile()


def test_messages_state_in_a_tool_signature_pydantic_validates() -> None:
    def program(lg: SimpleNamespace) -> list[Any]:
        @tool
        def count(extra: int, state: Annotated[lg.MessagesState, lg.InjectedState]) -> str:
            """How many messages, plus `extra`."""
            return str(len(state["messages"]) + extra)

        schema = count.args_schema.model_json_schema()  # type: ignore[union-attr]
        app = tool_graph(lg, lg.ToolNode([count]))
        return [sorted(schema["properties"]), contents(app.invoke(calling("count", extra=10)))]

    seen = both(program)
    assert seen["graphs"] == seen["langgraph"]
    assert seen["graphs"][1][-1] == ("ToolMessage", "12")


def test_tool_node_with_fallbacks_and_with_retry_are_nodes() -> None:
    def program(lg: SimpleNamespace) -> list[Any]:
        tries: list[int] = []

        @tool
        def flaky(x: int) -> str:
            """Fails on its first try."""
            tries.append(x)
            if len(tries) == 1:
                raise RuntimeError(f"flaky {x}")
            return f"ok {x}"

        @tool
        def boom(x: int) -> str:
            """Always fails."""
            raise RuntimeError(f"boom {x}")

        def handle(state: dict[str, Any]) -> dict[str, Any]:
            call = state["messages"][-1].tool_calls[0]
            text = f"handled {state['error']!r}"
            return {"messages": [ToolMessage(text, tool_call_id=call["id"])]}

        fallback = lg.ToolNode([boom], handle_tool_errors=False).with_fallbacks(
            [RunnableLambda(handle)], exception_key="error"
        )
        retried = lg.ToolNode([flaky], handle_tool_errors=False).with_retry(
            stop_after_attempt=2, wait_exponential_jitter=False
        )
        out = [
            contents(tool_graph(lg, fallback).invoke(calling("boom", x=1))),
            contents(asyncio.run(tool_graph(lg, fallback).ainvoke(calling("boom", x=2)))),
            contents(tool_graph(lg, retried).invoke(calling("flaky", x=3))),
            list(tries),
        ]
        return out

    seen = both(program)
    assert seen["graphs"] == seen["langgraph"]
    assert seen["graphs"][0][-1] == ("ToolMessage", "handled RuntimeError('boom 1')")
    assert seen["graphs"][2][-1] == ("ToolMessage", "ok 3")


class Log(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


@tool
def whoami(x: int, config: RunnableConfig) -> str:
    """The user the run is for."""
    return f"{x}:{config['configurable'].get('user')}"


def steps_graph(lg: SimpleNamespace, *, is_async: bool) -> Any:
    def uses_tool(state: Log) -> dict[str, Any]:
        return {"log": [whoami.invoke({"x": state["n"]})]}  # no config given

    async def uses_tool_async(state: Log) -> dict[str, Any]:
        return {"log": [await whoami.ainvoke({"x": state["n"]})]}

    def nothing(state: Log) -> None:
        return None

    def last(state: Log) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    b = lg.StateGraph(Log)
    b.add_node("uses_tool", uses_tool_async if is_async else uses_tool)
    b.add_node("twice", uses_tool_async if is_async else uses_tool)
    b.add_node("nothing", nothing)
    b.add_node("last", last)
    b.add_edge(lg.START, "uses_tool")
    b.add_edge("uses_tool", "twice")
    b.add_edge("twice", "nothing")
    b.add_edge("nothing", "last")
    b.add_edge("last", lg.END)
    return b.compile(checkpointer=lg.InMemorySaver())


@pytest.mark.parametrize(
    "modes", ["values", ["values", "updates"], ["values", "messages"]], ids=str
)
def test_a_tool_sees_configurable_and_a_none_step_shows_no_values(modes: Any) -> None:
    def program(lg: SimpleNamespace) -> list[Any]:
        app = steps_graph(lg, is_async=False)
        aapp = steps_graph(lg, is_async=True)

        async def run() -> list[Any]:
            config = {"configurable": {"thread_id": "t2", "user": "bob"}}
            return [c async for c in aapp.astream({"log": [], "n": 0}, config, stream_mode=modes)]

        config = {"configurable": {"thread_id": "t1", "user": "ann"}}
        return [
            list(app.stream({"log": [], "n": 0}, config, stream_mode=modes)),
            asyncio.run(run()),
        ]

    seen = both(program)
    assert seen["graphs"] == seen["langgraph"]
    chunks = seen["graphs"][0]
    values = [
        c[1] if isinstance(modes, list) else c
        for c in chunks
        if not isinstance(modes, list) or c[0] == "values"
    ]
    assert values == [
        {"log": [], "n": 0},
        {"log": ["0:ann"], "n": 0},
        {"log": ["0:ann", "0:ann"], "n": 0},
        {"log": ["0:ann", "0:ann"], "n": 1},  # none after `nothing`
    ]


def test_seed_dialect_still_shows_the_state_after_every_step() -> None:
    import graphs

    b = graphs.StateGraph(Log)
    b.add_node("nothing", lambda s: None)
    b.add_edge(graphs.START, "nothing")
    chunks = list(b.compile().stream({"log": [], "n": 0}, stream_mode="values"))
    assert chunks == [{"log": [], "n": 0}, {"log": [], "n": 0}]
