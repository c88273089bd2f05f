"""The `signoff` command: drive the governance core without Slack.

Every command reads `SIGNOFF_DATABASE_URL` (default: `signoff.db` here) and `SIGNOFF_POLICY`
(default: `signoff.toml` here); `db upgrade` needs no policy. Errors are one line on stderr and
a non-zero exit.

The CLI is an operator's tool, trusted like shell access to the database: `start` does not
check the policy's `starters` (`--as` only names the requester). Votes are checked like clicks
(`--as` must be an approver), and every audit event a command writes says `"via": "cli"`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from graphs import GraphError

from .approvals.db import Database
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


class _Edits(argparse.Action):
    """`--edit FIELD=VALUE`, repeatable, into `{field: value}`; a field edited twice is an
    error, not silently the last."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        key, value = values
        edits: dict[str, str] = dict(getattr(namespace, self.dest, None) or {})
        if key in edits:
            raise argparse.ArgumentError(
                self, f"{key!r} is edited twice ({key}={edits[key]}, {key}={value}); give it once"
            )
        edits[key] = value
        setattr(namespace, self.dest, edits)


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


async def _has_tables(db: Database) -> bool:
    """Whether signoff's tables are in `db` (a SQLite file that does not exist is not created)."""
    if db.dialect == "sqlite" and not Path(db.url.database or "").exists():
        return False
    async with db.read() as conn:
        return bool(await conn.run_sync(lambda c: sa.inspect(c).has_table("approvals")))


async def cmd_db_upgrade(db: Database, args: argparse.Namespace) -> int:
    """Create or upgrade the tables; no policy is read."""
    created = not await _has_tables(db)
    await db.upgrade()
    if created:
        print(f"database {db.display_url}: created the signoff tables")
    else:
        print(f"database {db.display_url} is up to date")
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
    edits = dict(args.edit or {}) if approve else None
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


ENVIRONMENT = """\
environment:
  SIGNOFF_DATABASE_URL     the database: sqlite:///signoff.db (the default: a file here) or
                           postgresql://user@host/dbname
  SIGNOFF_POLICY           the policy file (default: signoff.toml here)
  SIGNOFF_AUDIT_KEY        when set, the audit chain is HMAC-SHA256 with this key
  SLACK_BOT_TOKEN          `run`: the bot's token (xoxb-...)
  SLACK_APP_TOKEN          `run`: an app-level token (xapp-...): Socket Mode, no public URL
  SLACK_SIGNING_SECRET     `run` in HTTP mode: verifies Slack's requests
  SIGNOFF_DEFAULT_CHANNEL  `run`: where cards go when a run names no channel
  SIGNOFF_NOTIFY_CHANNEL   `run`: also tell the channel, not only the card's thread (default true)
  SIGNOFF_API_TOKEN        `run`: bearer token of POST /api/runs (unset: the endpoint is off)
  SIGNOFF_SLACK_API_URL    `run`: another Slack Web API base URL (the local sandbox, tests)
  SIGNOFF_SWEEP_INTERVAL   `run`: seconds between sweeps (default 30)
  SIGNOFF_JOB_LEASE        `run`: seconds a job stays claimed by its process (default 60)
  SIGNOFF_WORKERS          `run`: jobs performed at once, 1 to 64 (default 2)

The CLI is an operator's tool, trusted like shell access to the database: `start` does not
check the policy's starters. Votes are checked as clicks are, and the audit log records that
they came from the CLI.
"""
"""The environment variables, as `signoff --help` lists them (`bot.config.Settings`)."""

_RAW = argparse.RawDescriptionHelpFormatter


def _workflows_text() -> str:
    """The workflows `start` knows under the current policy, for `start --help`."""
    from .approvals.policy import load_policy
    from .workflows import BUILTIN, load_workflows

    settings_path = Path(os.environ.get("SIGNOFF_POLICY") or "signoff.toml")
    try:
        declared = load_policy(settings_path).workflows
        workflows = load_workflows({name: wf.path for name, wf in declared.items()})
        where = f"workflows (policy {settings_path}):"
    except (ApprovalError, ValueError) as e:
        workflows = dict(BUILTIN)
        where = f"workflows (the bundled ones; the policy could not be read: {e}):"
    lines = [where]
    for name, wf in workflows.items():
        inputs = ", ".join(f"{i}*" if i in wf.required else i for i in wf.inputs)
        lines.append(f"  {name:<16} {wf.description}")
        if inputs:
            lines.append(f"  {'':<16} inputs: {inputs}  (* required)")
    return "\n".join(lines)


