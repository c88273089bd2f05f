"""w2 and w4 on PostgreSQL, interleaved in small slices between long-lived processes, so that
every engine sees the same load on a busy machine.

`floor.py` and `checkpointer.py` alternate whole workloads (seconds to minutes each); on a
machine whose load swings from 3 to 9 within a minute, the engines of one round then see
different machines. Here one process per engine stays up with its graphs built and its schema
made: this checkout's `graphs`, optionally another checkout's (`--base PATH`), LangGraph (its
throwaway venv, `bench/langgraph-venv.sh`), and the bare commit (`floor.py`'s: one INSERT in
autocommit mode with psycopg, the shape of the saver's write of a step). Each slice asks every
process in turn for a few invokes (w2: the 10-node chain, a new thread each; w4: a pause and its
resume, a new thread each) or a few bare commits, and the medians are taken over every sample
of every slice. Ratios are read from one such run. Beside our figures: the time our runs
spent in their round trips, and a w2 run's round trips one by one (the median of each place).

    .venv/bin/python bench/interleaved.py [--slices 30] [--base PATH] [--no-langgraph]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LG_PYTHON = os.environ.get("LANGGRAPH_VENV", "/tmp/signoff-lg-venv") + "/bin/python"
PAYLOAD = os.urandom(200)


def serve(engine_name: str, pg_url: str | None) -> None:
    """A child: build the graphs, then answer `w2 N`, `w4 N`, `floor N` with times (ns)."""
    import time

    sys.path.insert(0, str(ROOT / "bench"))
    from list_paused import load_workloads

    wl = load_workloads()
    base_url = pg_url or os.environ.get("BENCH_PG_URL") or wl.DEFAULT_PG_URL
    schema, url = wl.pg_fresh_schema(base_url)
    pc = time.perf_counter_ns
    counter = iter(range(10**9))
    if engine_name == "floor":
        import psycopg

        conn = psycopg.connect(url, autocommit=True)  # one statement, one durable commit
        table = f"floor_{uuid.uuid4().hex[:12]}"
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, v bytea NOT NULL)")
        insert = f"INSERT INTO {table} (v) VALUES (%s)"

        def floor() -> None:
            conn.execute(insert, (PAYLOAD,))

    else:
        engine = wl.Engine(engine_name)
        saver = engine.make_postgres_saver(url)
        chain = wl.build_linear10(engine, saver)
        approval = wl.build_approval(engine, saver)
    in_trips = _time_round_trips() if engine_name == "graphs" else None

    def cfg(tag: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"{tag}-{next(counter)}"}}

    print("ready", flush=True)
    for line in sys.stdin:
        what, n = line.split()
        out: list[Any] = []
        for _ in range(int(n)):
            if what == "floor":
                t0 = pc()
                floor()
                out.append(pc() - t0)
            elif what == "w2":
                c = cfg("w2")
                trips = _trips(in_trips)
                t0 = pc()
                chain.invoke({"n": 0}, c)
                dt = pc() - t0
                each = in_trips[trips:] if in_trips is not None else []
                out.append((dt, sum(each), each))
            else:
                c = cfg("w4")
                trips = _trips(in_trips)
                t0 = pc()
                approval.invoke({"request": "x"}, c)
                t1 = pc()
                paused = _trips(in_trips)
                approval.invoke(engine.Command(resume={"approved": True}), c)
                t2 = pc()
                out.append(
                    (t1 - t0, t2 - t1, _spent(in_trips, trips, paused), _spent(in_trips, paused))
                )
        print(json.dumps(out), flush=True)
    if engine_name == "floor":
        conn.close()
    else:
        wl.close_saver(saver)
    wl.drop_db(
        {"kind": "postgres", "schema": schema}, SimpleNamespace(keep_db=False, pg_url=base_url)
    )


def _time_round_trips() -> list[int] | None:
    """Time each round trip this process makes to PostgreSQL (each exchange on the saver's
    wire: libpq sending, the server, libpq reading the answers), in ns, into the list returned;
    None where the checkout has no wire (an older `--base`)."""
    import time

    try:
        from graphs.checkpoint._sql.wire import Wire
    except ImportError:
        return None
    each: list[int] = []
    exchange = Wire._exchange
    pc = time.perf_counter_ns

    def timed(self: Any, encoded: Any) -> Any:
        t0 = pc()
        try:
            return exchange(self, encoded)
        finally:
            each.append(pc() - t0)

    Wire._exchange = timed  # type: ignore[method-assign]
    return each


def _trips(each: list[int] | None) -> int:
    """How many round trips `_time_round_trips` timed so far."""
    return 0 if each is None else len(each)


def _spent(each: list[int] | None, since: int, until: int | None = None) -> int:
    return 0 if each is None else sum(each[since:until])


class Child:
    def __init__(
        self, name: str, python: str, engine: str, pythonpath: str | None, pg: Any
    ) -> None:
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        args = [python, __file__, "--serve", engine] + (["--pg-url", pg] if pg else [])
        self.name = name
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def ask(self, what: str, n: int) -> list[Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{what} {n}\n")
        self.proc.stdin.flush()
        return list(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def med(xs: list[float]) -> float:
    return statistics.median(xs) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slices", type=int, default=30)
    ap.add_argument("--w2", type=int, default=5, help="w2 invokes per slice")
    ap.add_argument("--w4", type=int, default=5, help="w4 pause+resume pairs per slice")
    ap.add_argument("--floor", type=int, default=50, help="bare commits per slice")
    ap.add_argument("--base", default=None, help="another checkout, interleaved with this one")
    ap.add_argument("--no-langgraph", action="store_true")
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.pg_url)
        return
    here = sys.executable
    children = [Child("floor", here, "floor", str(ROOT), args.pg_url)]
    if args.base:
        children.append(Child("base", here, "graphs", args.base, args.pg_url))
    children.append(Child("graphs", here, "graphs", str(ROOT), args.pg_url))
    if not args.no_langgraph and os.path.exists(LG_PYTHON):
        children.append(Child("langgraph", LG_PYTHON, "langgraph", None, args.pg_url))
    samples: dict[str, dict[str, list[Any]]] = {c.name: {} for c in children}
    loads = []
    try:
        for c in children:  # warm-up: prepared statements, imports
            c.ask("floor" if c.name == "floor" else "w2", 5 if c.name != "floor" else 50)
            if c.name != "floor":
                c.ask("w4", 5)
        for s in range(args.slices):
            loads.append(os.getloadavg()[0])
            order = children if s % 2 == 0 else children[::-1]
            for c in order:
                kinds = (
                    [("floor", args.floor)]
                    if c.name == "floor"
                    else [("w2", args.w2), ("w4", args.w4)]
                )
                for kind, n in kinds:
                    samples[c.name].setdefault(kind, []).extend(c.ask(kind, n))
    finally:
        for c in children:
            c.close()
    floor = med(samples["floor"]["floor"])
    print(f"load average {min(loads):.1f}-{max(loads):.1f}, {args.slices} slices")
    print(f"bare INSERT, autocommit: {floor:.3f} ms")
    print(
        "| engine | w2 ms per step (in round trips) | / bare commit (in round trips) "
        "| w4 pause ms (in round trips) | w4 resume ms (in round trips) |"
    )
    print("| --- | --- | --- | --- | --- |")
    rows = {}
    trips = {}
    for c in children:
        if c.name == "floor":
            continue
        w2s, w4s = samples[c.name]["w2"], samples[c.name]["w4"]
        rows[c.name] = (
            med([s[0] for s in w2s]) / 10,
            med([s[0] for s in w4s]),
            med([s[1] for s in w4s]),
        )
        if any(s[1] for s in w2s):  # our saver's wire: what the round trips alone took
            trips[c.name] = (
                med([s[1] for s in w2s]) / 10,
                med([s[2] for s in w4s]),
                med([s[3] for s in w4s]),
            )
        w2, pause, resume = rows[c.name]
        t = trips.get(c.name)
        print(
            f"| {c.name} | {w2:.3f}{_of(t, 0, 3)} | {w2 / floor:.2f}x"
            f"{_of(t and (t[0] / floor,), 0, 2, 'x')} | {pause:.2f}{_of(t, 1, 2)} "
            f"| {resume:.2f}{_of(t, 2, 2)} |"
        )
    for name in trips:
        print(
            f"{name}'s w2 run, trip by trip (median ms, / bare commit): {_by_trip(samples[name]['w2'], floor)}"
        )
    if "langgraph" in rows:
        lg = rows["langgraph"]
        for name, (w2, pause, resume) in rows.items():
            if name == "langgraph":
                continue
            print(
                f"{name} / langgraph: w2 {w2 / lg[0]:.2f}, pause {pause / lg[1]:.2f}, "
                f"resume {resume / lg[2]:.2f}"
            )
            if name in trips:
                t = trips[name]
                print(
                    f"{name}'s round trips alone / langgraph: w2 {t[0] / lg[0]:.2f}, "
                    f"pause {t[1] / lg[1]:.2f}, resume {t[2] / lg[2]:.2f}"
                )


def _by_trip(w2s: list[Any], floor: float) -> str:
    """Each round trip of a w2 run, by its place in the run: the median over the runs."""
    runs = [s[2] for s in w2s if s[2]]
    n = statistics.mode(len(r) for r in runs)  # (a run whose connection dropped has more)
    places = [med([r[i] for r in runs if len(r) == n]) for i in range(n)]
    return ", ".join(f"{i + 1}: {ms:.3f} ({ms / floor:.2f}x)" for i, ms in enumerate(places))


def _of(t: tuple[float, ...] | None, i: int, digits: int, unit: str = "") -> str:
    return "" if not t else f" ({t[i]:.{digits}f}{unit})"


if __name__ == "__main__":
    main()
