"""`Send`: map-reduce fan-out, one run of a node per `Send` with its own input, as in LangGraph."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    InMemorySaver,
    InvalidUpdateError,
    Send,
    StateGraph,
    interrupt,
)


class State(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def _graph(joke: Any, checkpointer: Any = None, **compile: Any) -> Any:
    def pick(state: State) -> dict[str, Any]:
        return {"best": max(state["jokes"], key=len)}

    g = StateGraph(State)
    g.add_node("joke", joke)
    g.add_node("pick", pick)
    g.add_conditional_edges(START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]])
    g.add_edge("joke", "pick")
    g.add_edge("pick", END)
    return g.compile(checkpointer=checkpointer, **compile)


def test_each_send_runs_the_node_once_on_its_arg_and_the_writes_reduce_in_order() -> None:
    seen: list[Any] = []

    def joke(arg: dict[str, str]) -> dict[str, Any]:
        seen.append(arg)
        return {"jokes": [f"a joke about {arg['subject']}"]}

    out = _graph(joke).invoke({"subjects": ["dogs", "owls", "cats"]})
    assert seen == [{"subject": "dogs"}, {"subject": "owls"}, {"subject": "cats"}]
    assert out["jokes"] == ["a joke about dogs", "a joke about owls", "a joke about cats"]
    # the node's own edge fires once, after the whole fan-out
    assert out["best"] == "a joke about dogs"


def test_the_same_fan_out_on_a_checkpointer_and_async() -> None:
    import asyncio

    async def joke(arg: dict[str, str]) -> dict[str, Any]:
        return {"jokes": [arg["subject"]]}

    app = _graph(joke, InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    out = asyncio.run(app.ainvoke({"subjects": ["a", "bb"]}, config))
    assert out["jokes"] == ["a", "bb"] and out["best"] == "bb"
    assert app.get_state(config).next == ()


def test_a_send_that_paused_resumes_with_its_own_arg_and_the_others_do_not_rerun() -> None:
    calls: Counter[str] = Counter()

    def joke(arg: dict[str, str]) -> dict[str, Any]:
        calls[arg["subject"]] += 1
        if arg["subject"] == "cats":
            verdict = interrupt(f"ok to joke about {arg['subject']}?")
            return {"jokes": [f"cats ({verdict})"]}
        return {"jokes": [arg["subject"]]}

    app = _graph(joke, InMemorySaver(), interrupt_mode="return")
    config: Any = {"configurable": {"thread_id": "t"}}
    paused = app.invoke({"subjects": ["dogs", "cats", "owls"]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["ok to joke about cats?"]
    snap = app.get_state(config)
    assert snap.next == ("joke",)  # the cats task; the two that finished are not listed
    assert [(t.name, t.done) for t in snap.tasks] == [
        ("joke", True),
        ("joke", False),
        ("joke", True),
    ]
    out = app.invoke(Command(resume="fine"), config)
    assert out["jokes"] == ["dogs", "cats (fine)", "owls"]  # in the order of the Sends
    assert calls == {"dogs": 1, "cats": 2, "owls": 1}


def test_a_paused_send_resumes_from_another_saver_on_the_same_file(tmp_path: Any) -> None:
    from graphs.checkpoint.sql import SQLSaver

    def joke(arg: dict[str, str]) -> dict[str, Any]:
        return {"jokes": [f"{arg['subject']}: {interrupt(arg)}"]}

    url = f"sqlite:///{tmp_path / 'send.db'}"
    config: Any = {"configurable": {"thread_id": "t"}}
    first = SQLSaver(url)
    first.setup()
    try:
        paused = _graph(joke, first, interrupt_mode="return").invoke({"subjects": ["x"]}, config)
        assert paused["__interrupt__"][0].value == {"subject": "x"}
    finally:
        first.close()
    second = SQLSaver(url)
    try:
        out = _graph(joke, second).invoke(Command(resume="y"), config)
    finally:
        second.close()
    assert out["jokes"] == ["x: y"]


def test_sends_mix_with_plain_edges_and_come_after_them() -> None:
    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = StateGraph(S)
    g.add_node("start", lambda s: {"log": ["start"]})
    g.add_node("plain", lambda s: {"log": ["plain"]})
    g.add_node("worker", lambda arg: {"log": [f"worker {arg}"]})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: [Send("worker", 1), "plain", Send("worker", 2)])
    out = g.compile().invoke({"log": []})
    assert out["log"] == ["start", "plain", "worker 1", "worker 2"]


def test_a_node_can_send_through_command_goto() -> None:
    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = StateGraph(S)
    g.add_node(
        "plan",
        lambda s: Command(update={"log": ["plan"]}, goto=[Send("do", "a"), Send("do", "b")]),
        destinations=("do",),
    )
    g.add_node("do", lambda arg: {"log": [f"do {arg}"]})
    g.add_edge(START, "plan")
    app = g.compile(checkpointer=InMemorySaver())
    out = app.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    assert out["log"] == ["plan", "do a", "do b"]


def test_a_send_to_an_unknown_node_is_an_error_naming_it() -> None:
    class S(TypedDict):
        x: int

    g = StateGraph(S)
    g.add_node("a", lambda s: None)
    g.add_conditional_edges(START, lambda s: [Send("nope", 1)])
    g.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError, match="Send\\('nope'"):
        g.compile().invoke({"x": 1})


def test_sends_of_a_node_that_finished_in_a_paused_step_are_kept_for_the_resume() -> None:
    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    calls: Counter[str] = Counter()

    def plan(state: S) -> Command:
        calls["plan"] += 1
        return Command(update={"log": ["plan"]}, goto=[Send("do", "a"), Send("do", "b")])

    def ask(state: S) -> dict[str, Any]:
        return {"log": [f"ask {interrupt('go?')}"]}

    g = StateGraph(S)
    g.add_node("plan", plan, destinations=("do",))
    g.add_node("ask", ask)
    g.add_node("do", lambda arg: {"log": [f"do {arg}"]})
    g.add_edge(START, "plan")
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    config: Any = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in app.invoke({"log": []}, config)
    out = app.invoke(Command(resume="yes"), config)
    assert out["log"] == ["ask yes", "plan", "do a", "do b"]  # the step's by node name
    assert calls["plan"] == 1


def test_tasks_show_langgraph_s_paths_a_pull_per_node_and_a_push_per_send(tmp_path: Any) -> None:
    from graphs.checkpoint.sql import SQLSaver
    from graphs.types import PULL, PUSH, PregelTask

    class S(TypedDict):
        subjects: list[str]
        jokes: Annotated[list[str], operator.add]

    def joke(arg: dict[str, str]) -> dict[str, Any]:
        if arg["subject"] == "cats":
            interrupt("cats?")
        return {"jokes": [arg["subject"]]}

    g = StateGraph(S).add_node("joke", joke).add_node("count", lambda s: {"jokes": ["n"]})
    g.add_edge(START, "count")
    g.add_conditional_edges(START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]])
    saver = SQLSaver(f"sqlite:///{tmp_path / 'paths.db'}")
    saver.setup()
    try:
        app = g.compile(checkpointer=saver, interrupt_mode="return")
        config: Any = {"configurable": {"thread_id": "t"}}
        app.invoke({"subjects": ["dogs", "cats"], "jokes": []}, config)
        tasks = app.get_state(config).tasks
    finally:
        saver.close()
    ids = [t.id for t in tasks]
    # LangGraph's PregelTask(id, name, path, error, interrupts, state, result), positionally
    assert tasks == (
        PregelTask(ids[0], "count", (PULL, "count"), None, (), None, {"jokes": ["n"]}),
        PregelTask(ids[1], "joke", (PUSH, 0, False), result={"jokes": ["dogs"]}),
        PregelTask(ids[2], "joke", (PUSH, 1, False), None, tasks[2].interrupts),
    )
    assert [i.value for i in tasks[2].interrupts] == ["cats?"]
    assert [t.done for t in tasks] == [True, True, False]  # graphs' own field, by keyword
