"""The stand-in's model of one Slack workspace: people, groups, channels, messages, views.

Pure state, no HTTP: the Web API handlers (`_web_api.py`) and the sandbox's control routes read
and change it. Lookups that Slack can refuse raise `SlackApiFailure` with Slack's error code.
The objects themselves are in `models.py`.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.models import (
    BOT_USER,
    JSON,
    Channel,
    Ephemeral,
    Message,
    Team,
    User,
    UserGroup,
    View,
)

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
    "Workspace",
]


class Workspace:
    """One workspace's people and conversations; what the fake Slack serves.

    Args:
        users: Members; the bot user is added when missing.
        channels: Channels as `(id, name)` (public, with the bot in them) or as `Channel`s.
        usergroups: User groups.
        team: Ids of the team, the app and its bot.
        clock: Wall clock for message timestamps; swap it in tests to pin ts values.
    """

    def __init__(
        self,
        users: Iterable[User] = (),
        channels: Iterable[tuple[str, str] | Channel] = (),
        usergroups: Iterable[UserGroup] = (),
        *,
        team: Team | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.team = team or Team()
        self.clock = clock
        self.users: dict[str, User] = {u.id: u for u in users}
        if self.team.bot_user_id not in self.users:
            bot = User(id=self.team.bot_user_id, name="signoff", is_bot=True)
            self.users[bot.id] = bot
        self.usergroups: dict[str, UserGroup] = {g.id: g for g in usergroups}
        rooms = [c if isinstance(c, Channel) else Channel(*c) for c in channels]
        self.channels: dict[str, Channel] = {c.id: c for c in rooms}
        self.ephemerals: dict[str, list[Ephemeral]] = {}
        """Ephemeral messages per user id, oldest first."""
        self.views: dict[str, list[View]] = {}
        """Open modal stack per user id, bottom first (empty list or missing: no modal)."""
        self.home: dict[str, View] = {}
        """Published Home tab per user id."""
        self._last_ts = 0.0
        self._ids = itertools.count(1)

    @classmethod
    def demo(cls, **kwargs: Any) -> Workspace:
        """A small workspace: alice, bob, carol, dave; #approvals, #general; @approvers."""
        people = [
            User(f"U0{n.upper()}", n, tz="Europe/London") for n in ("alice", "bob", "carol", "dave")
        ]
        return cls(
            users=[*people, BOT_USER],
            channels=[("C0APPROVALS", "approvals"), ("C0GENERAL", "general")],
            usergroups=[UserGroup("S0APPROVERS", "approvers", ["U0ALICE", "U0BOB"])],
            **kwargs,
        )

    def fresh_copy(self) -> Workspace:
        """The same team, people, groups and channels, with no conversations in them."""
        return Workspace(
            users=[dataclasses.replace(u) for u in self.users.values()],
            channels=[
                dataclasses.replace(c, messages={}) for c in self.channels.values() if not c.is_im
            ],
            usergroups=[
                dataclasses.replace(g, users=list(g.users)) for g in self.usergroups.values()
            ],
            team=dataclasses.replace(self.team),
            clock=self.clock,
        )

    # ids -------------------------------------------------------------------------------

    def next_ts(self) -> str:
        """A fresh message ts: the clock in microseconds, strictly increasing."""
        now = max(round(self.clock(), 6), round(self._last_ts + 0.000001, 6))
        self._last_ts = now
        return f"{now:.6f}"

    def next_id(self, prefix: str) -> str:
        """A fresh id such as `V000007`, unique in this workspace."""
        return f"{prefix}{next(self._ids):06d}"

    # lookups ---------------------------------------------------------------------------

    def user(self, user_id: str) -> User:
        """The user with this id or handle; `user_not_found` otherwise."""
        if user_id in self.users:
            return self.users[user_id]
        for u in self.users.values():
            if u.name == user_id.removeprefix("@"):
                return u
        raise SlackApiFailure("user_not_found")

    def channel(self, ref: str) -> Channel:
        """A channel by id, `name` or `#name`; a user id opens the bot's DM with them.

        Raises:
            SlackApiFailure: `channel_not_found` for anything else.
        """
        if ref in self.channels:
            return self.channels[ref]
        for ch in self.channels.values():
            if not ch.is_im and ch.name == ref.removeprefix("#"):
                return ch
        if ref in self.users:
            return self.im(ref)
        raise SlackApiFailure("channel_not_found")

    def conversation(self, ref: str) -> Channel:
        """`channel(ref)`, as the bot sees it: `channel_not_found` for a private channel or a
        DM it is not a member of, as for one that does not exist."""
        channel = self.channel(ref)
        if not channel.visible:
            raise SlackApiFailure("channel_not_found")
        return channel

    def add_channel(
        self,
        channel_id: str,
        name: str,
        *,
        private: bool = False,
        member: bool = True,
        people: frozenset[str] | None = None,
    ) -> Channel:
        """A new channel (public by default, with the bot in it, and everyone unless `people`
        names who is)."""
        channel = Channel(channel_id, name, is_private=private, is_member=member, people=people)
        self.channels[channel.id] = channel
        return channel

    def im(self, user_id: str) -> Channel:
        """The bot's direct-message channel with a user, opened on first use."""
        for ch in self.channels.values():
            if ch.is_im and ch.im_user == user_id:
                return ch
        ch = Channel(id="D" + user_id.removeprefix("U"), name=user_id, is_im=True, im_user=user_id)
        self.channels[ch.id] = ch
        return ch

    def message(self, channel: Channel, ts: str) -> Message:
        """A message in a channel; `message_not_found` otherwise."""
        try:
            return channel.messages[ts]
        except KeyError:
            raise SlackApiFailure("message_not_found") from None

    def usergroup(self, group_id: str) -> UserGroup:
        """A user group by id or handle; `no_such_subteam` otherwise."""
        for g in self.usergroups.values():
            if group_id in (g.id, g.handle):
                return g
        raise SlackApiFailure("no_such_subteam")

    def find_view(self, view_id: str | None = None, external_id: str | None = None) -> View:
        """An open modal or Home tab by id or external_id; `not_found` otherwise."""
        for view in self.all_views():
            if view_id and view.id == view_id:
                return view
            if external_id and view.spec.get("external_id") == external_id:
                return view
        raise SlackApiFailure("not_found")

    def all_views(self) -> list[View]:
        """Every open modal and published Home tab."""
        return [*(v for stack in self.views.values() for v in stack), *self.home.values()]

    # changes ---------------------------------------------------------------------------

    def stamp_ids(self, blocks: list[JSON]) -> list[JSON]:
        """Copies of `blocks` with a block_id on every block and an action_id on every
        interactive element that lacks one, as Slack adds them."""
        out = []
        for block in blocks:
            block = dict(block)
            block.setdefault("block_id", self.next_id("b"))
            for key in ("element", "accessory"):
                if isinstance(block.get(key), dict):
                    block[key] = self._stamp_element(block[key])
            if isinstance(block.get("elements"), list) and block.get("type") == "actions":
                block["elements"] = [self._stamp_element(e) for e in block["elements"]]
            out.append(block)
        return out

    def _stamp_element(self, element: Any) -> Any:
        if isinstance(element, dict) and "action_id" not in element:
            return {**element, "action_id": self.next_id("a")}
        return element

    def post(
        self,
        channel: Channel,
        user: str,
        text: str,
        blocks: list[JSON],
        *,
        thread_ts: str | None = None,
        metadata: JSON | None = None,
        broadcast: bool = False,
    ) -> Message:
        """Add a message (a reply when `thread_ts` names a message in the channel).

        Args:
            broadcast: A reply also shown in the channel (`reply_broadcast`): Slack stores it
                once, in the thread, with subtype `thread_broadcast`, and lists it in the
                channel's history too. Without `thread_ts` it means nothing, as in Slack.

        Raises:
            SlackApiFailure: `thread_not_found` when `thread_ts` names no message there.
        """
        parent = None
        if thread_ts:
            if thread_ts not in channel.messages:
                raise SlackApiFailure("thread_not_found")
            parent = channel.messages[thread_ts]
            if parent.is_reply:  # Slack threads a reply to a reply under the same parent
                parent = self.message(channel, parent.thread_ts or "")
        bot_id = self.team.bot_id if user == self.team.bot_user_id else None
        msg = Message(
            ts=self.next_ts(), channel=channel.id, user=user, text=text, blocks=self.stamp_ids(blocks),
            thread_ts=parent.ts if parent else None, bot_id=bot_id, metadata=metadata,
            subtype="thread_broadcast" if broadcast and parent else None,
        )  # fmt: skip
        if parent:
            parent.thread_ts = parent.ts
            parent.replies.append(msg.ts)
        channel.messages[msg.ts] = msg
        return msg

    def edit(self, msg: Message, text: str | None, blocks: list[JSON] | None) -> Message:
        """Replace a message's text and/or blocks, keeping the old version in `edits`."""
        edit_ts = self.next_ts()
        msg.edits.append({"ts": edit_ts, "text": msg.text, "blocks": msg.blocks})
        if text is not None:
            msg.text = text
        if blocks is not None:
            msg.blocks = self.stamp_ids(blocks)
        msg.edited_ts = edit_ts
        return msg

    def delete(self, msg: Message) -> None:
        """Remove a message (and its place in its parent's replies)."""
        channel = self.channels[msg.channel]
        channel.messages.pop(msg.ts, None)
        if msg.is_reply and msg.thread_ts in channel.messages:
            channel.messages[msg.thread_ts].replies.remove(msg.ts)

    def post_ephemeral(
        self,
        channel: Channel,
        user: str,
        text: str,
        blocks: list[JSON],
        *,
        thread_ts: str | None = None,
        source: str = "chat.postEphemeral",
    ) -> Ephemeral:
        """Show a message to one user only."""
        eph = Ephemeral(
            self.next_ts(), channel.id, user, text, self.stamp_ids(blocks), thread_ts, source
        )
        self.ephemerals.setdefault(user, []).append(eph)
        return eph

    def new_view(self, user: str, spec: JSON, *, root: View | None = None) -> View:
        """A view object for `spec` with a fresh id and hash (not yet placed anywhere)."""
        view_id = self.next_id("V")
        return View(
            id=view_id, user=user, spec=self._stamp_view(spec), hash=self.next_ts(),
            root_view_id=root.root_view_id if root else view_id,
            previous_view_id=root.id if root else None,
        )  # fmt: skip

    def replace_view(self, view: View, spec: JSON) -> None:
        """Show `spec` in place of an open view: new hash, errors cleared (views.update)."""
        view.spec, view.hash, view.errors = self._stamp_view(spec), self.next_ts(), {}

    def _stamp_view(self, spec: JSON) -> JSON:
        return {**spec, "blocks": self.stamp_ids(spec.get("blocks") or [])}

    # state -----------------------------------------------------------------------------

    def to_state(self) -> JSON:
        """Everything, JSON-ready: what `GET /_sandbox/state` answers."""
        return {
            "team": vars(self.team),
            "users": [vars(u) for u in self.users.values()],
            "usergroups": [vars(g) for g in self.usergroups.values()],
            "channels": [
                {**ch.to_api(), "messages": [m.to_state() for m in ch.messages.values()]}
                for ch in self.channels.values()
            ],
            "ephemerals": {u: [e.to_state() for e in es] for u, es in self.ephemerals.items()},
            "views": {
                u: [v.to_api(self.team) | {"user": u, "errors": v.errors} for v in s]
                for u, s in self.views.items()
                if s
            },
            "home": {u: v.to_api(self.team) | {"user": u} for u, v in self.home.items()},
        }
