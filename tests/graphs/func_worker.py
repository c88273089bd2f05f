"""A process that runs an entrypoint of two tasks on SQLite, for the restart test.

    python func_worker.py start URL THREAD LOG MARKER   # dies (is killed) inside the 2nd task
    python func_worker.py resume URL THREAD LOG         # resumes the thread; prints the result

Each task appends its name to LOG as it starts, so the test can count how often each ran.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from graphs import SQLSaver
from graphs.func import entrypoint, task


def main(mode: str, url: str, thread_id: str, log: str, marker: str = "") -> None:
    def note(name: str) -> None:
        with open(log, "a") as f:
            f.write(name + "\n")

    @task
    def first(x: int) -> int:
        note("first")
        return x + 1

    @task
    def second(x: int) -> int:
        note("second")
        if mode == "start":
            Path(marker).touch()  # the first task's result is saved by now
            time.sleep(600)  # killed here
        return x * 10

    saver = SQLSaver(url)
    saver.setup()

    @entrypoint(checkpointer=saver)
    def flow(x: int) -> dict[str, int]:
        a = first(x).result()
        b = second(a).result()
        return {"a": a, "b": b}

    config = {"configurable": {"thread_id": thread_id}}
    out = flow.invoke(5 if mode == "start" else None, config)
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
