"""The objects of a Slack workspace as the stand-in stores them, each able to render itself in
the shape Slack's API returns (`to_api()`) and, with the stand-in's bookkeeping, for tests
(`to_state()`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BOT_USER",
    "JSON",
    "Channel",
    "Ephemeral",
    "Message",
    "Team",
    "User",
    "UserGroup",
    "View",
]

JSON = dict[str, Any]


@dataclass
class User:
    """A member of the workspace."""

    id: str
    """Slack user id, e.g. `U0ALICE`."""
    name: str
    """Handle, e.g. `alice`."""
    real_name: str = ""
    """Display name; the handle, capitalised, when empty."""
    is_bot: bool = False
    """True for the app's bot user."""
    tz: str = "UTC"
    """IANA time zone."""
    deleted: bool = False
    """Deactivated: no DM can be opened with them (`conversations.open`: `user_disabled`)."""
    status_emoji: str = ""
    """Their status emoji (`:palm_tree:`), "" for none."""
    status_text: str = ""
    status_expiration: int = 0
    """When the status clears by itself (Unix time); 0: it does not (Slack's own convention)."""
    dnd_start: int = 0
    """Their do-not-disturb: from when (Unix time; 0 with `dnd_end` 0 for none)."""
    dnd_end: int = 0
    """... until when."""

    def to_api(self, team_id: str) -> JSON:
        """The `user` object of users.info."""
        real = self.real_name or self.name.capitalize()
        return {
            "id": self.id,
            "team_id": team_id,
            "name": self.name,
            "real_name": real,
            "deleted": self.deleted,
            "is_bot": self.is_bot,
            "is_admin": False,
            "tz": self.tz,
            "profile": {
                "real_name": real,
                "display_name": self.name,
                "status_text": self.status_text,
                "status_emoji": self.status_emoji,
                "status_expiration": self.status_expiration,
            },
        }

    def dnd_status(self) -> JSON:
        """Their do-not-disturb as `dnd.info` and `dnd_updated_user` say it: `dnd_enabled`,
        with the next (or current) window's start and end."""
        return {
            "dnd_enabled": self.dnd_end > 0,
            "next_dnd_start_ts": self.dnd_start or 1,
            "next_dnd_end_ts": self.dnd_end or 1,
        }


BOT_USER = User(id="U0SIGNOFF", name="signoff", real_name="signoff", is_bot=True)
"""The app's bot user in the default workspace."""


@dataclass
class UserGroup:
    """A Slack user group (`@approvers`); `usergroups.users.list` reads its members."""

    id: str
    """Slack group id, e.g. `S0APPROVERS`."""
    handle: str
    """The name after `@`."""
    users: list[str] = field(default_factory=list)
    """Member user ids."""


@dataclass
class Team:
    """The workspace itself and the app installed in it."""

    id: str = "T0SANDBOX"
    domain: str = "sandbox"
    app_id: str = "A0SIGNOFF"
    bot_id: str = "B0SIGNOFF"
    bot_user_id: str = BOT_USER.id
    scopes: tuple[str, ...] = (
        "chat:write", "commands", "usergroups:read", "channels:history", "groups:history",
        "im:write", "im:history", "dnd:read", "users:read",
    )  # fmt: skip
    """The bot token's scopes, as `manifest.yml` requests them; with `chat:write.public` (which
    signoff does not request) the bot could post in public channels it is not a member of."""
    messages_tab: bool = True
    """The app's Messages tab, as its manifest sets it (`messages_tab_enabled`, read only or
    not): hidden (False), Slack refuses the bot's direct messages (`messages_tab_disabled`)."""


@dataclass
class Message:
    """A message in a channel, top level or in a thread."""

    ts: str
    """Slack's message id, unique in its channel: `"1700000000.000100"`."""
    channel: str
    """Id of the channel it is in."""
    user: str
    """Author's user id (the bot user for the app's messages)."""
    text: str = ""
    blocks: list[JSON] = field(default_factory=list)
    thread_ts: str | None = None
    """The parent's ts for a reply, own ts for a parent that has replies, else None."""
    bot_id: str | None = None
    """Set on the app's messages."""
    replies: list[str] = field(default_factory=list)
    """ts of the replies, oldest first (parents only)."""
    edits: list[JSON] = field(default_factory=list)
    """Earlier versions, oldest first: `{"ts": edit time, "text": ..., "blocks": ...}`."""
    edited_ts: str | None = None
    """When it was last edited (chat.update), if ever."""
    metadata: JSON | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)
    """Emoji name -> who reacted with it, in order (reactions.add)."""
    subtype: str | None = None
    """`thread_broadcast` for a reply also sent to the channel (`reply_broadcast`), else None."""

    @property
    def is_reply(self) -> bool:
        """True for a message inside a thread (not its parent)."""
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def in_channel(self) -> bool:
        """True for what the channel shows: a top-level message, or a reply broadcast to it."""
        return not self.is_reply or self.subtype == "thread_broadcast"

    def to_api(self) -> JSON:
        """The message object of conversations.history / conversations.replies."""
        out: JSON = {"type": "message", "ts": self.ts, "user": self.user, "text": self.text}
        if self.subtype:
            out["subtype"] = self.subtype
        if self.blocks:
            out["blocks"] = self.blocks
        if self.bot_id:
            out["bot_id"] = self.bot_id
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.replies:
            out["reply_count"] = len(self.replies)
            out["latest_reply"] = self.replies[-1]
        if self.edited_ts:
            out["edited"] = {"user": self.user, "ts": self.edited_ts}
        if self.metadata:
            out["metadata"] = self.metadata
        if self.reactions:
            out["reactions"] = [
                {"name": name, "users": users, "count": len(users)}
                for name, users in self.reactions.items()
            ]
        return out

    def to_state(self) -> JSON:
        """The message with the stand-in's bookkeeping (channel, edit history) for tests."""
        return {
            **self.to_api(),
            "channel": self.channel,
            "replies": self.replies,
            "edits": self.edits,
        }


