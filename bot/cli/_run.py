"""The commands that run on the governance core, on an event loop: a database command, its
`Signoff` (for `db upgrade`, the database alone) opened before and closed after it; `run`, the
bot; `doctor`. And the errors a command may meet in ordinary use (`SAID`).

`bot.cli` imports this module only once it knows the command needs it: it is what loads
asyncio, SQLAlchemy and the graph runtime, which `signoff --help` does without.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from graphs import GraphError

from ..approvals.db import Database
from ..approvals.errors import ApprovalError
from ..config import Settings, SettingsError, build_signoff
from . import _gc
from ._commands import has_tables

__all__ = ["SAID", "command", "doctor", "serve"]

SAID = (ApprovalError, GraphError, SettingsError)
"""The errors a command may meet in ordinary use: each says what is wrong and what to do.
`ApprovalError` covers storage too (`DatabaseUnavailable` is one)."""


def command(args: argparse.Namespace) -> int:
    """Run the database command `args.fn`: its exit status."""
    _gc.loaded()
    return asyncio.run(_with_core(args.fn, args))


def serve(*, port: int, host: str) -> int:
    """`signoff run`: the bot, until SIGTERM or SIGINT."""
    from ..http import serve as serve_bot  # aiohttp, Bolt, slack_sdk: for `run` alone

    _gc.loaded()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("alembic", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    asyncio.run(serve_bot(Settings.from_env(), port=port, host=host))
    return 0


def doctor(as_json: bool) -> int:
    """`signoff doctor`: the findings, and 1 when any fails."""
    from ..doctor import diagnose  # slack_sdk's client: for `doctor` alone

    _gc.loaded()
    findings = asyncio.run(diagnose(Settings.from_env()))
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


async def _with_core(
    fn: Callable[[Any, argparse.Namespace], Awaitable[int]], args: argparse.Namespace
) -> int:
    """`fn(app, args)` with the `Signoff` of the environment's settings (`fn(db, args)` for a
    command that sets `schema`), the tables brought to this code's schema first (refused, for
    a command that only reads, when there are none), and what it recorded linked into the
    audit chain before it exits."""
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
