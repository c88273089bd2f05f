"""The SQLite write gate: this process's writers to one file take turns in order, in threads and
on event loops alike, urgent ones first, and a writer that gives up never leaves it taken."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypedDict

import pytest

from graphs import END, START, SQLSaver, StateGraph
from graphs.checkpoint._sql.gate import WriteGate, write_gate
from graphs.errors import CheckpointConflictError


class State(TypedDict):
    n: int


def _chain(saver: SQLSaver, *, asynchronous: bool = False):  # type: ignore[no-untyped-def]
    """Two steps, each adding one; `asynchronous` nodes make an `ainvoke` of it run nothing in
    the event loop's executor."""

    def step(state: State) -> State:
        return {"n": state["n"] + 1}

    async def astep(state: State) -> State:
        return step(state)

    builder = StateGraph(State)
    builder.add_node("a", astep if asynchronous else step)
    builder.add_node("b", astep if asynchronous else step)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder.compile(checkpointer=saver)


def test_one_gate_per_file_for_every_saver_of_the_process(tmp_path: Path) -> None:
    one = SQLSaver(f"sqlite:///{tmp_path / 'a.db'}")
    two = SQLSaver(f"sqlite:///{tmp_path / 'a.db'}")
    other = SQLSaver(f"sqlite:///{tmp_path / 'b.db'}")
    assert one._gate is two._gate
    assert one._gate is not other._gate
    assert SQLSaver("sqlite://")._gate is None  # in memory: one connection, nothing to share


async def test_threads_and_tasks_writing_at_once_all_land(tmp_path: Path) -> None:
    """Sync runs in threads and async runs on the loop, on one file, at the same time."""
    saver = SQLSaver(f"sqlite:///{tmp_path / 'busy.db'}", busy_timeout=60)
    saver.setup()
    graph = _chain(saver)

    def sync_runs(k: int) -> None:
        for i in range(15):
            assert graph.invoke({"n": 0}, {"configurable": {"thread_id": f"s{k}-{i}"}}) == {"n": 2}

    async def async_runs(k: int) -> None:
        for i in range(15):
            assert await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": f"a{k}-{i}"}}) == {
                "n": 2
            }

    await asyncio.gather(
        *(asyncio.to_thread(sync_runs, k) for k in range(3)),
        *(async_runs(k) for k in range(4)),
    )
    done = {p.thread_id for p in saver.list_paused()}  # nothing left half way
    assert done == set()
    for k in range(3):
        for i in range(15):
            assert graph.get_state({"configurable": {"thread_id": f"s{k}-{i}"}}).values == {"n": 2}
    for k in range(4):
        for i in range(15):
            assert (
                await graph.aget_state({"configurable": {"thread_id": f"a{k}-{i}"}})
            ).values == {"n": 2}
    await saver.aclose()


async def test_urgent_writers_go_before_queued_ones(tmp_path: Path) -> None:
    gate = WriteGate(str(tmp_path / "order.db"), timeout=10)
    order: list[str] = []
    gate.acquire()  # another thread's transaction is in progress

    async def writer(name: str, urgent: bool) -> None:
        async with gate.ahold(urgent=urgent):
            order.append(name)
            await asyncio.sleep(0.01)

    def sync_writer(name: str) -> None:
        with gate.hold():
            order.append(name)

    tasks = [asyncio.create_task(writer(f"job-{i}", False)) for i in range(3)]
    await asyncio.sleep(0.01)
    thread = threading.Thread(target=sync_writer, args=("thread",))
    thread.start()
    await asyncio.sleep(0.05)
    tasks.append(asyncio.create_task(writer("click", True)))
    await asyncio.sleep(0.05)
    assert order == []
    gate.release()
    await asyncio.gather(*tasks)
    await asyncio.to_thread(thread.join, 5)
    assert order == ["click", "job-0", "job-1", "job-2", "thread"]


async def test_a_cancelled_writer_does_not_keep_the_gate(tmp_path: Path) -> None:
    gate = WriteGate(str(tmp_path / "cancel.db"), timeout=10)
    gate.acquire()

    async def writer() -> None:
        async with gate.ahold():
            await asyncio.sleep(0)

    waiting = [asyncio.create_task(writer()) for _ in range(2)]
    await asyncio.sleep(0.05)
    waiting[0].cancel()
    gate.release()  # handed to the first, whose cancellation is on its way: it passes it on
    waiting[1].cancel()
    for task in waiting:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    async with asyncio.timeout(5):
        await writer()
    got = threading.Event()
    thread = threading.Thread(target=lambda: (gate.acquire(), got.set(), gate.release()))
    thread.start()
    await asyncio.to_thread(thread.join, 5)
    assert got.is_set(), "the gate stayed taken after its writers were cancelled"


async def test_waiting_past_the_busy_timeout_fails_like_sqlite(tmp_path: Path) -> None:
    gate = WriteGate(str(tmp_path / "stuck.db"), timeout=0.2)
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with gate.hold():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked.*busy timeout"):
            async with gate.ahold():
                pass
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            await asyncio.to_thread(gate.acquire)
    finally:
        release.set()
        thread.join()
    async with gate.ahold():  # and it works again once the holder is done
        pass


def test_two_event_loops_share_the_gate(tmp_path: Path) -> None:
    """Two threads, each with its event loop and its saver (an async engine serves one loop),
    on one file: one gate, and every run lands."""
    url = f"sqlite:///{tmp_path / 'loops.db'}"
    SQLSaver(url).setup()
    savers = [SQLSaver(url) for _ in range(2)]
    assert savers[0]._gate is savers[1]._gate
    errors: list[BaseException] = []

    def loop_runs(k: int) -> None:
        graph = _chain(savers[k])

        async def main() -> None:
            for i in range(20):
                await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": f"l{k}-{i}"}})
            await savers[k].aclose()

        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=loop_runs, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with SQLSaver.from_conn_string(url) as saver:
        graph = _chain(saver)
        assert all(
            graph.get_state({"configurable": {"thread_id": f"l{k}-{i}"}}).values == {"n": 2}
            for k in range(2)
            for i in range(20)
        )
    assert write_gate(str((tmp_path / "loops.db").resolve()), 30) is savers[0]._gate


