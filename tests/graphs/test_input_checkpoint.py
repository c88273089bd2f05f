"""A run's input is saved as LangGraph saves it: an input checkpoint (`source="input"`, the
thread's values as they were, a `__start__` task whose result is the input), then the step
that applied it (`source="loop"`), then one per step; and a process that stops between the
two goes on with `invoke(None, config)`, the input applied once."""

from __future__ import annotations

import asyncio
import operator
import secrets
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from sqlalchemy.engine import make_url

from graphs import END, START, StateGraph, interrupt
from graphs.checkpoint.memory import InMemorySaver
from graphs.checkpoint.sql import SQLSaver
from graphs.types import Command, StateUpdate
from tests.kit.pg import admin_conninfo


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    note: str


def pipeline(saver: Any, calls: list[str] | None = None, **compile_kw: Any) -> Any:
    """START -> a -> b -> END; each node appends its name to `log`."""

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            if calls is not None:
                calls.append(name)
            return {"log": [name]}

        return run

    g = StateGraph(State).add_node("a", node("a")).add_node("b", node("b"))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return g.compile(checkpointer=saver, **compile_kw)


def thread(thread_id: str = "t") -> Any:
    return {"configurable": {"thread_id": thread_id}}


def layout(app: Any, config: Any) -> list[tuple[Any, ...]]:
    """Each checkpoint, oldest first: source, step, values, next, and each task's result."""
    return [
        (
            s.metadata["source"],
            s.metadata["step"],
            s.values,
            s.next,
            [(t.name, t.result) for t in s.tasks],
        )
        for s in reversed(list(app.get_state_history(config)))
    ]


def sqlite(tmp_path: Path) -> SQLSaver:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'input.db'}")
    saver.setup()
    return saver


# ---- the layout --------------------------------------------------------------------------------


def test_a_run_saves_its_input_at_step_minus_one_then_each_step() -> None:
    app = pipeline(InMemorySaver())
    app.invoke({"log": ["in"], "note": "x"}, thread())
    first = [
        ("input", -1, {"log": []}, ("__start__",), [("__start__", {"log": ["in"], "note": "x"})]),
        ("loop", 0, {"log": ["in"], "note": "x"}, ("a",), [("a", None)]),
        ("loop", 1, {"log": ["in", "a"], "note": "x"}, ("b",), [("b", None)]),
        ("loop", 2, {"log": ["in", "a", "b"], "note": "x"}, (), []),
    ]
    assert layout(app, thread()) == first

    # The thread's next run numbers on: its input checkpoint holds the state it starts from.
    app.invoke({"log": ["again"]}, thread())
    done = {"log": ["in", "a", "b"], "note": "x"}
    assert layout(app, thread())[4:] == [
        ("input", 3, done, ("__start__",), [("__start__", {"log": ["again"]})]),
        ("loop", 4, {"log": ["in", "a", "b", "again"], "note": "x"}, ("a",), [("a", None)]),
        ("loop", 5, {"log": ["in", "a", "b", "again", "a"], "note": "x"}, ("b",), [("b", None)]),
        ("loop", 6, {"log": ["in", "a", "b", "again", "a", "b"], "note": "x"}, (), []),
    ]
    # The input checkpoint keeps the input in LangGraph's `__start__` channel; the step that
    # applied it no longer has it.
    history = list(app.get_state_history(thread()))
    saver = app.checkpointer
    assert saver.get_tuple(history[3].config).checkpoint["channel_values"]["__start__"] == {
        "log": ["again"]
    }
    assert "__start__" not in saver.get_tuple(history[2].config).checkpoint["channel_values"]


def test_interrupt_before_the_first_node_pauses_at_step_zero() -> None:
    calls: list[str] = []
    app = pipeline(InMemorySaver(), calls, interrupt_before=["a"], interrupt_mode="return")
    assert app.invoke({"log": ["in"]}, thread()) == {"log": ["in"]}
    assert [(src, step, nxt) for src, step, _, nxt, _ in layout(app, thread())] == [
        ("input", -1, ("__start__",)),
        ("loop", 0, ("a",)),
    ]
    assert calls == []
    assert app.invoke(None, thread()) == {"log": ["in", "a", "b"]}
    assert calls == ["a", "b"]


