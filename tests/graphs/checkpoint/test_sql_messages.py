"""langchain_core messages in `SQLSaver` checkpoints: tagged JSON, read back as the same classes,
resumed by another saver (another process), and stored once each (O(total appended))."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graphs import END, START, Command, InMemorySaver, StateGraph, interrupt
from graphs.checkpoint import serde
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import MessagesState


def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    """Run one query on the test database, outside the saver."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(statement).fetchall()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(statement).fetchall()  # type: ignore[arg-type]


def _config(thread_id: str = "t") -> Any:
    return {"configurable": {"thread_id": thread_id}}


def _approval_graph(saver: Any) -> Any:
    """model proposes a tool call; `approve` pauses for a person; `tool` runs; model replies."""

    def model(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(f"done: {last.content}", id="final")]}
        call = {"name": "refund", "args": {"order": "A1", "amount": 5}, "id": "call-1"}
        return {"messages": [AIMessage("", tool_calls=[call], id="proposal")]}

    def approve(state: MessagesState) -> dict[str, Any]:
        ai = state["messages"][-1]
        assert isinstance(ai, AIMessage)
        answer = interrupt({"tool_call": ai.tool_calls[0]})
        return {"messages": [ToolMessage(f"refunded ({answer})", tool_call_id="call-1")]}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("approve", approve)
    g.add_edge(START, "model")
    g.add_conditional_edges(
        "model",
        lambda s: "approve" if s["messages"][-1].tool_calls else END,
        ["approve", END],
    )
    g.add_edge("approve", "model")
    return g.compile(checkpointer=saver, interrupt_mode="return")


def test_messages_round_trip_on_in_memory_and_sql_savers(saver: SQLSaver) -> None:
    for s in (InMemorySaver(), saver):
        app = _approval_graph(s)
        paused = app.invoke({"messages": [HumanMessage("refund A1", id="h")]}, _config())
        assert paused["__interrupt__"][0].value["tool_call"]["args"] == {"order": "A1", "amount": 5}
        values = app.get_state(_config()).values["messages"]
        assert [type(m) for m in values] == [HumanMessage, AIMessage]
        assert values == paused["messages"]
        assert values[1].tool_calls[0]["id"] == "call-1"


def test_paused_on_sql_and_resumed_by_a_new_saver_on_the_same_database(db_url: str) -> None:
    url = db_url  # a SQLite file, or a PostgreSQL schema
    first = SQLSaver(url)
    first.setup()
    try:
        paused = _approval_graph(first).invoke({"messages": [("user", "refund A1")]}, _config())
        assert "__interrupt__" in paused
    finally:
        first.close()
    second = SQLSaver(url)  # another "process": nothing shared but the file
    try:
        out = _approval_graph(second).invoke(Command(resume="approved"), _config())
    finally:
        second.close()
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][0].content == "refund A1"
    assert out["messages"][1] == paused["messages"][1]
    assert out["messages"][-1].content == "done: refunded (approved)"
    stored = sql(url, "SELECT value FROM checkpoint_blobs WHERE channel = 'messages'")
    assert all(b"pickle" not in bytes(v) for (v,) in stored)


def _chat(saver: Any, turns: int, *, edit_every: int = 0) -> tuple[Any, list[list[Any]]]:
    def reply(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        out: list[Any] = [AIMessage(f"reply {n} " + "y" * 80)]
        if edit_every and n % edit_every == 1:  # an update by id: the list is stored whole
            first = state["messages"][0]
            out.append(HumanMessage(f"edited {n}", id=first.id))
        return {"messages": out}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    app = g.compile(checkpointer=saver)
    outs = []
    for turn in range(turns):
        out = app.invoke({"messages": [("user", f"turn {turn} " + "x" * 80)]}, _config("chat"))
        outs.append(out["messages"])
    return app, outs


def test_an_append_only_chat_is_stored_once_per_message(saver: SQLSaver, db_url: str) -> None:
    app, outs = _chat(saver, 200)
    messages = outs[-1]
    assert len(messages) == 400
    final_size = len(serde.dumps(messages))
    stored = sql(
        db_url, "SELECT sum(length(value)) FROM checkpoint_blobs WHERE channel = 'messages'"
    )
    # each message once (O(total appended)); stored whole per version it would be ~200x
    assert stored[0][0] < 1.1 * final_size
    assert app.get_state(_config("chat")).values["messages"] == messages


def test_updates_by_id_still_read_back_exactly(saver: SQLSaver) -> None:
    app, outs = _chat(saver, 30, edit_every=10)
    assert outs[-1][0].content == "edited 51"
    history = app.get_state_history(_config("chat"))
    # (each turn's input checkpoint, and its step 0 with the input applied, come before it)
    after_each_turn = [s.values["messages"] for s in history if not s.next]
    assert after_each_turn[::-1] == outs
