"""`add_node(..., error_handler=)`: what runs in a failed node's place, in the same step."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from graphs import END, START, Command, StateGraph, interrupt
from graphs import _task as task_module
from graphs.checkpoint.base import BaseCheckpointSaver
from graphs.errors import NodeError, RecordedNodeError
from graphs.types import RetryPolicy
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite")


class State(TypedDict):
    log: Annotated[list, operator.add]


class Refused(Exception):
    pass


CONFIG: Any = {"configurable": {"thread_id": "t"}}


def test_the_handler_runs_after_the_retries_and_its_command_routes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(task_module, "sleep", lambda _: None)
    attempts: list[int] = []
    told: list[NodeError] = []

    def charge(state: State) -> dict[str, Any]:
        attempts.append(1)
        raise Refused("card declined")

    def recover(state: State, error: NodeError) -> Command[Literal["apologise"]]:
        told.append(error)
        return Command(update={"log": [f"recovered from {error.node}"]}, goto="apologise")

    g = StateGraph(State)
    g.add_node(
        "charge",
        charge,
        retry_policy=RetryPolicy(max_attempts=2, retry_on=Refused),
        error_handler=recover,
    )
    g.add_node("ship", lambda s: {"log": ["shipped"]})
    g.add_node("apologise", lambda s: {"log": ["sorry"]})
    g.add_edge(START, "charge").add_edge("charge", "ship").add_edge("ship", END)
    app = g.compile()  # apologise is reached only by the handler's Command

    assert app.invoke({"log": []}) == {"log": ["recovered from charge", "sorry"]}
    assert len(attempts) == 2  # the retries come first
    assert [(e.node, type(e.error), str(e.error)) for e in told] == [
        ("charge", Refused, "card declined")
    ]
    # the node's own edge does not follow a failure: "ship" never ran
    chunks = list(app.stream({"log": []}))
    assert chunks == [
        {"__error_handler__charge": {"log": ["recovered from charge"]}},
        {"apologise": {"log": ["sorry"]}},
    ]


async def test_an_async_handler_takes_a_failed_subgraph_and_the_config() -> None:
    def inner(state: State) -> dict[str, Any]:
        raise Refused("inside the subgraph")

    sub = StateGraph(State).add_node("inner", inner).add_edge(START, "inner").compile()
    seen: dict[str, Any] = {}

    async def recover(state: State, config: Any, *, error: NodeError) -> dict[str, Any]:
        seen["thread"] = config["configurable"]["thread_id"]
        seen["error"] = error
        return {"log": ["handled"]}

    g = StateGraph(State).add_node("review", sub, error_handler=recover)
    app = g.add_edge(START, "review").compile()
    assert await app.ainvoke({"log": []}, {"configurable": {"thread_id": "x"}}) == {
        "log": ["handled"]
    }
    assert seen["thread"] == "x"
    assert seen["error"].node == "review"
    assert str(seen["error"].error) == "inside the subgraph"


def test_a_pause_is_not_a_failure(saver: BaseCheckpointSaver) -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    handled: list[str] = []
    g = StateGraph(State)
    g.add_node("ask", ask, error_handler=lambda s: handled.append("x") or {})
    g.add_node("other", lambda s: {"log": ["other"]})
    g.add_edge(START, "ask").add_edge(START, "other")
    app = g.compile(checkpointer=saver, interrupt_mode="return")
    out = app.invoke({"log": []}, CONFIG)
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    assert handled == []
    assert app.invoke(Command(resume="yes"), CONFIG) == {"log": ["yes", "other"]}


def test_a_failing_handler_fails_the_run_and_the_resume_runs_the_handler_not_the_node(
    saver: BaseCheckpointSaver,
) -> None:
    calls: list[str] = []
    told: list[NodeError] = []
    broken = [True]

    def charge(state: State) -> dict[str, Any]:
        calls.append("charge")
        raise Refused("card declined")

    def recover(state: State, error: NodeError) -> dict[str, Any]:
        calls.append("recover")
        told.append(error)
        if broken[0]:
            raise RuntimeError("the handler broke too")
        return {"log": ["recovered"]}

    g = StateGraph(State).add_node("charge", charge, error_handler=recover)
    app = g.add_edge(START, "charge").compile(checkpointer=saver)
    with pytest.raises(RuntimeError, match="the handler broke too"):
        app.invoke({"log": []}, CONFIG)
    assert calls == ["charge", "recover"]

    broken[0] = False
    assert app.invoke(None, CONFIG) == {"log": ["recovered"]}
    assert calls == ["charge", "recover", "recover"]  # the node did not run again
    again = told[-1]
    assert again.node == "charge"
    assert isinstance(again.error, RecordedNodeError)  # read back from the checkpoint
    assert (again.error.type_name, str(again.error)) == ("Refused", "card declined")


def test_a_parameter_named_error_without_the_annotation_is_not_injected() -> None:
    got: list[Any] = []

    def node(state: State, error: Any) -> dict[str, Any]:  # (state, config), by position
        got.append(error)
        return {}

    app = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    app.invoke({"log": []}, {"configurable": {"thread_id": "c"}})
    assert got[0]["configurable"]["thread_id"] == "c"


def test_set_node_defaults_gives_nodes_without_their_own_a_handler_and_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(task_module, "sleep", lambda _: None)
    attempts: list[str] = []

    def failing(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            attempts.append(name)
            raise Refused(f"{name} failed")

        return node

    def default(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"default handled {error.node}"]}

    def own(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"own handled {error.node}"]}

    g = StateGraph(State)
    g.add_node("a", failing("a")).add_node("b", failing("b"), error_handler=own)
    g.add_edge(START, "a").add_edge(START, "b")
    g.set_node_defaults(  # after the nodes: applied when compiled
        retry_policy=RetryPolicy(max_attempts=2, retry_on=Refused), error_handler=default
    )
    assert g.compile().invoke({"log": []}) == {"log": ["default handled a", "own handled b"]}
    assert attempts == ["a", "a", "b", "b"]


def test_a_default_handler_that_fails_is_not_handled_again() -> None:
    def node(state: State) -> dict[str, Any]:
        raise Refused("node failed")

    def broken(state: State) -> dict[str, Any]:
        raise RuntimeError("the handler failed")

    g = StateGraph(State).add_node("node", node).add_edge(START, "node")
    app = g.set_node_defaults(error_handler=broken).compile()
    with pytest.raises(RuntimeError, match="the handler failed"):
        app.invoke({"log": []})
