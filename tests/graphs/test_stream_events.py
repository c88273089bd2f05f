"""`astream_events(version="v2")` and langchain_core callbacks given in a run's config: the
graph's run, one run per task under it, and what node code's models report under its task."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from graphs import START, GraphRecursionError, InMemorySaver, StateGraph
from graphs.graph import MessagesState


class Count(TypedDict):
    n: int


def _plus(state: Count) -> dict[str, Any]:
    return {"n": state["n"] + 1}


async def _aplus(state: Count) -> dict[str, Any]:
    return {"n": state["n"] + 10}


def _counting() -> Any:
    graph = StateGraph(Count).add_node("one", _plus).add_node("two", _aplus)
    return graph.add_edge(START, "one").add_edge("one", "two").compile(name="counter")


def _events(graph: Any, input: Any, config: Any = None, **kwargs: Any) -> list[dict[str, Any]]:
    kwargs.setdefault("version", "v2")

    async def go() -> list[dict[str, Any]]:
        return [e async for e in graph.astream_events(input, config, **kwargs)]

    return asyncio.run(go())


def test_the_graph_and_each_task_are_chain_runs_under_the_given_run_id() -> None:
    graph = _counting()
    events = _events(graph, {"n": 1}, {"run_id": UUID(int=7)}, stream_mode="values")
    root = str(UUID(int=7))
    shown = [(e["event"], e["name"]) for e in events]
    assert shown == [
        ("on_chain_start", "counter"),
        ("on_chain_stream", "counter"),
        ("on_chain_start", "one"),
        ("on_chain_stream", "one"),
        ("on_chain_end", "one"),
        ("on_chain_stream", "counter"),
        ("on_chain_start", "two"),
        ("on_chain_stream", "two"),
        ("on_chain_end", "two"),
        ("on_chain_stream", "counter"),
        ("on_chain_end", "counter"),
    ]
    graph_events = [e for e in events if e["name"] == "counter"]
    assert {e["run_id"] for e in graph_events} == {root}
    assert all(e["parent_ids"] == [] for e in graph_events)
    # its stream is what astream yields; its end's output is the final state
    assert [e["data"]["chunk"] for e in graph_events if e["event"] == "on_chain_stream"] == [
        {"n": 1},
        {"n": 2},
        {"n": 12},
    ]
    assert graph_events[-1]["data"]["output"] == {"n": 12}
    assert graph_events[0]["data"]["input"] == {"n": 1}
    one_start, one_stream, one_end = (e for e in events if e["name"] == "one")
    assert one_stream["data"]["chunk"] == {"n": 2}  # the node's update, as LangGraph streams it
    assert one_start["parent_ids"] == [root]
    assert one_start["tags"] == ["graph:step:1"]
    assert one_start["metadata"]["langgraph_node"] == "one"
    assert one_start["metadata"]["langgraph_step"] == 1
    assert one_start["data"]["input"] == {"n": 1}
    assert one_end["data"]["output"] == {"n": 2}
    two_start = next(e for e in events if e["name"] == "two")
    assert two_start["tags"] == ["graph:step:2"]


def test_a_models_tokens_come_under_its_task_and_a_subgraph_under_its_node() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("two words")]))

    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": model.invoke(state["messages"])}

    inner = StateGraph(MessagesState).add_node("call", call).add_edge(START, "call")
    outer = StateGraph(MessagesState).add_node("inner", inner.compile()).add_edge(START, "inner")
    graph = outer.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "run_id": UUID(int=1)}
    events = _events(graph, {"messages": "hi"}, config)
    tokens = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert "".join(e["data"]["chunk"].content for e in tokens) == "two words"
    runs = {e["run_id"]: e for e in events if e["event"].endswith("_start")}
    # model -> task `call` -> the subgraph's run -> task `inner` -> the graph
    chain = [runs[p]["name"] for p in tokens[0]["parent_ids"]]
    assert chain == ["LangGraph", "inner", "LangGraph", "call"]
    assert tokens[0]["metadata"]["langgraph_node"] == "call"


def test_an_events_run_keeps_the_graphs_own_recursion_limit() -> None:
    def again(state: Count) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    graph = StateGraph(Count).add_node("again", again).add_edge(START, "again")
    graph = graph.add_conditional_edges("again", lambda s: "again" if s["n"] < 30 else "__end__")
    compiled = graph.compile(recursion_limit=40)
    events = _events(compiled, {"n": 0})
    assert events[-1]["event"] == "on_chain_end"
    assert events[-1]["data"]["output"] == {"n": 30}
    with pytest.raises(GraphRecursionError):  # one given in the config applies
        _events(compiled, {"n": 0}, {"recursion_limit": 5})


def test_only_version_v2_is_offered() -> None:
    with pytest.raises(ValueError, match='version="v2"'):
        _events(_counting(), {"n": 1}, version="v1")


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.parents: dict[UUID, UUID | None] = {}
        self.names: dict[UUID, str] = {}

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.parents[run_id] = parent_run_id
        self.names[run_id] = kwargs["name"]
        self.log.append(("start", kwargs["name"]))

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.parents[run_id] = parent_run_id
        self.names[run_id] = "model"
        self.log.append(("start", "model"))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.log.append(("end", self.names[run_id], outputs))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.log.append(("error", self.names[run_id], type(error).__name__))


def test_invoke_reports_to_the_configs_callbacks_and_a_failure_too() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))

    def ask(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": model.invoke(state["messages"], config)}  # the node's config

    def fail(state: MessagesState) -> dict[str, Any]:
        raise ValueError("boom")

    graph = StateGraph(MessagesState).add_node("ask", ask).add_node("fail", fail)
    graph = graph.add_edge(START, "ask").add_edge("ask", "fail").compile()
    recorder = Recorder()
    with pytest.raises(ValueError, match="boom"):
        graph.invoke({"messages": "hi"}, {"callbacks": [recorder]})
    assert [entry[:2] for entry in recorder.log] == [
        ("start", "LangGraph"),
        ("start", "ask"),
        ("start", "model"),
        ("end", "ask"),
        ("start", "fail"),
        ("error", "fail"),
        ("error", "LangGraph"),
    ]
    by_name = {name: run_id for run_id, name in recorder.names.items()}
    # the model, called with the node's config, is a child of the node's run
    assert recorder.parents[by_name["model"]] == by_name["ask"]
    assert recorder.parents[by_name["ask"]] == by_name["LangGraph"]
    assert recorder.parents[by_name["LangGraph"]] is None


def test_invoke_ends_the_graphs_run_with_its_final_state() -> None:
    recorder = Recorder()
    assert _counting().invoke({"n": 1}, {"callbacks": [recorder]}) == {"n": 12}
    assert recorder.log == [
        ("start", "counter"),
        ("start", "one"),
        ("end", "one", {"n": 2}),
        ("start", "two"),
        ("end", "two", {"n": 12}),
        ("end", "counter", {"n": 12}),
    ]


def test_closing_the_event_stream_cancels_the_running_step() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(state: Count) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"n": 0}

    graph = StateGraph(Count).add_node("one", _plus).add_node("slow", slow)
    graph = graph.add_edge(START, "one").add_edge("one", "slow").compile()

    async def go() -> None:
        stream = graph.astream_events({"n": 1}, version="v2")
        async with contextlib.aclosing(stream):
            async for event in stream:
                if event["event"] == "on_chain_start" and event["name"] == "slow":
                    async with asyncio.timeout(1):
                        await started.wait()
                    break
        # closed, the node has been cancelled already (not later, when Python finalizes)
        assert cancelled.is_set()

    asyncio.run(go())
    assert cancelled.is_set()


def test_a_graph_composes_with_langchain_runnables() -> None:
    from langchain_core.runnables import RunnablePassthrough

    graph = _counting()
    chain = graph | RunnablePassthrough()
    assert chain.invoke({"n": 1}) == {"n": 12}
    assert list(chain.stream({"n": 1})) == [{"one": {"n": 2}}, {"two": {"n": 12}}]
    before = (lambda x: {"n": x}) | graph
    assert before.invoke(5) == {"n": 16}
    events = _events(chain, {"n": 1}, {"run_id": UUID(int=3)})
    root = [e for e in events if e["run_id"] == str(UUID(int=3))]
    assert root[-1]["event"] == "on_chain_end"
    assert root[-1]["data"]["output"] == {"two": {"n": 12}}  # the last chunk, as LangGraph's
    (graph_start,) = [
        e for e in events if e["event"] == "on_chain_start" and e["name"] == "counter"
    ]
    assert graph_start["parent_ids"] == [str(UUID(int=3))]
    one = next(e for e in events if e["name"] == "one")
    assert one["parent_ids"] == [str(UUID(int=3)), graph_start["run_id"]]
