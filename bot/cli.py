"""The `signoff` command: drive the governance core without Slack.

Every command reads `SIGNOFF_DATABASE_URL` (default: `signoff.db` here) and `SIGNOFF_POLICY`
(default: `signoff.toml` here). Errors are one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from graphs import GraphError

from .approvals.errors import ApprovalError
from .approvals.models import Approval, iso
from .approvals.service import Signoff
from .config import Settings, SettingsError, build_signoff

__all__ = ["main"]

RESUME_WAIT = 15.0
"""Seconds `approve` / `reject` wait for the run to go on when another process took its resume."""


def _age(ts: float) -> str:
    s = max(0, int(time.time() - ts))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join([line, *body])


def _approval_json(a: Approval) -> dict[str, Any]:
    return {
        "id": a.id,
        "thread_id": a.thread_id,
        "workflow": a.workflow,
        "action": a.action,
        "title": a.title,
        "args": a.payload,
        "risk_tier": a.risk_tier,
        "requester": a.requester,
        "status": a.status,
        "required": a.required,
        "approvals": a.approvals_count,
        "approvers": list(a.approvers),
        "created_at": iso(a.created_at),
        "expires_at": iso(a.expire_at) if a.expire_at else None,
        "decision": a.decision,
        "reason": a.reason,
        "votes": [
            {
                "user": v.user_id,
                "decision": v.decision,
                "note": v.note,
                "edits": v.edits,
                "at": iso(v.at),
            }
            for v in a.votes
        ],
    }


# ---- arguments written wrong ------------------------------------------------------------
# Each is an argparse `type`: a mistake in the command line is argparse's error (the usage, the
# argument and what is wrong; exit status 2), said before anything is asked of the database,
# the workflow or its approvals. Governance's refusals are something else: exit status 1.


def _edit(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"{item!r}: write it as field=value, e.g. --edit amount=40"
        )
    return key.strip(), value


def _json_object(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(
            f"not valid JSON ({e}); e.g. --input '{{\"amount\": 40}}'"
        ) from e
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError("must be a JSON object of the workflow's inputs")
    return data


def _anchor(text: str) -> tuple[int, str]:
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or not digest:
        raise argparse.ArgumentTypeError(f"{text!r}: write it as SEQ:HASH, as printed by a verify")
    return int(seq), digest


async def _report_run(app: Signoff, thread_id: str) -> str:
    run = await app.run_info(thread_id)
    if run is None:
        return f"thread {thread_id}: no run"
    text = f"thread {thread_id}: {run['status']}"
    if run["status"] == "completed" and run["result"]:
        outcome = json.loads(run["result"]).get("outcome")
        if outcome:
            text += f": {outcome}"
    if run["error"] and run["status"] in ("failed", "outcome_unknown"):
        text += f": {run['error']}"
    return text


# ---- commands ---------------------------------------------------------------------------


async def cmd_db_upgrade(app: Signoff, args: argparse.Namespace) -> int:
    print(f"database {app.db.display_url} is up to date")
    return 0


async def cmd_start(app: Signoff, args: argparse.Namespace) -> int:
    report = await app.start(
        args.workflow,
        args.input,
        requester=args.as_user,
        channel=args.channel,
        thread_id=args.thread_id,
    )
    await app.run_jobs(("resume",))
    if args.json:
        print(
            json.dumps(
                {
                    "thread_id": report.thread_id,
                    "status": report.status,
                    "approvals": list(report.approvals),
                    "error": report.error,
                }
            )
        )
        return 0
    print(f"started {report.workflow} on thread {report.thread_id}")
    for approval_id in report.approvals:
        a = await app.get(approval_id)
        print(
            f"  approval {a.id}: {a.title} [{a.risk_tier}] {a.status}"
            + (f" ({a.reason})" if a.reason else "")
        )
    print(await _report_run(app, report.thread_id))
    return 0 if report.status != "failed" else 1


async def cmd_pending(app: Signoff, args: argparse.Namespace) -> int:
    items = await app.pending()
    if args.json:
        print(json.dumps([_approval_json(a) for a in items], indent=2))
        return 0
    if not items:
        print("nothing is waiting for approval")
        return 0
    rows = [
        [
            a.id,
            a.action,
            a.risk_tier,
            a.requester,
            f"{a.approvals_count}/{a.required}",
            _age(a.created_at),
            ", ".join(a.approvers),
            a.thread_id,
        ]
        for a in items
    ]
    print(
        _table(
            rows, ["APPROVAL", "ACTION", "TIER", "REQUESTER", "VOTES", "AGE", "APPROVERS", "THREAD"]
        )
    )
    return 0


async def cmd_show(app: Signoff, args: argparse.Namespace) -> int:
    run = await app.run_info(args.thread_id)
    if run is None:
        raise ApprovalError(
            f"no run has thread id {args.thread_id!r}; `signoff pending` lists paused ones"
        )
    state = await app.graph(run["workflow"]).aget_state(
        {"configurable": {"thread_id": args.thread_id}}
    )
    approvals = await app.thread_approvals(args.thread_id)
    values = app.hide_secrets(state.values)
    if args.json:
        print(
            json.dumps(
                {
                    "thread_id": args.thread_id,
                    "workflow": run["workflow"],
                    "status": run["status"],
                    "requester": run["requester"],
                    "error": run["error"],
                    "values": values,
                    "next": state.next,
                    "approvals": [_approval_json(a) for a in approvals],
                },
                indent=2,
                default=str,
            )
        )
        return 0
    print(await _report_run(app, args.thread_id))
    print(
        f"  workflow {run['workflow']}, started by {run['requester']} {_age(run['created_at'])} ago"
    )
    if state.next:
        print(f"  waiting to run: {', '.join(state.next)}")
    for key, value in values.items():
        print(f"  {key} = {json.dumps(value, default=str)[:200]}")
    for a in approvals:
        who = ", ".join(a.decided_by)
        print(
            f"  approval {a.id} {a.action}: {a.status}"
            + (f" by {who}" if who else "")
            + (f" ({a.reason})" if a.reason else "")
        )
    return 0


async def cmd_decide(app: Signoff, args: argparse.Namespace, approve: bool) -> int:
    edits = dict(args.edit or ()) if approve else None
    result = await app.decide(
        args.approval_id, args.as_user, approve, note=args.note or "", edits=edits
    )
    a = result.approval
    if not result.settled:
        print(f"approval {a.id}: vote recorded, {a.approvals_count} of {a.required} approvals")
        return 0
    print(f"approval {a.id}: {a.status} by {', '.join(a.decided_by)}")
    # Resume it here, or wait for whoever took the resume (another `signoff` command, a bot's
    # worker) to finish it, so that the line below says how the run went on.
    deadline = time.monotonic() + RESUME_WAIT
    while True:
        await app.run_jobs(("resume",))
        if not await app.resumes_due(a.id) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    print(await _report_run(app, a.thread_id))
    return 0


async def cmd_audit_verify(app: Signoff, args: argparse.Namespace) -> int:
    await app.link_audit()
    async with app.db.read() as conn:
        report = await app.audit.verify(conn, anchor=args.anchor)
    if report.ok:
        print(f"audit log intact: {report.checked} events verified")
        if report.head_seq is not None:
            # Keep this somewhere else: a later verify --anchor proves no newest rows were cut.
            print(f"head: {report.head_seq}:{report.head_hash}")
        return 0
    print(f"audit log BROKEN: {report.problem}", file=sys.stderr)
    return 1


async def cmd_audit_export(app: Signoff, args: argparse.Namespace) -> int:
    await app.link_audit()
    async with app.db.read() as conn:
        if args.out and args.out != "-":
            with open(args.out, "w", encoding="utf-8") as out:  # noqa: ASYNC230 -- a CLI, nothing else waits
                n = await app.audit.export(conn, out)
            print(f"wrote {n} events to {args.out}", file=sys.stderr)
        else:
            await app.audit.export(conn, sys.stdout)
    return 0


async def cmd_sweep(app: Signoff, args: argparse.Namespace) -> int:
    counts = await app.sweep()
    await app.run_jobs(("resume",))
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


async def cmd_worker(app: Signoff, args: argparse.Namespace) -> int:
    """Resume decided approvals and sweep on an interval (the bot does this itself)."""
    if args.once:
        counts = await app.sweep()
        n = await app.run_jobs(("resume",))
        print(f"{n} job(s) done; sweep: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        return 0
    from .scheduler import start_scheduler

    scheduler = start_scheduler(app, sweep_every=args.interval, kinds=("resume",))
    print(
        f"worker running on {app.db.display_url} (sweep every {args.interval:g}s); Ctrl-C stops it"
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        scheduler.shutdown(wait=False)
    print("worker stopped")
    return 0


async def cmd_purge(app: Signoff, args: argparse.Namespace) -> int:
    from .approvals.policy import parse_duration

    n = await app.purge(parse_duration(args.older_than).total_seconds())
    print(f"purged {n} settled run(s) older than {args.older_than}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="signoff", description="Durable human approval for agent workflows."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    db = sub.add_parser("db", help="database schema").add_subparsers(
        dest="db_command", required=True
    )
    db.add_parser("upgrade", help="create or upgrade the tables").set_defaults(fn=cmd_db_upgrade)

    s = sub.add_parser("start", help="start a workflow run")
    s.add_argument("workflow")
    s.add_argument(
        "--input", required=True, type=_json_object, help="the run's inputs as a JSON object"
    )
    s.add_argument("--thread-id", help="durable id of the run (default: generated)")
    s.add_argument("--as", dest="as_user", default="cli", help="who requests it (default: cli)")
    s.add_argument("--channel", help="Slack channel for its cards")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_start)

    s = sub.add_parser("pending", help="list pending approvals")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_pending)

    s = sub.add_parser("show", help="show a run: state, where it waits, its approvals")
    s.add_argument("thread_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_show)

    s = sub.add_parser("approve", help="approve (or vote to approve) an approval")
    s.add_argument("approval_id")
    s.add_argument("--as", dest="as_user", required=True, help="the approver's user id")
    s.add_argument("--note", default="")
    s.add_argument(
        "--edit",
        action="append",
        type=_edit,
        metavar="FIELD=VALUE",
        help="change an editable field",
    )
    s.set_defaults(fn=lambda app, a: cmd_decide(app, a, True))

    s = sub.add_parser("reject", help="reject an approval")
    s.add_argument("approval_id")
    s.add_argument("--as", dest="as_user", required=True)
    s.add_argument("--note", required=True, help="the reason (required)")
    s.set_defaults(fn=lambda app, a: cmd_decide(app, a, False))

    audit = sub.add_parser("audit", help="the audit log").add_subparsers(
        dest="audit_command", required=True
    )
    v = audit.add_parser("verify", help="check the hash chain")
    v.add_argument("--anchor", type=_anchor, help="SEQ:HASH of a head printed by an earlier verify")
    v.set_defaults(fn=cmd_audit_verify)
    e = audit.add_parser("export", help="write the log as JSON lines")
    e.add_argument("--out", default="-")
    e.set_defaults(fn=cmd_audit_export)

    sub.add_parser("sweep", help="remind, escalate and expire what is due").set_defaults(
        fn=cmd_sweep
    )

    w = sub.add_parser("worker", help="resume decided approvals and sweep, on an interval")
    w.add_argument("--once", action="store_true")
    w.add_argument("--interval", type=float, default=30.0)
    w.set_defaults(fn=cmd_worker)

    s = sub.add_parser("purge", help="delete settled runs older than an age")
    s.add_argument("--older-than", required=True, help='e.g. "30d"')
    s.set_defaults(fn=cmd_purge)

    s = sub.add_parser(
        "run", help="run the Slack bot (HTTP on --port, or Socket Mode with SLACK_APP_TOKEN)"
    )
    s.add_argument("--port", type=int, default=3000)
    s.add_argument("--host", default="0.0.0.0")
    s.set_defaults(fn=None, serve=True)

    s = sub.add_parser(
        "demo", help="a local Slack in the browser with the bot running against it, on SQLite"
    )
    s.add_argument(
        "--port", type=int, default=3000, help="the page's port (default 3000; 0 picks a free one)"
    )
    s.add_argument(
        "--walkthrough",
        action="store_true",
        help="a walk through a refund approval in the terminal instead",
    )
    s.set_defaults(fn=None, demo=True)
    return p


async def _run(
    fn: Callable[[Signoff, argparse.Namespace], Awaitable[int]], args: argparse.Namespace
) -> int:
    try:
        app = build_signoff(Settings.from_env())
    except ValueError as e:  # a database URL or a workflow path that cannot be used
        raise SettingsError(str(e)) from e
    try:
        await app.db.upgrade()
        status = await fn(app, args)
        await app.link_audit()  # what this command recorded is in the chain when it exits
        return status
    finally:
        await app.db.aclose()


_SAID = (ApprovalError, GraphError, SettingsError)
"""The errors a command may meet in ordinary use: each says what is wrong and what to do.
`ApprovalError` covers storage too (`DatabaseUnavailable` is one)."""


def _exit_status(error: Exception) -> int:
    """The one place an error of `_SAID` becomes words: one line on stderr and exit status 1.
    Anything else is a bug, and goes up with its traceback."""
    print(f"signoff: {error}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "demo", False):
        from .demo import main as demo_main

        return demo_main(port=args.port, walkthrough=args.walkthrough)
    if getattr(args, "serve", False):
        from .server import serve

        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        for noisy in ("alembic", "apscheduler"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        try:
            asyncio.run(serve(Settings.from_env(), port=args.port, host=args.host))
        except _SAID as e:
            return _exit_status(e)
        return 0
    try:
        return asyncio.run(_run(args.fn, args))
    except KeyboardInterrupt:
        return 130
    except _SAID as e:
        return _exit_status(e)


if __name__ == "__main__":
    sys.exit(main())
