"""The `signoff` command: drive the governance core without Slack.

Every command reads `SIGNOFF_DATABASE_URL` (default: `signoff.db` here) and `SIGNOFF_POLICY`
(default: `signoff.toml` here); `db upgrade` needs no policy. Errors are one line on stderr and
a non-zero exit.

The CLI is an operator's tool, trusted like shell access to the database: `start` does not
check the policy's `starters` (`--as` only names the requester). Votes are checked like clicks
(`--as` must be an approver), and every audit event a command writes says `"via": "cli"`.

Here: the entry point and the one place errors become words; `_parser` holds the command line
(every option, its help, the argument types), `_commands` the commands.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from graphs import GraphError

from ..approvals.db import Database
from ..approvals.errors import ApprovalError
from ..config import Settings, SettingsError, build_signoff
from ._commands import has_tables
from ._parser import build_parser, importable_here

__all__ = ["build_parser", "main"]


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
        if getattr(args, "read_only", False) and not await has_tables(app.db):
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


def _doctor(as_json: bool) -> int:
    """`signoff doctor`: the findings, and 1 when any fails."""
    from ..doctor import diagnose  # slack_sdk's client (see `_main`)

    try:
        findings = asyncio.run(diagnose(Settings.from_env()))
    except SettingsError as e:
        return _exit_status(e)
    if as_json:
        print(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        width = max(len(f.check) for f in findings)
        for f in findings:
            mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[f.status]
            print(f"{mark}  {f.check.ljust(width)}  {f.said}")
            if f.fix:
                print(f"      {' ' * width}  -> {f.fix}")
    return 1 if any(f.status == "fail" for f in findings) else 0


def _main(argv: list[str]) -> int:
    parser = build_parser()
    if not argv:  # bare `signoff`: what it can do
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    importable_here()
    if getattr(args, "scaffold", False):
        # each command's own modules are loaded for it alone, so `signoff --help` and the
        # database commands start without aiohttp, Bolt or the sandbox
        from ..scaffold import ScaffoldError, write_workflow

        try:
            print(write_workflow(args.name, args.dir))
        except ScaffoldError as e:
            return _exit_status(e)
        return 0
    if getattr(args, "demo", False):
        from ..demo import main as demo_main  # the sandbox and aiohttp (see above)

        return demo_main(
            port=args.port,
            walkthrough=args.walkthrough,
            db=args.db,
            bot_port=args.bot_port,
            policy=args.policy,
            socket_mode=args.socket_mode,
            bot_token=args.bot_token,
        )
    if getattr(args, "doctor", False):
        return _doctor(args.json)
    if getattr(args, "serve", False):
        from ..http import serve  # aiohttp, Bolt, the MCP SDK (see above)

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
