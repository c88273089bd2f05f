"""Two replicas on one PostgreSQL thread, when the first one's lock goes with its session.

A run holds its thread by an advisory lock of a database session. When the server ends that
session (a restart, a failover, `pg_terminate_backend`, as here) the run goes on and the lock
is free: another replica can take the thread. These tests end the first replica's sessions
in the middle of a refund made under `once()`, let the second replica take the thread, and
check what a user would see: the refund made once, its result where it belongs, the run
carried on by one replica only, and the other told why it stopped.

Each replica is its own `SQLSaver` (its own pools, its own sessions, named apart by
`application_name`), the second run in its own OS thread with its own event loop.
"""

from __future__ import annotations

import asyncio
import operator
import secrets
import threading
import time
from collections.abc import Callable
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
    SQLSaver,
    StateGraph,
    ThreadLockLostError,
    aonce,
    interrupt,
    once,
)
from tests.kit.pg import admin_conninfo

pytestmark = pytest.mark.postgres

CONFIG: Any = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    customer: str
    log: Annotated[list, operator.add]


def replica_url(pg_url: str) -> str:
    """`pg_url` under an `application_name` of its own, so its sessions can be ended alone."""
    name = f"replica_{secrets.token_hex(4)}"
    url = make_url(pg_url).update_query_dict({"application_name": name})
    return url.render_as_string(hide_password=False)


def end_sessions(url: str) -> None:
    """End every session of `url`'s replica, as a restart does, and wait until they are gone."""
    name = make_url(url).query["application_name"]
    with psycopg.connect(admin_conninfo(), autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) "
            "FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchone()
    assert row is not None and row[0] >= 1


def refund_graph(
    saver: SQLSaver, send: Callable[[str], str], *, use_async: bool, record_wait: float = 30.0
) -> Any:
    """One node: the refund under `once()`, then a question that pauses the run."""

    def refund(state: State) -> dict[str, Any]:
        ref = once("refund", send, state["customer"], record_wait=record_wait)
        return {"log": [f"{ref}: {interrupt(ref)}"]}

    async def arefund(state: State) -> dict[str, Any]:
        async def asend(customer: str) -> str:
            return send(customer)

        ref = await aonce("refund", asend, state["customer"], record_wait=record_wait)
        return {"log": [f"{ref}: {interrupt(ref)}"]}

    g = StateGraph(State).add_node("refund", arefund if use_async else refund)
    return g.add_edge(START, "refund").compile(checkpointer=saver)


async def invoke(app: Any, value: Any, use_async: bool) -> Any:
    return await app.ainvoke(value, CONFIG) if use_async else app.invoke(value, CONFIG)


class Replica(threading.Thread):
    """Another bot replica resuming the thread (a second click, the scheduler), in its own OS
    thread and event loop, with its own saver. `outcome` is what its run returned or raised."""

    def __init__(self, url: str, send: Callable[[str], str], use_async: bool) -> None:
        super().__init__(name="replica-b", daemon=True)
        self.url, self.send, self.use_async = url, send, use_async
        self.outcome: Any = None
        self.ended = threading.Event()

    def run(self) -> None:
        async def main() -> None:
            async with SQLSaver.afrom_conn_string(self.url) as saver:
                app = refund_graph(saver, self.send, use_async=self.use_async)
                try:
                    self.outcome = await invoke(app, None, self.use_async)
                except BaseException as e:  # noqa: BLE001 - what the replica's caller sees
                    self.outcome = e

        try:
            asyncio.run(main())
        finally:
            self.ended.set()


