"""The `signoff` command: drive the governance core without Slack.

Every command reads `SIGNOFF_DATABASE_URL` (default: `signoff.db` here) and `SIGNOFF_POLICY`
(default: `signoff.toml` here); `db upgrade` needs no policy. Errors are one line on stderr and
a non-zero exit.

The CLI is an operator's tool, trusted like shell access to the database: `start` does not
check the policy's `starters` (`--as` only names the requester). Votes are checked like clicks
(`--as` must be an approver), and every audit event a command writes says `"via": "cli"`.

Here: the entry point and the one place errors become words; `_parser` holds the command line
(every option, its help, the argument types), `_commands` the commands, `_run` what runs one
against the governance core. Each command loads what it uses, when it runs: `signoff --help`
and a mistake in the command line are answered without SQLAlchemy, the graph runtime or the
workflows (`tests/approvals/test_cli_imports.py` holds it to that).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from . import _gc
from ._parser import build_parser, importable_here

__all__ = ["build_parser", "main"]


def _exit_status(error: Exception) -> int:
    """The one place an error a command may meet in ordinary use (`_run.SAID`) becomes words:
    one line on stderr and exit status 1. Anything else is a bug, and goes up with its
    traceback."""
    print(f"signoff: {error}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """`signoff ARGS...`: the exit status. A reader that goes away (`signoff show T | head -1`)
    ends the output quietly.

    Without `argv` (the `signoff` script, `python -m bot.cli`) the process is the command's:
    its garbage collector is tuned for a start and an exit (`_gc`)."""
    own = argv is None
    if own:
        _gc.loading()
    try:
        status = _main(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()
    except BrokenPipeError:
        # Whatever is left to print goes nowhere, and Python's own flush at exit finds no pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if own:
            _gc.exiting()
    return status


def _main(argv: list[str]) -> int:
    parser = build_parser()
    if not argv:  # bare `signoff`: what it can do
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    importable_here()
    # Each command's own modules are loaded for it alone, so that `signoff --help` starts
    # without asyncio, SQLAlchemy, the graph runtime or the workflows, and the database
    # commands without aiohttp, Bolt or the sandbox.
    if getattr(args, "scaffold", False):
        from ..scaffold import ScaffoldError, write_workflow

        try:
            print(write_workflow(args.name, args.dir))
        except ScaffoldError as e:
            return _exit_status(e)
        return 0
    if getattr(args, "demo", False):
        from ..demo import main as demo_main  # the sandbox and aiohttp (see above)

        _gc.loaded()
        return demo_main(
            port=args.port,
            walkthrough=args.walkthrough,
            db=args.db,
            bot_port=args.bot_port,
            policy=args.policy,
            socket_mode=args.socket_mode,
            bot_token=args.bot_token,
        )
    from . import _run  # asyncio and the governance core (see above)

    try:
        if getattr(args, "doctor", False):
            return _run.doctor(args.json)
        if getattr(args, "serve", False):
            return _run.serve(port=args.port, host=args.host)
        return _run.command(args)
    except KeyboardInterrupt:
        return 130
    except _run.SAID as e:
        return _exit_status(e)