@dataclass
class Ephemeral:
    """A message only one user sees (chat.postEphemeral, response_url, a slash command's ack)."""

    ts: str
    channel: str
    user: str
    """Who sees it."""
    text: str = ""
    blocks: list[JSON] = field(default_factory=list)
    thread_ts: str | None = None
    source: str = "chat.postEphemeral"
    """What produced it: `chat.postEphemeral`, `response_url` or `command_ack`."""

    def to_state(self) -> JSON:
        """Everything about it, for tests and the sandbox page."""
        return {
            "ts": self.ts,
            "channel": self.channel,
            "user": self.user,
            "text": self.text,
            "blocks": self.blocks,
            "thread_ts": self.thread_ts,
            "source": self.source,
        }


@dataclass
class View:
    """An open modal or a published Home tab, as Slack stores it."""

    id: str
    """Slack view id, e.g. `V000001`."""
    user: str
    """Whose screen it is on."""
    spec: JSON
    """What the app sent: type, title, blocks, callback_id, private_metadata, ..."""
    hash: str
    """Changes on every update; views.update with a stale hash gets `hash_conflict`."""
    root_view_id: str
    previous_view_id: str | None = None
    errors: dict[str, str] = field(default_factory=dict)
    """Input errors the app answered a submission with (`response_action: errors`)."""

    def to_api(self, team: Team) -> JSON:
        """The `view` object views.* return and view_submission payloads carry."""
        spec = self.spec
        return {
            "id": self.id,
            "team_id": team.id,
            "type": spec.get("type", "modal"),
            "title": spec.get("title"),
            "submit": spec.get("submit"),
            "close": spec.get("close"),
            "blocks": spec.get("blocks", []),
            "private_metadata": spec.get("private_metadata", ""),
            "callback_id": spec.get("callback_id", ""),
            "external_id": spec.get("external_id", ""),
            "state": {"values": {}},
            "hash": self.hash,
            "clear_on_close": bool(spec.get("clear_on_close", False)),
            "notify_on_close": bool(spec.get("notify_on_close", False)),
            "root_view_id": self.root_view_id,
            "previous_view_id": self.previous_view_id,
            "app_id": team.app_id,
            "bot_id": team.bot_id,
        }


@dataclass
class Channel:
    """A public or private channel or a direct-message channel, with its messages."""

    id: str
    name: str
    is_im: bool = False
    """A direct-message channel between the bot and `im_user`."""
    im_user: str | None = None
    is_private: bool = False
    """A private channel: the bot sees it only when it is a member."""
    is_member: bool = True
    """Whether the bot is in it. A private channel (or a DM) it is not in does not exist for it
    (`channel_not_found`); a public one it may read about but not read (`not_in_channel`)."""
    is_archived: bool = False
    """Archived: nothing can be posted (`is_archived`) or edited (`is_inactive`) there."""
    messages: dict[str, Message] = field(default_factory=dict)
    """Every message, replies included, by ts, in posting order."""
    people: frozenset[str] | None = None
    """The user ids of the people in it; None: everyone in the workspace (the demo's channels).
    An ephemeral message to anyone else is refused (`user_not_in_channel`)."""

    def has_person(self, user_id: str) -> bool:
        """Whether `user_id` is in it: a DM holds its one person."""
        if self.is_im:
            return user_id == self.im_user
        return self.people is None or user_id in self.people

    @property
    def visible(self) -> bool:
        """Whether the bot can see it at all: a member, or a public channel."""
        return self.is_member or not (self.is_private or self.is_im)

    def to_api(self) -> JSON:
        """The channel object of conversations.info / conversations.list."""
        out: JSON = {
            "id": self.id,
            "name": self.name,
            "is_channel": not self.is_im,
            "is_im": self.is_im,
            "is_private": self.is_im or self.is_private,
            "is_archived": self.is_archived,
            "is_member": self.is_member,
        }
        if self.im_user:
            out["user"] = self.im_user
        return out
