"""A node that raises: the error keeps its type, the last checkpoint stays, finished work stays."""

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import START, Command, GraphInterrupt, InMemorySaver, StateGraph, interrupt


class State(TypedDict):
    log: Annotated[list, operator.add]


CONFIG = {"configurable": {"thread_id": "t"}}


class PaymentDown(Exception):
    pass


class Flaky:
    """A node that fails while `broken` is set, counting its calls."""

    def __init__(self, name: str, calls: Counter) -> None:
        self.name, self.calls, self.broken = name, calls, True

    def __call__(self, state: State) -> dict[str, Any]:
        self.calls[self.name] += 1
        if self.broken:
            raise PaymentDown("gateway timeout")
        return {"log": [self.name]}


def step(name: str, calls: Counter) -> Any:
    def node(state: State) -> dict[str, Any]:
        calls[name] += 1
        return {"log": [name]}

    return node


def branches(calls: Counter, flaky: Flaky, **compile_options: Any) -> Any:
    """START -> first -> (ok, flaky) -> last."""
    g = StateGraph(State)
    g.add_node("first", step("first", calls)).add_node("ok", step("ok", calls))
    g.add_node("flaky", flaky).add_node("last", step("last", calls))
    g.add_edge(START, "first").add_edge("first", "ok").add_edge("first", "flaky")
    g.add_edge(["ok", "flaky"], "last")
    return g.compile(**compile_options)


def test_the_error_keeps_its_type_and_gets_a_note_naming_node_and_thread() -> None:
    calls: Counter = Counter()
    app = branches(calls, Flaky("flaky", calls), checkpointer=InMemorySaver())
    with pytest.raises(PaymentDown) as info:
        app.invoke({"log": []}, CONFIG)
    assert str(info.value) == "gateway timeout"
    assert info.value.__notes__ == [
        (
            "while running node 'flaky' on thread 't'; the last checkpoint is kept: fix the "
            "cause, then resume with invoke(None, config)"
        )
    ]


def test_without_a_checkpointer_the_note_promises_nothing() -> None:
    calls: Counter = Counter()
    app = branches(calls, Flaky("flaky", calls))
    with pytest.raises(PaymentDown) as info:
        app.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    assert info.value.__notes__ == ["while running node 'flaky' on thread 't'"]


def test_the_last_good_checkpoint_stays_and_shows_the_failure() -> None:
    calls: Counter = Counter()
    app = branches(calls, Flaky("flaky", calls), checkpointer=InMemorySaver())
    with pytest.raises(PaymentDown):
        app.invoke({"log": []}, CONFIG)
    snap = app.get_state(CONFIG)
    # what "ok" wrote shows (LangGraph agrees); the checkpoint itself keeps the step's input
    assert snap.values == {"log": ["first", "ok"]}
    assert app.get_state(snap.config).values == {"log": ["first"]}
    assert snap.next == ("flaky",)  # "ok" finished: it will not run again (LangGraph agrees)
    assert [(t.name, t.done, t.error) for t in snap.tasks] == [
        ("ok", True, None),
        ("flaky", False, "PaymentDown('gateway timeout')"),  # its repr, as LangGraph's
    ]
    # the input's, step 0's and first's: the failed step wrote no checkpoint
    assert len(list(app.get_state_history(CONFIG))) == 3


@pytest.mark.parametrize("use_async", [False, True])
async def test_resume_reruns_only_what_had_not_finished(use_async: bool) -> None:
    calls: Counter = Counter()
    flaky = Flaky("flaky", calls)
    app = branches(calls, flaky, checkpointer=InMemorySaver())
    run = app.ainvoke if use_async else app.invoke

    async def invoke(value: Any) -> Any:
        result = run(value, CONFIG)
        return await result if use_async else result

    with pytest.raises(PaymentDown):
        await invoke({"log": []})
    with pytest.raises(PaymentDown):  # still broken: fails again, "ok" still not re-run
        await invoke(None)
    flaky.broken = False

    # The step's writes reach the reducer by node name (LangGraph's order): flaky's, then ok's.
    assert await invoke(None) == {"log": ["first", "flaky", "ok", "last"]}
    assert calls == Counter(first=1, ok=1, flaky=3, last=1)


def test_a_step_with_a_pause_and_a_failure_keeps_the_finished_branch() -> None:
    calls: Counter = Counter()

    def ask(state: State) -> dict[str, Any]:
        calls["ask"] += 1
        return {"log": [interrupt("ok?")]}

    flaky = Flaky("flaky", calls)
    g = StateGraph(State).add_node("ask", ask).add_node("flaky", flaky)
    g.add_node("done", step("done", calls))
    g.add_edge(START, "ask").add_edge(START, "flaky").add_edge(START, "done")
    app = g.compile(checkpointer=InMemorySaver())

    with pytest.raises(PaymentDown):
        app.invoke({"log": []}, CONFIG)
    snap = app.get_state(CONFIG)
    assert [(t.name, t.done, bool(t.interrupts), t.error) for t in snap.tasks] == [
        ("ask", False, True, None),
        ("flaky", False, False, "PaymentDown('gateway timeout')"),
        ("done", True, False, None),
    ]

    flaky.broken = False
    # ask's, done's and flaky's writes, by node name.
    assert app.invoke(Command(resume="yes"), CONFIG) == {"log": ["yes", "done", "flaky"]}
    assert calls == Counter(ask=2, flaky=2, done=1)


def test_a_failing_router_names_the_node_it_routes_from() -> None:
    def router(state: State) -> str:
        raise KeyError("decision")

    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    app = g.add_conditional_edges("a", router).compile(checkpointer=InMemorySaver())
    with pytest.raises(KeyError) as info:
        app.invoke({"log": []}, CONFIG)
    assert info.value.__notes__ == ["while routing after node 'a' on thread 't'"]
    assert app.get_state(CONFIG).next == ("a",)


def test_a_pause_in_one_branch_keeps_the_finished_branches() -> None:
    calls: Counter = Counter()

    def ask(state: State) -> dict[str, Any]:
        calls["ask"] += 1
        return {"log": [interrupt("ok?")]}

    g = StateGraph(State).add_node("ask", ask).add_node("side", step("side", calls))
    g.add_edge(START, "ask").add_edge(START, "side")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    with pytest.raises(GraphInterrupt):
        app.invoke(None, CONFIG)  # resumed without an answer: asks again
    assert app.invoke(Command(resume="yes"), CONFIG) == {"log": ["yes", "side"]}
    assert calls == Counter(ask=3, side=1)
