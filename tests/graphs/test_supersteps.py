"""Supersteps: who runs in a step, in what order writes land, and the one checkpoint per step."""

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import END, START, Command, InMemorySaver, InvalidUpdateError, StateGraph


class State(TypedDict):
    log: Annotated[list, operator.add]
    status: str
    count: int


def writer(name: str, calls: Counter | None = None) -> Any:
    def node(state: State) -> dict[str, Any]:
        if calls is not None:
            calls[name] += 1
        return {"log": [name]}

    return node


def diamond(calls: Counter) -> StateGraph:
    """START -> fan -> (left, right) -> join; right is two nodes long."""
    g = StateGraph(State)
    for name in ("fan", "left", "right", "right2", "join"):
        g.add_node(name, writer(name, calls))
    g.add_edge(START, "fan")
    g.add_edge("fan", "left").add_edge("fan", "right").add_edge("right", "right2")
    g.add_edge(["left", "right2"], "join")
    g.add_edge("join", END)
    return g


def test_parallel_branches_run_in_one_step_and_a_join_waits_for_both() -> None:
    calls: Counter = Counter()
    saver = InMemorySaver()
    app = diamond(calls).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}

    result = app.invoke({"log": []}, config)

    assert result == {"log": ["fan", "left", "right", "right2", "join"]}
    assert calls == Counter(fan=1, left=1, right=1, right2=1, join=1)
    history = list(app.get_state_history(config))[::-1]
    assert [(s.metadata["step"], s.next) for s in history] == [
        (-1, ("__start__",)),  # the input checkpoint
        (0, ("fan",)),
        (1, ("left", "right")),
        (2, ("right2",)),  # left finished, but the join still waits for right2
        (3, ("join",)),
        (4, ()),
    ]


def test_join_does_not_fire_twice_without_a_join_edge_it_would() -> None:
    # The contrast that makes the join test meaningful: plain edges fire per source.
    calls: Counter = Counter()
    g = StateGraph(State)
    for name in ("left", "right", "right2", "join"):
        g.add_node(name, writer(name, calls))
    g.add_edge(START, "left").add_edge(START, "right").add_edge("right", "right2")
    g.add_edge("left", "join").add_edge("right2", "join")
    g.compile().invoke({"log": []})
    assert calls["join"] == 2


async def test_nodes_of_a_step_run_concurrently_under_ainvoke() -> None:
    # "first" can only finish after "second" has started: sequential execution would hang.
    second_started = asyncio.Event()

    async def first(state: State) -> dict[str, Any]:
        async with asyncio.timeout(5):
            await second_started.wait()
        return {"log": ["first"]}

    async def second(state: State) -> dict[str, Any]:
        second_started.set()
        return {"log": ["second"]}

    g = StateGraph(State).add_node("first", first).add_node("second", second)
    g.add_edge(START, "first").add_edge(START, "second")
    result = await g.compile(checkpointer=InMemorySaver()).ainvoke(
        {"log": []}, {"configurable": {"thread_id": "t"}}
    )
    # "second" finished first, yet writes land in the order the nodes were added.
    assert result == {"log": ["first", "second"]}


async def test_sync_nodes_run_off_the_event_loop_under_ainvoke() -> None:
    loop_thread: list[bool] = []

    def blocking(state: State) -> dict[str, Any]:
        try:
            asyncio.get_running_loop()
            loop_thread.append(True)
        except RuntimeError:
            loop_thread.append(False)
        return {"status": "ok"}

    g = StateGraph(State).add_node("blocking", blocking).add_edge(START, "blocking")
    assert await g.compile().ainvoke({"log": []}) == {"log": [], "status": "ok"}
    assert loop_thread == [False]


@pytest.mark.parametrize("order", [("b", "a", "c"), ("c", "b", "a")])
def test_writes_are_applied_by_node_name_whatever_order_nodes_were_added(
    order: tuple[str, ...],
) -> None:
    # As LangGraph, which sorts a step's tasks by path (for these, the node's name).
    g = StateGraph(State)
    for name in order:
        g.add_node(name, writer(name))
        g.add_edge(START, name)
    for _ in range(3):  # the same every time
        assert g.compile().invoke({"log": []}) == {"log": ["a", "b", "c"]}


def test_two_writes_to_a_plain_key_in_one_step_are_refused() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"status": "a"}).add_node("b", lambda s: {"status": "b"})
    g.add_edge(START, "a").add_edge(START, "b")
    saver = InMemorySaver()
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"status": "new"}, config)
    assert str(info.value) == (
        "At key 'status': Can receive only one value per step, got 2 (from ['a', 'b']), and the "
        "key has no reducer: declare it as Annotated[T, reducer] to merge them"
    )
    # Nothing of the step was applied. Both tasks finished, and (a step's tasks running
    # concurrently, as in LangGraph) each one's writes were saved as it finished: the head
    # shows them done (not in `next`), and a resume applies them again, failing the same way.
    state = app.get_state(config)
    assert (state.values, state.next) == ({"status": "new", "log": []}, ())
    assert [(t.name, t.result) for t in state.tasks] == [
        ("a", {"status": "a"}),
        ("b", {"status": "b"}),
    ]
    with pytest.raises(InvalidUpdateError, match="Can receive only one value per step"):
        app.invoke(None, config)


