"""Round trips to PostgreSQL of one pause, one resume (w4's approval graph) and one 10-step
invoke (w2's chain), counted where the load cannot blur them: at the socket.

The script runs itself under `strace` (sendto/recvfrom of the process), warms the graphs up on a
fresh schema, then marks each phase on stderr. A round trip is a send after a receive (or the
phase's first send): a pipeline's statements, sent one after another before any answer is read,
are one. `bench/pause_resume.py --count` lists the statements themselves.

    .venv/bin/python bench/round_trips.py [--pg-url URL] [--base PATH]

`--base PATH` counts another checkout's `graphs` too (put first on `PYTHONPATH`), beside this
one's. Needs `strace`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("pause", "resume", "invoke10")


def child(pg_url: str | None) -> None:
    """Run the graphs, with a marker on stderr before each phase (traced by the parent)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from list_paused import load_workloads

    wl = load_workloads()
    engine = wl.Engine("graphs")
    base_url = pg_url or os.environ.get("BENCH_PG_URL") or wl.DEFAULT_PG_URL
    schema, url = wl.pg_fresh_schema(base_url)
    saver = engine.make_postgres_saver(url)
    try:
        approval = wl.build_approval(engine, saver)
        chain = wl.build_linear10(engine, saver)

        def cfg(thread: str) -> dict[str, dict[str, str]]:
            return {"configurable": {"thread_id": thread}}

        for i in range(8):  # past psycopg's prepare threshold (5 uses)
            approval.invoke({"request": "x"}, cfg(f"warm{i}"))
            approval.invoke(engine.Command(resume={"approved": True}), cfg(f"warm{i}"))
            chain.invoke({"n": 0}, cfg(f"chain{i}"))
        for phase, run in (
            ("pause", lambda: approval.invoke({"request": "x"}, cfg("t"))),
            (
                "resume",
                lambda: approval.invoke(engine.Command(resume={"approved": True}), cfg("t")),
            ),
            ("invoke10", lambda: chain.invoke({"n": 0}, cfg("chain"))),
        ):
            os.write(2, f"@@{phase}\n".encode())
            run()
        os.write(2, b"@@end\n")
    finally:
        wl.close_saver(saver)
        wl.drop_db(
            {"kind": "postgres", "schema": schema}, SimpleNamespace(keep_db=False, pg_url=base_url)
        )


def count(trace: str) -> dict[str, tuple[int, int]]:
    """Per phase: (round trips, sends)."""
    trips: dict[str, list[int]] = {}
    phase = None
    last = None
    for line in Path(trace).read_text().splitlines():
        marker = re.search(r'write\(2, "@@(\w+)', line)
        if marker:
            phase = marker.group(1)
            trips[phase] = [0, 0]
            last = None
            continue
        if phase is None or phase == "end" or "EAGAIN" in line:
            continue
        if "sendto(" in line:
            trips[phase][1] += 1
            if last != "send":
                trips[phase][0] += 1
            last = "send"
        elif "recvfrom(" in line and not line.rstrip().endswith("= 0"):
            last = "recv"
    return {p: (t[0], t[1]) for p, t in trips.items() if p in PHASES}


def traced(pythonpath: str | None, pg_url: str | None) -> dict[str, tuple[int, int]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory(prefix="trips-") as tmp:
        trace = os.path.join(tmp, "strace.log")
        args = [sys.executable, __file__, "--child"] + (["--pg-url", pg_url] if pg_url else [])
        done = subprocess.run(
            ["strace", "-f", "-e", "trace=sendto,recvfrom,write", "-o", trace, *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        return count(trace)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--base", default=None, help="another checkout, counted beside this one")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.pg_url)
        return
    if shutil.which("strace") is None:
        raise SystemExit("needs strace")
    trees = [("this checkout", str(ROOT))]
    if args.base:
        trees.insert(0, ("base " + args.base, args.base))
    for name, path in trees:
        figures = traced(path, args.pg_url)
        shown = ", ".join(f"{p} {figures[p][0]} ({figures[p][1]} sends)" for p in PHASES)
        print(f"{name}: round trips: {shown}")


if __name__ == "__main__":
    main()
