"""The command line of `signoff`: every command, option and its help, and the argument types
that turn a mistake in the command line into argparse's error (usage, exit status 2).

It names each command's function without importing it (`_command`): building the parser, and
so `signoff --help`, loads neither SQLAlchemy nor the graph runtime."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ..approvals.errors import ApprovalError
from ..approvals.policy import parse_duration
from ..approvals.policy.grants import GrantAsk
from ..approvals.report import QUICK_SECONDS, SUGGEST_LAST

Command = Callable[[Any, argparse.Namespace], Awaitable[int]]
"""A command: takes the `Signoff` (for `db upgrade`, the `Database`) and the arguments, and
returns the exit status."""


def _command(name: str, *more: Any, module: str = "_commands") -> Command:
    """The command `name` of `bot.cli.<module>`, imported when it runs (with SQLAlchemy and
    the governance core); `more` goes to it after the arguments."""

    async def run(app: Any, args: argparse.Namespace) -> int:
        # the commands' module loads SQLAlchemy and the governance core: for the command that
        # runs, not for the parser
        found = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        status: int = await found(app, args, *more)
        return status

    run.__name__ = run.__qualname__ = name
    return run


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


def _duration(text: str) -> str:
    """A duration as the policy writes them (`"30d"`, `"4h"`), kept as written for display."""
    try:
        parse_duration(text)
    except ApprovalError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    return text


def _grant(text: str) -> GrantAsk:
    """`--grant 5/4h`: allow up to 5 more requests like this one for 4 hours."""
    uses, sep, window = text.partition("/")
    try:
        if not sep or not uses.isdigit() or int(uses) < 1:
            raise ValueError
        return GrantAsk(int(uses), parse_duration(window))
    except (ValueError, ApprovalError) as e:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write it as USES/DURATION, e.g. --grant 5/4h (5 more like this for 4 hours)"
        ) from e


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0, e.g. 15")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number above 0, e.g. 100")
    return int(text)


def _anchor(text: str) -> tuple[int, str]:
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or not digest:
        raise argparse.ArgumentTypeError(f"{text!r}: write it as SEQ:HASH, as printed by a verify")
    return int(seq), digest


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
  SIGNOFF_MCP_SERVICE      `mcp`: the policy's service it asks as (default local)
  SIGNOFF_SLACK_API_URL    `run`: another Slack Web API base URL (the local sandbox, tests)
  SIGNOFF_SWEEP_INTERVAL   `run`: seconds between sweeps (default 30)
  SIGNOFF_JOB_LEASE        `run`: seconds a job stays claimed by its process (default 60)
  SIGNOFF_SLACK_TIMEOUT    `run`: seconds to wait for Slack's answer to a call (default 30)
  SIGNOFF_WORKERS          `run`: jobs performed at once, 1 to 64 (default 2)
  SIGNOFF_SOCKET_GRACE     `run` in Socket Mode: seconds the link may be down before
                           /healthz answers 503 (default 120)
  SIGNOFF_WEBHOOK_WORKERS  `run`: webhooks delivered at once, on workers of their own (default 2)
  SIGNOFF_WEBHOOK_TIMEOUT  `run`: seconds one try of a webhook waits for an answer (default 10)
  SIGNOFF_REFUSAL_WINDOW   seconds in which a refusal repeated from one source is one audit
                           entry with its count (default 60)

The CLI is an operator's tool, trusted like shell access to the database: `start` does not
check the policy's starters. Votes are checked as clicks are, and the audit log records that
they came from the CLI.
"""
"""The environment variables, as `signoff --help` lists them (`bot.config.Settings`)."""

_RAW = argparse.RawDescriptionHelpFormatter


def _workflows_text() -> str:
    """The workflows `start` knows under the current policy, for `start --help`."""
    # the workflows (the support agent loads langchain_core), for `start --help` alone:
    # `signoff --help` and the other commands start without them
    from ..approvals.policy import load_policy
    from ..workflows import Workflows, load_workflows

    settings_path = Path(os.environ.get("SIGNOFF_POLICY") or "signoff.toml")
    try:
        declared = load_policy(settings_path).workflows
        workflows = load_workflows({name: wf.path for name, wf in declared.items()})
        where = f"workflows (policy {settings_path}):"
    except (ApprovalError, ValueError) as e:
        workflows = Workflows()
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
        importable_here()
        parser.epilog = f"{parser.epilog or ''}\n\n{_workflows_text()}".strip()
        parser.print_help()
        parser.exit()


