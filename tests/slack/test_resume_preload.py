"""`signoff run` loads, once it serves, what the first decision's resume would load on first
use: reading a paused run's state then imports nothing more, so the first job after a burst of
clicks starts does not hold the event loop the clicks' acks wait on (with the import, a tenth of
a second or more on a busy machine, in the middle of the burst)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READ_PAUSED = """
import asyncio, sys
from typing import TypedDict

import bot.http.app as bot_app

if sys.argv[1] == "preload":
    asyncio.run(bot_app._preload())  # as `signoff run` does once it serves

from graphs.checkpoint.memory import InMemorySaver
from graphs.graph import START, StateGraph
from graphs.types import interrupt


class S(TypedDict):
    x: int


def ask(state: S) -> S:
    return {"x": interrupt("ok?")}


g = StateGraph(S)
g.add_node("ask", ask)
g.add_edge(START, "ask")
graph = g.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "t"}}
graph.invoke({"x": 0}, config)
before = set(sys.modules)
state = graph.get_state(config)  # what a resume reads first
assert len(state.interrupts) == 1
print(len(set(sys.modules) - before))
"""


def modules_loaded_by_the_read(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", READ_PAUSED, mode],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_after_the_preload_reading_a_paused_run_imports_nothing() -> None:
    assert modules_loaded_by_the_read("preload") == 0
    # without it the same read loads modules (what the preload is for)
    assert modules_loaded_by_the_read("none") > 0
