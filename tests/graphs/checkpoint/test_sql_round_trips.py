"""`SQLSaver`'s writes folded into fewer round trips keep their guarantees.

On PostgreSQL a run's lock is taken with its first read of the head, a new run's input is one
pipeline from BEGIN to COMMIT, and the run's finished checkpoint lets go of the thread's lock
in its own round trip. Each test is what a user would see if the fold lost a guarantee: a
stale head, a half-written input, a thread written by two runs.
"""

from __future__ import annotations

import contextlib
import operator
import subprocess
import sys
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    START,
    CheckpointConflictError,
    Command,
    GraphInterrupt,
    SQLSaver,
    StateGraph,
    ThreadBusyError,
    ThreadLockLostError,
    interrupt,
)
from graphs.checkpoint import Checkpoint
from graphs.checkpoint.base import INTERRUPT
from tests.kit import sql_worker

WORKER = sql_worker.PATH


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name, "checkpoint_ns": ""}}


def checkpoint(
    seq: int, values: dict[str, Any], versions: dict[str, int], *, finished: bool = False
) -> Checkpoint:
    return Checkpoint(
        v=1,
        id=f"{seq:012x}-0000000{seq % 10}",
        ts=f"2026-01-01T00:00:{seq:02d}+00:00",
        channel_values=values,
        channel_versions=versions,
        next_tasks=[] if finished else [["node", f"task{seq}"]],
        paused=[],
        appended={},
    )


