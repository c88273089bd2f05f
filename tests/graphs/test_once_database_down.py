"""`once()` / `aonce()` when the database goes away between the effect and the record of its
outcome: the record is written again while the database is down (up to `record_wait`
seconds), the effect never. Past that, the error says what happened, and the thread's next
attempt finds the outcome unknown, as after a crash.

The database really goes away: a SQLite file whose write lock another connection holds (the
saver's writes fail with "database is locked"), a PostgreSQL session ended by the server
(`pg_terminate_backend`, what a restart does to every session).
"""

from __future__ import annotations

import contextlib
import operator
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from sqlalchemy.engine import make_url

import graphs._once
from graphs import (
    START,
    Command,
    GraphInterrupt,
    SideEffectUnknownError,
    SideEffectUnrecordedError,
    SQLSaver,
    StateGraph,
    aonce,
    interrupt,
    once,
)
from graphs._once import RECORD_WAIT
from tests.kit.pg import admin_conninfo

CONFIG: Any = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    customer: str
    log: Annotated[list, operator.add]


class Refunds:
    """The outside system. `during()` runs inside the effect, once the refund is sent: it is
    what takes the database away."""

    def __init__(self, during: Callable[[], None] = lambda: None) -> None:
        self.sent: list[str] = []
        self.during = during

    def send(self, customer: str) -> str:
        self.sent.append(customer)
        self.during()
        return f"re_{len(self.sent)}"

    async def asend(self, customer: str) -> str:
        return self.send(customer)


def refund_graph(
    saver: SQLSaver, refunds: Refunds, *, use_async: bool, record_wait: float = RECORD_WAIT
) -> Any:
    """One node: the refund under `once()`, then a question that pauses the run (so a resume
    runs the node again from its top, `once()` and all)."""

    def refund(state: State) -> dict[str, Any]:
        ref = once("refund", refunds.send, state["customer"], record_wait=record_wait)
        return {"log": [f"{ref}: {interrupt(ref)}"]}

    async def arefund(state: State) -> dict[str, Any]:
        ref = await aonce("refund", refunds.asend, state["customer"], record_wait=record_wait)
        return {"log": [f"{ref}: {interrupt(ref)}"]}

    g = StateGraph(State).add_node("refund", arefund if use_async else refund)
    return g.add_edge(START, "refund").compile(checkpointer=saver)


async def invoke(app: Any, value: Any, use_async: bool) -> Any:
    return await app.ainvoke(value, CONFIG) if use_async else app.invoke(value, CONFIG)


