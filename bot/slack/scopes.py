"""The bot token's scopes, each with the calls that need it: what both manifests request, what
`signoff doctor` checks an installed token for, and nothing more (a scope the code does not use
is one more thing an installer must trust it with)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BOT_SCOPES"]

BOT_SCOPES: Mapping[str, str] = {
    "chat:write": "chat.postMessage, chat.update, chat.postEphemeral: cards, replies, refusals",
    "commands": "/agent",
    "usergroups:read": "usergroups.list, usergroups.users.list: @group approvers and mentions",
    "channels:history": "conversations.history and replies: a redelivery looks for what an "
    "earlier attempt posted; /agent run asks whether the bot is in the channel",
    "groups:history": "the same in private channels",
    "im:write": "conversations.open: the card in each approver's DM (notify = dm or both)",
    "im:history": "conversations.history in those DMs: the copy to update after a restart",
    "dnd:read": "dnd.info and the dnd_updated_user event: an approver on do-not-disturb is away",
    "users:read": "users.info, users.list and the user_change, user_status_changed events: a "
    "status the policy's [away] statuses names; /agent away's delegate by name",
}
"""Scope -> why: the calls that need it."""
