"""The Web API methods the stand-in answers, one small function each, over a `Workspace`.

Each handler takes the call's parameters (already merged from query, form and JSON, JSON-string
fields decoded) and returns Slack's success body, or raises `SlackApiFailure`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.sandbox import limits
from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.handles import TriggerIds
from bot.sandbox.validation import check_broadcast, check_message, check_view
from bot.sandbox.workspace import JSON, Channel, Message, View, Workspace

__all__ = ["METHODS", "ApiContext", "decode_json_fields"]

JSON_FIELDS = ("blocks", "attachments", "view", "metadata")
"""Parameters that form-encoded callers send as JSON strings."""


@dataclass
class ApiContext:
    """What a handler may touch."""

    workspace: Workspace
    triggers: TriggerIds
    public_url: str
    """The fake's root URL, for permalinks."""
    open_socket: Callable[[], str] | None = None
    """Issues a Socket Mode URL (apps.connections.open); None when the fake serves none."""


def decode_json_fields(params: dict[str, Any]) -> dict[str, Any]:
    """Decode the JSON-string parameters a form-encoded call carries (`blocks`, `view`, ...).

    Raises:
        SlackApiFailure: `invalid_blocks_format` for blocks, `invalid_arguments` for a view,
            when the string is not JSON.
    """
    out = dict(params)
    for name in JSON_FIELDS:
        value = out.get(name)
        if isinstance(value, str):
            try:
                out[name] = json.loads(value) if value else None
            except ValueError:
                code = "invalid_arguments" if name == "view" else "invalid_blocks_format"
                raise SlackApiFailure(
                    code, [f"[ERROR] must be JSON [json-pointer:/{name}]"]
                ) from None
    return out


def _required(params: dict[str, Any], name: str, error: str = "invalid_arguments") -> str:
    value = params.get(name)
    if value in (None, ""):
        raise SlackApiFailure(error, [f"[ERROR] missing required field: {name}"])
    return str(value)


def _conversation(ctx: ApiContext, params: dict[str, Any], *, reading: bool = False) -> Channel:
    """The `channel` parameter, as the bot sees it (`Workspace.conversation`).

    Args:
        reading: The call reads the messages (history, replies): Slack wants the bot in the
            channel for that (`not_in_channel`), whatever its scopes.
    """
    channel = ctx.workspace.conversation(_required(params, "channel", "channel_not_found"))
    if reading and not channel.is_member:
        raise SlackApiFailure("not_in_channel")
    return channel


def _postable(ctx: ApiContext, params: dict[str, Any]) -> Channel:
    """The channel a message goes to: `not_in_channel` when the bot is not in it and lacks
    `chat:write.public`, `is_archived` when it is archived."""
    channel = _conversation(ctx, params)
    if not channel.is_member and "chat:write.public" not in ctx.workspace.team.scopes:
        raise SlackApiFailure("not_in_channel")
    if channel.is_archived:
        raise SlackApiFailure("is_archived")
    return channel


def _flag(params: dict[str, Any], name: str) -> bool:
    """A boolean argument: JSON `true`, or `true` / `1` in a form or a query, as Slack reads it."""
    value = params.get(name)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1")
    return bool(value)


def _blocks(params: dict[str, Any]) -> list[JSON] | None:
    blocks = params.get("blocks")
    return blocks if isinstance(blocks, list) else None


# auth, users, groups ------------------------------------------------------------------------