class WriteLock:
    """Another writer on the SQLite file: a connection holding its write lock."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.held = False

    def take(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self.conn.execute("COMMIT")
            self.held = False

    def close(self) -> None:
        self.release()
        self.conn.close()


class Waits:
    """Stands in for the pauses between two tries of the record (`graphs._once.sleep` and
    `asleep`): counts them, and gives the database back after `back_after` of them."""

    def __init__(self, back: Callable[[], None], back_after: int) -> None:
        self.pauses: list[float] = []
        self.back = back
        self.back_after = back_after

    def __call__(self, pause: float) -> None:
        self.pauses.append(pause)
        if len(self.pauses) == self.back_after:
            self.back()

    async def wait(self, pause: float) -> None:
        self(pause)


def sqlite_saver(path: Path) -> SQLSaver:
    saver = SQLSaver(f"sqlite:///{path}", busy_timeout=0.05)
    saver.setup()
    return saver


def answered(app: Any) -> Any:
    state = app.get_state(CONFIG)
    return state.interrupts[0].value if state.interrupts else None


# ---- SQLite: the file is locked after the refund -----------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_refund_recorded_after_the_database_comes_back_is_done_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    path = tmp_path / "refunds.db"
    saver = sqlite_saver(path)
    lock = WriteLock(path)
    waits = Waits(lock.release, back_after=3)
    monkeypatch.setattr(graphs._once, "sleep", waits)
    monkeypatch.setattr(graphs._once, "asleep", waits.wait)
    refunds = Refunds(during=lock.take)
    try:
        with pytest.raises(GraphInterrupt) as paused:
            await invoke(
                refund_graph(saver, refunds, use_async=use_async), {"customer": "Ada"}, use_async
            )
        # The record was refused three times ("database is locked"), then written.
        assert len(waits.pauses) == 3
        assert paused.value.interrupts[0].value == "re_1"
        assert refunds.sent == ["Ada"]
    finally:
        lock.close()
        await saver.aclose()

    # Another process resumes the thread: the node runs again, the refund does not.
    refunds.during = lambda: None
    async with SQLSaver.afrom_conn_string(f"sqlite:///{path}") as fresh:
        app = refund_graph(fresh, refunds, use_async=use_async)
        assert answered(app) == "re_1"
        out = await invoke(app, Command(resume="approved"), use_async)
        assert out == {"customer": "Ada", "log": ["re_1: approved"]}
    assert refunds.sent == ["Ada"]


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_database_down_past_record_wait_leaves_the_refund_unknown_and_says_so(
    tmp_path: Path, use_async: bool
) -> None:
    path = tmp_path / "refunds.db"
    saver = sqlite_saver(path)
    lock = WriteLock(path)
    refunds = Refunds(during=lock.take)
    try:
        app = refund_graph(saver, refunds, use_async=use_async, record_wait=0.2)
        with pytest.raises(SideEffectUnrecordedError) as info:
            await invoke(app, {"customer": "Ada"}, use_async)
    finally:
        lock.close()
        await saver.aclose()
    error = info.value
    assert str(error) == (
        f"Side effect 'refund' on thread 't' ran, but its result could not be recorded: the "
        f"database was unavailable for {error.waited:.0f}s (OperationalError: database is "
        "locked). It happened and is not run again: do not rerun it with once(..., "
        "retry_unknown=True). Once the database is back, the thread's next attempt raises "
        "SideEffectUnknownError for it; settle it by hand (its result is this error's "
        "`result`)."
    )
    assert (error.thread_id, error.key, error.outcome, error.result) == (
        "t",
        "refund",
        "done",
        "re_1",
    )
    assert error.waited >= 0.2
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    assert isinstance(error, SideEffectUnknownError)  # what callers of `once()` already handle
    assert refunds.sent == ["Ada"]

    # The database is back: the thread's next attempt refuses to guess, as after a crash.
    refunds.during = lambda: None
    async with SQLSaver.afrom_conn_string(f"sqlite:///{path}") as fresh:
        with pytest.raises(SideEffectUnknownError) as unknown:
            await invoke(refund_graph(fresh, refunds, use_async=use_async), None, use_async)
    assert type(unknown.value) is SideEffectUnknownError
    assert unknown.value.key == "refund"
    assert refunds.sent == ["Ada"]


async def test_an_effect_that_raised_is_recorded_as_failed_after_the_database_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "refunds.db"
    saver = sqlite_saver(path)
    lock = WriteLock(path)
    waits = Waits(lock.release, back_after=2)
    monkeypatch.setattr(graphs._once, "sleep", waits)
    tries: list[str] = []

    def declined(customer: str) -> str:
        tries.append(customer)
        if len(tries) == 1:
            lock.take()
            raise ConnectionError("the payment provider hung up")
        return "re_2"

    g = StateGraph(State).add_node(
        "refund", lambda s: {"log": [once("refund", declined, s["customer"])]}
    )
    app = g.add_edge(START, "refund").compile(checkpointer=saver)
    try:
        with pytest.raises(ConnectionError, match="the payment provider hung up"):
            app.invoke({"customer": "Ada"}, CONFIG)
        assert len(waits.pauses) == 2
        # Recorded as failed, not unknown: the next attempt runs it again.
        assert app.invoke(None, CONFIG) == {"customer": "Ada", "log": ["re_2"]}
    finally:
        lock.close()
        await saver.aclose()
    assert tries == ["Ada", "Ada"]


def test_a_mistake_in_the_write_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a database that is unavailable is waited for: a table that is not there (an
    `OperationalError` too, from SQLite) fails at once, as before."""
    path = tmp_path / "refunds.db"
    saver = sqlite_saver(path)
    waits = Waits(lambda: None, back_after=0)
    monkeypatch.setattr(graphs._once, "sleep", waits)

    def drop_writes() -> None:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("DROP TABLE checkpoint_writes")

    refunds = Refunds(during=drop_writes)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such table: checkpoint_writes"):
            refund_graph(saver, refunds, use_async=False).invoke({"customer": "Ada"}, CONFIG)
    finally:
        saver.close()
    assert waits.pauses == []
    assert refunds.sent == ["Ada"]


# ---- PostgreSQL: the server ends the session after the refund ------------------------------


def ended_sessions(application_name: str) -> Callable[[], None]:
    """Ends every session of `application_name` from another connection, as a restart does,
    and waits until they are gone."""

    def end() -> None:
        with psycopg.connect(admin_conninfo(), autocommit=True) as admin:
            row = admin.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) "
                "FROM pg_stat_activity WHERE application_name = %s",
                (application_name,),
            ).fetchone()
        assert row is not None and row[0] >= 1

    return end


@pytest.mark.postgres
@pytest.mark.parametrize("use_async", [False, True])
async def test_a_refund_recorded_after_postgresql_ended_the_session_is_done_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    name = f"once_down_{secrets.token_hex(4)}"
    url = make_url(pg_url).update_query_dict({"application_name": name})
    real_sleep, real_asleep = graphs._once.sleep, graphs._once.asleep
    pauses: list[float] = []

    def sleep(pause: float) -> None:
        pauses.append(pause)
        real_sleep(pause)

    async def asleep(pause: float) -> None:
        pauses.append(pause)
        await real_asleep(pause)

    monkeypatch.setattr(graphs._once, "sleep", sleep)
    monkeypatch.setattr(graphs._once, "asleep", asleep)
    refunds = Refunds(during=ended_sessions(name))
    async with SQLSaver.afrom_conn_string(url) as saver:
        saver.setup()
        with pytest.raises(GraphInterrupt) as paused:
            await invoke(
                refund_graph(saver, refunds, use_async=use_async), {"customer": "Ada"}, use_async
            )
    assert paused.value.interrupts[0].value == "re_1"
    assert pauses  # the record met the ended session, and was written again
    assert refunds.sent == ["Ada"]

    refunds.during = lambda: None
    async with SQLSaver.afrom_conn_string(url) as fresh:
        app = refund_graph(fresh, refunds, use_async=use_async)
        out = await invoke(app, Command(resume="approved"), use_async)
    assert out == {"customer": "Ada", "log": ["re_1: approved"]}
    assert refunds.sent == ["Ada"]