def worker(command: str, url: str, thread_id: str) -> str:
    done = subprocess.run(
        [sys.executable, WORKER, command, url, thread_id],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode().strip()


@contextlib.contextmanager
def held_by_another_process(url: str, thread_id: str) -> Iterator[None]:
    """The thread held by a run of another process (`lock_thread`), until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, WORKER, "hold", url, thread_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"holding"
        yield
    finally:
        holder.kill()
        holder.communicate()


def test_the_head_read_with_the_lock_is_not_kept_past_a_write(saver: SQLSaver) -> None:
    first = saver.put(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
    with saver.lock_thread(thread()):
        second = saver.put(first, checkpoint(1, {"x": 2}, {"x": 2}), {}, {"x": 2})
        got = saver.get_tuple(thread())
        assert got is not None
        assert got.config == second
        assert got.checkpoint["channel_values"] == {"x": 2}


def test_the_head_read_with_the_lock_is_the_head(saver: SQLSaver) -> None:
    first = saver.put(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
    saver.put_writes(first, [("x", 5)], "task0")
    with saver.lock_thread(thread()):
        got = saver.get_tuple(thread())
        assert got is not None
        assert got.config == first
        assert got.pending_writes == [("task0", "x", 5)]
        # read again (not the one taken with the lock): the same
        assert saver.get_tuple(thread()) == got


async def test_an_async_runs_head_read_with_its_lock_is_the_head_and_read_once(
    db_url: str,
) -> None:
    saver = SQLSaver(db_url)
    try:
        await saver.asetup()
        first = await saver.aput(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
        await saver.aput_writes(first, [("x", 5)], "task0")
        async with saver.alock_thread(thread()):
            got = await saver.aget_tuple(thread())
            assert got is not None
            assert got.config == first
            assert got.pending_writes == [("task0", "x", 5)]
            assert await saver.aget_tuple(thread()) == got  # read again: the same
            second = await saver.aput(first, checkpoint(1, {"x": 2}, {"x": 2}), {}, {"x": 2})
            after = await saver.aget_tuple(thread())
            assert after is not None
            assert after.config == second
            assert after.checkpoint["channel_values"] == {"x": 2}
        # A write first: the head read with the lock is not what the run reads after it.
        async with saver.alock_thread(thread()):
            third = await saver.aput(second, checkpoint(2, {"x": 3}, {"x": 3}), {}, {"x": 3})
            got = await saver.aget_tuple(thread())
            assert got is not None
            assert got.config == third
            assert got.checkpoint["channel_values"] == {"x": 3}
    finally:
        await saver.aclose()


class S(TypedDict, total=False):
    n: int


class MovedUnderItsInput(SQLSaver):
    """A `SQLSaver` whose thread is written by another saver right after a run reads its
    head (a writer that ignores the lock): the run's input must not be half-written. It
    overrides no write, so the run's input goes as one batch."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.intruder = SQLSaver(url)

    def get_tuple(self, config: Any) -> Any:
        found = super().get_tuple(config)
        if "checkpoint_id" not in config["configurable"]:
            self.intruder.put(thread(), checkpoint(7, {"n": 7}, {"n": 1}), {}, {"n": 1})
        return found


def test_a_new_runs_input_is_not_written_over_a_head_that_moved(db_url: str) -> None:
    with SQLSaver.from_conn_string(db_url) as tables:
        tables.setup()
    saver = MovedUnderItsInput(db_url)
    try:
        g = StateGraph(S)
        g.add_node("a", lambda s: {"n": s["n"] + 1})
        g.set_entry_point("a")
        app = g.compile(checkpointer=saver)
        with pytest.raises(CheckpointConflictError, match="thread 't' moved on"):
            app.invoke({"n": 0}, thread())
        # Only the other writer's checkpoint: none of the run's input, its writes or step 0.
        history = list(saver.list(thread()))
        assert [t.checkpoint["id"] for t in history] == [checkpoint(7, {}, {})["id"]]
        assert history[0].pending_writes == []
        assert app.get_state(thread()).values == {"n": 7}
    finally:
        saver.intruder.close()
        saver.close()


class AsyncMovedUnderItsInput(MovedUnderItsInput):
    """`MovedUnderItsInput` for an async run."""

    async def aget_tuple(self, config: Any) -> Any:
        found = await SQLSaver.aget_tuple(self, config)
        if "checkpoint_id" not in config["configurable"]:
            self.intruder.put(thread(), checkpoint(7, {"n": 7}, {"n": 1}), {}, {"n": 1})
        return found


async def test_an_async_runs_input_is_not_written_over_a_head_that_moved(db_url: str) -> None:
    with SQLSaver.from_conn_string(db_url) as tables:
        tables.setup()
    saver = AsyncMovedUnderItsInput(db_url)
    try:
        g = StateGraph(S)
        g.add_node("a", lambda s: {"n": s["n"] + 1})
        g.set_entry_point("a")
        app = g.compile(checkpointer=saver)
        with pytest.raises(CheckpointConflictError, match="thread 't' moved on"):
            await app.ainvoke({"n": 0}, thread())
        history = [t async for t in saver.alist(thread())]
        assert [t.checkpoint["id"] for t in history] == [checkpoint(7, {}, {})["id"]]
        assert history[0].pending_writes == []
        assert (await app.aget_state(thread())).values == {"n": 7}
    finally:
        saver.intruder.close()
        await saver.aclose()


@pytest.mark.postgres
def test_a_finished_run_lets_go_of_its_thread_with_its_last_checkpoint(pg_url: str) -> None:
    with SQLSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        with saver.lock_thread(thread()):
            first = saver.put(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
            assert worker("try", pg_url, "t") == "busy"
            done = saver.put(first, checkpoint(1, {"x": 2}, {"x": 2}, finished=True), {}, {"x": 2})
            # The finished checkpoint is committed, and the thread free, before the run returns.
            assert worker("try", pg_url, "t") == "free"
            # A write after it takes the thread back first (nobody took it meanwhile).
            saver.put(done, checkpoint(2, {"x": 3}, {"x": 3}), {}, {"x": 3})
            assert worker("try", pg_url, "t") == "busy"
        assert worker("try", pg_url, "t") == "free"
        got = saver.get_tuple(thread())
        assert got is not None
        assert got.checkpoint["channel_values"] == {"x": 3}


@pytest.mark.postgres
def test_a_write_after_the_finished_checkpoint_is_refused_if_another_run_took_the_thread(
    pg_url: str,
) -> None:
    with SQLSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        with saver.lock_thread(thread()):
            first = saver.put(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
            done = saver.put(first, checkpoint(1, {"x": 2}, {"x": 2}, finished=True), {}, {"x": 2})
            with (
                held_by_another_process(pg_url, "t"),
                pytest.raises(ThreadLockLostError, match="another run holds the thread"),
            ):
                saver.put(done, checkpoint(2, {"x": 3}, {"x": 3}), {}, {"x": 3})
        got = saver.get_tuple(thread())
        assert got is not None
        assert got.config == done  # nothing written after the finished checkpoint


@pytest.mark.postgres
async def test_an_async_run_lets_go_of_its_thread_with_its_last_checkpoint(pg_url: str) -> None:
    saver = SQLSaver(pg_url)
    try:
        await saver.asetup()
        async with saver.alock_thread(thread()):
            first = await saver.aput(thread(), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
            assert worker("try", pg_url, "t") == "busy"
            last = checkpoint(1, {"x": 2}, {"x": 2}, finished=True)
            done = await saver.aput(first, last, {}, {"x": 2})
            # The finished checkpoint is committed, and the thread free, before the run returns.
            assert worker("try", pg_url, "t") == "free"
            # A write after it takes the thread back first (nobody took it meanwhile).
            await saver.aput(done, checkpoint(2, {"x": 3}, {"x": 3}), {}, {"x": 3})
            assert worker("try", pg_url, "t") == "busy"
        assert worker("try", pg_url, "t") == "free"
        got = await saver.aget_tuple(thread())
        assert got is not None
        assert got.checkpoint["channel_values"] == {"x": 3}
        # After a finished checkpoint another process took: the write is refused.
        async with saver.alock_thread(thread("u")):
            first = await saver.aput(thread("u"), checkpoint(0, {"x": 1}, {"x": 1}), {}, {"x": 1})
            done = await saver.aput(first, last, {}, {"x": 2})
            with (
                held_by_another_process(pg_url, "u"),
                pytest.raises(ThreadLockLostError, match="another run holds the thread"),
            ):
                await saver.aput(done, checkpoint(2, {"x": 3}, {"x": 3}), {}, {"x": 3})
        got = await saver.aget_tuple(thread("u"))
        assert got is not None
        assert got.config == done  # nothing written after the finished checkpoint
    finally:
        await saver.aclose()


@pytest.mark.postgres
async def test_an_async_pause_lets_go_of_its_thread_with_its_interrupt(pg_url: str) -> None:
    saver = SQLSaver(pg_url)
    try:
        await saver.asetup()

        g = StateGraph(P)
        g.add_node("ask", ask)
        g.add_edge(START, "ask")
        app = g.compile(checkpointer=saver)
        for name in ("t", "u"):
            with pytest.raises(GraphInterrupt):
                await app.ainvoke({"log": []}, thread(name))
            assert worker("try", pg_url, name) == "free"
            head = await saver.aget_tuple(thread(name))
            assert head is not None
            assert [w[1] for w in head.pending_writes] == [INTERRUPT]
            assert await app.ainvoke(Command(resume="yes"), thread(name)) == {"log": ["asked yes"]}
            assert worker("try", pg_url, name) == "free"
        # The sessions that held the locks went back to their pool, none left checked out.
        assert saver._alocks_engine().pool.checkedout() == 0
    finally:
        await saver.aclose()


@pytest.mark.postgres
def test_invoke_to_the_end_leaves_the_thread_free_and_one_run_at_a_time(pg_url: str) -> None:
    with SQLSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        g = StateGraph(S)
        g.add_node("a", lambda s: {"n": s["n"] + 1})
        g.set_entry_point("a")
        app = g.compile(checkpointer=saver)
        for expected in (1, 2, 3):
            assert app.invoke({"n": expected - 1}, thread()) == {"n": expected}
            assert worker("try", pg_url, "t") == "free"
        with (
            saver.lock_thread(thread()),
            pytest.raises(ThreadBusyError),
            SQLSaver.from_conn_string(pg_url) as other,
            other.lock_thread(thread()),
        ):
            pass


class P(TypedDict, total=False):
    log: Annotated[list, operator.add]


def ask(state: P) -> P:
    return {"log": [f"asked {interrupt('ok?')}"]}


@pytest.mark.postgres
def test_an_interrupt_beside_another_task_keeps_both_and_the_thread_is_free_after(
    pg_url: str,
) -> None:
    with SQLSaver.from_conn_string(pg_url) as saver:
        saver.setup()

        g = StateGraph(P)
        g.add_node("ask", ask)
        g.add_node("other", lambda s: {"log": ["other"]})
        g.add_edge(START, "ask")
        g.add_edge(START, "other")
        app = g.compile(checkpointer=saver)
        for name in ("t", "u"):
            with pytest.raises(GraphInterrupt):
                app.invoke({"log": []}, thread(name))
            assert worker("try", pg_url, name) == "free"
            head = saver.get_tuple(thread(name))
            assert head is not None
            channels = {w[1] for w in head.pending_writes}
            assert {INTERRUPT, "log"} <= channels  # the other task's writes are kept
            assert app.invoke(Command(resume="yes"), thread(name)) == {
                "log": ["asked yes", "other"]
            }
            assert worker("try", pg_url, name) == "free"


@pytest.mark.postgres
async def test_an_async_run_goes_on_while_the_pool_is_busy_its_writes_on_its_locks_session(
    pg_url: str,
) -> None:
    # The bot's own tables share the saver's pool. An async run on PostgreSQL holds its
    # thread's lock on a session of its own and reads and writes on that session, one
    # operation at a time: it needs no connection of the pool, even while the bot's own work
    # holds every one.
    saver = SQLSaver(pg_url, pool_size=1, max_overflow=0, pool_timeout=2)
    try:
        await saver.asetup()

        g = StateGraph(P)
        g.add_node("ask", ask)
        g.add_node("act", lambda s: {"log": ["acted"]})
        g.add_edge(START, "ask")
        g.add_edge("ask", "act")
        app = g.compile(checkpointer=saver)
        async with saver._async_engine().connect() as busy:  # the pool's only connection
            await busy.exec_driver_sql("SELECT 1")
            with pytest.raises(GraphInterrupt):
                await app.ainvoke({"log": []}, thread())
            done = await app.ainvoke(Command(resume="yes"), thread())
        assert done == {"log": ["asked yes", "acted"]}
        assert worker("try", pg_url, "t") == "free"
        # What the run wrote is what a fresh reader finds.
        with SQLSaver.from_conn_string(pg_url) as reader:
            head = reader.get_tuple(thread())
            assert head is not None
            assert head.checkpoint["channel_values"]["log"] == ["asked yes", "acted"]
    finally:
        await saver.aclose()
