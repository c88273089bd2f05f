"""A program written once against LangGraph's SQLite and PostgreSQL savers, run on either
dialect (`graphs`' modules at LangGraph's paths, or LangGraph's own), one phase per process.

Its state schema names a dataclass, a pydantic model and an enum; nothing is
registered. `write` runs a graph on a saver made as LangGraph's docs make it (SQLite: no
`setup()`; PostgreSQL: `setup()`, after a run that fails without it); `read`, in a fresh
interpreter, builds the same graph on a saver made from a connection and reads the thread back,
then runs it on; `async` does the same on the async savers. Each prints one JSON line of what a
user sees: the values' repr (their classes and fields), the types, the number of checkpoints.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import importlib
import json
import operator
import sqlite3
import sys
from typing import Annotated, Any

from pydantic import BaseModel
from typing_extensions import TypedDict

PATHS = {
    "langgraph": "langgraph",
    "graphs": "graphs",
}


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Ticket:
    title: str
    priority: Priority
    tags: list[str] = dataclasses.field(default_factory=list)


class Review(BaseModel):
    approved: bool
    ticket: Ticket
    note: str | None = None


class State(TypedDict):
    tickets: Annotated[list[Ticket], operator.add]
    review: Review | None


def triage(state: State) -> dict[str, Any]:
    first = state["tickets"][0]
    follow_up = Ticket(f"follow up {len(state['tickets'])}", Priority.LOW, ["auto"])
    return {"tickets": [follow_up], "review": Review(approved=True, ticket=first)}


def build(root: str, checkpointer: Any) -> Any:
    graph = importlib.import_module(f"{root}.graph")
    builder = graph.StateGraph(State)
    builder.add_node("triage", triage)
    builder.add_edge(graph.START, "triage")
    builder.add_edge("triage", graph.END)
    return builder.compile(checkpointer=checkpointer)


def seen(app: Any, saver: Any, thread: str, result: Any = None) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    values = app.get_state(config).values
    return {
        "result": repr(result),
        "values": repr(values),
        "types": [type(t).__qualname__ for t in values["tickets"]]
        + [type(values["review"]).__qualname__, type(values["review"].ticket).__qualname__],
        "checkpoints": len(list(saver.list(config))),
    }


async def aseen(app: Any, saver: Any, thread: str, result: Any) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    values = (await app.aget_state(config)).values
    return {
        "result": repr(result),
        "values": repr(values),
        "checkpoints": len([c async for c in saver.alist(config)]),
    }


def first_input() -> dict[str, Any]:
    return {"tickets": [Ticket("disk full", Priority.HIGH, ["ops", "urgent"])]}


def sqlite_phase(root: str, phase: str, path: str) -> dict[str, Any]:
    sqlite = importlib.import_module(f"{root}.checkpoint.sqlite")
    config = {"configurable": {"thread_id": "t1"}}
    if phase == "write":
        with sqlite.SqliteSaver.from_conn_string(path) as saver:  # no setup(): first use
            app = build(root, saver)
            return seen(app, saver, "t1", app.invoke(first_input(), config))
    if phase == "read":
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = sqlite.SqliteSaver(conn)
            app = build(root, saver)
            before = seen(app, saver, "t1")
            more = {"tickets": [Ticket("printer", Priority.LOW)]}
            return {"before": before, "after": seen(app, saver, "t1", app.invoke(more, config))}
        finally:
            conn.close()
    aio = importlib.import_module(f"{root}.checkpoint.sqlite.aio")

    async def run() -> dict[str, Any]:
        async with aio.AsyncSqliteSaver.from_conn_string(path) as saver:
            app = build(root, saver)
            config2 = {"configurable": {"thread_id": "t2"}}
            return await aseen(app, saver, "t2", await app.ainvoke(first_input(), config2))

    return asyncio.run(run())


def postgres_phase(root: str, phase: str, url: str) -> dict[str, Any]:
    postgres = importlib.import_module(f"{root}.checkpoint.postgres")
    config = {"configurable": {"thread_id": "t1"}}
    if phase == "write":
        with postgres.PostgresSaver.from_conn_string(url) as saver:
            app = build(root, saver)
            try:
                app.invoke(first_input(), config)
                refused = False
            except Exception:  # noqa: BLE001 (each saver has its own error: it failed)
                refused = True
            saver.setup()
            return {
                "refused before setup": refused,
                **seen(app, saver, "t1", app.invoke(first_input(), config)),
            }
    if phase == "read":
        with postgres.PostgresSaver.from_conn_string(url) as saver:
            app = build(root, saver)
            before = seen(app, saver, "t1")
            more = {"tickets": [Ticket("printer", Priority.LOW)]}
            return {"before": before, "after": seen(app, saver, "t1", app.invoke(more, config))}
    aio = importlib.import_module(f"{root}.checkpoint.postgres.aio")

    async def run() -> dict[str, Any]:
        async with aio.AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            app = build(root, saver)
            config2 = {"configurable": {"thread_id": "t2"}}
            return await aseen(app, saver, "t2", await app.ainvoke(first_input(), config2))

    return asyncio.run(run())


def main(argv: list[str]) -> None:
    dialect, backend, phase, where = argv
    run = sqlite_phase if backend == "sqlite" else postgres_phase
    print(json.dumps(run(PATHS[dialect], phase, where)))


if __name__ == "__main__":
    main(sys.argv[1:])