def test_a_subgraph_saves_its_own_input_checkpoint_in_its_namespace() -> None:
    inner = pipeline(None)
    g = StateGraph(State).add_node("sub", inner).add_edge(START, "sub").add_edge("sub", END)
    saver = InMemorySaver()
    app = g.compile(checkpointer=saver)
    assert app.invoke({"log": ["in"]}, thread()) == {"log": ["in", "in", "a", "b"]}
    spaces: dict[str, list[tuple[Any, Any]]] = {}
    for tup in saver.list(thread()):
        ns = tup.config["configurable"]["checkpoint_ns"]
        spaces.setdefault(ns.split(":")[0], []).append(
            (tup.metadata["source"], tup.metadata["step"])
        )
    assert {ns: sorted(steps, key=lambda s: s[1]) for ns, steps in spaces.items()} == {
        "": [("input", -1), ("loop", 0), ("loop", 1)],
        "sub": [("input", -1), ("loop", 0), ("loop", 1), ("loop", 2)],
    }


def test_input_on_a_paused_thread_keeps_what_the_step_was_waiting_for() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    g = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(checkpointer=InMemorySaver(), interrupt_mode="return")
    paused = app.invoke({"log": ["in"]}, thread())
    (pending,) = paused["__interrupt__"]
    app.invoke({"note": "meanwhile"}, thread())  # input given while paused: it waits on
    assert [(src, step, nxt) for src, step, _, nxt, _ in layout(app, thread())] == [
        ("input", -1, ("__start__",)),
        ("loop", 0, ("ask",)),
        ("input", 1, ("__start__", "ask")),
        ("loop", 2, ("ask",)),
    ]
    result = app.invoke(Command(resume={pending.id: "yes"}), thread())
    assert result == {"log": ["in", "yes"], "note": "meanwhile"}


# ---- update_state as "__input__" and "__start__" -----------------------------------------------


def test_update_as_input_then_start_rebuilds_the_runs_history() -> None:
    app = pipeline(InMemorySaver())
    app.invoke({"log": ["in"]}, thread("run"))
    app.bulk_update_state(
        thread("copy"),
        [
            [StateUpdate({"log": ["in"]}, "__input__")],
            [StateUpdate({"log": ["in"]}, "__start__")],
            [StateUpdate({"log": ["a"]}, "a")],
            [StateUpdate({"log": ["b"]}, "b")],
        ],
    )
    run = [(step, values, nxt, tasks) for _, step, values, nxt, tasks in layout(app, thread("run"))]
    copy = [
        (step, values, nxt, tasks) for _, step, values, nxt, tasks in layout(app, thread("copy"))
    ]
    # The same checkpoints (the updates' own tasks show no result: they did not run).
    assert [c[:3] for c in copy] == [r[:3] for r in run]
    assert copy[0][3] == run[0][3] == [("__start__", {"log": ["in"]})]


def test_update_as_input_alone_is_run_on_by_invoke_none() -> None:
    calls: list[str] = []
    app = pipeline(InMemorySaver(), calls)
    app.update_state(thread(), {"log": ["in"]}, as_node="__input__")
    state = app.get_state(thread())
    assert (state.metadata["source"], state.metadata["step"], state.next) == (
        "input",
        -1,
        ("__start__",),
    )
    assert calls == []
    assert app.invoke(None, thread()) == {"log": ["in", "a", "b"]}
    assert [(src, step) for src, step, *_ in layout(app, thread())] == [
        ("input", -1),
        ("loop", 0),
        ("loop", 1),
        ("loop", 2),
    ]


# ---- a process that stops between the input checkpoint and step 0 --------------------------


class Stopped(BaseException):
    """What the runtime sees of a process killed at this point: nothing after it happens."""


