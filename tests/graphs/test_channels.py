"""`graphs.channels`: LangGraph's channel classes as state-key markers, each giving its key
LangGraph's behaviour, on a real SQLite file where a checkpoint is involved."""

from __future__ import annotations

import operator
import sqlite3
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

from graphs import (
    END,
    START,
    Command,
    GraphSetupError,
    InvalidUpdateError,
    Send,
    StateGraph,
    interrupt,
)
from graphs.channels import (
    BinaryOperatorAggregate,
    DeltaChannel,
    EphemeralValue,
    LastValue,
    Topic,
    UntrackedValue,
)
from graphs.checkpoint import serde
from graphs.checkpoint.sql import SQLSaver
from graphs.graph.message import _messages_delta_reducer
from graphs.types import Overwrite


def sqlite(tmp_path: Path) -> SQLSaver:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'channels.db'}")
    saver.setup()
    return saver


def fan_out(state_schema: Any, writes: dict[str, Any], checkpointer: Any = None) -> Any:
    """START -> a and b (one step, in parallel) -> END; each writes `writes[name]`."""
    g = StateGraph(state_schema)
    for name in ("a", "b"):
        g.add_node(name, lambda s, name=name: writes[name])
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g.compile(checkpointer=checkpointer)


# ---- LastValue, BinaryOperatorAggregate ------------------------------------------------------


class Totals(TypedDict):
    total: Annotated[int, BinaryOperatorAggregate(int, operator.add)]
    name: Annotated[str, LastValue(str)]
    note: Annotated[str, LastValue]


def test_binary_operator_aggregate_merges_parallel_writes_and_keeps_them(tmp_path: Path) -> None:
    seen: list[int] = []

    def a(state: Totals) -> dict[str, Any]:
        seen.append(state["total"])  # read before anything was written: the type's empty value
        return {"total": 2}

    g = StateGraph(Totals)
    g.add_node("a", a)
    g.add_node("b", lambda s: {"total": 3})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"name": "x"}, config) == {"name": "x", "total": 5}
    assert seen == [0]
    assert app.invoke({"total": 10}, config)["total"] == 20  # 5 + 10 + 2 + 3, read back
    assert app.get_state(config).values == {"name": "x", "total": 20}


def test_last_value_is_a_plain_key_one_writer_per_step() -> None:
    app = fan_out(Totals, {"a": {"name": "a"}, "b": {"note": "b"}})
    assert app.invoke({"total": 1}) == {"total": 1, "name": "a", "note": "b"}
    app = fan_out(Totals, {"a": {"name": "a"}, "b": {"name": "b"}})
    with pytest.raises(
        InvalidUpdateError, match="At key 'name': Can receive only one value per step, got 2"
    ):
        app.invoke({"total": 1})


def test_a_channel_beside_a_reducer_or_a_channel_that_needs_arguments_is_refused() -> None:
    class Both(TypedDict):
        total: Annotated[int, BinaryOperatorAggregate(int, operator.add), operator.add]

    with pytest.raises(GraphSetupError, match="give it one: a channel or a reducer"):
        StateGraph(Both)

    class Bare(TypedDict):
        total: Annotated[int, BinaryOperatorAggregate]

    with pytest.raises(GraphSetupError, match=r"BinaryOperatorAggregate needs arguments"):
        StateGraph(Bare)


# ---- DeltaChannel ----------------------------------------------------------------------------

batches: list[tuple[list[str], list[Any]]] = []


def merge_batch(state: list[str], writes: list[Any]) -> list[str]:
    """A batch reducer that notes each call: the value it got and the writes, as one list."""
    batches.append((list(state), list(writes)))
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


class Log(TypedDict):
    log: Annotated[list[str], DeltaChannel(merge_batch)]
    status: str


def test_delta_channel_reducer_gets_a_steps_writes_in_one_call(tmp_path: Path) -> None:
    batches.clear()
    app = fan_out(Log, {"a": {"log": ["a1", "a2"]}, "b": {"log": "b"}}, sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"log": ["in"]}, config) == {"log": ["in", "a1", "a2", "b"]}
    # The input from the empty list, then both nodes' writes of the step in one call.
    assert batches == [([], [["in"]]), (["in"], [["a1", "a2"], "b"])]
    batches.clear()
    # A new invoke reads the stored value back and goes on from it.
    assert app.invoke({"log": ["again"]}, config)["log"] == [
        *["in", "a1", "a2", "b", "again", "a1", "a2", "b"]
    ]
    assert batches[0] == (["in", "a1", "a2", "b"], [["again"]])
    assert app.get_state(config).values["log"][-4:] == ["again", "a1", "a2", "b"]


