"""Graphs on `SQLSaver` across real processes: issue 3's properties, on SQLite and PostgreSQL.

Every process here is a fresh interpreter (`tests/kit/sql_worker.py`) that knows only the database URL
and the thread id: a pause is only real when it survives that boundary.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graphs import END, START, Command, GraphInterrupt, ResumeError, SQLSaver, StateGraph, interrupt
from tests.kit import sql_worker as worker

WORKER = worker.PATH
QUICK = os.environ.get("SIGNOFF_TEST_QUICK", "") not in ("", "0")


def run(*args: str) -> str:
    """Run the worker to completion; its one line of output."""
    done = subprocess.run(
        [sys.executable, WORKER, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def history(url: str, thread_id: str) -> list[Any]:
    with SQLSaver.from_conn_string(url) as saver:
        return list(saver.list(worker.config(thread_id)))


def assert_linear(tuples: list[Any]) -> None:
    """Newest first, each checkpoint's parent is the next one: the history never forked."""
    for newer, older in itertools.pairwise(tuples):
        assert newer.parent_config == older.config
    assert tuples[-1].parent_config is None


def test_a_pause_at_interrupt_is_resumed_by_another_process(db_url: str) -> None:
    run("setup", db_url)
    asked = json.loads(run("start", db_url, "refund-1"))
    assert asked == [{"action": "refund", "amount": 42, "request": "refund 42"}]
    with SQLSaver.from_conn_string(db_url) as saver:
        (paused,) = saver.list_paused()
        assert paused.thread_id == "refund-1"
        assert [i.value for i in paused.interrupts] == asked

    state = json.loads(run("resume", db_url, "refund-1", "yes"))
    assert state == {"log": ["draft", "approve", "act"], "request": "refund 42", "approved": True}
    with SQLSaver.from_conn_string(db_url) as saver:
        assert saver.list_paused() == []
        assert saver.get_status(worker.config("refund-1")) == "done"
    assert_linear(history(db_url, "refund-1"))


def test_a_static_pause_is_resumed_by_another_process(db_url: str) -> None:
    run("setup", db_url)
    assert json.loads(run("start_static", db_url, "static-1")) == []
    with SQLSaver.from_conn_string(db_url) as saver:
        (paused,) = saver.list_paused()
        assert (paused.thread_id, paused.paused_nodes, paused.interrupts) == (
            "static-1",
            ("act",),
            (),
        )
    assert json.loads(run("resume_static", db_url, "static-1")) == {"log": ["draft", "act"]}


