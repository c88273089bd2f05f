"""The command line of `python -m bot.sandbox.slack_api`, the fake Slack as a process of its
own: its options and the workspace they describe.

The process prints one line, `SANDBOX_SLACK_URL=http://127.0.0.1:PORT/api/`, once it is serving
(the Web API base URL; the control API is at `http://127.0.0.1:PORT/_sandbox/`), then serves
until SIGINT or SIGTERM (`bot.sandbox.slack_api.main`). Before it, without `--token`, the bot
token it issued (`SANDBOX_SLACK_BOT_TOKEN=xoxb-...`), and without `--app-token` the app-level
one (`SANDBOX_SLACK_APP_TOKEN=xapp-...`): it takes no token it did not issue.
"""

from __future__ import annotations

import argparse
import os

from bot.sandbox.limits import TRIGGER_ID_TTL
from bot.sandbox.workspace import BOT_USER, User, UserGroup, Workspace

__all__ = ["APP_TOKEN_PREFIX", "BOT_TOKEN_PREFIX", "READY_PREFIX", "build_workspace", "parse_args"]

READY_PREFIX = "SANDBOX_SLACK_URL="
"""Start of the line printed once the fake is serving; the Web API base URL follows."""
BOT_TOKEN_PREFIX = "SANDBOX_SLACK_BOT_TOKEN="
"""Start of the line, before the URL's, giving the bot token it made up (without `--token`)."""
APP_TOKEN_PREFIX = "SANDBOX_SLACK_APP_TOKEN="
"""The same for the app-level token it made up (without `--app-token`)."""


def _split(spec: str) -> list[tuple[str | None, str]]:
    """`"alice,U9=bob"` -> `[(None, "alice"), ("U9", "bob")]`."""
    out: list[tuple[str | None, str]] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        ident, _, name = item.rpartition("=")
        out.append((ident or None, name))
    return out


def build_workspace(
    users: str | None,
    channels: str | None,
    usergroups: list[str] | None,
    scopes: str | None = None,
    messages_tab: bool = True,
) -> Workspace:
    """The workspace the options describe; the demo one for each part not given.

    Args:
        users: `"alice,bob"` or `"U123=alice,..."`; ids default to `U0` + the name in capitals.
        channels: `"approvals,general"` or `"C123=approvals,..."`; ids default to `C0` + NAME.
        usergroups: Each `"approvers=alice,bob"` (members by name or id); id `S0` + HANDLE.
        scopes: `"chat:write,commands"`: the bot token's scopes, as if the app were installed
            with these; default the ones signoff's manifest requests.
        messages_tab: False as if the app's manifest hid its Messages tab.
    """
    demo = Workspace.demo()
    people = (
        [User(i or f"U0{n.upper()}", n) for i, n in _split(users)]
        if users is not None
        else [u for u in demo.users.values() if not u.is_bot]
    )
    by_name = {u.name: u.id for u in people}
    rooms = (
        [(i or f"C0{n.upper()}", n) for i, n in _split(channels)]
        if channels is not None
        else [(c.id, c.name) for c in demo.channels.values()]
    )
    groups = list(demo.usergroups.values())
    if usergroups is not None:
        groups = []
        for spec in usergroups:
            handle, _, members = spec.partition("=")
            ids = [by_name.get(m.strip(), m.strip()) for m in members.split(",") if m.strip()]
            groups.append(UserGroup(f"S0{handle.upper()}", handle, ids))
    workspace = Workspace(users=[*people, BOT_USER], channels=rooms, usergroups=groups)
    workspace.team.messages_tab = messages_tab
    if scopes is not None:
        workspace.team.scopes = tuple(s.strip() for s in scopes.split(",") if s.strip())
    return workspace


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line options."""
    p = argparse.ArgumentParser(
        prog="python -m bot.sandbox.slack_api", description="A local stand-in for Slack's Web API."
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    p.add_argument("--users", help="alice,bob or U123=alice,... (default: alice, bob, carol, dave)")
    p.add_argument("--channels", help="approvals,general or C123=approvals,...")
    p.add_argument(
        "--usergroup", action="append", help="approvers=alice,bob (repeatable; default @approvers)"
    )
    p.add_argument(
        "--scopes", help="the bot token's scopes: chat:write,commands,... (default: the manifest's)"
    )
    p.add_argument(
        "--no-messages-tab",
        dest="messages_tab",
        action="store_false",
        help="as if the app's manifest hid its Messages tab: direct messages are refused",
    )
    p.add_argument(
        "--token",
        action="append",
        help="a bot token it issued (repeatable; default: one made up, printed)",
    )
    p.add_argument(
        "--app-url", help="the app's request URL, e.g. http://127.0.0.1:3000/slack/events"
    )
    p.add_argument(
        "--signing-secret",
        default=os.environ.get("SLACK_SIGNING_SECRET"),
        help="the app's signing secret (default: $SLACK_SIGNING_SECRET)",
    )
    p.add_argument(
        "--app-token",
        action="append",
        help="an xapp- token it issued (repeatable; default: one made up, printed)",
    )
    p.add_argument(
        "--socket-mode", action="store_true", help="send the user's actions over Socket Mode"
    )
    p.add_argument("--rate-limits", action="store_true", help="answer 429 past Slack's rate limits")
    p.add_argument(
        "--trigger-ttl", type=float, default=TRIGGER_ID_TTL, help="seconds a trigger_id lasts"
    )
    return p.parse_args(argv)