def test_delta_channel_history_shows_each_checkpoints_value(tmp_path: Path) -> None:
    g = StateGraph(Log)
    g.add_node("one", lambda s: {"log": ["one"]})
    g.add_node("two", lambda s: {"log": ["two"], "status": "done"})
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": ["in"]}, config)
    logs = [s.values.get("log") for s in app.get_state_history(config)]
    assert logs == [["in", "one", "two"], ["in", "one"], ["in"], []]  # then the input's
    # Running again from the middle one does not see what came after it.
    before_two = next(s for s in app.get_state_history(config) if s.next == ("two",))
    fork = app.fork(before_two.config, "fork")
    assert app.invoke(None, fork)["log"] == ["in", "one", "two"]


def test_delta_channel_overwrite_replaces_and_drops_the_steps_other_writes() -> None:
    batches.clear()
    app = fan_out(Log, {"a": {"log": Overwrite(["new"])}, "b": {"log": ["dropped"]}})
    assert app.invoke({"log": ["old"]}) == {"log": ["new"]}
    assert batches == [([], [["old"]])]  # the reducer was not called for the step
    app = fan_out(Log, {"a": {"log": Overwrite(["a"])}, "b": {"log": Overwrite(["b"])}})
    with pytest.raises(InvalidUpdateError, match="state key 'log' got two Overwrite values"):
        app.invoke({"log": []})


def bad(state: list[Any], writes: list[Any]) -> list[Any]:
    raise KeyError("nope")


class Bad(TypedDict):
    log: Annotated[list, DeltaChannel(bad)]


def test_delta_channel_a_failing_reducer_names_the_key_and_the_nodes() -> None:
    app = fan_out(Bad, {"a": {"log": [1]}, "b": {"log": [2]}})
    with pytest.raises(InvalidUpdateError) as e:
        app.invoke({})
    assert str(e.value) == (
        "the reducer of state key 'log' (a DeltaChannel) failed on the writes from ['a', 'b']: "
        "KeyError: 'nope'"
    )


def test_delta_channel_snapshot_frequency_must_be_positive() -> None:
    assert DeltaChannel(merge_batch, snapshot_frequency=5).snapshot_frequency == 5
    with pytest.raises(ValueError, match="must be a positive int, got 0"):
        DeltaChannel(merge_batch, snapshot_frequency=0)


class Chat(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]


def test_delta_channel_of_messages_updates_and_removes_by_id_across_turns(
    tmp_path: Path,
) -> None:
    def reply(state: Chat) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(f"reply to {n}", id=f"ai-{n}")]}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"messages": [HumanMessage("hi", id="h1")]}, config)
    app.invoke({"messages": [HumanMessage("hi again", id="h1"), ("user", "more")]}, config)
    msgs = app.get_state(config).values["messages"]
    assert [(m.id, m.content) for m in msgs[:3]] == [
        ("h1", "hi again"),
        ("ai-1", "reply to 1"),
        (msgs[2].id, "more"),
    ]
    assert msgs[2].id and len(msgs) == 4 and msgs[3].id == "ai-3"
    app.update_state(config, {"messages": [RemoveMessage(id="ai-1")]}, as_node="reply")
    again = g.compile(checkpointer=sqlite(tmp_path))  # another graph on the same file
    assert [m.id for m in again.get_state(config).values["messages"]] == [
        *["h1", msgs[2].id, "ai-3"]
    ]


class Agent(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]
    turn: int


