"""The commands of `signoff`: each takes the governance core (or, for `db upgrade`, the
database) and the parsed arguments, prints what it did, and returns the exit status."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ..approvals.checks import changes_text, facts_text
from ..approvals.db import Database
from ..approvals.errors import ApprovalError
from ..approvals.external import WEBHOOK_ATTEMPTS
from ..approvals.jobs import Undelivered, WebhookDelivery
from ..approvals.models import Approval, iso
from ..approvals.policy import parse_duration
from ..approvals.policy.load import undefined_group
from ..approvals.policy.schema import display
from ..approvals.service import Signoff
from ..config import Settings, SettingsError

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
        "checked": dict(a.checked) if a.checked is not None else None,
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


SHOW_WIDTH = 200
"""Characters of a value `signoff show` prints before it says the rest was cut."""


def _shown(text: str, thread_id: str) -> str:
    """`text` (a value's JSON) whole, or its start and a note that it was cut: never a cut
    that reads as the whole value."""
    if len(text) <= SHOW_WIDTH:
        return text
    rest = len(text) - SHOW_WIDTH
    return (
        f"{text[:SHOW_WIDTH]}… (cut: {rest} more characters; "
        f"`signoff show {thread_id} --json` has it all)"
    )


# ---- commands ---------------------------------------------------------------------------


async def has_tables(db: Database) -> bool:
    """Whether signoff's tables are in `db` (a SQLite file that does not exist is not created)."""
    if db.dialect == "sqlite" and not Path(db.url.database or "").exists():
        return False
    async with db.read() as conn:
        return bool(await conn.run_sync(lambda c: sa.inspect(c).has_table("approvals")))


async def cmd_db_upgrade(db: Database, args: argparse.Namespace) -> int:
    """Create or upgrade the tables; no policy is read."""
    created = not await has_tables(db)
    await db.upgrade()
    if created:
        print(f"database {db.display_url}: created the signoff tables")
    else:
        print(f"database {db.display_url} is up to date")
    return 0


async def _check_groups_with_slack(app: Signoff) -> None:
    """Refuse a policy naming an `@group` that neither `[groups]` nor Slack defines, when
    Slack can be asked (`SLACK_BOT_TOKEN` set): a typo's approval could be approved by no one.
    Slack not answering is said on stderr, and does not stop the command.

    Raises:
        SettingsError: Slack lists no user group of a handle the policy names.
    """
    settings = Settings.from_env()
    if not app.policy.external_groups or not settings.slack_bot_token:
        return
    from slack_sdk.web.async_client import AsyncWebClient  # `start` alone, with a token

    from ..slack.app import SlackGroups

    client = AsyncWebClient(token=settings.slack_bot_token, timeout=10)
    if settings.slack_api_url:
        client.base_url = settings.slack_api_url
    try:
        handles = await SlackGroups(client).handles()
    except Exception as e:  # noqa: BLE001 - Slack's word is wanted, not required
        print(f"signoff: could not ask Slack about the policy's groups ({e})", file=sys.stderr)
        return
    undefined = undefined_group(app.policy, handles)
    if undefined is not None:
        raise SettingsError(f"{undefined}; nothing was started")


async def cmd_start(app: Signoff, args: argparse.Namespace) -> int:
    await _check_groups_with_slack(app)
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


REDELIVER_WAIT = 15.0
"""Seconds `redeliver` waits to tell how the bot's next attempt went."""


def _undelivered_json(u: Undelivered) -> dict[str, Any]:
    return {
        "job_id": u.job_id,
        "event": u.event,
        "thread_id": u.thread_id,
        "approval_id": u.approval_id,
        "error": u.error,
        "method": u.method,
        "channel": u.channel,
        "at": u.at,
    }


def _undelivered_line(u: Undelivered) -> str:
    """`job 12 decided of approval ap_1: Slack answered is_archived to chat.update in C0A, 3m ago`."""
    what = f"job {u.job_id} {u.event}" + (f" of approval {u.approval_id}" if u.approval_id else "")
    to = f" to {u.method}" if u.method else ""
    where = f" in {u.channel}" if u.channel else ""
    return f"{what}: Slack answered {u.error}{to}{where}, {_age(u.at)} ago"


def _webhook_json(w: WebhookDelivery) -> dict[str, Any]:
    return {
        "delivery_id": w.delivery_id,
        "url": w.url,
        "state": w.state,
        "tries": w.tries,
        "most_tries": WEBHOOK_ATTEMPTS,
        "error": w.error,
        "next_try": iso(w.next_try) if w.next_try is not None else None,
        "at": iso(w.at) if w.at is not None else None,
    }


def _webhook_line(w: WebhookDelivery) -> str:
    """`webhook dlv_1 to https://...: try 3 of 30 failed (HTTP 500); next try in 8s`."""
    head = f"webhook {w.delivery_id} to {w.url}: "
    tries = f"{w.tries} {'try' if w.tries == 1 else 'tries'}"
    if w.state == "delivered":
        return head + f"delivered after {tries}, {_age(w.at or 0)} ago"
    if w.state == "given up":
        return head + f"given up after {tries} ({w.error}), {_age(w.at or 0)} ago"
    wait = max(0, int((w.next_try or 0) - time.time()))
    failed = f"try {w.tries} of {WEBHOOK_ATTEMPTS} failed ({w.error}); " if w.error else ""
    return head + failed + (f"next try in {wait}s" if wait else "being tried now")


def _print_undelivered(items: list[Undelivered]) -> None:
    print(
        f"\nnot delivered to Slack ({len(items)}: Slack refused them for good; fix the cause, "
        "e.g. invite the bot or unarchive the channel, then `signoff redeliver THREAD`):"
    )
    rows = [
        [str(u.job_id), u.thread_id or "", u.event, u.channel, u.error, u.method, _age(u.at)]
        for u in items
    ]
    print(_table(rows, ["JOB", "THREAD", "EVENT", "CHANNEL", "ERROR", "METHOD", "AGE"]))


async def cmd_pending(app: Signoff, args: argparse.Namespace) -> int:
    items = await app.pending()
    undelivered = await app.undelivered()
    if args.json:  # what the tables list, with the keys of `show --json`
        print(
            json.dumps(
                {
                    "approvals": [_approval_json(a) for a in items],
                    "undelivered": [_undelivered_json(u) for u in undelivered],
                },
                indent=2,
            )
        )
        return 0
    if not items:
        print("nothing is waiting for approval")
        if undelivered:
            _print_undelivered(undelivered)
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
    if undelivered:
        _print_undelivered(undelivered)
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
    values = await app.hide_thread_secrets(args.thread_id, run["workflow"], state.values)
    undelivered = await app.undelivered(args.thread_id)
    webhooks = await app.webhooks(args.thread_id)
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
                    "undelivered": [_undelivered_json(u) for u in undelivered],
                    "webhooks": [_webhook_json(w) for w in webhooks],
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
    formats = _display_formats(app, run["workflow"], approvals)
    for key, value in values.items():
        text = display(value, formats.get(key)) or json.dumps(value, default=str)
        print(f"  {key} = {_shown(text, args.thread_id)}")
    for a in approvals:
        who = ", ".join(a.decided_by)
        print(
            f"  approval {a.id} {a.action}: {a.status}"
            + (f" by {who}" if who else "")
            + (f" ({a.reason})" if a.reason else "")
        )
        if a.title and a.title != a.action:
            print(f"    {_shown(a.title, args.thread_id)}")
        for key, before, after, editor in a.changes:
            was = a.shown(key, before) or json.dumps(before, default=str)
            now = a.shown(key, after) or json.dumps(after, default=str)
            print(f"    {key}: {was} → {now} (edited by {editor})")
        for line in _facts_lines(a.checked):
            print(f"    {_shown(line, args.thread_id)}")
    for u in undelivered:
        print(f"  not delivered: {_undelivered_line(u)}")
    if undelivered:
        print(f"  fix the cause, then `signoff redeliver {args.thread_id}`")
    for w in webhooks:
        print(f"  {_webhook_line(w)}")
    return 0


async def cmd_redeliver(app: Signoff, args: argparse.Namespace) -> int:
    """Queue again what Slack refused for good; the bot (`signoff run`) delivers it."""
    picked = await app.redeliver(args.target, actor=args.as_user)
    if not picked:
        raise ApprovalError(
            f"nothing of {args.target!r} waits to be redelivered; `signoff pending` lists what "
            "Slack refused"
        )
    for u in picked:
        print(f"queued again: {_undelivered_line(u)}")
    ids = {u.job_id for u in picked}
    deadline = time.monotonic() + REDELIVER_WAIT
    while time.monotonic() < deadline:
        left = await app.jobs.pending_of(ids)
        if not left:
            break
        await asyncio.sleep(0.2)
    else:
        print(
            "not delivered yet: the bot (`signoff run`) delivers it when it runs; "
            "`signoff pending` says if Slack refuses it again"
        )
        return 0
    again = [u for u in await app.undelivered() if u.job_id in ids]
    for u in again:
        print(f"Slack refused it again: {_undelivered_line(u)}")
    if not again:
        print("delivered")
    return 1 if again else 0


def _display_formats(app: Signoff, workflow: str, approvals: list[Approval]) -> dict[str, str]:
    """How `signoff show` shows a run's values: as its approvals' arguments are shown (the
    policy's `format`, 42.50), else as the workflow's inputs declare."""
    known = app.workflows.get(workflow)
    formats = dict(known.schema.formats) if known is not None else {}
    for a in approvals:
        formats.update(a.formats or {})
    return formats


async def cmd_decide(app: Signoff, args: argparse.Namespace, approve: bool) -> int:
    edits = dict(args.edit or {}) if approve else None
    grant = getattr(args, "grant", None) if approve else None
    result = await app.decide(
        args.approval_id, args.as_user, approve, note=args.note or "", edits=edits, grant=grant
    )
    a = result.approval
    if not result.settled:
        print(f"approval {a.id}: vote recorded, {a.approvals_count} of {a.required} approvals")
        return 0
    print(f"approval {a.id}: {a.status} by {', '.join(a.decided_by)}")
    if grant is not None:
        made = [g for g in await app.live_grants() if g.approval_id == a.id]
        for g in made:
            print(f"grant {g.id}: {g.left} more like this until {iso(g.expires_at)}")
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


async def cmd_retry(app: Signoff, args: argparse.Namespace) -> int:
    """Go on with a failed run from its last checkpoint, here (or by whoever takes the job)."""
    await app.retry(args.thread_id, actor=args.as_user)
    print(f"thread {args.thread_id}: retrying from its last checkpoint")
    deadline = time.monotonic() + RESUME_WAIT
    while True:
        await app.run_jobs(("resume",))
        run = await app.run_info(args.thread_id)
        if run is None or run["status"] != "running" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    print(await _report_run(app, args.thread_id))
    return 0 if run is None or run["status"] not in ("failed", "outcome_unknown") else 1


async def cmd_cancel(app: Signoff, args: argparse.Namespace) -> int:
    cancelled = await app.cancel(args.thread_id, actor=args.as_user, note=args.note)
    print(f"thread {args.thread_id}: cancelled")
    for approval_id in cancelled:
        print(f"  approval {approval_id}: cancelled")
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
    # APScheduler, for `signoff worker` alone: the other commands start without it
    from ..scheduler import start_scheduler

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
    age = parse_duration(args.older_than).total_seconds()
    n, grants = await app.purge(age), await app.purge_grants(age)
    print(
        f"purged {n} finished run(s) (completed, cancelled, failed) and {grants} ended "
        f"grant(s) older than {args.older_than}"
    )
    return 0


async def cmd_mcp(app: Signoff, args: argparse.Namespace) -> int:
    """The MCP server on standard input and output, asking as the service `--service`."""
    # the MCP SDK, for `signoff mcp` alone: the other commands start without it
    from ..mcp_server import serve_stdio

    await serve_stdio(app, args.service)
    return 0


def _facts_lines(checked: Mapping[str, Any] | None) -> list[str]:
    """What an approval's check read and what came of it, for `signoff show`."""
    if not checked:
        return []
    if "error" in checked or not isinstance(checked.get("facts"), Mapping):
        return [f"check failed: {checked.get('error')}"]
    lines = [f"facts checked {iso(checked.get('at') or 0)}: {facts_text(checked['facts'])}"]
    if isinstance(checked.get("changed"), Mapping):
        changes = changes_text(checked["changed"])
        lines.append(f"facts changed since approval {checked.get('after')}: {changes}")
    not_used = checked.get("not_used")
    if isinstance(not_used, Mapping):
        why = not_used.get("changed")
        said = (
            changes_text(why)
            if isinstance(why, Mapping)
            else f"check failed: {not_used.get('error')}"
        )
        lines.append(f"not run ({said}); asked again: {not_used.get('asked_again')}")
    return lines
