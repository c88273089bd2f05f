"""Pausing and resuming: static interrupts, `NodeInterrupt`, `interrupt()`, `Command(resume=)`."""

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    AmbiguousResumeError,
    CheckpointerRequiredError,
    Command,
    GraphError,
    GraphInterrupt,
    InMemorySaver,
    Interrupt,
    NodeInterrupt,
    ResumeError,
    SerializationError,
    StateGraph,
    interrupt,
)


class State(TypedDict):
    log: Annotated[list, operator.add]
    amount: int


CONFIG = {"configurable": {"thread_id": "t"}}


def step(name: str, calls: Counter) -> Any:
    def node(state: State) -> dict[str, Any]:
        calls[name] += 1
        return {"log": [name]}

    return node


def asking(name: str, calls: Counter) -> Any:
    """A node that asks a question, counting runs before and after the `interrupt()`."""

    def node(state: State) -> dict[str, Any]:
        calls[name] += 1
        answer = interrupt(f"{name}?")
        calls[f"{name} answered"] += 1
        return {"log": [f"{name}={answer}"]}

    return node


def chain(calls: Counter, **compile_options: Any) -> Any:
    g = StateGraph(State)
    for name in ("one", "two", "three"):
        g.add_node(name, step(name, calls))
    g.add_edge(START, "one").add_edge("one", "two").add_edge("two", "three")
    g.add_edge("three", END)
    return g.compile(checkpointer=InMemorySaver(), **compile_options)


def thread_length(app: Any) -> int:
    return len(list(app.get_state_history(CONFIG)))


# ---- interrupt_before / interrupt_after -------------------------------------------------


def test_interrupt_before_pauses_and_resumes_without_firing_again() -> None:
    calls: Counter = Counter()
    app = chain(calls, interrupt_before=["two"])
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    assert info.value.interrupts == ()
    assert str(info.value) == "thread 't' paused at a static interrupt point"
    assert info.value.config == app.get_state(CONFIG).config
    assert calls == Counter(one=1)
    assert app.get_state(CONFIG).next == ("two",)

    assert app.invoke(None, CONFIG) == {"log": ["one", "two", "three"]}
    assert calls == Counter(one=1, two=1, three=1)