async def test_an_async_run_needs_no_thread_of_the_loops_executor(tmp_path: Path) -> None:
    """The saver's operations run in its own threads: with every thread of the loop's default
    executor taken (by sync nodes waiting for something, say), an async run still reads and
    writes its checkpoints."""
    saver = SQLSaver(f"sqlite:///{tmp_path / 'own.db'}")
    await saver.asetup()
    graph = _chain(saver, asynchronous=True)
    loop = asyncio.get_running_loop()
    busy = ThreadPoolExecutor(1)
    loop.set_default_executor(busy)
    free = threading.Event()
    taken = loop.run_in_executor(None, free.wait, 30)  # the executor's one thread, blocked
    try:
        async with asyncio.timeout(10):
            assert await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": "t"}}) == {"n": 2}
            snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
        assert snapshot.values == {"n": 2}
        assert not taken.done()
    finally:
        free.set()
        await taken
        await saver.aclose()


async def test_a_read_is_not_held_up_by_a_write_waiting_its_turn(tmp_path: Path) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'turns.db'}")
    await saver.asetup()
    graph = _chain(saver, asynchronous=True)
    done = {"configurable": {"thread_id": "done"}}
    await graph.ainvoke({"n": 0}, done)
    assert saver._gate is not None
    saver._gate.acquire()  # another writer's turn, for as long as this test says
    try:
        waiting = asyncio.create_task(graph.ainvoke({"n": 5}, {"configurable": {"thread_id": "w"}}))
        async with asyncio.timeout(10):
            while not saver._gate._queue:  # the run's first write, queued for its turn
                await asyncio.sleep(0.005)
            assert (await graph.aget_state(done)).values == {"n": 2}
            assert [t.config async for t in saver.alist(done)] != []
        assert not waiting.done(), "the run wrote while another writer held the gate"
    finally:
        saver._gate.release()
    async with asyncio.timeout(10):
        assert await waiting == {"n": 7}
    await saver.aclose()


async def test_a_long_read_holds_up_no_other_read(tmp_path: Path) -> None:
    """A read that takes long (every paused thread of a big database, listed) leaves the other
    runs' reads to go on."""
    saver = SQLSaver(f"sqlite:///{tmp_path / 'reads.db'}")
    await saver.asetup()
    graph = _chain(saver, asynchronous=True)
    done = {"configurable": {"thread_id": "done"}}
    await graph.ainvoke({"n": 0}, done)
    go_on = threading.Event()
    long_read = saver._in_sqlite_thread(True, lambda: go_on.wait(30))  # one read thread, taken
    try:
        async with asyncio.timeout(10):
            assert (await graph.aget_state(done)).values == {"n": 2}
            assert await graph.ainvoke({"n": 1}, {"configurable": {"thread_id": "new"}}) == {"n": 3}
        assert not long_read.done()
    finally:
        go_on.set()
    assert await long_read is True
    await saver.aclose()


async def test_closing_the_saver_stops_its_threads_and_it_works_again(tmp_path: Path) -> None:
    saver = SQLSaver(f"sqlite:///{tmp_path / 'close.db'}")
    await saver.asetup()
    graph = _chain(saver, asynchronous=True)

    def own_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("graphs-sqlite-")]

    before = set(own_threads())
    await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": "a"}})
    started = [t for t in own_threads() if t not in before]
    assert {t.name.rsplit("_", 1)[0] for t in started} == {
        "graphs-sqlite-reads",
        "graphs-sqlite-writes",
    }
    await saver.aclose()
    for thread in started:
        await asyncio.to_thread(thread.join, 5)
        assert not thread.is_alive(), f"{thread.name} outlived the saver's close"
    assert await graph.ainvoke({"n": 1}, {"configurable": {"thread_id": "b"}}) == {"n": 3}
    await saver.aclose()


async def test_a_write_queued_when_its_run_is_cancelled_lands_whole_and_refuses_a_later_run(
    tmp_path: Path,
) -> None:
    """A run cancelled while its write waits for its turn: the write, already handed to the
    saver's thread, still lands when its turn comes (one transaction, whole). A run of the
    same thread started meanwhile read the head before it, and its first write is refused by
    the compare-and-set instead of writing over it; the cancelled run goes on from where it
    was stored."""
    saver = SQLSaver(f"sqlite:///{tmp_path / 'cancelled.db'}")
    await saver.asetup()
    graph = _chain(saver, asynchronous=True)
    config = {"configurable": {"thread_id": "t"}}
    assert saver._gate is not None
    saver._gate.acquire()
    try:
        first = asyncio.create_task(graph.ainvoke({"n": 0}, config))
        async with asyncio.timeout(10):
            while not saver._gate._queue:  # its first write, waiting for its turn
                await asyncio.sleep(0.005)
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            second = asyncio.create_task(graph.ainvoke({"n": 10}, config))
            writes = saver._sqlite_threads[False]  # (the thread of the saver's writes)
            while writes._work_queue.empty():  # its first write, queued behind the other
                await asyncio.sleep(0.005)
    finally:
        saver._gate.release()
    async with asyncio.timeout(10):
        with pytest.raises(CheckpointConflictError, match="moved on"):
            await second
        assert (await graph.aget_state(config)).next == ("a",)
        assert await graph.ainvoke(None, config) == {"n": 2}
    await saver.aclose()
