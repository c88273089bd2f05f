"""`get_state`, `get_state_history` and `update_state`: reading and amending a thread's state."""

import dataclasses
import datetime as dt
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    CheckpointerRequiredError,
    Command,
    GraphInterrupt,
    InMemorySaver,
    InvalidUpdateError,
    ResumeError,
    Send,
    StateGraph,
    StateSnapshot,
    interrupt,
    once,
)


class State(TypedDict):
    messages: Annotated[list, operator.add]
    approved: bool


def build(calls: Counter | None = None) -> StateGraph:
    """START -> plan -> act -> END, counting calls."""
    calls = Counter() if calls is None else calls

    def plan(state: State) -> dict[str, Any]:
        calls["plan"] += 1
        return {"messages": ["plan"]}

    def act(state: State) -> dict[str, Any]:
        calls["act"] += 1
        return {"messages": [f"act approved={state.get('approved')}"]}

    g = StateGraph(State).add_node("plan", plan).add_node("act", act)
    return g.add_edge(START, "plan").add_edge("plan", "act").add_edge("act", END)


CONFIG = {"configurable": {"thread_id": "t"}}


def test_snapshot_of_a_paused_thread() -> None:
    app = build().compile(checkpointer=InMemorySaver(), interrupt_before=["act"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": ["hi"]}, CONFIG)

    snap = app.get_state(CONFIG)

    assert isinstance(snap, StateSnapshot)
    assert snap.values == {"messages": ["hi", "plan"]}
    assert snap.next == ("act",)
    assert snap.metadata == {"source": "loop", "step": 1, "parents": {}}
    assert snap.config["configurable"]["thread_id"] == "t"
    assert snap.config["configurable"]["checkpoint_id"]
    assert snap.parent_config is not None
    assert app.get_state(snap.parent_config).values == {"messages": ["hi"]}
    assert [(t.name, t.interrupts, t.error, t.done) for t in snap.tasks] == [
        ("act", (), None, False)
    ]
    assert snap.interrupts == ()
    created = dt.datetime.fromisoformat(snap.created_at or "")
    assert abs(dt.datetime.now(dt.UTC) - created) < dt.timedelta(minutes=5)


def test_snapshot_is_frozen() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    app.invoke({"messages": []}, CONFIG)
    snap = app.get_state(CONFIG)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.values = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.next = ("plan",)  # type: ignore[misc]


def test_internal_channels_are_filtered_out_of_values() -> None:
    class Joined(TypedDict):
        log: Annotated[list, operator.add]

    def b(state: Joined) -> dict[str, Any]:
        return {"log": [once("token", lambda: "tok-1")]}

    g = StateGraph(Joined).add_node("a", lambda s: {"log": ["a"]}).add_node("b", b)
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "c")
    saver = InMemorySaver()
    app = g.compile(checkpointer=saver)
    app.invoke({"log": []}, CONFIG)

    stored = saver.get_tuple(CONFIG)
    assert stored is not None
    internal = sorted(k for k in stored.checkpoint["channel_values"] if k.startswith("__"))
    assert internal  # the join's barrier and the once() results are saved...
    assert app.get_state(CONFIG).values == {"log": ["a", "tok-1", "c"]}  # ...but not shown


def test_unknown_thread_gives_an_empty_snapshot() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    snap = app.get_state({"configurable": {"thread_id": "nobody"}})
    assert (snap.values, snap.next, snap.tasks, snap.interrupts) == ({}, (), (), ())
    assert list(app.get_state_history({"configurable": {"thread_id": "nobody"}})) == []


def test_state_api_needs_a_checkpointer() -> None:
    app = build().compile()
    with pytest.raises(CheckpointerRequiredError) as info:
        app.get_state(CONFIG)
    assert str(info.value) == (
        "get_state needs a checkpointer: compile(checkpointer=InMemorySaver()) or SQLSaver(url)"
    )
    with pytest.raises(CheckpointerRequiredError):
        app.update_state(CONFIG, {"approved": True})


def test_history_is_newest_first_and_old_checkpoints_stay_readable() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    app.invoke({"messages": ["hi"]}, CONFIG)
    history = list(app.get_state_history(CONFIG))
    assert [(s.metadata["step"], s.metadata["source"], s.next) for s in history] == [
        (2, "loop", ()),
        (1, "loop", ("act",)),
        (0, "loop", ("plan",)),
        (-1, "input", ("__start__",)),
    ]
    assert history[0].values == app.get_state(CONFIG).values
    assert app.get_state(history[-2].config).values == {"messages": ["hi"]}
    assert app.get_state(history[-1].config).values == {"messages": []}  # before the input
    assert [s.metadata["step"] for s in app.get_state_history(CONFIG, limit=2)] == [2, 1]
    older = app.get_state_history(CONFIG, before=history[0].config)
    assert [s.metadata["step"] for s in older] == [1, 0, -1]


async def test_async_state_api() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    await app.ainvoke({"messages": []}, CONFIG)
    snap = await app.aget_state(CONFIG)
    assert snap.values == {"messages": ["plan", "act approved=None"]}
    steps = [s.metadata["step"] async for s in app.aget_state_history(CONFIG)]
    assert steps == [2, 1, 0, -1]
    new = await app.aupdate_state(CONFIG, {"approved": True})
    assert (await app.aget_state(new)).values["approved"] is True


def test_update_state_replaces_each_key_without_the_reducer() -> None:
    calls: Counter = Counter()
    app = build(calls).compile(checkpointer=InMemorySaver(), interrupt_before=["act"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": ["hi"]}, CONFIG)
    before = app.get_state(CONFIG)

    new_config = app.update_state(CONFIG, {"messages": ["use metric units"], "approved": True})

    snap = app.get_state(CONFIG)
    assert snap.config == new_config  # the returned config points at the new head
    assert snap.values == {"messages": ["use metric units"], "approved": True}
    assert snap.metadata == {"source": "update", "step": 2, "parents": {}}
    assert snap.parent_config == before.config
    assert snap.next == ("act",)  # still paused where it was
    assert app.invoke(None, CONFIG) == {
        "messages": ["use metric units", "act approved=True"],
        "approved": True,
    }
    assert calls == Counter(plan=1, act=1)


def test_update_state_keeps_a_pending_interrupt() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"messages": [interrupt("ok?")]}

    g = StateGraph(State).add_node("ask", ask).add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"messages": []}, CONFIG)
    app.update_state(CONFIG, {"approved": False})
    assert app.get_state(CONFIG).interrupts == info.value.interrupts
    assert app.invoke(Command(resume="yes"), CONFIG) == {"messages": ["yes"], "approved": False}


