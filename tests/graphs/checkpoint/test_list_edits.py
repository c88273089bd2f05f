"""An `add_messages` update by id (or a removal) is stored as an edit of the version before it,
on every saver: each past version still reads back exactly, and a 200-turn agent that revises a
message every turn stores about what it holds at the end, not the conversation once per turn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from graphs import START, InMemorySaver, StateGraph
from graphs.checkpoint import _delta, serde
from graphs.checkpoint.memory import _Appended, _Edited, _Whole
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import MessagesState
from graphs.graph.message import REMOVE_ALL_MESSAGES


def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    """Run one statement on the test database, outside the saver."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(statement).fetchall()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[Any, str | None]]:
    """(a saver, its database URL or None for `InMemorySaver`)."""
    if request.param == "memory":
        yield InMemorySaver(), None
        return
    url = (
        f"sqlite:///{tmp_path / 'edits.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    saver = SQLSaver(url)
    saver.setup()
    try:
        yield saver, url
    finally:
        saver.close()


def _stored_bytes(saver: Any, url: str | None) -> int:
    """Every byte the saver holds of the thread's values and checkpoints."""
    if url is None:
        total = 0
        for blob in saver._blobs.values():
            if isinstance(blob, (_Whole, _Appended)):
                total += len(blob.items)
            elif isinstance(blob, _Edited):
                total += len(blob.edit)
            else:
                total += len(str(blob))
        return total
    blobs = sql(url, "SELECT sum(length(value)) FROM checkpoint_blobs")[0][0]
    cps = sql(url, "SELECT sum(length(record) + length(metadata)) FROM checkpoints")[0][0]
    return int(blobs) + int(cps)


def _text(i: int) -> str:
    return f"message {i}: " + "lorem ipsum " * 16


# One step of the script per turn: what the node returns, as a function of the turn.
def _step(turn: int, messages: list[Any]) -> list[Any]:
    ai = [m for m in messages if isinstance(m, AIMessage)]
    kind = turn % 6
    if kind == 1 and ai:  # an update by id, with an append in the same update
        return [AIMessage(f"revised at {turn}: {_text(turn)}", id=ai[len(ai) // 2].id), _ai(turn)]
    if kind == 2 and len(messages) > 3:  # a removal
        return [RemoveMessage(id=messages[1].id), _ai(turn)]
    if kind == 3 and ai:  # two updates by id, nothing appended
        return [
            AIMessage(f"first revised at {turn}", id=ai[0].id),
            AIMessage(f"last revised at {turn}", id=ai[-1].id),
        ]
    if kind == 4 and len(messages) > 2:  # removal and update of the same step
        return [RemoveMessage(id=messages[-1].id), HumanMessage("changed", id=messages[0].id)]
    if turn == 15:  # everything replaced
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), _ai(turn), _ai(turn + 1000)]
    return [_ai(turn), ToolMessage(_text(turn), tool_call_id=f"c{turn}", id=f"tool-{turn}")]


def _ai(turn: int) -> AIMessage:
    return AIMessage(_text(turn), id=f"ai-{turn}")


def _looping(saver: Any, turns: int, step: Any) -> Any:
    """One node, run `turns` times in one invoke, returning `step(turn, messages)`."""

    class State(MessagesState):
        turn: int

    def node(state: State) -> dict[str, Any]:
        return {"messages": step(state["turn"], state["messages"]), "turn": state["turn"] + 1}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_conditional_edges("node", lambda s: "__end__" if s["turn"] >= turns else "node")
    return g.compile(checkpointer=saver)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1000}


def test_every_version_reads_back_after_appends_updates_and_removals(
    any_saver: tuple[Any, str | None],
) -> None:
    saver, url = any_saver
    app = _looping(saver, 40, _step)
    config = _config("mixed")
    start = {"messages": [HumanMessage("hello", id="h0")], "turn": 0}
    seen = [
        [m.model_copy() for m in v["messages"]]
        for v in app.stream(start, config, stream_mode="values")
    ]
    # a second run on the same thread: its input appends, its steps edit again
    seen += [
        [m.model_copy() for m in v["messages"]]
        for v in app.stream({"messages": [("user", "again")], "turn": 30}, config, "values")
    ]
    # Every checkpoint but the input checkpoints (each holds the state before its input).
    history = [
        s.values["messages"]
        for s in app.get_state_history(config)
        if s.metadata["source"] != "input"
    ][::-1]
    assert history == seen
    if url is not None:  # and through another saver, which never saw the run
        other = SQLSaver(url)
        try:
            fresh = _looping(other, 40, _step).get_state_history(config)
            stored = [s.values["messages"] for s in fresh if s.metadata["source"] != "input"]
            assert stored[::-1] == seen
        finally:
            other.close()


def test_a_200_turn_agent_revising_a_message_every_turn_stores_under_3x(
    any_saver: tuple[Any, str | None],
) -> None:
    saver, url = any_saver

    def step(turn: int, messages: list[Any]) -> list[Any]:
        ai = [m for m in messages if isinstance(m, AIMessage)]
        out: list[Any] = [_ai(turn)]
        if ai:
            out.insert(0, AIMessage(f"revised at {turn}: {_text(turn)}", id=ai[len(ai) // 2].id))
        return out

    app = _looping(saver, 200, step)
    final = app.invoke({"messages": [HumanMessage("hello", id="h0")], "turn": 0}, _config("t"))
    messages = final["messages"]
    assert len(messages) == 201
    assert messages[50].content.startswith("revised at")
    ratio = _stored_bytes(saver, url) / len(serde.dumps(messages))
    # stored whole at every update it was ~100x; the edits keep it near the final state
    assert ratio <= 3, ratio
    assert app.get_state(_config("t")).values["messages"] == messages


def test_a_sql_edit_whose_previous_version_is_gone_is_stored_whole(db_url: str) -> None:
    """The saver's memory of the head can be wrong (the rows were deleted behind it): the
    database refuses the edit and the value is stored whole, never a chain that breaks."""
    saver = SQLSaver(db_url)
    saver.setup()

    def revise(state: MessagesState, config: Any) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        if thread == "gone":  # behind the saver's back, while the run holds the thread
            sql(db_url, "DELETE FROM checkpoint_blobs WHERE thread_id = 'gone'")
        return {"messages": [HumanMessage("new", id="h0")]}

    try:
        g = StateGraph(MessagesState)
        g.add_node("node", lambda s: {"messages": [_ai(len(s["messages"]))]})
        g.add_node("revise", revise)
        g.add_edge(START, "node")
        g.add_edge("node", "revise")
        app = g.compile(checkpointer=saver)
        for thread in ("kept", "gone"):
            start = [HumanMessage(f"hello {i}", id=f"h{i}") for i in range(5)]
            out = app.invoke({"messages": start}, _config(thread))
            contents = [m.content for m in out["messages"]]
            assert contents == ["new", "hello 1", "hello 2", "hello 3", "hello 4", _text(5)]
            messages = app.get_state(_config(thread)).values["messages"]
            assert messages == out["messages"]
        rows = sql(
            db_url,
            "SELECT thread_id, prev_version FROM checkpoint_blobs WHERE channel = 'messages' "
            "ORDER BY thread_id, version DESC",
        )
        assert rows[0] == ("gone", None)  # stored whole
        assert rows[1][0] == "kept" and rows[1][1] is not None  # an edit
    finally:
        saver.close()


def test_diff_and_apply_rebuild_any_list() -> None:
    """The edit is exact for any two lists (a shape other than add_messages' only makes it
    bigger or whole)."""
    a, b, c, d = ({"id": i, "n": i} for i in range(4))
    cases: list[tuple[list[Any], list[Any]]] = [
        ([a, b, c, d] * 3, [a, {"id": 1, "n": 9}, c, d] * 3),
        ([a, b, c, d] * 3, [b, c, d] * 3 + [{"id": 7}]),
        ([a, b, c, d] * 3, [d, c, b, a]),
        ([a, b], [a, b, c, d]),
        ([], [a]),
    ]
    for old, new in cases:
        edit = _delta.diff(old, new)
        if edit is not None:
            stored = serde.loads(serde.dumps(_delta.edit_json(edit)))
            assert _delta.apply(old, _delta.edit_from_json(stored, len(old))) == new
    assert _delta.diff([a, b, c, d] * 3, [a, {"id": 1, "n": 9}, c, d] * 3) is not None


async def test_an_async_run_stores_edits_and_reads_them_back(db_url: str) -> None:
    """`aput` (the bot runs graphs with `ainvoke`) stores edits as `put` does."""
    saver = SQLSaver(db_url)
    await saver.asetup()
    try:
        app = _looping(saver, 24, _step)
        config = _config("async")
        start = {"messages": [HumanMessage("hello", id="h0")], "turn": 0}
        seen = [
            [m.model_copy() for m in v["messages"]]
            async for v in app.astream(start, config, stream_mode="values")
        ]
        history = [
            s.values["messages"]
            async for s in app.aget_state_history(config)
            if s.metadata["source"] != "input"
        ][::-1]
        assert history == seen
        chained = sql(
            db_url,
            "SELECT value FROM checkpoint_blobs WHERE channel = 'messages' "
            "AND prev_version IS NOT NULL",
        )
        assert any(bytes(value).startswith(b"{") for (value,) in chained)  # edits
    finally:
        await saver.aclose()


def test_a_message_changed_in_place_and_returned_as_an_update_is_stored(
    any_saver: tuple[Any, str | None],
) -> None:
    """A node that edits a message object of the state and returns it (an update by id with the
    very object the list holds) changes the stored list too, not only the running one."""
    saver, _ = any_saver

    def step(turn: int, messages: list[Any]) -> list[Any]:
        if turn == 5:
            target = messages[2]
            target.content = "changed in place"
            return [target]
        return [_ai(turn)]

    app = _looping(saver, 8, step)
    start = {"messages": [HumanMessage(f"hello {i}", id=f"h{i}") for i in range(6)], "turn": 0}
    out = app.invoke(start, _config("in-place"))
    assert out["messages"][2].content == "changed in place"
    history = [s.values.get("messages") for s in app.get_state_history(_config("in-place"))]
    assert history[-1] == []  # the input checkpoint: no state yet, the reducer key empty
    assert history[0] == out["messages"]
    assert history[0][2].content == "changed in place"