def test_interrupt_after_pauses_once_the_node_ran() -> None:
    calls: Counter = Counter()
    app = chain(calls, interrupt_after=["one"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    snap = app.get_state(CONFIG)
    assert (snap.values, snap.next) == ({"log": ["one"]}, ("two",))
    assert app.invoke(None, CONFIG) == {"log": ["one", "two", "three"]}
    assert calls == Counter(one=1, two=1, three=1)


def test_every_node_with_a_star() -> None:
    calls: Counter = Counter()
    app = chain(calls, interrupt_before="*")
    paused_before = []
    for _ in range(3):
        with pytest.raises(GraphInterrupt):
            app.invoke(None if paused_before else {"log": []}, CONFIG)
        paused_before.append(app.get_state(CONFIG).next)
    assert paused_before == [("one",), ("two",), ("three",)]
    assert app.invoke(None, CONFIG) == {"log": ["one", "two", "three"]}


def test_a_cycle_pauses_before_the_node_every_time_it_comes_round() -> None:
    g = StateGraph(State)
    g.add_node("work", lambda s: {"amount": s["amount"] + 1})
    g.add_edge(START, "work")
    g.add_conditional_edges("work", lambda s: "work" if s["amount"] < 3 else END)
    app = g.compile(checkpointer=InMemorySaver(), interrupt_before=["work"])
    pauses = 0
    result = None
    command: Any = {"amount": 0}
    while result is None:
        try:
            result = app.invoke(command, CONFIG)
        except GraphInterrupt:
            pauses += 1
            command = None
    assert (result, pauses) == ({"amount": 3, "log": []}, 3)


def test_input_given_on_resume_is_applied_before_the_frontier_runs() -> None:
    seen: list[int] = []

    def charge(state: State) -> dict[str, Any]:
        seen.append(state["amount"])
        return {"log": ["charged"]}

    g = StateGraph(State).add_node("charge", charge).add_edge(START, "charge")
    app = g.compile(checkpointer=InMemorySaver(), interrupt_before=["charge"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"amount": 100, "log": ["asked"]}, CONFIG)

    result = app.invoke({"amount": 80, "log": ["edited"]}, CONFIG)

    assert seen == [80]
    assert result == {"amount": 80, "log": ["asked", "edited", "charged"]}
    # Newest first: charge's step; the edit applied (still before charge) and its input
    # checkpoint; the pause before charge and the first input's checkpoint.
    history = [(s.metadata["source"], s.next) for s in app.get_state_history(CONFIG)]
    assert history == [
        ("loop", ()),
        ("loop", ("charge",)),
        ("input", ("__start__", "charge")),
        ("loop", ("charge",)),
        ("input", ("__start__",)),
    ]


# ---- NodeInterrupt ------------------------------------------------------------------------


def review(state: State) -> dict[str, Any]:
    if state["amount"] > 10_000:
        raise NodeInterrupt({"reason": "amount exceeds auto-approve limit"})
    return {"log": ["approved"]}


def review_graph(**compile_options: Any) -> Any:
    g = StateGraph(State).add_node("review", review).add_edge(START, "review")
    return g.compile(**compile_options)


def test_node_interrupt_checkpoints_and_surfaces_its_value() -> None:
    app = review_graph(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"amount": 20_000}, CONFIG)
    [pause] = info.value.interrupts
    assert (pause.value, pause.node, pause.resumable) == (
        {"reason": "amount exceeds auto-approve limit"},
        "review",
        False,
    )
    snap = app.get_state(CONFIG)
    assert (snap.next, snap.interrupts) == (("review",), (pause,))
    assert issubclass(NodeInterrupt, GraphInterrupt)


def test_a_node_interrupt_takes_no_answer_and_reruns_the_node_on_resume() -> None:
    app = review_graph(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        app.invoke({"amount": 20_000}, CONFIG)
    with pytest.raises(ResumeError) as info:
        app.invoke(Command(resume="yes"), CONFIG)
    assert str(info.value) == (
        "thread 't' is paused by NodeInterrupt in ['review'], which takes no answer: fix the "
        "state with update_state if needed, then resume with invoke(None, config)"
    )
    with pytest.raises(GraphInterrupt):  # nothing changed: it pauses again
        app.invoke(None, CONFIG)
    app.update_state(CONFIG, {"amount": 5_000})
    assert app.invoke(None, CONFIG) == {"amount": 5_000, "log": ["approved"]}


# ---- interrupt() and Command(resume=...) ---------------------------------------------------


def test_interrupt_replays_the_node_and_returns_the_answer() -> None:
    calls: Counter = Counter()
    g = (
        StateGraph(State)
        .add_node("ask", asking("ask", calls))
        .add_node("after", step("after", calls))
    )
    g.add_edge(START, "ask").add_edge("ask", "after")
    app = g.compile(checkpointer=InMemorySaver())

    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)

    [pause] = info.value.interrupts
    assert isinstance(pause, Interrupt)
    assert (pause.value, pause.node, pause.index, pause.resumable) == ("ask?", "ask", 0, True)
    assert calls == Counter(ask=1)
    assert app.get_state(CONFIG).interrupts == (pause,)

    assert app.invoke(Command(resume="yes"), CONFIG) == {"log": ["ask=yes", "after"]}
    assert calls == Counter({"ask": 2, "ask answered": 1, "after": 1})


def test_several_interrupts_in_one_node_are_answered_one_after_another() -> None:
    def form(state: State) -> dict[str, Any]:
        name = interrupt("name?")
        email = interrupt(f"email for {name}?")
        return {"log": [name, email]}

    app = (
        StateGraph(State)
        .add_node("form", form)
        .add_edge(START, "form")
        .compile(checkpointer=InMemorySaver())
    )
    with pytest.raises(GraphInterrupt) as first:
        app.invoke({"log": []}, CONFIG)
    with pytest.raises(GraphInterrupt) as second:
        app.invoke(Command(resume="ada"), CONFIG)
    assert [(i.value, i.index) for i in first.value.interrupts] == [("name?", 0)]
    assert [(i.value, i.index) for i in second.value.interrupts] == [("email for ada?", 1)]
    assert first.value.interrupts[0].id != second.value.interrupts[0].id
    assert app.invoke(Command(resume="ada@example.com"), CONFIG) == {
        "log": ["ada", "ada@example.com"]
    }


def parallel_askers(calls: Counter) -> Any:
    g = StateGraph(State)
    g.add_node("a", asking("a", calls)).add_node("b", asking("b", calls))
    g.add_node("c", step("c", calls)).add_node("d", step("d", calls))
    g.add_edge(START, "a").add_edge(START, "b").add_edge(START, "c")
    g.add_edge(["a", "b", "c"], "d")
    return g.compile(checkpointer=InMemorySaver())


def test_several_paused_nodes_are_answered_by_id() -> None:
    calls: Counter = Counter()
    app = parallel_askers(calls)
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    ids = {i.node: i.id for i in info.value.interrupts}
    assert sorted(ids) == ["a", "b"]

    result = app.invoke(Command(resume={ids["b"]: "B", ids["a"]: "A"}), CONFIG)

    assert result == {"log": ["a=A", "b=B", "c", "d"]}
    assert calls == Counter({"a": 2, "b": 2, "a answered": 1, "b answered": 1, "c": 1, "d": 1})


def test_answering_some_paused_nodes_leaves_the_others_waiting() -> None:
    calls: Counter = Counter()
    app = parallel_askers(calls)
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    ids = {i.node: i.id for i in info.value.interrupts}

    with pytest.raises(GraphInterrupt) as still:
        app.invoke(Command(resume={ids["a"]: "A"}), CONFIG)
    assert [i.id for i in still.value.interrupts] == [ids["b"]]

    assert app.invoke(Command(resume="B"), CONFIG) == {"log": ["a=A", "b=B", "c", "d"]}
    assert calls["a answered"] == calls["b answered"] == calls["c"] == calls["d"] == 1


def test_interrupt_in_async_nodes_under_ainvoke() -> None:
    import asyncio

    async def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    async def main() -> Any:
        g = StateGraph(State).add_node("ask", ask).add_edge(START, "ask")
        app = g.compile(checkpointer=InMemorySaver())
        with pytest.raises(GraphInterrupt):
            await app.ainvoke({"log": []}, CONFIG)
        return await app.ainvoke(Command(resume="fine"), CONFIG)

    assert asyncio.run(main()) == {"log": ["fine"]}


def test_command_resume_with_update_applies_the_update_first() -> None:
    def ask(state: State) -> dict[str, Any]:
        answer = interrupt(f"pay {state['amount']}?")
        return {"log": [f"{answer} for {state['amount']}"]}

    app = (
        StateGraph(State)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    with pytest.raises(GraphInterrupt):
        app.invoke({"amount": 100}, CONFIG)
    assert app.invoke(Command(resume="yes", update={"amount": 90}), CONFIG) == {
        "amount": 90,
        "log": ["yes for 90"],
    }


def test_an_answer_is_kept_when_the_node_fails_after_receiving_it() -> None:
    broken = [True]

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt("ok?")
        if broken[0]:
            raise ConnectionError("mail server down")
        return {"log": [answer]}

    app = (
        StateGraph(State)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    with pytest.raises(ConnectionError):
        app.invoke(Command(resume="approved"), CONFIG)
    snap = app.get_state(CONFIG)
    assert (snap.next, snap.interrupts) == (("ask",), ())  # answered, not pending any more
    with pytest.raises(ResumeError):  # a second click cannot change the recorded answer
        app.invoke(Command(resume="rejected"), CONFIG)
    broken[0] = False
    assert app.invoke(None, CONFIG) == {"log": ["approved"]}


# ---- resumes that match nothing -------------------------------------------------------------


def test_resume_errors_say_what_is_wrong_and_nothing_runs() -> None:
    calls: Counter = Counter()
    app = parallel_askers(calls)
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    ids = [i.id for i in info.value.interrupts]  # in the order the nodes were added
    before = (dict(calls), thread_length(app))

    with pytest.raises(AmbiguousResumeError) as error:  # also a RuntimeError, as LangGraph's
        app.invoke(Command(resume="which one?"), CONFIG)
    assert str(error.value) == (
        "When there are multiple pending interrupts, you must specify the interrupt id "
        "when resuming. Thread 't' has 2; answer them by id: "
        f"Command(resume={{interrupt_id: answer, ...}}) with ids {ids}"
    )
    unknown = "0" * 32
    with pytest.raises(ResumeError) as error:
        app.invoke(Command(resume={ids[0]: "x", unknown: "y"}), CONFIG)
    assert str(error.value) == (
        f"thread 't': no pending interrupt has id(s) ['{unknown}']; pending: {sorted(ids)}"
    )
    assert error.value.thread_id == "t"
    assert (dict(calls), thread_length(app)) == before
    assert app.get_state(CONFIG).interrupts == info.value.interrupts


def test_resume_of_a_thread_paused_at_a_static_interrupt_has_nothing_to_answer() -> None:
    calls: Counter = Counter()
    app = chain(calls, interrupt_before=["two"])
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    with pytest.raises(ResumeError) as error:
        app.invoke(Command(resume="go"), CONFIG)
    assert str(error.value) == (
        "thread 't' has no pending interrupt() to answer (it waits to run ['two']): resume it "
        "with invoke(None, config)"
    )
    assert calls == Counter(one=1)


def test_resume_of_a_finished_thread_or_an_unknown_one() -> None:
    calls: Counter = Counter()
    app = chain(calls)
    app.invoke({"log": []}, CONFIG)
    for resume in (Command(resume="late"), None):
        with pytest.raises(ResumeError) as error:
            app.invoke(resume, CONFIG)
        assert str(error.value) == (
            "thread 't' is not paused: its last run finished; start a new run with an input"
        )
        with pytest.raises(ResumeError) as error:
            app.invoke(resume, {"configurable": {"thread_id": "refund-typo"}})
        assert str(error.value) == (
            "thread 'refund-typo' does not exist (no checkpoint), so there is nothing to "
            "resume; check the thread id, or start a run with an input"
        )
    assert calls == Counter(one=1, two=1, three=1)
    assert app.get_state({"configurable": {"thread_id": "refund-typo"}}).values == {}


# ---- interrupt_mode -------------------------------------------------------------------------


def test_interrupt_mode_return_gives_the_state_with_the_interrupts() -> None:
    calls: Counter = Counter()
    g = StateGraph(State).add_node("ask", asking("ask", calls)).add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    result = app.invoke({"amount": 3}, CONFIG)
    assert list(result) == ["amount", "log", "__interrupt__"]
    [pause] = result["__interrupt__"]
    assert (result["amount"], pause.value) == (3, "ask?")
    assert app.invoke(Command(resume=1), CONFIG) == {"amount": 3, "log": ["ask=1"]}


def test_interrupt_mode_return_for_static_and_node_interrupts() -> None:
    app = review_graph(
        checkpointer=InMemorySaver(), interrupt_mode="return", interrupt_before=["review"]
    )
    # An interrupt_before pause asks nothing: the state alone, as LangGraph returns it.
    assert app.invoke({"amount": 20_000}, CONFIG) == {"amount": 20_000, "log": []}
    assert app.get_state(CONFIG).next == ("review",)
    result = app.invoke(None, CONFIG)
    assert [i.value for i in result["__interrupt__"]] == [
        {"reason": "amount exceeds auto-approve limit"}
    ]


# ---- pausing needs a checkpointer -----------------------------------------------------------


def test_interrupt_without_a_checkpointer() -> None:
    calls: Counter = Counter()
    g = StateGraph(State).add_node("ask", asking("ask", calls)).add_edge(START, "ask")
    with pytest.raises(CheckpointerRequiredError) as info:
        g.compile().invoke({"log": []})
    assert str(info.value) == (
        "node 'ask' called interrupt(), but the graph was compiled without a checkpointer, so "
        "it cannot pause: compile(checkpointer=InMemorySaver()) for tests, or SQLSaver(url) to "
        "survive restarts"
    )


def test_node_interrupt_without_a_checkpointer() -> None:
    with pytest.raises(CheckpointerRequiredError) as info:
        review_graph().invoke({"amount": 20_000})
    assert str(info.value) == (
        "node(s) ['review'] paused, but the graph was compiled without a checkpointer, so the "
        "pause cannot be saved: compile(checkpointer=InMemorySaver()) or SQLSaver(url)"
    )


def test_interrupt_outside_a_node() -> None:
    with pytest.raises(RuntimeError) as info:
        interrupt("hello")
    assert str(info.value) == "interrupt() can only be called inside a graph node while it runs"


# ---- node code cannot lose a pause ---------------------------------------------------------


def test_except_exception_in_node_code_does_not_swallow_a_pause() -> None:
    def careless(state: State) -> dict[str, Any]:
        try:
            answer = interrupt("ok?")
        except Exception:  # noqa: BLE001 - what node authors write around flaky calls
            return {"log": ["swallowed"]}
        return {"log": [answer]}

    g = StateGraph(State).add_node("careless", careless).add_edge(START, "careless")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    assert app.invoke(Command(resume="yes"), CONFIG) == {"log": ["yes"]}


def test_an_interrupt_payload_that_cannot_be_stored_fails_in_the_node() -> None:
    g = StateGraph(State).add_node("ask", lambda s: {"log": [interrupt(object())]})
    app = g.add_edge(START, "ask").compile(checkpointer=InMemorySaver())
    with pytest.raises(SerializationError) as info:
        app.invoke({"log": []}, CONFIG)
    assert str(info.value).startswith(
        "cannot store a value of type builtins.object in a checkpoint"
    )
    assert isinstance(info.value, GraphError)


def test_an_interrupt_equals_langgraphs_value_and_id_and_keeps_graphs_fields() -> None:
    g = StateGraph(State).add_node("ask", lambda s: {"amount": interrupt("how much?")})
    app = g.add_edge(START, "ask").compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    [pause] = app.invoke({"log": []}, {"configurable": {"thread_id": "t"}})["__interrupt__"]
    assert pause == Interrupt(value="how much?", id=pause.id)
    assert (pause.node, pause.index, pause.resumable) == ("ask", 0, True)
    assert pause != Interrupt(value="how much?", id="another pause")
    assert pause != Interrupt(value="how many?", id=pause.id)