def test_one_checkpoint_per_step_with_values_frontier_and_metadata() -> None:
    calls: Counter = Counter()
    saver = InMemorySaver()
    app = diamond(calls).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": ["in"]}, config)

    stored = list(saver.list(config))[::-1]
    assert len(stored) == 6  # the input, the input applied, then one per superstep
    assert [t.metadata for t in stored] == [
        {"source": "input", "step": -1, "parents": {}},
        {"source": "loop", "step": 0, "parents": {}},
        {"source": "loop", "step": 1, "parents": {}},
        {"source": "loop", "step": 2, "parents": {}},
        {"source": "loop", "step": 3, "parents": {}},
        {"source": "loop", "step": 4, "parents": {}},
    ]
    frontiers = [[name for name, _task_id in t.checkpoint["next_tasks"]] for t in stored]
    assert frontiers == [["__start__"], ["fan"], ["left", "right"], ["right2"], ["join"], []]
    # The input checkpoint holds the input in `__start__`, and its task's writes (the input).
    assert stored[0].checkpoint["channel_values"] == {"__start__": {"log": ["in"]}}
    start_id = stored[0].checkpoint["next_tasks"][0][1]
    assert stored[0].pending_writes == [(start_id, "log", ["in"]), (start_id, "__done__", True)]
    logs = [t.checkpoint["channel_values"]["log"] for t in stored[1:]]
    assert logs == [
        ["in"],
        ["in", "fan"],
        ["in", "fan", "left", "right"],
        ["in", "fan", "left", "right", "right2"],
        ["in", "fan", "left", "right", "right2", "join"],
    ]
    # Each checkpoint points at the one before it.
    assert [t.parent_config for t in stored[1:]] == [t.config for t in stored[:-1]]
    assert stored[0].parent_config is None


def test_conditional_edges_with_a_path_map_and_a_fan_out() -> None:
    calls: Counter = Counter()
    g = StateGraph(State)
    for name in ("check", "approve", "reject", "audit"):
        g.add_node(name, writer(name, calls))
    g.add_edge(START, "check")
    g.add_conditional_edges(
        "check",
        lambda s: [s["status"], "log"],
        {"ok": "approve", "bad": "reject", "log": "audit"},
    )
    app = g.compile()
    assert app.invoke({"status": "ok"})["log"] == ["check", "approve", "audit"]
    assert app.invoke({"status": "bad"})["log"] == ["check", "audit", "reject"]  # by name
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"status": "maybe"})
    assert str(info.value) == (
        "router after 'check' returned 'maybe', which is not in its path_map ['bad', 'log', 'ok']"
    )


def test_a_router_can_read_the_config() -> None:
    g = StateGraph(State).add_node("a", writer("a")).add_node("b", writer("b"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s, config: config["configurable"]["next"])
    app = g.compile()
    assert app.invoke({"log": []}, {"configurable": {"next": "b"}}) == {"log": ["a", "b"]}
    assert app.invoke({"log": []}, {"configurable": {"next": END}}) == {"log": ["a"]}


def test_a_loop_until_a_condition() -> None:
    g = StateGraph(State)
    g.add_node("inc", lambda s: {"count": s["count"] + 1})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["count"] < 7 else END)
    assert g.compile().invoke({"count": 0}) == {"count": 7, "log": []}


def test_nodes_may_take_the_config_and_be_async() -> None:
    async def greet(state: State, config: dict[str, Any]) -> dict[str, Any]:
        return {"status": f"hello {config['configurable']['user']}"}

    g = StateGraph(State).add_node("greet", greet).add_edge(START, "greet")
    config = {"configurable": {"user": "ada"}}
    assert g.compile().invoke({}, config) == {"status": "hello ada", "log": []}


def test_a_node_can_route_with_command_goto() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: Command(update={"log": ["a"]}, goto="c"))
    g.add_node("b", writer("b")).add_node("c", writer("c"))
    g.add_edge(START, "a").add_edge("a", "b")
    # compile() checks reachability from edges, so a goto target needs a declared way in.
    g.add_conditional_edges("b", lambda s: END, [END, "c"])
    assert g.compile().invoke({"log": []}) == {"log": ["a", "b", "c"]}


def test_a_router_can_choose_the_entry_node() -> None:
    g = StateGraph(State).add_node("refund", writer("refund")).add_node("delete", writer("delete"))
    g.add_conditional_edges(START, lambda s: s["status"], ["refund", "delete"])
    app = g.compile()
    assert app.invoke({"status": "delete"})["log"] == ["delete"]
    assert app.invoke({"status": "refund"})["log"] == ["refund"]
