"""`update_state` on a subgraph's `checkpoint_ns`, on each saver.

A paused subgraph's state is changed through the config its parent's pending task gives
(`get_state(config, subgraphs=True).tasks[i].state.config`, or the task's `state` config), and
resuming the parent goes on from the changed state: the way to edit a tool call an agent inside
a subgraph is about to make. An update never lands where no run would read it: not on a past
checkpoint of the subgraph, and not on a subgraph run whose parent task is over.
"""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    InvalidUpdateError,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from graphs.graph import add_messages
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "user_dict_saver", "sqlite", "postgres")


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def agent_graph(calls: Counter[str], refunded: list[dict[str, Any]]) -> Any:
    """model (asks for a refund tool call) -> tools (asks a person, then refunds with the
    arguments the state holds then)."""

    def model(state: Chat) -> Chat:
        calls["model"] += 1
        call = {"name": "refund", "args": {"amount": 500}, "id": "call-1"}
        return {"messages": [AIMessage("", id="ai-1", tool_calls=[call])]}

    def tools(state: Chat) -> Chat:
        calls["tools"] += 1
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        (call,) = last.tool_calls
        answer = interrupt({"tool": call["name"], "args": call["args"]})
        refunded.append(dict(call["args"]))
        return {"messages": [ToolMessage(f"{answer}: refunded", tool_call_id=call["id"])]}

    b = StateGraph(Chat)
    b.add_node("model", model)
    b.add_node("tools", tools)
    b.add_edge(START, "model")
    b.add_edge("model", "tools")
    b.add_edge("tools", END)
    return b.compile()


def parent_of(child: Any, saver: BaseCheckpointSaver, calls: Counter[str]) -> Any:
    def wrap_up(state: Chat) -> Chat:
        calls["wrap_up"] += 1
        return {"messages": [AIMessage("done", id="ai-done")]}

    b = StateGraph(Chat)
    b.add_node("agent", child)
    b.add_node("wrap_up", wrap_up)
    b.add_edge(START, "agent")
    b.add_edge("agent", "wrap_up")
    b.add_edge("wrap_up", END)
    return b.compile(checkpointer=saver)


def edited_call(amount: int) -> AIMessage:
    call = {"name": "refund", "args": {"amount": amount}, "id": "call-1"}
    return AIMessage("", id="ai-1", tool_calls=[call])


def paused_agent(saver: BaseCheckpointSaver) -> tuple[Any, Counter[str], list[Any], Any]:
    calls: Counter[str] = Counter()
    refunded: list[dict[str, Any]] = []
    graph = parent_of(agent_graph(calls, refunded), saver, calls)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"messages": [HumanMessage("refund me", id="h-1")]}, config())
    (intr,) = paused.value.interrupts
    assert intr.value == {"tool": "refund", "args": {"amount": 500}}
    return graph, calls, refunded, intr


def test_an_edit_of_a_paused_subgraph_s_tool_call_is_what_the_resume_runs(
    saver: BaseCheckpointSaver,
) -> None:
    graph, calls, refunded, intr = paused_agent(saver)
    state = graph.get_state(config(), subgraphs=True)
    (task,) = state.tasks
    inner = task.state
    assert isinstance(inner, StateSnapshot) and inner.next == ("tools",)

    updated = graph.update_state(inner.config, {"messages": [edited_call(50)]})
    assert updated["configurable"]["checkpoint_ns"] == f"agent:{task.id}"

    # The subgraph's namespace shows the edit, as an update whose parent is the paused head,
    # noting the parent's head it was made under; the pause is still pending.
    after = graph.get_state(updated)
    assert after.values["messages"][-1].tool_calls[0]["args"] == {"amount": 50}
    assert after.metadata["source"] == "update"
    assert after.metadata["parents"] == {"": state.config["configurable"]["checkpoint_id"]}
    assert after.parent_config == inner.config
    assert after.next == ("tools",) and [i.id for i in after.interrupts] == [intr.id]
    # The parent's head did not change: the edit waits for its resume.
    assert graph.get_state(config()).config == state.config
    nested = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert isinstance(nested, StateSnapshot) and nested.config == updated

    out = graph.invoke(Command(resume={intr.id: "approved"}), config())
    assert refunded == [{"amount": 50}]
    assert [m.content for m in out["messages"]] == [
        "refund me",
        "",
        "approved: refunded",
        "done",
    ]
    assert out["messages"][1].tool_calls[0]["args"] == {"amount": 50}
    # model ran once: the resume went on from the edited checkpoint, not from the start.
    assert calls == Counter(model=1, tools=2, wrap_up=1)