class StopsAt(SQLSaver):
    """A `SQLSaver` whose process dies at the put of the checkpoint with the given step (or,
    `writes=True`, at the first put of pending writes)."""

    def __init__(self, url: str, *, step: int | None = None, writes: bool = False) -> None:
        super().__init__(url)
        self.step, self.writes = step, writes

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata["step"] == self.step:
            raise Stopped()
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str) -> None:
        if self.writes:
            raise Stopped()
        super().put_writes(config, writes, task_id)


@pytest.mark.parametrize("at", ["step 0", "the __start__ task's writes"])
def test_a_crash_before_step_zero_resumes_with_the_input_applied_once(
    tmp_path: Path, at: str
) -> None:
    url = f"sqlite:///{tmp_path / 'input.db'}"
    sqlite(tmp_path)  # creates the tables
    dying = StopsAt(url, step=0) if at == "step 0" else StopsAt(url, writes=True)
    calls: list[str] = []
    with pytest.raises(Stopped):
        pipeline(dying, calls).invoke({"log": ["in"], "note": "x"}, thread())
    assert calls == []

    # A fresh process, same database: the head is the input checkpoint.
    healthy = sqlite(tmp_path)
    app = pipeline(healthy, calls)
    head = app.get_state(thread())
    assert (head.metadata["source"], head.metadata["step"], head.values, head.next) == (
        "input",
        -1,
        {"log": []},
        ("__start__",),
    )
    assert app.invoke(None, thread()) == {"log": ["in", "a", "b"], "note": "x"}
    assert calls == ["a", "b"]
    assert layout(app, thread()) == [
        ("input", -1, {"log": []}, ("__start__",), [("__start__", {"log": ["in"], "note": "x"})]),
        ("loop", 0, {"log": ["in"], "note": "x"}, ("a",), [("a", None)]),
        ("loop", 1, {"log": ["in", "a"], "note": "x"}, ("b",), [("b", None)]),
        ("loop", 2, {"log": ["in", "a", "b"], "note": "x"}, (), []),
    ]


def test_new_input_after_such_a_crash_applies_both_inputs_in_order(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'input.db'}"
    sqlite(tmp_path)
    with pytest.raises(Stopped):
        pipeline(StopsAt(url, step=0)).invoke({"log": ["first"]}, thread())
    app = pipeline(sqlite(tmp_path))
    # The first input's step is saved first; the second is input on the thread waiting at a.
    assert app.invoke({"log": ["second"]}, thread()) == {"log": ["first", "second", "a", "b"]}
    assert [(src, step) for src, step, *_ in layout(app, thread())] == [
        ("input", -1),
        ("loop", 0),
        ("input", 1),
        ("loop", 2),
        ("loop", 3),
        ("loop", 4),
    ]


# ---- the input, its `__start__` task and step 0 are one commit on SQLSaver -------------------