def test_a_process_killed_mid_node_loses_only_that_step(db_url: str, tmp_path: Path) -> None:
    run("setup", db_url)
    marker = tmp_path / "in-slow-node"
    crashing = subprocess.Popen(
        [sys.executable, WORKER, "crash", db_url, "crash-1", str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert crashing.poll() is None, crashing.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.02)
        crashing.send_signal(signal.SIGKILL)
    finally:
        crashing.kill()
        crashing.communicate()
    # at once (the dead process's thread lock went with it), with nothing but the URL
    state = json.loads(run("resume_crash", db_url, "crash-1"))
    assert state == {"log": ["first", "slow", "last"]}  # `first` ran once
    tuples = history(db_url, "crash-1")
    assert_linear(tuples)
    assert [t.metadata["step"] for t in tuples] == sorted(
        (t.metadata["step"] for t in tuples), reverse=True
    )


def test_two_processes_resuming_one_paused_thread_race_and_exactly_one_wins(db_url: str) -> None:
    races = 10 if QUICK else 50
    threads = [f"race-{i}" for i in range(races)]
    with SQLSaver.from_conn_string(db_url) as saver:
        saver.setup()
        graph = worker.approval_graph(saver)
        for thread_id in threads:
            with pytest.raises(GraphInterrupt):
                graph.invoke({"log": []}, worker.config(thread_id))

    racers = [
        subprocess.Popen(
            [sys.executable, WORKER, "race", db_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        for _ in range(2)
    ]
    outcomes: Counter[str] = Counter()
    try:
        for thread_id in threads:
            for r in racers:
                assert r.stdin is not None and r.stdout is not None
                r.stdin.write(thread_id + "\n")
                r.stdin.flush()
            for r in racers:
                assert r.stdout.readline().strip() == "ready"
            for r in racers:  # as close to the same moment as two processes get
                r.stdin.write("go\n")
                r.stdin.flush()
            results = [r.stdout.readline().strip() for r in racers]
            assert results.count("ok") == 1, results
            (loser,) = [x for x in results if x != "ok"]
            assert loser.split(" ", 1)[0] in ("busy", "resume"), loser
            assert repr(thread_id) in loser, loser
            outcomes[loser.split(" ", 1)[0]] += 1
    finally:
        for r in racers:
            assert r.stdin is not None and r.stdout is not None and r.stderr is not None
            r.stdin.close()
            r.wait(timeout=60)
            err = r.stderr.read()
            r.stdout.close()
            r.stderr.close()
            assert r.returncode == 0, err[-3000:]

    with SQLSaver.from_conn_string(db_url) as saver:
        graph = worker.approval_graph(saver)
        for thread_id in threads:
            tuples = list(saver.list(worker.config(thread_id)))
            assert_linear(tuples)
            state = graph.get_state(worker.config(thread_id))
            assert state.values["log"] == ["draft", "approve", "act"]
            assert state.next == ()
        assert saver.list_paused() == []
    assert sum(outcomes.values()) == races
    print("race outcomes", dict(outcomes))


def test_resuming_an_unknown_or_finished_thread_is_an_error(db_url: str) -> None:
    with SQLSaver.from_conn_string(db_url) as saver:
        saver.setup()
        graph = worker.approval_graph(saver)
        with pytest.raises(ResumeError, match="'nobody'") as err:
            graph.invoke(Command(resume={"approved": True}), worker.config("nobody"))
        assert err.value.thread_id == "nobody"
        with pytest.raises(ResumeError, match="'nobody'"):
            graph.invoke(None, worker.config("nobody"))
        assert saver.get_tuple(worker.config("nobody")) is None  # no silent new run

        with pytest.raises(GraphInterrupt):
            graph.invoke({"log": []}, worker.config("t"))
        graph.invoke(Command(resume={"approved": False}), worker.config("t"))
        before = list(saver.list(worker.config("t")))
        with pytest.raises(ResumeError, match="'t'"):
            graph.invoke(Command(resume={"approved": True}), worker.config("t"))
        assert list(saver.list(worker.config("t"))) == before


async def test_async_runs_pause_and_resume(db_url: str) -> None:
    async with SQLSaver.afrom_conn_string(db_url) as saver:
        await saver.asetup()
        graph = worker.approval_graph(saver)
        with pytest.raises(GraphInterrupt):
            await graph.ainvoke({"log": []}, worker.config("a"))
        (paused,) = await saver.alist_paused()
        assert paused.thread_id == "a"
        state = await graph.ainvoke(Command(resume={"approved": True}), worker.config("a"))
        assert state["log"] == ["draft", "approve", "act"]
        assert await saver.alist_paused() == []


def _steps_graph(saver: SQLSaver, pause: Any) -> Any:
    """a -> b -> c, a checkpoint each, every node calling `pause` (a sleep) so that runs overlap."""

    def node(name: str) -> Any:
        if asyncio.iscoroutinefunction(pause):

            async def step(state: worker.State) -> dict[str, Any]:
                await pause(0.05)
                return {"log": [name]}

            return step
        return lambda state: pause(0.05) or {"log": [name]}

    g = StateGraph(worker.State)
    for name in "abc":
        g.add_node(name, node(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=saver)


async def test_more_runs_at_once_than_the_pool_holds_each_finish(db_url: str) -> None:
    # A run holds a connection until it ends (PostgreSQL: its thread's lock; SQLite, sync: its
    # transactions), and a write may take another: from one pool, two runs held both
    # connections and waited for a third until the pool timeout (every run failed, QueuePool
    # limit reached); now held connections have a pool apart, and on SQLite a sync run that
    # finds none free writes through the operations' pool.
    saver = SQLSaver(db_url, pool_size=2, max_overflow=0, pool_timeout=10)
    try:
        await saver.asetup()
        graph = _steps_graph(saver, asyncio.sleep)
        states = await asyncio.gather(
            *(graph.ainvoke({"log": []}, worker.config(f"async-{i}")) for i in range(6))
        )
        assert [s["log"] for s in states] == [["a", "b", "c"]] * 6
        graph = _steps_graph(saver, time.sleep)
        with ThreadPoolExecutor(6) as pool:
            runs = [
                pool.submit(graph.invoke, {"log": []}, worker.config(f"sync-{i}")) for i in range(6)
            ]
            assert [r.result()["log"] for r in runs] == [["a", "b", "c"]] * 6
    finally:
        await saver.aclose()


@pytest.mark.postgres
def test_a_saver_closed_while_a_run_holds_its_thread_leaves_no_connection_open(
    pg_url: str,
) -> None:
    # The run's lock connection was checked out before `close()` let go of its pool: given back
    # to that pool when the run ended, it stayed open until the garbage collector found it
    # (psycopg's ResourceWarning, on whatever ran then). Now it is closed as the run ends.
    saver = SQLSaver(pg_url)
    saver.setup()
    started, go = threading.Event(), threading.Event()

    def slow(state: worker.State) -> dict[str, Any]:
        started.set()
        assert go.wait(10)
        return {"log": ["slow"]}

    g = StateGraph(worker.State)
    g.add_node("slow", slow)
    g.add_edge(START, "slow")
    g.add_edge("slow", END)
    graph = g.compile(checkpointer=saver)
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(graph.invoke, {"log": []}, worker.config("closed-mid-run"))
        assert started.wait(10)
        saver.close()
        go.set()
        assert run.result(timeout=10)["log"] == ["slow"]
    saver.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_sync_run_on_sqlite_writes_every_step_on_the_one_connection_it_holds(
    tmp_path: Path,
) -> None:
    from sqlalchemy import event

    saver = SQLSaver(f"sqlite:///{tmp_path / 'held.db'}")
    try:
        saver.setup()
        graph = _steps_graph(saver, lambda _: None)
        checkouts: list[str] = []
        for name, engine in (("operations", saver._sync_engine()), ("held", saver._locks_engine())):
            event.listen(engine.pool, "checkout", lambda *_, name=name: checkouts.append(name))
        assert graph.invoke({"log": []}, worker.config("held"))["log"] == ["a", "b", "c"]
        # The input, three steps and the end: five commits, one checkout.
        assert checkouts == ["held"]
        assert len(list(saver.list(worker.config("held")))) == 5
    finally:
        saver.close()


def test_several_processes_write_one_sqlite_file_without_database_is_locked(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    run("setup", url)
    count = 4
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, "start", url, f"writer-{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(count)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-3000:]
    with SQLSaver.from_conn_string(url) as saver:
        assert sorted(p.thread_id for p in saver.list_paused()) == [
            f"writer-{i}" for i in range(count)
        ]


def test_thread_status_follows_a_run_through_pauses_an_update_a_failure_and_a_retry(
    db_url: str,
) -> None:
    fail = {"on": True}

    def ask(name: str) -> Any:
        return lambda s: {"log": [f"{name}={interrupt(name + '?')}"]}

    def boom(state: Any) -> dict[str, Any]:
        if fail["on"]:
            raise ValueError("boom")
        return {"log": ["boom ok"]}

    g = StateGraph(worker.State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("ask1", ask("ask1"))
    g.add_node("ask2", ask("ask2"))
    g.add_node("boom", boom)
    g.add_edge(START, "a")
    g.add_edge("a", "ask1")
    g.add_edge("a", "ask2")
    g.add_edge("ask1", "boom")
    g.add_edge("ask2", "boom")
    g.add_edge("boom", END)
    config = worker.config("t")

    def pending() -> list[Any]:
        return [(p.thread_id, [i.value for i in p.interrupts]) for p in saver.list_paused()]

    with SQLSaver.from_conn_string(db_url) as saver:
        saver.setup()
        app = g.compile(checkpointer=saver)
        with pytest.raises(GraphInterrupt):
            app.invoke({"log": []}, config)
        assert pending() == [("t", ["ask1?", "ask2?"])]
        app.update_state(config, {"request": "edited"})  # a new head, the same pause
        assert pending() == [("t", ["ask1?", "ask2?"])]
        first, second = (i.id for i in app.get_state(config).interrupts)
        with pytest.raises(GraphInterrupt):
            app.invoke(Command(resume={first: "yes"}), config)
        assert pending() == [("t", ["ask2?"])]
        with pytest.raises(ValueError, match="boom"):
            app.invoke(Command(resume={second: "no"}), config)
        assert (pending(), saver.get_status(config)) == ([], "failed")
        fail["on"] = False
        state = app.invoke(None, config)
        assert state["log"] == ["a", "ask1=yes", "ask2=no", "boom ok"]
        assert saver.get_status(config) == "done"