def test_the_task_s_state_config_without_a_checkpoint_id_updates_the_subgraph_s_latest(
    saver: BaseCheckpointSaver,
) -> None:
    graph, _, refunded, _ = paused_agent(saver)
    (task,) = graph.get_state(config()).tasks
    assert task.state == {"configurable": {"thread_id": "t", "checkpoint_ns": f"agent:{task.id}"}}
    graph.update_state(task.state, {"messages": [edited_call(70)]})
    graph.update_state(task.state, {"messages": [edited_call(60)]})
    graph.invoke(Command(resume="ok"), config())
    assert refunded == [{"amount": 60}]


def test_a_past_checkpoint_of_the_subgraph_is_refused(saver: BaseCheckpointSaver) -> None:
    graph, _, refunded, _ = paused_agent(saver)
    inner = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert isinstance(inner, StateSnapshot)
    graph.update_state(inner.config, {"messages": [edited_call(50)]})
    # The snapshot read before that update names a checkpoint that is no longer the latest.
    with pytest.raises(InvalidUpdateError, match="which is not the thread's latest"):
        graph.update_state(inner.config, {"messages": [edited_call(9999)]})
    graph.invoke(Command(resume="ok"), config())
    assert refunded == [{"amount": 50}]


def test_a_subgraph_whose_parent_task_is_over_is_not_updated(saver: BaseCheckpointSaver) -> None:
    graph, _, _, intr = paused_agent(saver)
    (task,) = graph.get_state(config()).tasks
    graph.invoke(Command(resume={intr.id: "ok"}), config())
    before = saver.get_tuple(task.state)  # type: ignore[arg-type]
    with pytest.raises(InvalidUpdateError, match="that ran this subgraph is over"):
        graph.update_state(task.state, {"messages": [edited_call(1)]})
    after = saver.get_tuple(task.state)  # type: ignore[arg-type]
    assert before is not None and after is not None
    assert after.config == before.config  # nothing was written


def test_a_namespace_no_subgraph_has_is_refused(saver: BaseCheckpointSaver) -> None:
    graph, _, _, _ = paused_agent(saver)
    (task,) = graph.get_state(config()).tasks
    bad = {"configurable": {"thread_id": "t", "checkpoint_ns": f"nope:{task.id}"}}
    with pytest.raises(InvalidUpdateError, match="names node 'nope', which is not a node"):
        graph.update_state(bad, {"messages": []})
    plain = {"configurable": {"thread_id": "t", "checkpoint_ns": f"wrap_up:{task.id}"}}
    with pytest.raises(InvalidUpdateError, match="runs no subgraph that keeps state"):
        graph.update_state(plain, {"messages": []})
    unknown_task = {"configurable": {"thread_id": "t", "checkpoint_ns": "agent:0000"}}
    with pytest.raises(InvalidUpdateError, match="no subgraph has run there"):
        graph.update_state(unknown_task, {"messages": []})


def test_a_subgraph_s_namespace_is_still_run_through_the_parent(
    saver: BaseCheckpointSaver,
) -> None:
    graph, _, refunded, _ = paused_agent(saver)
    (task,) = graph.get_state(config()).tasks
    graph.invoke(Command(resume="ok"), task.state)  # the parent's run, as LangGraph's
    assert refunded == [{"amount": 500}]


class Inner(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]