def importable_here() -> None:
    """Let a policy's `path = "module:function"` name a module in the current directory, as
    `python -m` would (the `signoff` script's own directory is on the path instead). It goes
    last: a module here never shadows an installed one."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


_Commands = argparse._SubParsersAction  # what `add_subparsers` returns: one parser per command


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="signoff",
        description="Durable human approval for agent workflows.",
        epilog=ENVIRONMENT,
        formatter_class=_RAW,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_run_commands(sub)
    _add_decision_commands(sub)
    _add_operator_commands(sub)
    _add_process_commands(sub)
    return p


def _add_run_commands(sub: _Commands[argparse.ArgumentParser]) -> None:
    """db, start, pending, show: the schema, and runs started and read."""
    db = sub.add_parser("db", help="database schema").add_subparsers(
        dest="db_command", required=True
    )
    db.add_parser("upgrade", help="create or upgrade the tables (reads no policy)").set_defaults(
        fn=_command("cmd_db_upgrade"), schema=True
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
    s.set_defaults(fn=_command("cmd_start"))

    s = sub.add_parser(
        "pending",
        help="list pending approvals, and messages Slack refused for good",
        description="List pending approvals, then the messages Slack refused for good (an "
        "archived channel, a private one the bot is not in): what, where, which error, when. "
        "`signoff redeliver THREAD` sends them again once the cause is fixed.",
    )
    s.add_argument(
        "--json",
        action="store_true",
        help='print JSON instead of the tables: {"approvals": [...], "undelivered": [...]}',
    )
    s.set_defaults(fn=_command("cmd_pending"), read_only=True)

    s = sub.add_parser(
        "show",
        help="show a run: state, where it waits, its approvals, what Slack refused",
    )
    s.add_argument("thread_id", help="the run's thread id (`signoff pending` lists them)")
    s.add_argument("--json", action="store_true", help="print JSON, values in full")
    s.set_defaults(fn=_command("cmd_show"), read_only=True)

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
    s.add_argument(
        "--grant",
        type=_grant,
        metavar="USES/DURATION",
        help="and allow up to USES more requests like this one for DURATION (e.g. 5/4h), "
        "within what the action's `grants` allow; as the card's Allow more like this",
    )
    s.set_defaults(fn=_command("cmd_decide", True))


def _add_decision_commands(sub: _Commands[argparse.ArgumentParser]) -> None:
    """approve, reject, audit, sweep, worker: deciding, and what follows decisions."""
    s = sub.add_parser(
        "reject",
        help="reject an approval",
        description="Reject, as the approver --as names; checked and recorded as approve is.",
    )
    s.add_argument("approval_id", help="the approval's id (`signoff pending` lists them)")
    s.add_argument("--as", dest="as_user", required=True, help="the approver's Slack user id")
    s.add_argument("--note", required=True, help="the reason (required)")
    s.set_defaults(fn=_command("cmd_decide", False))

    audit = sub.add_parser("audit", help="the audit log").add_subparsers(
        dest="audit_command", required=True
    )
    v = audit.add_parser("verify", help="check the hash chain")
    v.add_argument("--anchor", type=_anchor, help="SEQ:HASH of a head printed by an earlier verify")
    v.set_defaults(fn=_command("cmd_audit_verify"), read_only=True)
    e = audit.add_parser("export", help="write the log as JSON lines")
    e.add_argument("--out", default="-", help="the file to write (default -: standard output)")
    e.set_defaults(fn=_command("cmd_audit_export"), read_only=True)

    sub.add_parser("sweep", help="remind, escalate and expire what is due").set_defaults(
        fn=_command("cmd_sweep")
    )

    w = sub.add_parser("worker", help="resume decided approvals and sweep, on an interval")
    w.add_argument("--once", action="store_true", help="do what is due now, once, and exit")
    w.add_argument(
        "--interval", type=float, default=30.0, help="seconds between sweeps (default 30)"
    )
    w.set_defaults(fn=_command("cmd_worker"))


def _add_operator_commands(sub: _Commands[argparse.ArgumentParser]) -> None:
    """retry, redeliver, cancel, purge: an operator's control of runs and of what Slack refused."""
    s = sub.add_parser(
        "retry",
        help="go on with a failed run from its last checkpoint",
        description="Go on with a failed run from its last checkpoint: what had finished is "
        "not run again. Once: when two operators retry at once, one wins and the other is told. "
        "A run whose outcome is unknown (a side effect may have happened) is not retried: check "
        'the outside system, then cancel it. Audited with "via": "cli".',
    )
    s.add_argument("thread_id", help="the run's thread id (`signoff show` has its error)")
    s.add_argument("--as", dest="as_user", default="cli", help="who retries it (default: cli)")
    s.set_defaults(fn=_command("cmd_retry"))

    s = sub.add_parser(
        "redeliver",
        help="send again the messages Slack refused for good, once the cause is fixed",
        description="Queue again a run's messages that Slack refused for good (`signoff "
        "pending` and `signoff show` list them with Slack's error), after fixing the cause: "
        "invite the bot to the channel (`/invite @signoff`), unarchive it. The running bot "
        "(`signoff run`) delivers them; it first looks in the channel for any that did land, "
        "so none is posted twice. Waits a few seconds to say how it went (exit 1: Slack "
        'refused again). Audited with "via": "cli".',
    )
    s.add_argument(
        "target", help="the run's thread id, or one job id (`signoff pending` lists both)"
    )
    s.add_argument("--as", dest="as_user", default="cli", help="who redelivers it (default: cli)")
    s.set_defaults(fn=_command("cmd_redeliver"))

    s = sub.add_parser(
        "cancel",
        help="cancel a failed, paused or stuck run and its pending approvals",
        description="Cancel a run that is failed, paused or of unknown outcome: its pending "
        "approvals are cancelled (their cards say so), it never runs again, and its Slack "
        'thread is told. Audited with "via": "cli".',
    )
    s.add_argument("thread_id", help="the run's thread id (`signoff pending` lists paused ones)")
    s.add_argument("--as", dest="as_user", default="cli", help="who cancels it (default: cli)")
    s.add_argument("--note", default="", help="why, told to the run's thread")
    s.set_defaults(fn=_command("cmd_cancel"))

    s = sub.add_parser(
        "purge",
        help="delete finished runs (completed, cancelled, failed) older than an age",
        description="Delete runs that completed, were cancelled or failed, with their approvals "
        "and checkpoints, when not updated for longer than --older-than. Never a running or "
        "paused run, one with an approval pending, nor one whose outcome is unknown. Grants "
        "that ended (expired or revoked) longer ago go too; a live one never.",
    )
    s.add_argument(
        "--older-than",
        required=True,
        help='an age: "30s", "15m", "4h", "90d", "1w" or "1h30m" (s, m, h, d, w)',
    )
    s.set_defaults(fn=_command("cmd_purge"))

    s = sub.add_parser(
        "report",
        help="how approvals were decided: rates, time to decide, quick approvals, rules to add",
        description="Per action, over --since: how its requests ended (by a rule, approved, "
        "rejected, expired, denied by policy), the share people approved, how long they took "
        "(median, p90), the approvals given within --quick seconds by someone who never opened "
        "the Full payload, and auto-approval rules people's decisions would support, each with "
        "how many of the last --last decisions it would have taken. Only printed: the policy "
        "changes only when you edit it.",
    )
    s.add_argument("--since", type=_duration, default="30d", help='how far back (default "30d")')
    s.add_argument("--action", action="append", help="only this action (repeatable)")
    s.add_argument(
        "--quick",
        type=_positive,
        default=QUICK_SECONDS,
        help=f"seconds under which an approval is quick (default {QUICK_SECONDS:g})",
    )
    s.add_argument(
        "--last",
        type=_count,
        default=SUGGEST_LAST,
        help=f"decisions a suggested rule is weighed against (default {SUGGEST_LAST})",
    )
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")
    s.add_argument("--html", metavar="FILE", help="also write the report, with charts, as HTML")
    s.set_defaults(fn=_command("cmd_report", module="_report"), read_only=True)

    s = sub.add_parser(
        "doctor",
        help="check a real setup from the outside: tokens, scopes, channels, groups, database",
        description="Check what `signoff run` needs, with the settings it reads, writing and "
        "posting nothing: the policy loads; the database answers at this version's schema; "
        "Slack takes the bot token and it has the manifest's scopes; the app token opens a "
        "Socket Mode connection (or the signing secret is set); the bot is in the channels "
        "cards go to; the @groups outside [groups] are Slack user groups; the clock agrees with "
        "Slack's. Each finding says what to do; the exit status is 1 when any fails.",
    )
    s.add_argument("--json", action="store_true", help="print the findings as JSON")
    s.set_defaults(fn=None, doctor=True)