def auth_test(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    team, ws = ctx.workspace.team, ctx.workspace
    return {
        "url": ctx.public_url,
        "team": team.domain,
        "user": ws.users[team.bot_user_id].name,
        "team_id": team.id,
        "user_id": team.bot_user_id,
        "bot_id": team.bot_id,
        "app_id": team.app_id,
        "is_enterprise_install": False,
    }


def _scope(ctx: ApiContext, needed: str) -> None:
    """Slack's `missing_scope` (with `needed` and `provided`) when the token lacks `needed`."""
    scopes = ctx.workspace.team.scopes
    if needed not in scopes:
        raise SlackApiFailure("missing_scope", needed=needed, provided=",".join(scopes))


def users_info(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    _scope(ctx, "users:read")
    user = ctx.workspace.user(_required(params, "user", "user_not_found"))
    return {"user": user.to_api(ctx.workspace.team.id)}


def users_list(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    """The workspace's members, a page at a time (`limit`, default and most 200 here as
    Slack advises; `cursor` from the last page's `response_metadata.next_cursor`)."""
    _scope(ctx, "users:read")
    try:
        limit = min(max(int(params.get("limit") or 200), 1), 200)
        start = int(str(params.get("cursor") or "0").removeprefix("dXNlcjo") or 0)
    except ValueError:
        raise SlackApiFailure("invalid_cursor") from None
    members = list(ctx.workspace.users.values())
    page = members[start : start + limit]
    more = start + limit < len(members)
    return {
        "members": [u.to_api(ctx.workspace.team.id) for u in page],
        "response_metadata": {"next_cursor": f"dXNlcjo{start + limit}" if more else ""},
    }


def dnd_info(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    """A person's do-not-disturb (the stand-in models a scheduled window, never a snooze)."""
    _scope(ctx, "dnd:read")
    user = ctx.workspace.user(_required(params, "user", "user_not_found"))
    return {**user.dnd_status(), "snooze_enabled": False}


def usergroups_list(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    groups = [
        {"id": g.id, "team_id": ctx.workspace.team.id, "handle": g.handle, "name": g.handle,
         "user_count": len(g.users)}
        for g in ctx.workspace.usergroups.values()
    ]  # fmt: skip
    return {"usergroups": groups}


def usergroups_users_list(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    group = ctx.workspace.usergroup(_required(params, "usergroup", "no_such_subteam"))
    return {"users": list(group.users)}


# conversations ------------------------------------------------------------------------------


def conversations_info(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    return {"channel": _conversation(ctx, params).to_api()}


def conversations_open(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    """The bot's DM with one user (`users`), opened if need be (a group DM is not modelled)."""
    users = _required(params, "users", "users_list_not_supplied").split(",")
    if len(users) != 1:
        raise SlackApiFailure("not_implemented", ["[ERROR] the stand-in opens one-to-one DMs only"])
    if ctx.workspace.user(users[0].strip()).deleted:
        raise SlackApiFailure("user_disabled")
    return {"channel": {"id": ctx.workspace.im(users[0].strip()).id}}


def conversations_list(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    channels = [c.to_api() for c in ctx.workspace.channels.values() if c.visible and not c.is_im]
    return {"channels": channels, "response_metadata": {"next_cursor": ""}}


def conversations_history(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    channel = _conversation(ctx, params, reading=True)
    top = [_in_history(channel, m) for m in reversed(channel.messages.values()) if m.in_channel]
    return {"messages": top, "has_more": False, "response_metadata": {"next_cursor": ""}}


def _in_history(channel: Channel, msg: Message) -> JSON:
    """A message as the channel's history lists it: a broadcast reply with its thread's parent
    (`root`), as Slack sends it for clients to render."""
    out = msg.to_api()
    if msg.is_reply and msg.thread_ts in channel.messages:
        out["root"] = channel.messages[msg.thread_ts].to_api()
    return out


def conversations_replies(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    channel = _conversation(ctx, params, reading=True)
    ts = _required(params, "ts", "thread_not_found")
    if ts not in channel.messages:
        raise SlackApiFailure("thread_not_found")
    parent = channel.messages[ts]
    if parent.is_reply:
        parent = channel.messages[parent.thread_ts or ""]
    messages = [parent.to_api(), *(channel.messages[r].to_api() for r in parent.replies)]
    return {"messages": messages, "has_more": False, "response_metadata": {"next_cursor": ""}}


# chat ---------------------------------------------------------------------------------------


def chat_post_message(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    channel = _postable(ctx, params)
    if channel.is_im and not ws.team.messages_tab:
        # the app's Messages tab is hidden (its manifest's messages_tab_enabled: false): Slack
        # refuses the bot's messages to people (chat.postMessage, "messages_tab_disabled")
        raise SlackApiFailure("messages_tab_disabled")
    text, blocks = params.get("text") or "", _blocks(params)
    check_message(text, params.get("blocks"), max_text=None)
    text = text[: limits.MAX_MESSAGE_TEXT]  # Slack keeps the first 40,000 characters
    thread_ts = params.get("thread_ts") or None
    broadcast = _flag(params, "reply_broadcast")
    if broadcast and thread_ts:
        check_broadcast(params.get("blocks"), params.get("attachments"))
    msg = ws.post(
        channel, ws.team.bot_user_id, text, blocks or [],
        thread_ts=thread_ts, metadata=params.get("metadata"), broadcast=broadcast,
    )  # fmt: skip
    return {"channel": channel.id, "ts": msg.ts, "message": msg.to_api()}


def chat_update(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    channel = _conversation(ctx, params)
    msg = ws.message(channel, _required(params, "ts", "message_not_found"))
    if msg.user != ws.team.bot_user_id:
        raise SlackApiFailure("cant_update_message")
    if channel.is_archived:  # Slack: no edits in a frozen, archived or deleted channel
        raise SlackApiFailure("is_inactive")
    text, blocks = params.get("text"), _blocks(params)
    check_message(
        text if text is not None else msg.text,
        blocks if blocks is not None else msg.blocks,
        max_text=limits.MAX_UPDATE_TEXT if text is not None else None,  # a new text: 4,000
    )
    if msg.subtype == "thread_broadcast":  # an edit cannot add buttons to a broadcast either
        check_broadcast(blocks, params.get("attachments"))
    ws.edit(msg, text, blocks)
    return {"channel": channel.id, "ts": msg.ts, "text": msg.text, "message": msg.to_api()}


def chat_delete(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    channel = _conversation(ctx, params)
    msg = ws.message(channel, _required(params, "ts", "message_not_found"))
    if msg.user != ws.team.bot_user_id:
        raise SlackApiFailure("cant_delete_message")
    ws.delete(msg)
    return {"channel": channel.id, "ts": msg.ts}


def chat_post_ephemeral(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    channel = _postable(ctx, params)
    user = ws.user(_required(params, "user", "user_not_found"))
    if not channel.has_person(user.id):  # "Intended recipient is not in the specified channel"
        raise SlackApiFailure("user_not_in_channel")
    text, blocks = params.get("text") or "", _blocks(params)
    check_message(text, params.get("blocks"))
    eph = ws.post_ephemeral(channel, user.id, text, blocks or [], thread_ts=params.get("thread_ts"))
    return {"message_ts": eph.ts}


def chat_get_permalink(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    channel = _conversation(ctx, params)
    msg = ws.message(channel, _required(params, "message_ts", "message_not_found"))
    link = f"{ctx.public_url}archives/{channel.id}/p{msg.ts.replace('.', '')}"
    if msg.is_reply:
        link += f"?thread_ts={msg.thread_ts}&cid={channel.id}"
    return {"channel": channel.id, "permalink": link}


def apps_connections_open(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    if ctx.open_socket is None:
        raise SlackApiFailure("socket_mode_not_enabled")  # pragma: no cover - always served
    return {"url": ctx.open_socket()}


# reactions ----------------------------------------------------------------------------------


def _reacted(ctx: ApiContext, params: dict[str, Any]) -> Message:
    channel = _conversation(ctx, params)
    return ctx.workspace.message(channel, _required(params, "timestamp", "message_not_found"))


def reactions_add(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    msg, name = _reacted(ctx, params), _required(params, "name", "invalid_name")
    users = msg.reactions.setdefault(name, [])
    if ctx.workspace.team.bot_user_id in users:
        raise SlackApiFailure("already_reacted")
    users.append(ctx.workspace.team.bot_user_id)
    return {}


def reactions_remove(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    msg, name = _reacted(ctx, params), _required(params, "name", "invalid_name")
    users = msg.reactions.get(name) or []
    if ctx.workspace.team.bot_user_id not in users:
        raise SlackApiFailure("no_reaction")
    users.remove(ctx.workspace.team.bot_user_id)
    if not users:
        del msg.reactions[name]
    return {}


def reactions_get(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    msg = _reacted(ctx, params)
    return {"type": "message", "channel": msg.channel, "message": msg.to_api()}


# views --------------------------------------------------------------------------------------


def _trigger_user(ctx: ApiContext, params: dict[str, Any]) -> str:
    trigger = params.get("trigger_id") or params.get("interactivity_pointer")
    if not trigger:
        raise SlackApiFailure("invalid_arguments", ["[ERROR] missing required field: trigger_id"])
    return ctx.triggers.redeem(str(trigger))


def _view_spec(params: dict[str, Any], *, home: bool = False) -> JSON:
    view = params.get("view")
    check_view(view, home=home)
    assert isinstance(view, dict)
    return view


def views_open(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    spec = _view_spec(params)
    user = _trigger_user(ctx, params)
    view = ctx.workspace.new_view(user, spec)
    ctx.workspace.views[user] = [view]
    return {"view": view.to_api(ctx.workspace.team)}


def views_push(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    spec = _view_spec(params)
    user = _trigger_user(ctx, params)
    stack = ctx.workspace.views.get(user) or []
    if not stack:
        raise SlackApiFailure("not_found")
    if len(stack) >= limits.MAX_VIEW_STACK:
        raise SlackApiFailure("push_limit_reached")
    view = ctx.workspace.new_view(user, spec, root=stack[-1])
    stack.append(view)
    return {"view": view.to_api(ctx.workspace.team)}


def views_update(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    if not params.get("view_id") and not params.get("external_id"):
        raise SlackApiFailure("invalid_arguments", ["[ERROR] missing required field: view_id"])
    view = ws.find_view(params.get("view_id"), params.get("external_id"))
    spec = _view_spec(params, home=view.spec.get("type") == "home")
    _replace(ws, view, spec, params.get("hash"))
    return {"view": view.to_api(ws.team)}


def views_publish(ctx: ApiContext, params: dict[str, Any]) -> JSON:
    ws = ctx.workspace
    user = ws.user(_required(params, "user_id", "user_not_found"))
    spec = _view_spec(params, home=True)
    view = ws.home.get(user.id)
    if view is None:
        view = ws.home[user.id] = ws.new_view(user.id, spec)
    else:
        _replace(ws, view, spec, params.get("hash"))
    return {"view": view.to_api(ws.team)}


def _replace(ws: Workspace, view: View, spec: JSON, expected_hash: Any) -> None:
    if expected_hash and expected_hash != view.hash:
        raise SlackApiFailure("hash_conflict")
    ws.replace_view(view, spec)


Handler = Callable[[ApiContext, dict[str, Any]], JSON]

METHODS: dict[str, Handler] = {
    "apps.connections.open": apps_connections_open,
    "auth.test": auth_test,
    "chat.delete": chat_delete,
    "chat.getPermalink": chat_get_permalink,
    "chat.postEphemeral": chat_post_ephemeral,
    "chat.postMessage": chat_post_message,
    "chat.update": chat_update,
    "conversations.history": conversations_history,
    "conversations.info": conversations_info,
    "conversations.list": conversations_list,
    "conversations.open": conversations_open,
    "conversations.replies": conversations_replies,
    "dnd.info": dnd_info,
    "reactions.add": reactions_add,
    "reactions.get": reactions_get,
    "reactions.remove": reactions_remove,
    "usergroups.list": usergroups_list,
    "usergroups.users.list": usergroups_users_list,
    "users.info": users_info,
    "users.list": users_list,
    "views.open": views_open,
    "views.publish": views_publish,
    "views.push": views_push,
    "views.update": views_update,
}
"""Every Web API method the stand-in answers; anything else gets `unknown_method`."""
