"""A saver a process used, in the child it forks: a web server's workers forked after the app
was built (`gunicorn --preload`), a `multiprocessing` pool, a task queue's forked workers.

The child has a copy of the parent's connections (its sockets and SQLite handles), of the
saver's threads (which are not running there) and of locks other threads held. Each test runs
a real process that uses its saver, forks, pauses and resumes a run in the child, sync and
async, and goes on in the parent; a child that hangs is stopped by an alarm.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = r"""
import asyncio, contextlib, os, signal, sys, threading
from typing import TypedDict

from graphs import END, START, Command, StateGraph, ThreadBusyError, interrupt
from graphs.checkpoint.sql import SQLSaver


class State(TypedDict, total=False):
    amount: int
    approved: bool


def ask(state: State) -> State:
    return {"approved": interrupt({"refund": state["amount"]})}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
saver = SQLSaver(sys.argv[1])
saver.setup()
graph = builder.compile(checkpointer=saver, interrupt_mode="return")


def say(*words: object) -> None:
    # One write a line: the parent and the child print at once to the same pipe.
    os.write(1, (" ".join(map(str, words)) + "\n").encode())


def cycle(who: str) -> None:
    config = {"configurable": {"thread_id": who + "-sync"}}
    assert "__interrupt__" in graph.invoke({"amount": 42}, config)
    assert graph.invoke(Command(resume=True), config)["approved"] is True

    async def run() -> None:
        config = {"configurable": {"thread_id": who + "-async"}}
        assert "__interrupt__" in await graph.ainvoke({"amount": 7}, config)
        assert (await graph.ainvoke(Command(resume=True), config))["approved"] is True

    asyncio.run(run())
    say(who, "paused and resumed, sync and async")


cycle("parent")  # its pools, its threads, its connections, all used once
busy = sys.argv[2:] == ["busy"]
if busy:  # another thread is mid-run as the process forks: it holds its thread, and the gate
    held, forked, child_done = threading.Event(), threading.Event(), threading.Event()

    def mid_run() -> None:
        with saver.lock_thread({"configurable": {"thread_id": "held"}}):
            with saver._gate.hold() if saver._gate is not None else contextlib.nullcontext():
                held.set()
                forked.wait()
            child_done.wait()  # its thread held until the child asked for it

    worker = threading.Thread(target=mid_run)
    worker.start()
    held.wait()
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # a hang kills the child (SIGALRM)
    cycle("child")
    if busy:  # the parent's run holds its thread, as another process's would
        try:
            graph.invoke({"amount": 1}, {"configurable": {"thread_id": "held"}})
        except ThreadBusyError as e:
            say("child refused the parent's thread:", e)
    os._exit(0)
if busy:
    forked.set()
cycle("parent-after")  # the parent's own connections still answer
_, status = os.waitpid(pid, 0)
if busy:
    child_done.set()
    worker.join()
say("child exit", os.waitstatus_to_exitcode(status))
done = graph.get_state({"configurable": {"thread_id": "child-async"}})
say("the child's run, read by the parent:", done.values)
saver.close()
"""


INSIDE_A_RUN = r"""
import os, sys
from typing import TypedDict

from graphs import END, START, StateGraph, ThreadLockLostError
from graphs.checkpoint.sql import SQLSaver


class State(TypedDict):
    n: int


def say(*words: object) -> None:
    os.write(1, (" ".join(map(str, words)) + "\n").encode())


def forks(state: State) -> State:
    if state["n"]:  # (the thread's next run forks no more)
        return {"n": state["n"] + 1}
    pid = os.fork()  # the child returns into the run, as the parent does
    if pid:
        _, status = os.waitpid(pid, 0)  # the child's copy of the run has ended
        say("child exit", os.waitstatus_to_exitcode(status))
    return {"n": state["n"] + 1}


def after(state: State) -> State:
    say("parent" if os.getpid() == PARENT else "child", "ran the step after", state["n"])
    return {"n": state["n"] + 10}


builder = StateGraph(State)
builder.add_node("forks", forks)
builder.add_node("after", after)
builder.add_edge(START, "forks")
builder.add_edge("forks", "after")
builder.add_edge("after", END)
saver = SQLSaver(sys.argv[1])
saver.setup()
graph = builder.compile(checkpointer=saver)
PARENT = os.getpid()
config = {"configurable": {"thread_id": "forked-mid-run"}}
try:
    out = graph.invoke({"n": 0}, config)
except BaseException as e:
    if os.getpid() == PARENT:
        raise
    say("child stopped:", type(e).__name__, e)
    os._exit(0)
if os.getpid() != PARENT:
    say("child went on with the run:", out)
    os._exit(0)
say("parent's run:", out)
say("stored:", graph.get_state(config).values)
print(graph.invoke({"n": 100}, config), flush=True)  # the thread's lock was let go of
saver.close()
"""


def _run(*args: str, program: str = PROGRAM) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-c", program, *args],
        check=False,  # (the output says what went wrong)
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out


def test_a_forked_child_pauses_and_resumes_on_its_parents_saver(db_url: str) -> None:
    out = _run(db_url)
    lines = out.stdout.splitlines()
    assert "child paused and resumed, sync and async" in lines, out.stdout + out.stderr
    assert "child exit 0" in lines, out.stdout + out.stderr
    assert "parent-after paused and resumed, sync and async" in lines, out.stdout
    assert "the child's run, read by the parent: {'amount': 7, 'approved': True}" in lines


def test_a_run_mid_way_in_the_parent_holds_up_nothing_in_the_child(db_url: str) -> None:
    """Another thread of the parent holds a thread (and on SQLite the write gate) as the
    process forks: the child pauses and resumes its own runs, and is refused the parent's
    thread as another process is, at once."""
    out = _run(db_url, "busy")
    lines = out.stdout.splitlines()
    assert "child paused and resumed, sync and async" in lines, out.stdout + out.stderr
    assert "child exit 0" in lines, out.stdout + out.stderr
    refused = [line for line in lines if line.startswith("child refused the parent's thread:")]
    assert refused and "another process" in refused[0], out.stdout


def test_a_run_forked_from_inside_goes_on_in_the_parent_alone(db_url: str) -> None:
    """A node forks and the child returns into the run, as the parent does: the child's copy
    is refused its first write and lets go of nothing of the parent's (its lock, its
    connection); the parent's run ends as if nothing had forked, and each step ran once."""
    out = _run(db_url, program=INSIDE_A_RUN)
    lines = out.stdout.splitlines()
    stopped = [line for line in lines if line.startswith("child stopped:")]
    assert stopped and "ThreadLockLostError" in stopped[0], out.stdout + out.stderr
    assert "forked from inside a run" in stopped[0], out.stdout
    assert "child exit 0" in lines, out.stdout
    assert lines.count("parent ran the step after 1") == 1, out.stdout
    assert not any(line.startswith("child ran") for line in lines), out.stdout
    assert "parent's run: {'n': 11}" in lines, out.stdout + out.stderr
    assert "stored: {'n': 11}" in lines, out.stdout
    assert "{'n': 111}" in lines, out.stdout + out.stderr  # (the next run took the thread)
