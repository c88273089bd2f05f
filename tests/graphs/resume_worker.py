"""One process of a thread paused in one process and resumed in another, in LangGraph's dialect.

    python resume_worker.py DIALECT BACKEND TARGET THREAD LOG pause    # runs until the pause
    python resume_worker.py DIALECT BACKEND TARGET THREAD LOG resume   # answers it

DIALECT is `langgraph` or `graphs` (the program's imports); BACKEND `sqlite` (TARGET a file) or
`postgres` (TARGET a URL). The tool appends each booking to LOG, so the test sees what ran in
which process. Each phase prints, as JSON, what it observed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


@contextlib.contextmanager
def saver(dialect: str, backend: str, target: str) -> Iterator[Any]:
    """The one line a port changes besides the imports: LangGraph's SQLite or PostgreSQL saver
    becomes graphs' `SQLSaver(url)`."""
    if dialect == "graphs":
        from graphs.checkpoint.sql import SQLSaver

        sql = SQLSaver(f"sqlite:///{target}" if backend == "sqlite" else target)
        sql.setup()
        try:
            yield sql
        finally:
            sql.close()
    elif backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(target) as lite:
            yield lite
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as pg:
            pg.setup()
            yield pg


def shown(value: Any) -> Any:
    if hasattr(value, "type") and hasattr(value, "content"):
        calls = [(c["name"], c["args"]) for c in getattr(value, "tool_calls", None) or []]
        return [value.type, value.content, calls]
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    if type(value).__name__ == "Interrupt":
        return ["Interrupt", shown(value.value)]
    return value


def build(dialect: str, checkpointer: Any, log: str) -> Any:
    graph = importlib.import_module(f"{dialect}.graph")
    types = importlib.import_module(f"{dialect}.types")

    def assistant(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            call = {"name": "book_hotel", "args": {"hotel": "Ritz", "nights": 3}, "id": "call_1"}
            return {"messages": [AIMessage("", tool_calls=[call], id="ai_1")]}
        return {"messages": [AIMessage(f"done: {last.content}", id="ai_2")]}

    def review(state: dict[str, Any]) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        answer = types.interrupt({"question": "book it?", "args": call["args"]})
        if not answer["approved"]:
            denial = ToolMessage("denied", tool_call_id=call["id"], id="t_1")
            return {"messages": [denial]}
        edited = AIMessage("", tool_calls=[dict(call, args=answer["args"])], id="ai_1")
        return {"messages": [edited]}

    def tools(state: dict[str, Any]) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        with open(log, "a") as f:
            f.write(json.dumps(call["args"]) + "\n")
        return {"messages": [ToolMessage("booked", tool_call_id=call["id"], id="t_1")]}

    def after_review(state: dict[str, Any]) -> str:
        return "tools" if isinstance(state["messages"][-1], AIMessage) else "assistant"

    builder = graph.StateGraph(graph.MessagesState)
    builder.add_node("assistant", assistant)
    builder.add_node("review", review)
    builder.add_node("tools", tools)
    builder.add_edge(graph.START, "assistant")
    builder.add_conditional_edges(
        "assistant",
        lambda s: "review" if s["messages"][-1].tool_calls else graph.END,
        ["review", graph.END],
    )
    builder.add_conditional_edges("review", after_review, ["tools", "assistant"])
    builder.add_edge("tools", "assistant")
    return builder.compile(checkpointer=checkpointer)


def main(dialect: str, backend: str, target: str, thread: str, log: str, phase: str) -> None:
    types = importlib.import_module(f"{dialect}.types")
    config = {"configurable": {"thread_id": thread}}
    with saver(dialect, backend, target) as checkpointer:
        app = build(dialect, checkpointer, log)
        if phase == "pause":
            out = app.invoke({"messages": [HumanMessage("book the Ritz", id="h1")]}, config)
        else:
            waiting = app.get_state(config)
            answer = {"approved": True, "args": {"hotel": "Ritz", "nights": 1}}
            out = app.invoke(types.Command(resume=answer), config)
        state = app.get_state(config)
        seen = {
            "out": shown(out),
            "next": list(state.next),
            "interrupts": shown(list(state.interrupts)),
            "history": [
                [s.metadata["source"], s.metadata["step"], list(s.next)]
                for s in app.get_state_history(config)
            ],
        }
        if phase == "resume":
            seen["found waiting"] = [list(waiting.next), shown(list(waiting.interrupts))]
    print(json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    main(*sys.argv[1:])