class Pauses:
    """Stands in for `graphs._once.sleep`/`asleep` (the pauses between two tries of a record,
    and between two reads of an outcome another run may be recording), sleeping for real.
    In the first replica's first pause it lets `before_retry` run (which starts the second
    replica and waits until that one waits too)."""

    def __init__(self) -> None:
        self.real_sleep, self.real_asleep = graphs._once.sleep, graphs._once.asleep
        self.by_thread: dict[str, list[float]] = {}
        self.before_retry: Callable[[], None] = lambda: None
        self.waiting = threading.Event()
        """The second replica is waiting for an outcome."""

    def note(self, pause: float) -> bool:
        """Count `pause`; True when it is the first replica's first pause."""
        name = threading.current_thread().name
        self.by_thread.setdefault(name, []).append(pause)
        if name == "replica-b":
            self.waiting.set()
            return False
        return sum(len(p) for n, p in self.by_thread.items() if n != "replica-b") == 1

    def sleep(self, pause: float) -> None:
        if self.note(pause):
            self.before_retry()
        self.real_sleep(pause)

    async def asleep(self, pause: float) -> None:
        if self.note(pause):
            await asyncio.to_thread(self.before_retry)
        await self.real_asleep(pause)


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> Pauses:
    p = Pauses()
    monkeypatch.setattr(graphs._once, "sleep", p.sleep)
    monkeypatch.setattr(graphs._once, "asleep", p.asleep)
    return p


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_replica_that_takes_the_thread_while_the_refund_is_recorded_gets_its_result(
    pg_url: str, pauses: Pauses, use_async: bool
) -> None:
    url_a, url_b = replica_url(pg_url), replica_url(pg_url)
    sent: list[str] = []
    second: list[Replica] = []

    def send(customer: str) -> str:
        sent.append(customer)
        if len(sent) == 1:
            end_sessions(url_a)  # replica A's lock goes with its session, mid-refund
        return f"re_{len(sent)}"

    def start_b() -> None:
        # A could not record the refund (its sessions are gone) and tries again soon. B takes
        # the thread meanwhile, runs the node, and finds the refund started, not finished.
        b = Replica(url_b, send, use_async)
        second.append(b)
        b.start()
        assert pauses.waiting.wait(20) or b.ended.is_set()

    pauses.before_retry = start_b
    async with SQLSaver.afrom_conn_string(url_a) as saver_a:
        saver_a.setup()
        with pytest.raises(ThreadLockLostError) as lost:
            await invoke(
                refund_graph(saver_a, send, use_async=use_async), {"customer": "Ada"}, use_async
            )
    b = second[0]
    b.join(30)
    assert not b.is_alive()

    # A recorded the refund, saw its lock gone, and stopped: it wrote nothing more.
    assert lost.value.thread_id == "t"
    assert "this run's lock on it ended with its database session" in str(lost.value)
    # B waited for A's record instead of calling the refund unknown, and carried the run on.
    assert isinstance(b.outcome, GraphInterrupt), b.outcome
    assert b.outcome.interrupts[0].value == "re_1"
    assert pauses.by_thread.get("replica-b")  # it did wait
    assert sent == ["Ada"]

    # The reviewer approves; any replica resumes the thread, and the refund is not made again.
    async with SQLSaver.afrom_conn_string(url_b) as fresh:
        app = refund_graph(fresh, send, use_async=use_async)
        out = await invoke(app, Command(resume="approved"), use_async)
    assert out == {"customer": "Ada", "log": ["re_1: approved"]}
    assert sent == ["Ada"]


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_run_whose_lock_was_taken_while_it_ran_stops_before_it_writes_again(
    pg_url: str, use_async: bool
) -> None:
    """No `once()` here: a step whose lock session ends while its node runs, and another
    replica holds the thread by the time the node returns. The first run must not save its
    step (nor pause, nor fail) on a thread another run now holds."""
    url_a, url_b = replica_url(pg_url), replica_url(pg_url)
    held, release, b_done = threading.Event(), threading.Event(), threading.Event()

    def hold_thread() -> None:  # replica B holds the thread, as a run of it would
        with SQLSaver.from_conn_string(url_b) as saver_b, saver_b.lock_thread(CONFIG):
            held.set()
            release.wait(30)
        b_done.set()

    def work(state: State) -> dict[str, Any]:
        end_sessions(url_a)
        threading.Thread(target=hold_thread, daemon=True).start()
        assert held.wait(20)
        return {"log": ["worked"]}

    async def awork(state: State) -> dict[str, Any]:
        return await asyncio.to_thread(work, state)

    g = StateGraph(State).add_node("work", awork if use_async else work)
    try:
        async with SQLSaver.afrom_conn_string(url_a) as saver_a:
            saver_a.setup()
            app = g.add_edge(START, "work").compile(checkpointer=saver_a)
            with pytest.raises(ThreadLockLostError, match="another run holds the thread now"):
                await invoke(app, {"customer": "Ada", "log": []}, use_async)
            state = app.get_state(CONFIG)
    finally:
        release.set()
        assert b_done.wait(20)
    assert state.values == {"customer": "Ada", "log": []}  # the step was not saved
    assert state.next == ("work",)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_run_whose_thread_another_run_wrote_to_meanwhile_stops(
    pg_url: str, use_async: bool
) -> None:
    """The other replica took the thread, wrote to it and let go before the first run wrote
    again: the first run can take the lock back, but the thread is not as it left it."""
    url_a, url_b = replica_url(pg_url), replica_url(pg_url)

    def work(state: State) -> dict[str, Any]:
        end_sessions(url_a)
        with SQLSaver.from_conn_string(url_b) as saver_b, saver_b.lock_thread(CONFIG):
            head = saver_b.get_tuple(CONFIG)
            assert head is not None
            saver_b.put_writes(head.config, [("log", ["by B"])], "b-task")
        return {"log": ["by A"]}

    async def awork(state: State) -> dict[str, Any]:
        return await asyncio.to_thread(work, state)

    g = StateGraph(State).add_node("work", awork if use_async else work)
    async with SQLSaver.afrom_conn_string(url_a) as saver_a:
        saver_a.setup()
        app = g.add_edge(START, "work").compile(checkpointer=saver_a)
        with pytest.raises(ThreadLockLostError, match="another run wrote to it meanwhile"):
            await invoke(app, {"customer": "Ada", "log": []}, use_async)
        assert app.get_state(CONFIG).values == {"customer": "Ada", "log": []}


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_run_whose_lock_session_ended_takes_it_back_and_goes_on(
    pg_url: str, use_async: bool
) -> None:
    """Nobody else took the thread: the run takes its lock back and finishes, and holds it
    meanwhile (another replica is refused)."""
    url_a, url_b = replica_url(pg_url), replica_url(pg_url)
    refused: list[BaseException] = []

    def work(state: State) -> dict[str, Any]:
        end_sessions(url_a)
        return {"log": ["one"]}

    def then(state: State) -> dict[str, Any]:
        with SQLSaver.from_conn_string(url_b) as saver_b:
            try:
                with saver_b.lock_thread(CONFIG):
                    pass
            except BaseException as e:  # noqa: BLE001
                refused.append(e)
        return {"log": ["two"]}

    async def awork(state: State) -> dict[str, Any]:
        return await asyncio.to_thread(work, state)

    g = StateGraph(State).add_node("work", awork if use_async else work).add_node("then", then)
    g = g.add_edge(START, "work").add_edge("work", "then")
    async with SQLSaver.afrom_conn_string(url_a) as saver_a:
        saver_a.setup()
        app = g.compile(checkpointer=saver_a)
        out = await invoke(app, {"customer": "Ada", "log": []}, use_async)
    assert out == {"customer": "Ada", "log": ["one", "two"]}
    assert [type(e).__name__ for e in refused] == ["ThreadBusyError"]