def test_update_state_on_a_new_thread() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    config = app.update_state({"configurable": {"thread_id": "fresh"}}, {"approved": True})
    snap = app.get_state({"configurable": {"thread_id": "fresh"}})
    assert (snap.values, snap.next, snap.config) == ({"approved": True, "messages": []}, (), config)
    assert app.invoke({"messages": []}, {"configurable": {"thread_id": "fresh"}}) == {
        "messages": ["plan", "act approved=True"],
        "approved": True,
    }


def test_update_state_as_node_applies_reducers_and_moves_the_frontier() -> None:
    calls: Counter = Counter()
    app = build(calls).compile(checkpointer=InMemorySaver(), interrupt_before=["plan"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": ["hi"]}, CONFIG)
    assert app.get_state(CONFIG).next == ("plan",)

    app.update_state(CONFIG, {"messages": ["hand-written plan"]}, as_node="plan")

    snap = app.get_state(CONFIG)
    assert snap.values == {"messages": ["hi", "hand-written plan"]}
    assert snap.next == ("act",)
    assert snap.metadata["source"] == "update"
    assert app.invoke(None, CONFIG)["messages"] == ["hi", "hand-written plan", "act approved=None"]
    assert calls == Counter(act=1)  # plan never ran


def test_update_state_errors() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    app.invoke({"messages": []}, CONFIG)
    with pytest.raises(InvalidUpdateError) as info:
        app.update_state(CONFIG, {"nope": 1})
    assert str(info.value) == (
        "update_state values has unknown state key(s) ['nope']; the state's keys are: "
        "['approved', 'messages']"
    )
    with pytest.raises(InvalidUpdateError) as info:
        app.update_state(CONFIG, {"approved": True}, as_node="ghost")
    assert str(info.value) == (
        "update_state(as_node='ghost'): no such node; nodes are: ['act', 'plan'] (or START, "
        "'__start__', as if the input had just been read, and '__input__', written as a run's "
        "input)"
    )
    with pytest.raises(ValueError) as value_error:
        app.update_state({"configurable": {}}, {"approved": True})
    assert str(value_error.value) == 'update_state needs {"configurable": {"thread_id": ...}}'
    assert app.get_state(CONFIG).metadata["source"] == "loop"  # nothing was written


def test_a_run_cannot_continue_from_an_old_checkpoint() -> None:
    # History never forks: runs go on from the thread's head, whatever config they are given.
    app = build().compile(checkpointer=InMemorySaver())
    app.invoke({"messages": []}, CONFIG)
    history = list(app.get_state_history(CONFIG))
    head, oldest = history[0].config, history[-1].config
    with pytest.raises(ResumeError) as info:
        app.invoke({"messages": ["again"]}, oldest)
    assert str(info.value) == (
        f"thread 't': runs continue from the latest checkpoint "
        f"({head['configurable']['checkpoint_id']}), not from "
        f"{oldest['configurable']['checkpoint_id']}: drop checkpoint_id from the config, or, "
        "to run again from that checkpoint, fork it into a new thread first: "
        "graph.invoke(None, graph.fork(config, thread_id))"
    )
    assert len(list(app.get_state_history(CONFIG))) == len(history)
    assert app.invoke({"messages": ["again"]}, head)["messages"][-1] == "act approved=None"


def history(app: Any, config: Any) -> list[tuple[Any, ...]]:
    return [
        (s.values, s.next, s.metadata["step"], s.metadata["source"])
        for s in app.get_state_history(config)
    ]


def test_update_state_as_input_writes_what_invoke_would_without_running_it() -> None:
    calls: Counter = Counter()
    app = build(calls).compile(checkpointer=InMemorySaver())
    app.update_state(CONFIG, {"messages": ["hi"]}, as_node="__input__")
    # The input checkpoint invoke saves: the input waits for its `__start__` task.
    assert history(app, CONFIG) == [({"messages": []}, ("__start__",), -1, "input")]
    assert calls == Counter()  # nothing ran
    assert app.invoke(None, CONFIG)["messages"] == ["hi", "plan", "act approved=None"]
    assert [s[2:] for s in history(app, CONFIG)] == [
        (2, "loop"),
        (1, "loop"),
        (0, "loop"),
        (-1, "input"),
    ]

    # A finished thread: a second turn's input, then through the reducer, at START's edges.
    app.update_state(CONFIG, {"messages": ["again"]}, as_node="__input__")
    snap = app.get_state(CONFIG)
    assert (snap.next, snap.metadata["source"], snap.metadata["step"]) == (
        ("__start__",),
        "input",
        3,
    )
    assert snap.values["messages"][-1] == "act approved=None"
    assert snap.tasks[0].result is None  # not applied yet
    assert app.invoke(None, CONFIG)["messages"][-3:] == ["again", "plan", "act approved=None"]


def test_update_state_as_input_on_a_paused_thread_is_input_given_on_resume() -> None:
    app = build().compile(checkpointer=InMemorySaver(), interrupt_before=["act"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": ["hi"]}, CONFIG)
    app.update_state(CONFIG, {"approved": True}, as_node="__input__")
    snap = app.get_state(CONFIG)
    # its `__start__` task first, then the task the thread keeps
    assert (snap.next, snap.metadata["source"]) == (("__start__", "act"), "input")
    # As input on resume, it lifts the static pause: the run goes on into "act".
    assert app.invoke(None, CONFIG)["messages"][-1] == "act approved=True"


def test_update_state_as_input_takes_the_input_schema_and_is_alone_in_a_bulk_step() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    with pytest.raises(InvalidUpdateError, match="needs values"):
        app.update_state(CONFIG, None, as_node="__input__")
    with pytest.raises(InvalidUpdateError, match="alone in its step"):
        app.bulk_update_state(CONFIG, [[({"approved": True}, "__input__"), ({}, "plan")]])
    assert app.get_state(CONFIG).created_at is None  # nothing was written


def test_update_state_as_start_is_as_if_the_input_had_just_been_read() -> None:
    calls: Counter = Counter()
    app = build(calls).compile(checkpointer=InMemorySaver())
    app.invoke({"messages": ["hi"]}, CONFIG)
    app.update_state(CONFIG, {"messages": ["more"]}, as_node=START)
    snap = app.get_state(CONFIG)
    assert (snap.next, snap.metadata["source"]) == (("plan",), "update")
    assert snap.values["messages"] == ["hi", "plan", "act approved=None", "more"]
    assert app.invoke(None, CONFIG)["messages"][-2:] == ["plan", "act approved=None"]
    assert calls == Counter(plan=2, act=2)


def test_bulk_update_state_replays_a_run_with_a_command_as_a_nodes_return() -> None:
    class Fan(TypedDict):
        done: Annotated[list, operator.add]

    def fan(state: Fan) -> Command:
        return Command(goto=[Send("work", {"i": i}) for i in (1, 2)], update={"done": ["fan"]})

    def work(arg: dict) -> dict[str, Any]:
        return {"done": [arg["i"]]}

    g = StateGraph(Fan).add_node("fan", fan).add_node("work", work).add_edge(START, "fan")
    app = g.compile(checkpointer=InMemorySaver())
    ran, copy = {"configurable": {"thread_id": "ran"}}, {"configurable": {"thread_id": "copy"}}
    app.invoke({"done": []}, ran)
    sends = [Send("work", {"i": i}) for i in (1, 2)]
    app.bulk_update_state(
        copy,
        [
            [({"done": []}, "__input__")],
            [({"done": []}, "__start__")],
            [(Command(goto=sends, update={"done": ["fan"]}), "fan")],
            [({"done": [1]}, "work"), ({"done": [2]}, "work")],
        ],
    )
    replayed = [(v, n, step) for v, n, step, _ in history(app, copy)]
    assert replayed == [(v, n, step) for v, n, step, _ in history(app, ran)]
    with pytest.raises(InvalidUpdateError, match=r"Command\(goto=\['ghost'\]\) names unknown"):
        app.update_state(copy, Command(goto="ghost"), as_node="fan")


def test_a_task_that_finished_in_an_incomplete_step_shows_what_it_wrote() -> None:
    class Two(TypedDict):
        messages: Annotated[list, operator.add]
        approved: bool

    def ask(state: Two) -> dict[str, Any]:
        return {"approved": interrupt("ok?")}

    g = StateGraph(Two).add_node("note", lambda s: {"messages": ["noted"], "approved": False})
    g.add_node("ask", ask).add_edge(START, "note").add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": []}, CONFIG)
    by_name = {t.name: t for t in app.get_state(CONFIG).tasks}
    assert by_name["note"].done and by_name["note"].result == {
        "messages": ["noted"],
        "approved": False,
    }
    assert (by_name["ask"].done, by_name["ask"].result) == (False, None)
    from graphs.types import PregelTask

    assert isinstance(by_name["ask"], PregelTask)  # LangGraph's name for it


def test_command_goto_as_input_adds_nodes_to_the_step_about_to_run() -> None:
    calls: Counter = Counter()
    app = build(calls).compile(checkpointer=InMemorySaver(), interrupt_before=["plan"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"messages": ["hi"]}, CONFIG)
    # Past the static pause before "plan": "act" runs beside it, then again after it.
    out = app.invoke(Command(goto="act", update={"approved": True}), CONFIG)
    # (that step's writes by node name, as LangGraph applies them: act's before plan's)
    assert out["messages"] == ["hi", "act approved=True", "plan", "act approved=True"]
    assert calls == Counter(plan=1, act=2)
    # On a finished thread it says what runs next.
    assert app.invoke(Command(goto=["act"]), CONFIG)["messages"][-1] == "act approved=True"
    assert calls == Counter(plan=1, act=3)


def test_command_goto_as_input_needs_a_thread_and_known_nodes() -> None:
    app = build().compile(checkpointer=InMemorySaver())
    with pytest.raises(InvalidUpdateError, match="thread 't' has none"):
        app.invoke(Command(goto="act"), CONFIG)
    app.invoke({"messages": []}, CONFIG)
    with pytest.raises(InvalidUpdateError, match=r"the input: Command\(goto=\['ghost'\]\)"):
        app.invoke(Command(goto="ghost"), CONFIG)


def test_a_task_is_built_as_langgraph_s_pregel_task_and_equal_to_one_whatever_done() -> None:
    from graphs.types import PULL, PregelTask, StateTask

    task = StateTask("id1", "ask", (PULL, "ask"), "ValueError('no')", done=True)
    assert (task.path, task.error, task.interrupts, task.done) == (
        (PULL, "ask"),
        "ValueError('no')",
        (),
        True,
    )
    assert task == PregelTask("id1", "ask", (PULL, "ask"), "ValueError('no')")
    assert task != PregelTask("id1", "ask", ("__pregel_push", 0, False), "ValueError('no')")
    with pytest.raises(TypeError):
        StateTask("id1", "ask", (PULL, "ask"), None, (), None, None, True)  # type: ignore[misc]
