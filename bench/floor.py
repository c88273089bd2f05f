"""The floor: one bare durable commit, beside the durable superstep (w2), in one run.

A durable superstep cannot be cheaper than the one commit that makes it durable. This script
measures that commit with the drivers and settings `SQLSaver` uses, and w2's ms per durable
superstep (`bench/checkpointer.py`'s first row) in the same sitting, the floor right before and
right after each w2, and prints their ratio beside the load average:

- SQLite: the saver's own sync engine (so its pragmas: WAL, `synchronous=FULL`, the busy
  timeout), one raw connection, `BEGIN IMMEDIATE`, an INSERT of one 200-byte row, COMMIT;
- PostgreSQL: the saver's own sync engine (psycopg 3), one raw connection in autocommit mode,
  an INSERT of one 200-byte row into a logged table: one statement, which is its own durable
  transaction, in one round trip. That is the shape of the saver's own write of a step (one
  statement in autocommit mode); a BEGIN, INSERT, COMMIT in three round trips would flatter
  the ratio by the two trips the saver does not make.

Between the two sits the saver's own write of a step with no engine around it: `SQLSaver.put`
of w2's checkpoints one after another, on one thread held as a run holds it (`put_alone`). The
step beyond it is the engine's and the run's fixed trips (its lock, head and input); the put
beyond the bare commit is the saver's statement and its Python. On PostgreSQL, beneath the
put sits its statement alone (`statement_alone`): w2's put statements rendered before the
clock starts and sent with no Python around them, each right after a bare commit on the same
connection; the table shows their ratio. It is what the server's work on three tables costs
beyond the bare commit's one row, and what no Python of ours can take away.

Issue 37's goal is a durable superstep of at most 1.5 bare commits. `--rounds N` alternates
floor / w2 / the put alone (and its statement) / floor N times; the table shows medians over
rounds (each floor and put figure is the median of `--commits` of them). Records go to
bench/results/floor-<UTC>.jsonl.

    .venv/bin/python bench/floor.py [--rounds 3] [--backends sqlite,postgres] [--engines graphs]

`--measure sqlite|postgres` is the floor alone, one subprocess's worth (what the script runs), and
with `--put` the put alone, with `--statement` (PostgreSQL) its statement alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from harness import ROOT, Session, add_common_args, fmt, show, table

GOAL = 1.5  # issue 37: a durable superstep of at most 1.5 bare commits
LABEL = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
PAYLOAD = os.urandom(200)
T = TypeVar("T")


def load() -> float:
    return os.getloadavg()[0]


def _timed(commit: Any, n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        commit()
    pc = time.perf_counter_ns
    times = []
    for _ in range(n):
        t0 = pc()
        commit()
        times.append((pc() - t0) / 1e6)
    return times


def floor_sqlite(n: int, warmup: int) -> list[float]:
    from graphs.checkpoint.sql import SQLSaver  # the checkout under test (PYTHONPATH)

    with tempfile.TemporaryDirectory(prefix="floor-") as tmp:
        saver = SQLSaver(f"sqlite:///{tmp}/floor.db")
        try:
            raw = saver._sync_engine().raw_connection()  # the saver's pragmas, its driver
            try:
                cur = raw.cursor()
                cur.execute("CREATE TABLE floor (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
                sync = cur.execute("PRAGMA synchronous").fetchone()[0]
                journal = cur.execute("PRAGMA journal_mode").fetchone()[0]
                assert (sync, journal) == (2, "wal"), (sync, journal)  # FULL, WAL

                def commit() -> None:
                    cur.execute("BEGIN IMMEDIATE")
                    cur.execute("INSERT INTO floor (v) VALUES (?)", (PAYLOAD,))
                    raw.commit()

                return _timed(commit, n, warmup)
            finally:
                raw.close()
        finally:
            saver.close()


def floor_postgres(n: int, warmup: int, url: str) -> list[float]:
    from graphs.checkpoint.sql import SQLSaver  # the checkout under test (PYTHONPATH)

    table_name = f"floor_{uuid.uuid4().hex[:12]}"
    saver = SQLSaver(url)
    try:
        raw = saver._sync_engine().raw_connection()  # psycopg 3, as the saver's writes
        try:
            raw.dbapi_connection.autocommit = True  # one statement, one durable commit
            cur = raw.cursor()
            cur.execute(f"CREATE TABLE {table_name} (id bigserial PRIMARY KEY, v bytea NOT NULL)")
            insert = f"INSERT INTO {table_name} (v) VALUES (%s)"

            def commit() -> None:
                cur.execute(insert, (PAYLOAD,))

            try:
                return _timed(commit, n, warmup)
            finally:
                cur.execute(f"DROP TABLE {table_name}")
                raw.dbapi_connection.autocommit = False
        finally:
            raw.close()
    finally:
        saver.close()


def w2_step(i: int) -> tuple[Any, Any, dict[str, int]]:
    """What the saver is given for step `i` of w2's chain: the checkpoint (one int channel
    written, one task next), its metadata and its new versions."""
    from graphs.checkpoint.base import new_checkpoint, new_checkpoint_id

    checkpoint = new_checkpoint(
        new_checkpoint_id(i),
        datetime.datetime.now(datetime.UTC).isoformat(),
        {"n": i},
        {"__start__": 2, "n": i},
        [["n1", str(uuid.UUID(int=i))]],
        [],
        {},
    )
    return checkpoint, {"source": "loop", "step": i, "parents": {}}, {"n": i}


def put_alone(url: str, n: int, warmup: int) -> list[float]:
    """The saver's own write of a step with no engine around it: `SQLSaver.put` of w2's
    checkpoints (one int channel written, one task next), each on the one before, on one thread
    held as a run holds it (`lock_thread`: on PostgreSQL, its lock's connection). What a step
    costs beyond this is the engine's, and the run's fixed trips (its lock, head and input)."""
    from graphs.checkpoint.sql import SQLSaver  # the checkout under test (PYTHONPATH)

    saver = SQLSaver(url)
    try:
        saver.setup()
        config: Any = {
            "configurable": {"thread_id": f"floor-{uuid.uuid4().hex}", "checkpoint_ns": ""}
        }
        seq = iter(range(1, n + warmup + 2))

        def put() -> None:
            nonlocal config
            config = saver.put(config, *w2_step(next(seq)))

        with saver.lock_thread(config):
            put()  # the thread's first checkpoint (an insert, not a step)
            return _timed(put, n, warmup)
    finally:
        saver.close()


def statement_alone(url: str, n: int, warmup: int) -> tuple[list[float], list[float]]:
    """The saver's statement of a step with no Python around it: w2's checkpoints rendered as
    `SQLSaver.put` renders them (`_put_args`, `_put_pg_statement`: one data-modifying WITH that
    moves the head, inserts the checkpoint and its one value) before the clock starts, then
    sent one after another, each by the saver's own wire (prepared, binary), in autocommit
    mode, as its one durable commit. Each goes right after a bare INSERT (`floor_postgres`'s)
    on the same connection, so the two are timed at the same moment. Returns both lists (ms):
    the statement's, then the bare commit's beside it.

    What a step costs beyond the statement is Python (the engine's, the saver's) and the
    run's fixed trips; what the statement costs beyond the bare commit is the server's work on
    three tables and their indexes, and the statement's larger parameters."""
    from graphs.checkpoint import _delta
    from graphs.checkpoint._sql.statements import _DIALECTS
    from graphs.checkpoint._sql.wire import wire_of
    from graphs.checkpoint._sql.write import _put_args, _put_pg_statement
    from graphs.checkpoint.sql import SQLSaver  # the checkout under test (PYTHONPATH)

    thread = f"floor-{uuid.uuid4().hex}"
    heads, dialect = _delta.Heads(), _DIALECTS["postgresql"]
    statements = []
    parent: dict[str, Any] = {}
    for i in range(n + warmup + 1):
        checkpoint, metadata, new_versions = w2_step(i)
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": "", **parent}}
        args = _put_args((thread, ""), config, checkpoint, metadata, new_versions, heads)
        statements.append(_put_pg_statement(dialect, *args))
        parent = {"checkpoint_id": checkpoint["id"]}

    saver = SQLSaver(url)
    try:
        saver.setup()
        raw = saver._sync_engine().raw_connection()
        try:
            raw.dbapi_connection.autocommit = True
            wire = wire_of(raw.dbapi_connection)
            assert wire is not None, "psycopg 3 with libpq 14 or later, as the saver's writes"
            wire.one("CREATE TABLE floor (id bigserial PRIMARY KEY, v bytea NOT NULL)")
            pc = time.perf_counter_ns
            put_ms: list[float] = []
            bare_ms: list[float] = []
            wire.one(*statements[0])  # the thread's first checkpoint (an insert, not a step)
            for i, statement in enumerate(statements[1:]):
                t0 = pc()
                wire.one("INSERT INTO floor (v) VALUES (%(v)s)", {"v": PAYLOAD})
                t1 = pc()
                moved = wire.one(*statement)
                t2 = pc()
                assert moved == 1, "the head did not move: the statements are not a chain"
                if i >= warmup:
                    bare_ms.append((t1 - t0) / 1e6)
                    put_ms.append((t2 - t1) / 1e6)
            return put_ms, bare_ms
        finally:
            raw.close()
    finally:
        saver.close()


def measure(args: argparse.Namespace) -> None:
    """`--measure BACKEND`: the floor alone, one JSON record to stdout (and `--out`)."""
    sys.path.insert(0, str(ROOT))  # PYTHONPATH (harness.engine_env) names the checkout first
    import graphs  # the checkout under test

    before = load()
    url = args.pg_url or _pg_default()
    beside: list[float] = []
    if args.statement:
        if args.measure != "postgres":
            sys.exit("--statement measures PostgreSQL's put statement (SQLite's put is not one)")
        ms, beside = _in_fresh_schema(url, statement_alone, args.commits, args.warmup)
    elif args.put:
        ms = _put_alone(args.measure, url, args.commits, args.warmup)
    elif args.measure == "sqlite":
        ms = floor_sqlite(args.commits, args.warmup)
    else:
        ms = floor_postgres(args.commits, args.warmup, url)
    srt = sorted(ms)
    rec = {
        "engine": "graphs",
        "engine_version": getattr(graphs, "__version__", "-"),
        "saver": args.measure,
        "workload": "statement_alone" if args.statement else "put_alone" if args.put else "floor",
        "figures": {
            "commits": len(ms),
            "median_ms": round(statistics.median(ms), 4),
            **({"floor_beside_ms": round(statistics.median(beside), 4)} if beside else {}),
            "p99_ms": round(srt[min(len(srt) - 1, round(0.99 * (len(srt) - 1)))], 4),
            "load_before": before,
            "load_after": load(),
        },
        "host": {"nproc": os.cpu_count(), "python": platform.python_version()},
    }
    line = json.dumps(rec)
    print(line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")


def _put_alone(backend: str, pg_url: str, n: int, warmup: int) -> list[float]:
    """`put_alone` on a new SQLite file, or in a new PostgreSQL schema (dropped after)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="floor-") as tmp:
            return put_alone(f"sqlite:///{tmp}/put.db", n, warmup)
    return _in_fresh_schema(pg_url, put_alone, n, warmup)


def _in_fresh_schema(pg_url: str, fn: Callable[[str, int, int], T], n: int, warmup: int) -> T:
    """`fn(url, n, warmup)` with `url` in a new PostgreSQL schema, dropped after."""
    import psycopg
    from list_paused import load_workloads  # ../shared/bench/workloads.py's schema helpers

    schema, url = load_workloads().pg_fresh_schema(pg_url)
    try:
        return fn(url, n, warmup)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _pg_default() -> str:
    from harness import DEFAULT_PG_URL

    return DEFAULT_PG_URL


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.set_defaults(engines="graphs")
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--rounds", type=int, default=3, help="floor / w2 / floor, this many times")
    ap.add_argument("--commits", type=int, default=1000, help="bare commits per floor figure")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--w2-invokes", default="300")
    ap.add_argument("--measure", choices=sorted(LABEL), help=argparse.SUPPRESS)
    ap.add_argument("--put", action="store_true", help=argparse.SUPPRESS)  # with --measure
    ap.add_argument("--statement", action="store_true", help=argparse.SUPPRESS)  # the same
    args = ap.parse_args()
    if args.measure:
        measure(args)
        return

    s = Session("floor", args)
    s.probe("graphs", "import graphs; graphs.SQLSaver")
    s.probe("langgraph", "import langgraph.checkpoint.sqlite, langgraph.checkpoint.postgres")
    backends = [b for b in args.backends.split(",") if b in LABEL]
    pg = ["--pg-url", args.pg_url] if args.pg_url else []
    floor_cmd = [args.python, "bench/floor.py", "--commits", str(args.commits), *pg]
    loads: dict[str, list[float]] = {b: [] for b in backends}
    for _ in range(args.rounds):
        for b in backends:
            s.subprocess("graphs", [*floor_cmd, "--measure", b])
            for engine in ("graphs", "langgraph"):
                loads[b].append(load())
                s.workloads(
                    engine,
                    "--workload",
                    "w2",
                    "--saver",
                    b,
                    "--w2-invokes",
                    args.w2_invokes,
                    "--durability-extra=",
                )
            s.subprocess("graphs", [*floor_cmd, "--measure", b, "--put"])
            if b == "postgres":
                s.subprocess("graphs", [*floor_cmd, "--measure", b, "--statement"])
            s.subprocess("graphs", [*floor_cmd, "--measure", b])

    rows = []
    for b in backends:
        floors = [
            r["figures"]
            for r in s.records("graphs")
            if r["workload"] == "floor" and r["saver"] == b
        ]
        floor = statistics.median(f["median_ms"] for f in floors) if floors else None
        spread = (
            f"{min(f['median_ms'] for f in floors):.3f}-{max(f['median_ms'] for f in floors):.3f}"
            if floors
            else "-"
        )
        puts = [
            r["figures"]["median_ms"]
            for r in s.records("graphs")
            if r["workload"] == "put_alone" and r["saver"] == b
        ]
        put = statistics.median(puts) if puts else None
        # The statement alone, over the bare commit timed beside it (each run's ratio)
        alone_ratios = [
            r["figures"]["median_ms"] / r["figures"]["floor_beside_ms"]
            for r in s.records("graphs")
            if r["workload"] == "statement_alone" and r["saver"] == b
        ]
        statement = statistics.median(alone_ratios) if alone_ratios else None
        for engine in ("graphs", "langgraph"):
            step = s.median(engine, "durable10", b, "median_ms_per_superstep")
            if step is None:
                continue
            r = None if floor in (None, 0) else step / floor
            alone = "-"
            if engine == "graphs" and put is not None and floor:
                alone = f"{fmt(put, 3)} ({fmt(put / floor, 2, 'x')})"
            rows.append(
                [
                    LABEL[b],
                    engine,
                    fmt(step, 3),
                    f"{fmt(floor, 3)} ({spread})",
                    fmt(r, 2, "x"),
                    alone,
                    fmt(statement, 2, "x") if engine == "graphs" else "-",
                    f"<= {GOAL}x" if engine == "graphs" else "-",
                    fmt(min(loads[b]), 1) + "-" + fmt(max(loads[b]), 1),
                ]
            )
            s.emit(
                {
                    "engine": "compare",
                    "workload": "floor_ratio",
                    "saver": b,
                    "figures": {
                        "engine": engine,
                        "ms_per_durable_superstep": step,
                        "floor_ms": floor,
                        "ratio": r,
                        "put_alone_ms": put if engine == "graphs" else None,
                        "statement_alone_ratio": statement if engine == "graphs" else None,
                        "goal_at_most": GOAL if engine == "graphs" else None,
                        "loads": loads[b],
                    },
                }
            )

    print(s.header())
    for line in s.report_unavailable():
        print(line)
    print()
    head = [
        "backend",
        "engine",
        "w2 ms per durable superstep",
        "bare commit ms (range)",
        "step / commit",
        "the saver's put alone ms (/ commit)",
        "its statement alone / a bare commit beside it",
        "goal",
        "load average",
    ]
    print(table(head, rows))
    print(f"\nresults: {show(s.out)}")
    raise SystemExit(1 if any(r.error for r in s.runs) else 0)


if __name__ == "__main__":
    main()