class ProcessDied(BaseException):
    """What the runtime sees of a process killed mid-node: nothing after this point happens."""


class DiesBeforeRecording(SQLSaver):
    """Kills the "process" after a once() effect ran, before its outcome is recorded."""

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if any(c == "__once__" and v[1] != "started" for c, v in writes):
            raise ProcessDied()
        super().put_writes(config, writes, task_id)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        if any(c == "__once__" and v[1] != "started" for c, v in writes):
            raise ProcessDied()
        await super().aput_writes(config, writes, task_id)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_refund_whose_run_died_is_called_unknown_once_its_record_wait_is_over(
    pg_url: str, use_async: bool
) -> None:
    """The run that started the refund died (its outcome will never come): the next run waits
    for it no longer than the started record's `record_wait` (and one pause), then says it is
    unknown, as before."""
    url = replica_url(pg_url)
    sent: list[str] = []

    def send(customer: str) -> str:
        sent.append(customer)
        return f"re_{len(sent)}"

    async with DiesBeforeRecording.afrom_conn_string(url) as saver:
        saver.setup()
        with pytest.raises(ProcessDied):
            app = refund_graph(saver, send, use_async=use_async, record_wait=0.3)
            await invoke(app, {"customer": "Ada"}, use_async)

    started = time.monotonic()
    async with SQLSaver.afrom_conn_string(url) as fresh:
        with pytest.raises(SideEffectUnknownError) as unknown:
            await invoke(refund_graph(fresh, send, use_async=use_async), None, use_async)
    waited = time.monotonic() - started
    assert type(unknown.value) is SideEffectUnknownError
    assert unknown.value.key == "refund"
    assert 0.3 < waited < 10
    # It says it waited for another run, and how long: not "a crash" it cannot know of.
    assert unknown.value.waited is not None and 0.3 < unknown.value.waited <= waited
    assert f"no outcome was recorded in the {unknown.value.waited:.1f}s waited for it" in str(
        unknown.value
    )
    assert sent == ["Ada"]