def writes_of(saver: SQLSaver) -> list[str]:
    """Every write transaction (`BEGIN IMMEDIATE`, one commit each) the saver's connections
    begin on its SQLite file, from now on."""
    from sqlalchemy import event  # SQLAlchemy: the saver's engine hooks, test-only

    seen: list[str] = []

    def traced(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(
            lambda sql: seen.append(sql) if sql.strip().upper() == "BEGIN IMMEDIATE" else None
        )

    for engine in (saver._sync_engine(), saver._locks_engine()):  # (a sync run's, held)
        event.listen(engine, "connect", traced)
    return seen


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_a_new_run_commits_once_per_step_its_input_with_step_zero(tmp_path: Path, api: str) -> None:
    sqlite(tmp_path)  # creates the tables
    saver = SQLSaver(f"sqlite:///{tmp_path / 'input.db'}")
    writes = writes_of(saver)
    app = pipeline(saver)
    if api == "invoke":
        out = app.invoke({"log": ["in"], "note": "x"}, thread())
    else:

        async def ainvoke() -> Any:
            try:
                return await app.ainvoke({"log": ["in"], "note": "x"}, thread())
            finally:
                await saver.aclose()  # its aiosqlite connections, on this loop

        out = asyncio.run(ainvoke())
    assert out == {"log": ["in", "a", "b"], "note": "x"}
    if api == "invoke":  # (ainvoke writes through aiosqlite, on connections of its own)
        # The input checkpoint, its `__start__` task's writes and step 0 were one commit (no
        # node ran between them), then one commit per node's step.
        assert len(writes) == 3, writes
    # The history is LangGraph's, checkpoint for checkpoint.
    assert layout(app, thread()) == [
        ("input", -1, {"log": []}, ("__start__",), [("__start__", {"log": ["in"], "note": "x"})]),
        ("loop", 0, {"log": ["in"], "note": "x"}, ("a",), [("a", None)]),
        ("loop", 1, {"log": ["in", "a"], "note": "x"}, ("b",), [("b", None)]),
        ("loop", 2, {"log": ["in", "a", "b"], "note": "x"}, (), []),
    ]


class DropsDuringItsInput(SQLSaver):
    """A `SQLSaver` on PostgreSQL whose connection ends (as in a server restart) while it
    writes a run's input: after the run read its thread's head, another session makes
    inserts into `checkpoint_writes` wait (`LOCK ... IN SHARE MODE`); once the run's write
    waits there, its session is ended and the other one lets go. It overrides no write, so
    the input's batch is still made."""

    def __init__(self, url: str) -> None:
        self.app = f"drop_{secrets.token_hex(4)}"
        super().__init__(make_url(url).update_query_dict({"application_name": self.app}))
        self.ended = 0
        self.ender: threading.Thread | None = None

    def get_tuple(self, config: Any) -> Any:
        found = super().get_tuple(config)
        if self.ender is None and "checkpoint_id" not in config["configurable"]:
            locked = threading.Event()
            self.ender = threading.Thread(target=self._end_the_waiting_write, args=(locked,))
            self.ender.start()
            assert locked.wait(10)
        return found

    def _end_the_waiting_write(self, locked: threading.Event) -> None:
        schema = str(make_url(self.url).query["options"]).split("search_path=", 1)[1]
        with (
            psycopg.connect(admin_conninfo(), autocommit=True) as admin,
            admin.transaction(),
        ):
            admin.execute(f'LOCK TABLE "{schema}".checkpoint_writes IN SHARE MODE')
            locked.set()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not self.ended:
                row = admin.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) "
                    "FROM pg_stat_activity WHERE application_name = %s "
                    "AND wait_event_type = 'Lock'",
                    (self.app,),
                ).fetchone()
                self.ended = row[0] if row else 0
                time.sleep(0.01)


@pytest.mark.postgres
def test_a_run_whose_connection_drops_while_its_input_is_written_goes_on(pg_url: str) -> None:
    with SQLSaver.from_conn_string(pg_url) as tables:
        tables.setup()
    saver = DropsDuringItsInput(pg_url)
    try:
        app = pipeline(saver)
        assert app.invoke({"log": ["in"], "note": "x"}, thread()) == {
            "log": ["in", "a", "b"],
            "note": "x",
        }
        assert saver.ender is not None
        saver.ender.join(10)
        assert saver.ended == 1  # the input's write was waiting, and its session was ended
        # Written again one by one (each put a compare-and-set, retried as it is alone):
        # the same history, the input applied once.
        assert layout(app, thread()) == [
            (
                "input",
                -1,
                {"log": []},
                ("__start__",),
                [("__start__", {"log": ["in"], "note": "x"})],
            ),
            ("loop", 0, {"log": ["in"], "note": "x"}, ("a",), [("a", None)]),
            ("loop", 1, {"log": ["in", "a"], "note": "x"}, ("b",), [("b", None)]),
            ("loop", 2, {"log": ["in", "a", "b"], "note": "x"}, (), []),
        ]
    finally:
        saver.close()
