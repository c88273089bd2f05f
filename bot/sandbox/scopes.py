"""The OAuth scopes each Web API method accepts, as Slack's method pages list them: a bot token
without one of them is refused with `missing_scope`, saying which scopes would do (`needed`) and
which the token has (`provided`), whatever else is wrong with the call.

For the methods on conversations the scope depends on the conversation: a public channel wants
`channels:*`, a private one `groups:*`, a direct message `im:*` (https://api.slack.com/methods/
conversations.history, "Required scopes"). Methods that need no scope (`auth.test`, `views.*`,
`chat.getPermalink`) are listed with none, so that a method the stand-in answers and this table
forgets is a test failure, not a silent pass.
"""

from __future__ import annotations

from typing import Any

from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.workspace import Workspace

__all__ = ["ACCEPTED", "accepted", "accepted_somewhere", "check_scopes"]

_BY_KIND = {
    "history": ("channels:history", "groups:history", "im:history"),
    "read": ("channels:read", "groups:read", "im:read"),
}
"""For methods on one conversation: the scope a public channel, a private one and a DM wants."""

ACCEPTED: dict[str, tuple[str, ...] | str] = {
    "apps.connections.open": (),  # an app-level token's call: connections:write, checked apart
    "auth.test": (),
    "chat.delete": ("chat:write",),
    "chat.getPermalink": (),
    "chat.postEphemeral": ("chat:write",),
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "conversations.history": "history",
    "conversations.info": "read",
    "conversations.list": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.open": ("channels:manage", "groups:write", "im:write", "mpim:write"),
    "conversations.replies": "history",
    "dnd.info": ("dnd:read",),
    "reactions.add": ("reactions:write",),
    "reactions.get": ("reactions:read",),
    "reactions.remove": ("reactions:write",),
    "usergroups.list": ("usergroups:read",),
    "usergroups.users.list": ("usergroups:read",),
    "users.info": ("users:read",),
    "users.list": ("users:read",),
    "views.open": (),
    "views.publish": (),
    "views.push": (),
    "views.update": (),
}
"""Per method: the scopes any one of which lets a bot token call it (empty: none needed), or
`"history"` / `"read"` for the scope of the conversation's kind (`_BY_KIND`)."""


def accepted(method: str, params: dict[str, Any], workspace: Workspace) -> tuple[str, ...]:
    """The scopes that would let a bot token make this call (any one of them; empty: none)."""
    found = ACCEPTED[method]
    if not isinstance(found, str):
        return found
    try:
        channel = workspace.channel(str(params.get("channel") or ""))
    except SlackApiFailure:  # no such channel: any of the kinds would do; the method says so
        return _BY_KIND[found]
    public, private, im = _BY_KIND[found]
    return (im,) if channel.is_im else (private,) if channel.is_private else (public,)


def accepted_somewhere(method: str) -> tuple[str, ...]:
    """The scopes that let a bot token make this call on some conversation (empty: none)."""
    found = ACCEPTED[method]
    return _BY_KIND[found] if isinstance(found, str) else found


def check_scopes(method: str, params: dict[str, Any], workspace: Workspace) -> None:
    """Refuse the call as Slack does when the bot token has none of the scopes it accepts.

    Raises:
        SlackApiFailure: `missing_scope`, with `needed` and `provided` as Slack gives them.
    """
    wanted = accepted(method, params, workspace)
    if wanted and not set(wanted) & set(workspace.team.scopes):
        raise SlackApiFailure(
            "missing_scope", needed=",".join(wanted), provided=",".join(workspace.team.scopes)
        )
