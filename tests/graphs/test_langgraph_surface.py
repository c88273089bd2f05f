"""LangGraph API surface that a port meets at once: a root-channel state, `add_sequence`,
`set_conditional_entry_point`, `compile(name=)` and a run's `durability=`."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

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
from graphs.types import Overwrite, StateUpdate


def _words_graph(checkpointer: Any = None) -> Any:
    g = StateGraph(Annotated[list, operator.add])
    g.add_node("greet", lambda words: ["hello"])
    g.add_node("count", lambda words: [f"{len(words)} so far"])
    g.add_edge(START, "greet")
    g.add_edge("greet", "count")
    g.add_edge("count", END)
    return g.compile(checkpointer=checkpointer)


def test_a_root_channel_graph_passes_and_returns_the_value_itself(tmp_path: Path) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'root.db'}")
    saver.setup()
    graph = _words_graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke(["start"], config) == ["start", "hello", "2 so far"]
    # The saved state is the value too, and it survives a new saver on the same file.
    again = _words_graph(SQLSaver(f"sqlite:///{tmp_path / 'root.db'}"))
    assert again.get_state(config).values == ["start", "hello", "2 so far"]
    assert graph.invoke(["more"], config)[-3:] == ["more", "hello", "5 so far"]


def test_a_root_channel_graph_streams_the_value_and_each_nodes_return() -> None:
    graph = _words_graph()
    assert list(graph.stream(["a"], stream_mode="updates")) == [
        {"greet": ["hello"]},
        {"count": ["2 so far"]},
    ]
    assert list(graph.stream(["a"], stream_mode="values"))[-1] == ["a", "hello", "2 so far"]


def test_a_root_channel_without_a_reducer_is_overwritten_and_routes_on_the_value() -> None:
    g = StateGraph(int)
    g.add_node("double", lambda n: Command(update=n * 2))
    g.add_edge(START, "double")
    g.add_conditional_edges("double", lambda n: END if n > 20 else "double")
    assert g.compile().invoke(3) == 24
    assert asyncio.run(g.compile().ainvoke(11)) == 22


def test_a_root_channel_graph_refuses_input_and_output_schemas() -> None:
    class Keys(TypedDict):
        a: int

    with pytest.raises(GraphSetupError, match="root-channel graph"):
        StateGraph(list, input_schema=Keys)


def test_add_sequence_chains_functions_and_named_pairs() -> None:
    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    def first(s: S) -> dict[str, Any]:
        return {"log": ["first"]}

    g = StateGraph(S)
    g.add_sequence([first, ("second", lambda s: {"log": ["second"]})])
    g.add_edge(START, "first")
    assert g.compile().invoke({"log": []}) == {"log": ["first", "second"]}
    with pytest.raises(GraphSetupError, match="at least one node"):
        StateGraph(S).add_sequence([])


def test_set_conditional_entry_point_routes_the_input() -> None:
    class S(TypedDict):
        n: int

    g = StateGraph(S)
    g.add_node("small", lambda s: {"n": 0})
    g.add_node("big", lambda s: {"n": 100})
    g.set_conditional_entry_point(lambda s: "big" if s["n"] > 9 else "small", ["small", "big"])
    g.add_edge("small", END)
    g.add_edge("big", END)
    graph = g.compile(name="sizer")
    assert graph.name == "sizer"
    assert graph.invoke({"n": 50}) == {"n": 100}
    assert graph.invoke({"n": 5}) == {"n": 0}


def test_a_run_takes_langgraphs_durability_modes_and_exit_saves_only_the_last_step() -> None:
    class S(TypedDict):
        n: int

    g = StateGraph(S)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    graph = g.compile(checkpointer=InMemorySaver())
    for mode in ("sync", "async", "exit"):
        config = {"configurable": {"thread_id": mode}}
        assert graph.invoke({"n": 1}, config, durability=mode) == {"n": 2}
        history = list(graph.get_state_history(config))
        # "sync", "async": the input checkpoint, step 0 (the input applied), inc's step;
        # "exit", as LangGraph: only the checkpoint the run exits at, with no parent
        assert [h.metadata["step"] for h in history] == ([1] if mode == "exit" else [1, 0, -1])
        assert history[0].values == {"n": 2}
        if mode == "exit":
            assert history[0].parent_config is None
    assert list(graph.stream({"n": 1}, stream_mode="values", durability="exit")) == [
        {"n": 1},
        {"n": 2},
    ]
    with pytest.raises(ValueError, match="durability must be 'sync', 'async' or 'exit'"):
        graph.invoke({"n": 1}, {"configurable": {"thread_id": "x"}}, durability="later")  # type: ignore[arg-type]


class Log(TypedDict):
    log: Annotated[str, operator.add]
    last: str


def test_a_node_may_return_several_updates_as_a_list_of_commands_and_dicts() -> None:
    g = StateGraph(Log)
    g.add_node(
        "a",
        lambda s: [Command(update={"log": "a1"}), {"log": "a2"}, Command(goto="b")],
        destinations=["b"],
    )
    g.add_node("b", lambda s: {"log": "b"})
    g.add_node("c", lambda s: {"log": "c"})
    g.add_edge(START, "a")
    g.add_edge("a", "c")
    assert g.compile().invoke({"log": ""}) == {"log": "a1a2bc"}
    # The updates stream shows one update per item that wrote something, as LangGraph.
    assert list(g.compile().stream({"log": ""})) == [
        {"a": [{"log": "a1"}, {"log": "a2"}]},
        {"b": {"log": "b"}},
        {"c": {"log": "c"}},
    ]


def test_a_root_graphs_node_may_mix_a_command_and_a_value() -> None:
    g = StateGraph(Annotated[list[str], operator.add])
    g.add_node("n", lambda s: [Command(update=["x"]), ["y"]])
    g.add_edge(START, "n")
    assert g.compile().invoke([]) == ["x", "y"]
    assert list(g.compile().stream([])) == [{"n": [["x"], ["y"]]}]


def test_an_update_may_be_key_value_pairs_each_through_the_reducer() -> None:
    g = StateGraph(Log)
    g.add_node("n", lambda s: Command(update=[("log", "x"), ("log", "y"), ("last", "n")]))
    g.add_edge(START, "n")
    assert g.compile().invoke({"log": ""}) == {"log": "xy", "last": "n"}


def test_update_state_with_no_values_as_a_node_moves_the_thread_past_it() -> None:
    g = StateGraph(Log)
    g.add_node("ask", lambda s: {"log": "asked"})
    g.add_node("act", lambda s: {"log": "+acted"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "act")
    graph = g.compile(checkpointer=InMemorySaver(), interrupt_before=["ask"])
    config = {"configurable": {"thread_id": 1}}
    with pytest.raises(Exception, match="paused"):
        graph.invoke({"log": ""}, config)
    assert graph.get_state(config).next == ("ask",)
    graph.update_state(config, None, as_node="ask")
    assert graph.get_state(config).next == ("act",)
    assert graph.invoke(None, config) == {"log": "+acted"}


class Msgs(TypedDict):
    messages: Annotated[list[str], operator.add]


def _overwrite_graph(replace: Any, saver: Any) -> Any:
    g = StateGraph(Msgs)
    g.add_node("first", lambda s: {"messages": ["first"]})
    g.add_node("other", lambda s: {"messages": ["dropped"]})
    g.add_node("replace", lambda s: {"messages": replace})
    g.add_node("after", lambda s: {"messages": ["after"]})
    g.add_edge(START, "first")
    g.add_edge("first", "other")
    g.add_edge("first", "replace")
    g.add_edge("replace", "after")
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("replace", [Overwrite(["only"]), {"__overwrite__": ["only"]}])
def test_overwrite_replaces_a_reducer_key_and_is_saved_whole(replace: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'o.db'}"
    saver = SQLSaver(url)
    saver.setup()
    config = {"configurable": {"thread_id": "o"}}
    # The step's other write is dropped; the next step appends to the replaced list.
    out = _overwrite_graph(replace, saver).invoke({"messages": ["in"]}, config)
    assert out == {"messages": ["only", "after"]}
    # Stored as the new list, not as a delta of the old one: a new saver reads it back.
    history = list(_overwrite_graph(replace, SQLSaver(url)).get_state_history(config))
    assert [h.values["messages"] for h in history[:2]] == [["only", "after"], ["only"]]


def test_two_overwrites_of_one_key_in_a_step_are_refused() -> None:
    g = StateGraph(Msgs)
    g.add_node("a", lambda s: {"messages": Overwrite(["a"])})
    g.add_node("b", lambda s: {"messages": Overwrite(["b"])})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError) as info:
        g.compile().invoke({"messages": []})
    assert str(info.value) == (  # LangGraph's phrase, then who wrote the second
        "At key 'messages': Can receive only one Overwrite value per super-step, got a second "
        "from 'b': only one writer may replace the value in a step"
    )


def test_stream_mode_none_is_the_default_updates_mode_as_in_langgraph() -> None:
    graph = _words_graph()
    chunks = list(graph.stream(["a"], stream_mode=None))
    assert chunks == list(graph.stream(["a"])) == [{"greet": ["hello"]}, {"count": ["2 so far"]}]
    values = [["a"], ["a", "hello"], ["a", "hello", "2 so far"]]
    assert list(graph.stream(["a"], stream_mode="values")) == values


class Pair(TypedDict):
    foo: str
    baz: str


def _pair_graph(saver: Any) -> Any:
    g = StateGraph(Pair)
    g.add_node("a", lambda s: {"foo": "a"})
    g.add_node("b", lambda s: {"baz": "b"})
    g.add_node("c", lambda s: {"foo": s["foo"] + "+c"})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    return g.compile(checkpointer=saver)


def test_bulk_update_state_writes_one_checkpoint_per_step_as_its_nodes(tmp_path: Path) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'bulk.db'}")
    saver.setup()
    graph = _pair_graph(saver)
    config = {"configurable": {"thread_id": "bulk"}}
    graph.bulk_update_state(
        config,
        [
            [StateUpdate({"foo": "x"}, "a")],
            [StateUpdate({"foo": "y"}, "a"), StateUpdate({"baz": "z"}, "b")],
        ],
    )
    state = graph.get_state(config)
    assert state.values == {"foo": "y", "baz": "z"}
    assert state.next == ("b", "c")  # what follows a and b
    assert len(list(graph.get_state_history(config))) == 2
    with pytest.raises(InvalidUpdateError, match="needs as_node on each"):
        graph.bulk_update_state(config, [[StateUpdate({"foo": "1"}), StateUpdate({"baz": "2"})]])
    assert len(list(graph.get_state_history(config))) == 2
    # LangGraph's phrases, then what to give; an empty step is refused before any is written.
    with pytest.raises(ValueError, match="^bulk_update_state: No supersteps provided: give"):
        graph.bulk_update_state(config, [])
    with pytest.raises(InvalidUpdateError) as info:
        graph.bulk_update_state(config, [[StateUpdate({"foo": "w"}, "a")], []])
    assert str(info.value) == (
        "bulk_update_state: No updates provided in step(s) [1] (counted from 0): give each "
        "step at least one StateUpdate(values, as_node)"
    )
    assert len(list(graph.get_state_history(config))) == 2
    assert graph.get_state(config).values == {"foo": "y", "baz": "z"}


async def test_abulk_update_state_matches_the_sync_one() -> None:
    graph = _pair_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "abulk"}}
    await graph.abulk_update_state(config, [[StateUpdate({"foo": "x"}, "a")]])
    await graph.abulk_update_state(config, [[({"baz": "q"}, "b")]])  # a plain tuple works too
    state = graph.get_state(config)
    assert state.values == {"foo": "x", "baz": "q"} and state.next == ("c",)
    with pytest.raises(InvalidUpdateError, match="No supersteps provided"):
        await graph.abulk_update_state(config, [])
    with pytest.raises(InvalidUpdateError, match=r"No updates provided in step\(s\) \[0, 1\]"):
        await graph.abulk_update_state(config, [[], []])
    assert await graph.ainvoke(None, config) == {"foo": "x+c", "baz": "q"}


def test_a_command_prints_the_fields_given_as_langgraph_s_does(tmp_path: Path) -> None:
    from graphs import Send

    # A node that logs the Command it routes with, as LangGraph's own Send tests do.
    def route(words: list[str]) -> Any:
        command = Command(goto=Send("echo", 3)) if not words else Command(update=["done"])
        return Command(update=[f"route|{command}"], goto=command.goto)

    g = StateGraph(Annotated[list, operator.add])
    g.add_node("route", route).add_node("echo", lambda n: [f"echo {n}"])
    g.add_edge(START, "route")
    saver = SQLSaver(f"sqlite:///{tmp_path / 'repr.db'}")
    saver.setup()
    try:
        out = g.compile(checkpointer=saver).invoke([], {"configurable": {"thread_id": "t"}})
    finally:
        saver.close()
    assert out == ["route|Command(goto=Send(node='echo', arg=3))", "echo 3"]
    assert repr(Command(update={"a": 1}, goto=["x"], graph=Command.PARENT)) == (
        "Command(graph='__parent__', update={'a': 1}, goto=['x'])"
    )
    assert repr(Command()) == "Command()"
    # An answer is shown whatever its value (LangGraph leaves out a falsy one).
    assert repr(Command(resume=False)) == "Command(resume=False)"
    assert repr(Command(resume={"approved": True})) == "Command(resume={'approved': True})"