def test_delta_channel_of_messages_stores_each_steps_change_not_the_list(
    tmp_path: Path,
) -> None:
    """200 turns, each revising a message by id and appending one: the file holds about the
    final conversation (stored whole at each step it would be about 100 times that)."""
    text = "lorem ipsum " * 16

    def node(state: Agent) -> dict[str, Any]:
        turn, ai = state["turn"], [m for m in state["messages"] if isinstance(m, AIMessage)]
        out: list[Any] = [AIMessage(f"{turn}: {text}", id=f"ai-{turn}")]
        if ai:
            out.insert(0, AIMessage(f"revised at {turn}: {text}", id=ai[len(ai) // 2].id))
        return {"messages": out, "turn": turn + 1}

    g = StateGraph(Agent)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_conditional_edges("node", lambda s: END if s["turn"] >= 200 else "node")
    saver = sqlite(tmp_path)
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 1000}
    final = app.invoke({"messages": [HumanMessage("hello", id="h0")], "turn": 0}, config)
    assert len(final["messages"]) == 201
    with sqlite3.connect(tmp_path / "channels.db") as conn:
        blobs = conn.execute("SELECT sum(length(value)) FROM checkpoint_blobs").fetchone()[0]
        cps = conn.execute(
            "SELECT sum(length(record) + length(metadata)) FROM checkpoints"
        ).fetchone()[0]
    ratio = (blobs + cps) / len(serde.dumps(final["messages"]))
    assert ratio <= 3, ratio
    assert g.compile(checkpointer=sqlite(tmp_path)).get_state(config).values == final


# ---- UntrackedValue --------------------------------------------------------------------------


class Session:
    """What no checkpoint can hold: a lock."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()


class Work(TypedDict):
    log: Annotated[list[str], operator.add]
    session: Annotated[Session, UntrackedValue]


def test_untracked_value_is_read_within_the_run_and_never_checkpointed(tmp_path: Path) -> None:
    seen: list[Any] = []

    def open_session(state: Work) -> dict[str, Any]:
        seen.append(state.get("session"))
        return {"session": Session("s1"), "log": ["opened"]}

    def use(state: Work) -> dict[str, Any]:
        return {"log": [f"used {state['session'].name}"]}

    g = StateGraph(Work)
    g.add_node("open", open_session)
    g.add_node("use", use)
    g.add_edge(START, "open")
    g.add_edge("open", "use")
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"log": []}, config)
    assert out["log"] == ["opened", "used s1"] and out["session"].name == "s1"
    assert seen == [None]
    assert app.get_state(config).values == {"log": ["opened", "used s1"]}
    assert all("session" not in s.values for s in app.get_state_history(config))
    # A new invoke on the thread starts without it.
    app.invoke({"log": []}, config)
    assert seen == [None, None]


def test_untracked_value_in_a_sends_argument_reaches_its_task_and_is_not_stored(
    tmp_path: Path,
) -> None:
    def fan(state: Work) -> list[Send]:
        return [Send("tool", {**state, "log": ["to tool"]})]

    def tool(state: Work) -> dict[str, Any]:
        return {"log": [f"tool had {state['session'].name}"], "session": Session("s2")}

    g = StateGraph(Work)
    g.add_node("setup", lambda s: {"session": Session("s1")})
    g.add_node("tool", tool)
    g.add_edge(START, "setup")
    g.add_conditional_edges("setup", fan)
    app = g.compile(checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"log": []}, config)
    assert out["log"] == ["tool had s1"] and out["session"].name == "s2"
    assert "session" not in app.get_state(config).values


def test_untracked_value_written_beside_a_pause_is_gone_after_the_resume(
    tmp_path: Path,
) -> None:
    seen: list[Any] = []

    def ask(state: Work) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    def after(state: Work) -> None:
        seen.append(state.get("session"))

    g = StateGraph(Work)
    g.add_node("open", lambda s: {"session": Session("s1"), "log": ["opened"]})
    g.add_node("ask", ask)
    g.add_node("after", after)
    g.add_edge(START, "open")
    g.add_edge(START, "ask")
    g.add_edge(["open", "ask"], "after")
    app = g.compile(checkpointer=sqlite(tmp_path), interrupt_mode="return")
    config = {"configurable": {"thread_id": "t"}}
    paused = app.invoke({"log": []}, config)
    assert "__interrupt__" in paused
    # a step's writes reach the reducer by node name, as in LangGraph: "ask" before "open"
    assert app.invoke(Command(resume="yes"), config)["log"] == ["yes", "opened"]
    assert seen == [None]  # "open" is not run again, and what it kept only lived in its run


def test_untracked_value_takes_one_write_per_step_unless_unguarded() -> None:
    app = fan_out(Work, {"a": {"session": Session("a")}, "b": {"session": Session("b")}})
    with pytest.raises(InvalidUpdateError, match="is an UntrackedValue, which takes one"):
        app.invoke({"log": []})
    app = fan_out(Loose, {"a": {"note": "a"}, "b": {"note": "b"}})
    assert app.invoke({})["note"] == "b"


class Loose(TypedDict):
    note: Annotated[str, UntrackedValue(str, guard=False)]


# ---- EphemeralValue --------------------------------------------------------------------------


class Relay(TypedDict):
    seen: Annotated[list[str], operator.add]
    hint: Annotated[str, EphemeralValue(str)]


def relay(*writes: dict[str, Any], checkpointer: Any = None) -> Any:
    """n0 -> n1 -> ...: each notes the hint it sees (or "-") and writes `writes[i]`."""
    g = StateGraph(Relay)
    names = [f"n{i}" for i in range(len(writes))]
    for i, name in enumerate(names):

        def node(state: Relay, i: int = i) -> dict[str, Any]:
            return {"seen": [state.get("hint", "-")], **writes[i]}

        g.add_node(name, node)
    for a, b in zip([START, *names], [*names, END]):
        g.add_edge(a, b)
    return g.compile(checkpointer=checkpointer)


def test_ephemeral_value_is_seen_by_the_next_step_only(tmp_path: Path) -> None:
    app = relay({"hint": "from n0"}, {}, {"hint": "from n2"}, {"hint": "n3"}, {})
    assert app.invoke({"seen": []}) == {"seen": ["-", "from n0", "-", "from n2", "n3"]}
    # An input is not a step: the first step sees it, the second does not.
    app = relay({}, {}, checkpointer=sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"seen": [], "hint": "input"}, config) == {"seen": ["input", "-"]}
    hints = [s.values.get("hint") for s in app.get_state_history(config)]
    # Newest first: stored while it lasts (from step 0); the input checkpoint is before it.
    assert hints == [None, None, "input", None]


def test_ephemeral_value_outlives_a_pause_in_the_step_that_reads_it(tmp_path: Path) -> None:
    def ask(state: Relay) -> dict[str, Any]:
        return {"seen": [f"{state.get('hint')}: {interrupt('ok?')}"]}

    g = StateGraph(Relay)
    g.add_node("tell", lambda s: {"hint": "careful"})
    g.add_node("ask", ask)
    g.add_node("last", lambda s: {"seen": [s.get("hint", "-")]})
    g.add_edge(START, "tell")
    g.add_edge("tell", "ask")
    g.add_edge("ask", "last")
    saver = sqlite(tmp_path)
    config = {"configurable": {"thread_id": "t"}}
    g.compile(checkpointer=saver, interrupt_mode="return").invoke({"seen": []}, config)
    assert g.compile(checkpointer=saver).get_state(config).values["hint"] == "careful"
    again = g.compile(checkpointer=sqlite(tmp_path))  # as another process would
    assert again.invoke(Command(resume="yes"), config) == {"seen": ["careful: yes", "-"]}


def test_ephemeral_value_takes_one_write_per_step_unless_unguarded() -> None:
    app = fan_out(Relay, {"a": {"hint": "a"}, "b": {"hint": "b"}})
    with pytest.raises(InvalidUpdateError, match="is an EphemeralValue, which takes one"):
        app.invoke({"seen": []})

    class LooseHint(TypedDict):
        hint: Annotated[str, EphemeralValue(str, guard=False)]

    assert fan_out(LooseHint, {"a": {"hint": "a"}, "b": {"hint": "b"}}).invoke({}) == {"hint": "b"}


# ---- Topic -----------------------------------------------------------------------------------


class Board(TypedDict):
    seen: Annotated[list[Any], operator.add]
    news: Annotated[list[str], Topic(str)]
    archive: Annotated[list[str], Topic(str, accumulate=True)]


def board(checkpointer: Any = None) -> Any:
    """a and b post in one step; c reads and posts; d reads."""

    def read(state: Board) -> list[Any]:
        return [state.get("news"), state.get("archive")]

    g = StateGraph(Board)
    g.add_node("a", lambda s: {"news": "a", "archive": "a"})
    g.add_node("b", lambda s: {"news": ["b1", "b2"], "archive": ["b1", "b2"]})
    g.add_node("c", lambda s: {"seen": [read(s)], "archive": "c"})
    g.add_node("d", lambda s: {"seen": [read(s)]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    g.add_edge("c", "d")
    return g.compile(checkpointer=checkpointer)


def test_topic_collects_a_steps_writes_and_is_emptied_by_the_next() -> None:
    out = board().invoke({"seen": []})
    assert out["seen"] == [
        [["a", "b1", "b2"], ["a", "b1", "b2"]],  # c: both nodes' writes, items of lists flat
        [None, ["a", "b1", "b2", "c"]],  # d: c did not post news, so it was emptied
    ]
    assert "news" not in out and out["archive"] == ["a", "b1", "b2", "c"]


def test_topic_with_accumulate_keeps_every_steps_items_across_runs(tmp_path: Path) -> None:
    app = board(sqlite(tmp_path))
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"seen": [], "archive": ["in"]}, config)
    assert app.get_state(config).values["archive"] == ["in", "a", "b1", "b2", "c"]
    again = board(sqlite(tmp_path))  # read back from the file
    out = again.invoke({"seen": [], "news": "input news"}, config)
    assert out["archive"] == ["in", "a", "b1", "b2", "c", "a", "b1", "b2", "c"]
    news = [s.values.get("news") for s in again.get_state_history(config)]
    # Newest first, each run's checkpoints: after d, after c, after a and b, the input
    # applied (step 0), the input checkpoint (the state before it).
    assert news == [
        None,
        None,
        ["a", "b1", "b2"],
        ["input news"],
        None,
        None,
        None,
        ["a", "b1", "b2"],
        None,
        None,
    ]
