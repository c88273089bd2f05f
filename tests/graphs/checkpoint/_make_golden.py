"""Write golden/sql_rev<REVISION>.json: the SQL saver's stored rows for a small thread.

    .venv/bin/python tests/graphs/checkpoint/_make_golden.py

Run it only when adding a schema revision or a format version: the files of earlier revisions
must stay as they are, so that the test proves stored data of every revision still reads.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from graphs import Interrupt
from graphs.checkpoint import Checkpoint, serde
from graphs.checkpoint._sql.tables import SCHEMA_REVISION, metadata
from graphs.checkpoint.base import INTERRUPT, RESUME
from graphs.checkpoint.sql import SQLSaver

HERE = Path(__file__).parent


def build(saver: SQLSaver) -> None:
    config = {"configurable": {"thread_id": "golden", "checkpoint_ns": ""}}
    messages: list[object] = []
    for seq in range(4):
        if seq:
            messages = [*messages, {"n": seq, "at": dt.date(2026, 1, seq), "tags": ("a", seq)}]
        new_versions = {"messages": seq + 1, "turn": seq + 1}
        if seq == 0:
            new_versions["owner"] = 1
        cp = Checkpoint(
            v=1,
            id=f"{seq:012x}-0000000{seq}",
            ts=f"2026-01-01T00:00:0{seq}+00:00",
            channel_values={"messages": messages, "turn": seq, "owner": b"ada"},
            channel_versions={"messages": seq + 1, "turn": seq + 1, "owner": 1},
            next_tasks=[["ask", f"task{seq}"]],
            paused=[],
            appended={"messages": 1} if seq else {},
        )
        config = saver.put(config, cp, {"source": "loop", "step": seq}, new_versions)
    saver.put_writes(config, [(INTERRUPT, Interrupt({"amount": 42}, "i1", "ask"))], "task3")
    saver.put_writes(config, [(INTERRUPT, Interrupt("sure?", "i2", "ask", 1))], "task3")
    saver.put_writes(config, [(RESUME, ["i1", {"approved": True}])], "task3")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "golden.db"
        with SQLSaver.from_conn_string(f"sqlite:///{path}") as saver:
            saver.setup()
            build(saver)
            head = saver.get_tuple({"configurable": {"thread_id": "golden"}})
            paused = saver.list_paused()
        conn = sqlite3.connect(path)
        tables = {}
        for table in metadata.sorted_tables:
            cursor = conn.execute(f"SELECT * FROM {table.name}")
            columns = [d[0] for d in cursor.description]
            tables[table.name] = [
                {c: (v.decode() if isinstance(v, bytes) else v) for c, v in zip(columns, row)}
                for row in cursor
            ]
        conn.close()
    assert head is not None
    golden = {
        "revision": SCHEMA_REVISION,
        "tables": tables,
        "expect": {
            "checkpoint_id": head.checkpoint["id"],
            "parent_id": head.parent_config["configurable"]["checkpoint_id"],  # type: ignore[index]
            "values": serde.dumps(head.checkpoint["channel_values"]),
            "metadata": serde.dumps(head.metadata),
            "pending_writes": serde.dumps([list(w) for w in head.pending_writes]),
            "paused": serde.dumps([list(p.interrupts) for p in paused]),
        },
    }
    out = HERE / "golden" / f"sql_rev{SCHEMA_REVISION}.json"
    out.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
