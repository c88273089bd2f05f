"""A node that reads the state through a schema of its own: `add_node(..., input_schema=)`, or a
first parameter annotated with a schema class (`def node(state: Private)`).

The node sees only its schema's keys (an instance for a dataclass or pydantic schema); keys the
state schema lacks are private channels: nodes write and read them, checkpoints keep them (a
pause and a resume on SQLite below), and `invoke` does not return them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    Command,
    GraphInterrupt,
    GraphSetupError,
    InMemorySaver,
    InvalidUpdateError,
    StateGraph,
    interrupt,
)
from tests.graphs.checkpoint.test_contract import saver_fixture


class State(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]


class Scratch(TypedDict, total=False):
    topic: str
    draft: str


@dataclass
class DraftView:
    draft: str
    topic: str = "none"


class Counted(BaseModel):
    log: list[str] = []


def write_draft(state: State) -> dict[str, Any]:
    return {"draft": f"about {state['topic']}", "log": ["drafted"]}


def read_annotated(state: Scratch) -> dict[str, Any]:
    return {"log": [f"saw {sorted(state)} draft={state['draft']!r}"]}


def _chain(*nodes: tuple[str, Any, type | None]) -> StateGraph:
    g = StateGraph(State)
    prev = START
    for name, fn, schema in nodes:
        g.add_node(name, fn, input_schema=schema)
        g.add_edge(prev, name)
        prev = name
    g.add_edge(prev, END)
    return g


def test_an_annotated_node_sees_its_own_keys_and_a_private_key_another_node_wrote() -> None:
    g = _chain(("write", write_draft, None), ("read", read_annotated, None))
    out = g.compile().invoke({"topic": "tea"})
    assert out == {
        "topic": "tea",
        "log": ["drafted", "saw ['draft', 'topic'] draft='about tea'"],
    }


def test_input_schema_gives_a_dataclass_instance_with_its_defaults() -> None:
    seen: list[Any] = []

    def read(state: Any) -> dict[str, Any]:
        seen.append(state)
        return {}

    g = _chain(("write", lambda s: {"draft": "d1"}, None), ("read", read, DraftView))
    g.compile().invoke({"log": []})
    assert seen == [DraftView(draft="d1", topic="none")]


def test_a_pydantic_node_schema_fills_its_defaults_and_ignores_other_keys() -> None:
    seen: list[Any] = []

    def read(state: Counted) -> dict[str, Any]:
        seen.append(state)
        return {"log": ["read"]}

    g = _chain(("read", read, None))
    assert g.compile().invoke({"topic": "x"}) == {"topic": "x", "log": ["read"]}
    assert seen == [Counted(log=[])]


def test_nodes_without_a_schema_of_their_own_still_get_the_whole_state() -> None:
    seen: list[dict[str, Any]] = []

    def plain(state):  # type: ignore[no-untyped-def]  # no annotation: the state schema
        seen.append(dict(state))
        return {}

    g = _chain(("write", write_draft, None), ("plain", plain, None), ("own", read_annotated, None))
    g.compile().invoke({"topic": "t"})
    assert seen == [{"topic": "t", "log": ["drafted"], "draft": "about t"}]


def test_a_node_schema_with_another_reducer_for_a_state_key_is_refused() -> None:
    class Clash(TypedDict):
        log: Annotated[list[str], lambda a, b: b]

    g = StateGraph(State)
    with pytest.raises(
        GraphSetupError, match="'log' has a different reducer in .*Clash than in State"
    ):
        g.add_node("n", lambda s: {}, input_schema=Clash)


saver = saver_fixture("memory", "sqlite")


def test_a_private_key_survives_a_pause_and_is_read_after_the_resume(
    saver: BaseCheckpointSaver,
) -> None:
    def ask(state: Scratch) -> dict[str, Any]:
        answer = interrupt(f"send {state['draft']!r}?")
        return {"log": [f"{answer}: {state['draft']}"]}

    app = _chain(("write", write_draft, None), ("ask", ask, None)).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(GraphInterrupt) as paused:
        app.invoke({"topic": "tea"}, config)
    assert paused.value.interrupts[0].value == "send 'about tea'?"
    assert app.get_state(config).values["draft"] == "about tea"
    out = app.invoke(Command(resume="yes"), config)
    assert out == {"topic": "tea", "log": ["drafted", "yes: about tea"]}


def test_an_input_key_only_a_node_schema_has_is_dropped_as_langgraph_drops_it() -> None:
    # `draft` is not in the input (the state schema has no such key): the value given for it
    # is not written, so the node reading it sees what `write` wrote, not the input's.
    g = _chain(("read", read_annotated_or_none, None), ("write", write_draft, None))
    g.add_node("again", read_annotated_or_none).add_edge("write", "again")
    app = g.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"topic": "tea", "draft": "from the input"}, config)
    assert out == {
        "topic": "tea",
        "log": ["saw ['topic'] draft=None", "drafted", "saw ['draft', 'topic'] draft='about tea'"],
    }
    # The same for update_state(as_node="__input__"), which writes an input.
    app.update_state(config, {"topic": "tea", "draft": "typed in"}, as_node="__input__")
    assert app.get_state(config).values["draft"] == "about tea"
    # A key no schema has is still refused, and Command(update=...) may still write the key.
    with pytest.raises(InvalidUpdateError, match=r"unknown state key\(s\) \['drfat'\]"):
        app.invoke({"topic": "tea", "drfat": "x"}, {"configurable": {"thread_id": "u"}})
    again = app.invoke(Command(update={"draft": "by command"}), config)
    assert again["log"][-3] == "saw ['draft', 'topic'] draft='by command'"


def read_annotated_or_none(state: Scratch) -> dict[str, Any]:
    return {"log": [f"saw {sorted(state)} draft={state.get('draft')!r}"]}
