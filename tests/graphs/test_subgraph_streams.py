"""`stream(..., subgraphs=True)` as the subgraph runs: each subgraph chunk reaches the consumer
when it is made (not when the parent's step ends), and the subgraph's `custom` and `messages`
chunks come too, under its namespace. Without `subgraphs=True` a subgraph's `custom` chunks and
model tokens stay out of the parent's stream, and the messages it returns come as the parent
node's, as in LangGraph."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk

from graphs import END, START, InMemorySaver, StateGraph
from graphs.config import get_stream_writer
from graphs.graph import MessagesState


class S(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def chain(schema: Any, **nodes: Any) -> StateGraph:
    b = StateGraph(schema)
    previous = START
    for name, node in nodes.items():
        b.add_node(name, node)
        b.add_edge(previous, name)
        previous = name
    b.add_edge(previous, END)
    return b


def step(name: str) -> Any:
    def node(state: S) -> S:
        get_stream_writer()({"at": name})
        return {"steps": [name]}

    return node


def short(ns: tuple[str, ...]) -> tuple[str, ...]:
    """A namespace without its task ids: `("sub",)` for `("sub:<task id>",)`."""
    return tuple(segment.split(":")[0] for segment in ns)


def waits_for(seen: threading.Event) -> Any:
    """A subgraph node that runs only once the consumer has seen the step before it."""

    def node(state: S) -> S:
        return {"steps": ["b" if seen.wait(timeout=5) else "b (too late)"]}

    return node


def test_a_subgraph_chunk_reaches_the_consumer_while_the_subgraph_still_runs() -> None:
    seen = threading.Event()
    sub = chain(S, a=step("a"), b=waits_for(seen)).compile()
    graph = chain(S, sub=sub).compile(checkpointer=InMemorySaver())
    got = []
    for ns, chunk in graph.stream({"steps": []}, config(), stream_mode="updates", subgraphs=True):
        got.append((short(ns), chunk))
        if "a" in chunk:
            seen.set()
    assert got == [
        (("sub",), {"a": {"steps": ["a"]}}),
        (("sub",), {"b": {"steps": ["b"]}}),
        ((), {"sub": {"steps": ["a", "b"]}}),
    ]


def test_astream_hands_on_a_subgraph_chunk_while_the_subgraph_still_runs() -> None:
    async def main() -> list[Any]:
        seen = asyncio.Event()

        async def b(state: S) -> S:
            try:
                async with asyncio.timeout(5):
                    await seen.wait()
            except TimeoutError:
                return {"steps": ["b (too late)"]}
            return {"steps": ["b"]}

        sub = chain(S, a=step("a"), b=b).compile()

        async def call_sub(state: S) -> S:  # a subgraph called inside a node, too
            return {"steps": (await sub.ainvoke({"steps": []}))["steps"]}

        graph = chain(S, outer=call_sub).compile(checkpointer=InMemorySaver())
        got = []
        async for ns, mode, chunk in graph.astream(
            {"steps": []}, config(), stream_mode=["updates", "custom"], subgraphs=True
        ):
            got.append((short(ns), mode, chunk))
            if mode == "updates" and "a" in chunk:
                seen.set()
        return got

    assert asyncio.run(main()) == [
        (("outer",), "custom", {"at": "a"}),
        (("outer",), "updates", {"a": {"steps": ["a"]}}),
        (("outer",), "updates", {"b": {"steps": ["b"]}}),
        ((), "updates", {"outer": {"steps": ["a", "b"]}}),
    ]


def custom_graph() -> Any:
    sub = chain(S, a=step("a"), b=step("b")).compile()
    return chain(S, p=step("p"), sub=sub).compile(checkpointer=InMemorySaver())


def test_custom_chunks_of_a_subgraph_come_under_its_namespace_in_order() -> None:
    items = [
        (short(ns), mode, chunk)
        for ns, mode, chunk in custom_graph().stream(
            {"steps": []}, config(), stream_mode=["custom", "updates"], subgraphs=True
        )
    ]
    assert items == [
        ((), "custom", {"at": "p"}),
        ((), "updates", {"p": {"steps": ["p"]}}),
        (("sub",), "custom", {"at": "a"}),
        (("sub",), "updates", {"a": {"steps": ["a"]}}),
        (("sub",), "custom", {"at": "b"}),
        (("sub",), "updates", {"b": {"steps": ["b"]}}),
        ((), "updates", {"sub": {"steps": ["p", "a", "b"]}}),
    ]


def test_without_subgraphs_true_a_subgraph_s_custom_chunks_stay_out() -> None:
    items = list(custom_graph().stream({"steps": []}, config(), stream_mode="custom"))
    assert items == [{"at": "p"}]


def messages_graph() -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage("hello there", id="m1")]))

    def a(state: MessagesState) -> Any:
        return {"messages": [AIMessage("from a", id="a1")]}

    def b(state: MessagesState) -> Any:
        return {"messages": [model.invoke(state["messages"])]}

    def p(state: MessagesState) -> Any:
        return {"messages": [AIMessage("from p", id="p1")]}

    sub = chain(MessagesState, a=a, b=b).compile()
    return chain(MessagesState, p=p, sub=sub).compile(checkpointer=InMemorySaver())


def test_a_subgraph_s_messages_and_tokens_come_under_its_namespace_once() -> None:
    items = list(
        messages_graph().stream({"messages": []}, config(), stream_mode="messages", subgraphs=True)
    )
    seen = [
        (short(ns), type(m).__name__, m.content, meta["langgraph_node"]) for ns, (m, meta) in items
    ]
    # The parent's `sub` node returns a1 and m1 again: they were sent already.
    assert seen == [
        ((), "AIMessage", "from p", "p"),
        (("sub",), "AIMessage", "from a", "a"),
        (("sub",), "AIMessageChunk", "hello", "b"),
        (("sub",), "AIMessageChunk", " ", "b"),
        (("sub",), "AIMessageChunk", "there", "b"),
    ]
    ns, (_, meta) = items[1]
    # The metadata names the whole path, as LangGraph's does.
    assert meta["langgraph_checkpoint_ns"].startswith(f"{ns[0]}|a:")


def test_without_subgraphs_true_a_subgraph_s_messages_come_whole_as_the_parent_node_s() -> None:
    items = list(messages_graph().stream({"messages": []}, config(), stream_mode="messages"))
    seen = [(type(m).__name__, m.content, meta["langgraph_node"]) for m, meta in items]
    assert seen == [
        ("AIMessage", "from p", "p"),
        ("AIMessage", "from a", "sub"),
        ("AIMessage", "hello there", "sub"),
    ]
    assert not any(isinstance(m, AIMessageChunk) for m, _ in items)


@pytest.mark.parametrize("modes", ["values", ["values", "custom"]])
def test_a_nested_subgraph_s_chunks_are_live_at_every_level(modes: Any) -> None:
    seen = threading.Event()
    inner = chain(S, a=step("a"), b=waits_for(seen)).compile()
    middle = chain(S, inner=inner).compile()
    graph = chain(S, middle=middle).compile(checkpointer=InMemorySaver())
    namespaces = []
    for item in graph.stream({"steps": []}, config(), stream_mode=modes, subgraphs=True):
        ns, chunk = item[0], item[-1]
        namespaces.append(short(ns))
        if ns and len(ns) == 2 and chunk.get("steps") == ["a"]:
            seen.set()
    assert seen.is_set()
    out = graph.get_state(config()).values
    assert out["steps"] == ["a", "b"]
    assert ("middle", "inner") in namespaces


def test_astream_sends_a_subgraph_s_messages_under_its_namespace() -> None:
    async def main() -> list[Any]:
        graph = messages_graph()
        return [
            (short(ns), m.content, meta["langgraph_node"])
            async for ns, (m, meta) in graph.astream(
                {"messages": []}, config(), stream_mode="messages", subgraphs=True
            )
        ]

    assert asyncio.run(main()) == [
        ((), "from p", "p"),
        (("sub",), "from a", "a"),
        (("sub",), "hello", "b"),
        (("sub",), " ", "b"),
        (("sub",), "there", "b"),
    ]
