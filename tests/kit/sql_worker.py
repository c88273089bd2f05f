"""A separate process for the SQL saver tests: it shares nothing with the test but the URL.

    python tests/kit/sql_worker.py COMMAND URL [THREAD] [ARG]

Run as a script (`PATH`), it imports only `graphs`; the tests also import it for its graphs.

Commands print one line the test reads (JSON where there is data), and exit 0.

    setup URL                 run SQLSaver.setup()
    hold URL THREAD           take lock_thread, print "holding", wait to be killed
    try URL THREAD            print "busy" or "free" for lock_thread
    start URL THREAD          run the approval graph until its interrupt(); print the payloads
    start_static URL THREAD   run the static-pause graph until interrupt_before=["act"]
    resume URL THREAD ANSWER  Command(resume={"approved": ANSWER == "yes"}); print the state
    resume_static URL THREAD  invoke(None); print the state
    crash URL THREAD MARKER   run the slow graph; its node "slow" touches MARKER and hangs
    resume_crash URL THREAD   invoke(None) on the slow graph (no longer slow); print the state
    race URL                  for each line "THREAD" on stdin: print "ready", wait for "go",
                              resume THREAD, print "ok" / "busy MESSAGE" / "resume MESSAGE"
"""

from __future__ import annotations

import json
import operator
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphs import (
    END,
    START,
    Command,
    GraphInterrupt,
    ResumeError,
    SQLSaver,
    StateGraph,
    ThreadBusyError,
    interrupt,
)

PATH = str(Path(__file__).resolve())
"""This script, for `[sys.executable, PATH, COMMAND, ...]`."""


class State(TypedDict, total=False):
    log: Annotated[list, operator.add]
    request: str
    approved: bool


def config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def approval_graph(saver: SQLSaver) -> Any:
    """draft -> approve (interrupt) -> act: the article's refund flow."""

    def draft(state: State) -> dict[str, Any]:
        return {"log": ["draft"], "request": "refund 42"}

    def approve(state: State) -> dict[str, Any]:
        decision = interrupt({"action": "refund", "amount": 42, "request": state["request"]})
        return {"log": ["approve"], "approved": bool(decision["approved"])}

    def act(state: State) -> dict[str, Any]:
        return {"log": ["act" if state["approved"] else "rejected"]}

    g = StateGraph(State)
    g.add_node("draft", draft)
    g.add_node("approve", approve)
    g.add_node("act", act)
    g.add_edge(START, "draft")
    g.add_edge("draft", "approve")
    g.add_edge("approve", "act")
    g.add_edge("act", END)
    return g.compile(checkpointer=saver)


def static_graph(saver: SQLSaver) -> Any:
    """draft -> act, paused before act."""
    g = StateGraph(State)
    g.add_node("draft", lambda s: {"log": ["draft"]})
    g.add_node("act", lambda s: {"log": ["act"]})
    g.add_edge(START, "draft")
    g.add_edge("draft", "act")
    g.add_edge("act", END)
    return g.compile(checkpointer=saver, interrupt_before=["act"])


def slow_graph(saver: SQLSaver, marker: str | None) -> Any:
    """first -> slow -> last; `slow` hangs (after touching `marker`) when a marker is given."""

    def slow(state: State) -> dict[str, Any]:
        if marker:
            Path(marker).write_text(str(os.getpid()))
            time.sleep(120)
        return {"log": ["slow"]}

    g = StateGraph(State)
    g.add_node("first", lambda s: {"log": ["first"]})
    g.add_node("slow", slow)
    g.add_node("last", lambda s: {"log": ["last"]})
    g.add_edge(START, "first")
    g.add_edge("first", "slow")
    g.add_edge("slow", "last")
    g.add_edge("last", END)
    return g.compile(checkpointer=saver)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    command, url = argv[0], argv[1]
    saver = SQLSaver(url)
    if command == "setup":
        saver.setup()
        say("ok")
        return 0
    thread_id = argv[2] if len(argv) > 2 else ""
    if command == "hold":
        with saver.lock_thread(config(thread_id)):
            say("holding")
            time.sleep(300)
        return 0
    if command == "try":
        try:
            with saver.lock_thread(config(thread_id)):
                say("free")
        except ThreadBusyError:
            say("busy")
        return 0
    if command in ("start", "start_static"):
        graph = approval_graph(saver) if command == "start" else static_graph(saver)
        try:
            graph.invoke({"log": []}, config(thread_id))
        except GraphInterrupt as e:
            say(json.dumps([i.value for i in e.interrupts]))
            return 0
        say("did not pause")
        return 1
    if command == "resume":
        state = approval_graph(saver).invoke(
            Command(resume={"approved": argv[3] == "yes"}), config(thread_id)
        )
        say(json.dumps(state))
        return 0
    if command == "resume_static":
        say(json.dumps(static_graph(saver).invoke(None, config(thread_id))))
        return 0
    if command == "crash":
        slow_graph(saver, argv[3]).invoke({"log": []}, config(thread_id))
        return 1
    if command == "resume_crash":
        say(json.dumps(slow_graph(saver, None).invoke(None, config(thread_id))))
        return 0
    if command == "race":
        graph = approval_graph(saver)
        for line in sys.stdin:
            race_thread = line.strip()
            say("ready")
            if sys.stdin.readline().strip() != "go":
                return 1
            try:
                graph.invoke(Command(resume={"approved": True}), config(race_thread))
                say("ok")
            except ThreadBusyError as e:
                say(f"busy {e}")
            except ResumeError as e:
                say(f"resume {e}")
        return 0
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