def _add_process_commands(sub: _Commands[argparse.ArgumentParser]) -> None:
    """run, demo, mcp, new: the processes signoff runs, and the scaffold."""
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
    s.add_argument(
        "--socket-mode",
        action="store_true",
        help="run the bot in Socket Mode (an xapp- token; the page's actions reach it over a "
        "WebSocket, as with Slack's) instead of HTTP",
    )
    s.add_argument(
        "--bot-token",
        metavar="TOKEN",
        help="run the bot with this token instead of the one the sandbox issued, to rehearse a "
        "bad one: the sandbox refuses a token it did not issue (invalid_auth), as Slack does",
    )
    s.set_defaults(fn=None, demo=True)

    s = sub.add_parser(
        "mcp",
        help="an MCP server on stdin/stdout: local agents ask for approvals as a service",
        description="Serve signoff's MCP tools (request_approval, get_approval, "
        "list_my_pending) on standard input and output, for an agent on this machine. Its "
        "requests are made as the policy's service --service names, which may ask only for "
        "the actions its [services.NAME] section lists. Cards are posted and decisions resumed "
        "by the `signoff run` (or demo) on the same database.",
    )
    s.add_argument(
        "--service",
        default=os.environ.get("SIGNOFF_MCP_SERVICE") or "local",
        help="the policy's service to ask as (default: $SIGNOFF_MCP_SERVICE, else local)",
    )
    s.set_defaults(fn=_command("cmd_mcp"))

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