def test_an_update_as_a_node_of_a_statically_paused_subgraph_routes_on(
    saver: BaseCheckpointSaver,
) -> None:
    """A subgraph paused by `interrupt_before`, updated as its node, in a node function that
    calls it (the subgraph is found in the function, as LangGraph finds it)."""
    calls: Counter[str] = Counter()

    def draft(state: Inner) -> Inner:
        calls["draft"] += 1
        return {"steps": ["draft"]}

    def review(state: Inner) -> Inner:
        calls["review"] += 1
        return {"steps": ["review"]}

    def publish(state: Inner) -> Inner:
        calls["publish"] += 1
        return {"steps": [f"publish:{state['topic']}"]}

    b = StateGraph(Inner)
    for name, fn in (("draft", draft), ("review", review), ("publish", publish)):
        b.add_node(name, fn)
    b.add_edge(START, "draft")
    b.add_edge("draft", "review")
    b.add_edge("review", "publish")
    b.add_edge("publish", END)
    child = b.compile(interrupt_before=["review"])

    def run_child(state: Inner) -> Inner:
        return child.invoke({"topic": state["topic"]})

    p = StateGraph(Inner)
    p.add_node("work", run_child)
    p.add_edge(START, "work")
    p.add_edge("work", END)
    graph = p.compile(checkpointer=saver)

    with pytest.raises(GraphInterrupt):
        graph.invoke({"topic": "pricing"}, config())
    inner = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert isinstance(inner, StateSnapshot) and inner.next == ("review",)
    # As if review had run, with a topic of its own: what follows review runs on resume.
    graph.update_state(inner.config, {"topic": "costs", "steps": ["edited"]}, as_node="review")
    moved = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert isinstance(moved, StateSnapshot) and moved.next == ("publish",)
    assert moved.values == {"topic": "costs", "steps": ["draft", "edited"]}

    out = graph.invoke(None, config())
    assert out == {"topic": "costs", "steps": ["draft", "edited", "publish:costs"]}
    assert calls == Counter(draft=1, publish=1)


def test_aupdate_state_and_bulk_update_state_on_a_subgraph(saver: BaseCheckpointSaver) -> None:
    graph, calls, refunded, intr = paused_agent(saver)
    (task,) = graph.get_state(config()).tasks

    async def edit() -> None:
        await graph.aupdate_state(task.state, {"messages": [edited_call(40)]})
        inner = (await graph.aget_state(config(), subgraphs=True)).tasks[0].state
        assert isinstance(inner, StateSnapshot)
        assert inner.values["messages"][-1].tool_calls[0]["args"] == {"amount": 40}

    asyncio.run(edit())
    graph.bulk_update_state(task.state, [[({"messages": [edited_call(30)]}, None)]])
    graph.invoke(Command(resume={intr.id: "ok"}), config())
    assert refunded == [{"amount": 30}]
    assert calls["model"] == 1


def test_a_subgraph_two_levels_down_is_updated_through_the_top_thread(
    saver: BaseCheckpointSaver,
) -> None:
    calls: Counter[str] = Counter()
    refunded: list[dict[str, Any]] = []
    middle = StateGraph(Chat)
    middle.add_node("agent", agent_graph(calls, refunded))
    middle.add_edge(START, "agent")
    middle.add_edge("agent", END)
    graph = parent_of(middle.compile(), saver, calls)
    with pytest.raises(GraphInterrupt) as paused:
        graph.invoke({"messages": [HumanMessage("refund me", id="h-1")]}, config())
    (intr,) = paused.value.interrupts
    mid = graph.get_state(config(), subgraphs=True).tasks[0].state
    assert isinstance(mid, StateSnapshot)
    inner = mid.tasks[0].state
    assert isinstance(inner, StateSnapshot) and inner.next == ("tools",)
    assert inner.config["configurable"]["checkpoint_ns"].count("|") == 1
    graph.update_state(inner.config, {"messages": [edited_call(20)]})
    graph.invoke(Command(resume={intr.id: "ok"}), config())
    assert refunded == [{"amount": 20}]
    assert calls == Counter(model=1, tools=2, wrap_up=1)


class Topic(TypedDict):
    topic: str


def test_a_kept_subgraph_s_state_is_updated_between_the_parent_s_runs(
    saver: BaseCheckpointSaver,
) -> None:
    """A `checkpointer=True` subgraph keeps its state under its node's name: an update there
    is what its next run goes on from."""

    def note(state: Inner) -> Inner:
        return {"steps": [state["topic"]]}

    b = StateGraph(Inner)
    b.add_node("note", note)
    b.add_edge(START, "note")
    b.add_edge("note", END)
    p = StateGraph(Topic)
    p.add_node("memory", b.compile(checkpointer=True))
    p.add_edge(START, "memory")
    p.add_edge("memory", END)
    graph = p.compile(checkpointer=saver)
    graph.invoke({"topic": "a"}, config())
    kept = {"configurable": {"thread_id": "t", "checkpoint_ns": "memory"}}
    graph.update_state(kept, {"steps": ["forgotten"]})
    assert graph.get_state(kept).values["steps"] == ["forgotten"]
    graph.invoke({"topic": "b"}, config())
    assert graph.get_state(kept).values["steps"] == ["forgotten", "b"]