class _StartHelp(argparse.Action):
    """`start --help`: the usual help, then the workflows the policy has."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.pop("default", None)
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kwargs
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _importable_here()
        parser.epilog = f"{parser.epilog or ''}\n\n{_workflows_text()}".strip()
        parser.print_help()
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="signoff",
        description="Durable human approval for agent workflows.",
        epilog=ENVIRONMENT,
        formatter_class=_RAW,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    db = sub.add_parser("db", help="database schema").add_subparsers(
        dest="db_command", required=True
    )
    db.add_parser("upgrade", help="create or upgrade the tables (reads no policy)").set_defaults(
        fn=cmd_db_upgrade, schema=True
    )

    s = sub.add_parser(
        "start",
        help="start a workflow run (as an operator: the policy's starters are not checked)",
        description="Start a workflow run and run it until it pauses for an approval or ends. "
        "The CLI is an operator's tool: the policy's starters are not checked; --as names the "
        "requester, who may then not approve the run's own requests.",
        add_help=False,
        formatter_class=_RAW,
    )
    s.add_argument("-h", "--help", action=_StartHelp, help="show this help and the workflows")
    s.add_argument("workflow", help="the workflow's name (listed below)")
    s.add_argument(
        "--input", required=True, type=_json_object, help="the run's inputs as a JSON object"
    )
    s.add_argument("--thread-id", help="durable id of the run (default: generated)")
    s.add_argument("--as", dest="as_user", default="cli", help="who requests it (default: cli)")
    s.add_argument(
        "--channel", help="Slack channel id for its cards (default: SIGNOFF_DEFAULT_CHANNEL)"
    )
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.set_defaults(fn=cmd_start)

    s = sub.add_parser("pending", help="list pending approvals")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(fn=cmd_pending, read_only=True)

    s = sub.add_parser("show", help="show a run: state, where it waits, its approvals")
    s.add_argument("thread_id", help="the run's thread id (`signoff pending` lists them)")
    s.add_argument("--json", action="store_true", help="print JSON, values in full")
    s.set_defaults(fn=cmd_show, read_only=True)

    s = sub.add_parser(
        "approve",
        help="approve (or vote to approve) an approval",
        description="Vote to approve, as the approver --as names; the policy is checked as for "
        "a click in Slack, and the audit log records that the vote came from the CLI.",
    )
    s.add_argument("approval_id", help="the approval's id (`signoff pending` lists them)")
    s.add_argument("--as", dest="as_user", required=True, help="the approver's Slack user id")
    s.add_argument("--note", default="", help="a note kept with the vote")
    s.add_argument(
        "--edit",
        action=_Edits,
        type=_edit,
        metavar="FIELD=VALUE",
        help="change a field the policy makes editable (repeat for several fields)",
    )
    s.set_defaults(fn=lambda app, a: cmd_decide(app, a, True))

    s = sub.add_parser(
        "reject",
        help="reject an approval",
        description="Reject, as the approver --as names; checked and recorded as approve is.",
    )
    s.add_argument("approval_id", help="the approval's id (`signoff pending` lists them)")
    s.add_argument("--as", dest="as_user", required=True, help="the approver's Slack user id")
    s.add_argument("--note", required=True, help="the reason (required)")
    s.set_defaults(fn=lambda app, a: cmd_decide(app, a, False))

    audit = sub.add_parser("audit", help="the audit log").add_subparsers(
        dest="audit_command", required=True
    )
    v = audit.add_parser("verify", help="check the hash chain")
    v.add_argument("--anchor", type=_anchor, help="SEQ:HASH of a head printed by an earlier verify")
    v.set_defaults(fn=cmd_audit_verify, read_only=True)
    e = audit.add_parser("export", help="write the log as JSON lines")
    e.add_argument("--out", default="-", help="the file to write (default -: standard output)")
    e.set_defaults(fn=cmd_audit_export, read_only=True)

    sub.add_parser("sweep", help="remind, escalate and expire what is due").set_defaults(
        fn=cmd_sweep
    )

    w = sub.add_parser("worker", help="resume decided approvals and sweep, on an interval")
    w.add_argument("--once", action="store_true", help="do what is due now, once, and exit")
    w.add_argument(
        "--interval", type=float, default=30.0, help="seconds between sweeps (default 30)"
    )
    w.set_defaults(fn=cmd_worker)

    s = sub.add_parser("purge", help="delete settled runs older than an age")
    s.add_argument(
        "--older-than",
        required=True,
        help='an age: "30s", "15m", "4h", "90d", "1w" or "1h30m" (s, m, h, d, w)',
    )
    s.set_defaults(fn=cmd_purge)

    s = sub.add_parser(
        "run", help="run the Slack bot (HTTP on --port, or Socket Mode with SLACK_APP_TOKEN)"
    )
    s.add_argument(
        "--port",
        type=int,
        default=3000,
        help="the HTTP port: Slack's requests (HTTP mode), /healthz, /metrics, /api/runs "
        "(default 3000)",
    )
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for "
        "every interface, e.g. in a container or behind a proxy on another host)",
    )
    s.set_defaults(fn=None, serve=True)

    s = sub.add_parser(
        "demo", help="a local Slack in the browser with the bot running against it, on SQLite"
    )
    s.add_argument(
        "--port", type=int, default=3000, help="the page's port (default 3000; 0 picks a free one)"
    )
    s.add_argument("--bot-port", type=int, default=0, help="the bot's port (default 0: a free one)")
    s.add_argument(
        "--policy",
        type=Path,
        help="the policy the bot runs with, its workflows offered on the page "
        "(default: the demo's, bot/policies/demo.toml)",
    )
    s.add_argument(
        "--db",
        type=Path,
        help="the SQLite file, emptied at start (default: signoff-sandbox.db here)",
    )
    s.add_argument(
        "--walkthrough",
        action="store_true",
        help="a walk through a refund approval in the terminal instead",
    )
    s.set_defaults(fn=None, demo=True)

    new = sub.add_parser("new", help="write a starting point: `signoff new workflow NAME`")
    kinds = new.add_subparsers(dest="new_command", required=True, metavar="WHAT")
    s = kinds.add_parser(
        "workflow",
        help="a workflow module, its policy and its test",
        description="Write NAME.py (a graph that asks approval for one action, then does it), "
        "NAME.toml (a policy for it, with the demo people) and test_NAME.py (a test that runs "
        "it on a temporary SQLite database). Nothing is overwritten.",
    )
    s.add_argument("name", help="the workflow's name, a Python identifier (e.g. expense)")
    s.add_argument("--dir", type=Path, default=Path(), help="where to write them (default: here)")
    s.set_defaults(fn=None, scaffold=True)
    return p


def _importable_here() -> None:
    """Let a policy's `path = "module:function"` name a module in the current directory, as
    `python -m` would (the `signoff` script's own directory is on the path instead). It goes
    last: a module here never shadows an installed one."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


async def _run(
    fn: Callable[[Any, argparse.Namespace], Awaitable[int]], args: argparse.Namespace
) -> int:
    settings = Settings.from_env()
    if getattr(args, "schema", False):  # `db upgrade`: the tables, without a policy
        try:
            db = Database(settings.database_url)
        except ValueError as e:
            raise SettingsError(str(e)) from e
        try:
            return await fn(db, args)
        finally:
            await db.aclose()
    try:
        app = build_signoff(settings, via="cli")
    except ValueError as e:  # a database URL or a workflow path that cannot be used
        raise SettingsError(str(e)) from e
    try:
        if getattr(args, "read_only", False) and not await _has_tables(app.db):
            raise SettingsError(
                f"no signoff tables here ({app.db.display_url}); run `signoff db upgrade` "
                "(or check SIGNOFF_DATABASE_URL)"
            )
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
    """`signoff ARGS...`: the exit status. A reader that goes away (`signoff show T | head -1`)
    ends the output quietly."""
    try:
        status = _main(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()
    except BrokenPipeError:
        # Whatever is left to print goes nowhere, and Python's own flush at exit finds no pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return status


def _main(argv: list[str]) -> int:
    parser = _parser()
    if not argv:  # bare `signoff`: what it can do
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    _importable_here()
    if getattr(args, "scaffold", False):
        from .scaffold import ScaffoldError, write_workflow

        try:
            print(write_workflow(args.name, args.dir))
        except ScaffoldError as e:
            return _exit_status(e)
        return 0
    if getattr(args, "demo", False):
        from .demo import main as demo_main

        return demo_main(
            port=args.port,
            walkthrough=args.walkthrough,
            db=args.db,
            bot_port=args.bot_port,
            policy=args.policy,
        )
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
