"""Which Slack errors clear by themselves and which never will.

Slack answers every Web API call with `{"ok": false, "error": "<code>"}` on failure. Some codes
say "not now" (a rate limit, a server error: asked again later, they succeed); others say "never"
(the channel is gone, the message was deleted, the token is revoked): asking again changes
nothing, so the sink records them and moves on instead of retrying forever and holding back the
run's later messages.
"""

from __future__ import annotations

from typing import Literal

from slack_sdk.errors import SlackApiError

__all__ = [
    "CARD_GONE",
    "CHANNEL_GONE",
    "PERMANENT",
    "TOKEN_DEAD",
    "Verdict",
    "error_code",
    "verdict",
]

TOKEN_DEAD = frozenset(
    {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}
)
"""The bot token itself is refused: nothing the bot sends will go until an operator fixes it."""

CHANNEL_GONE = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "is_inactive", "restricted_action"}
)
"""The channel cannot take the bot's messages (gone, private without the bot, archived)."""

CARD_GONE = frozenset({"message_not_found", "cant_update_message", "thread_not_found"})
"""The message to update or reply to is gone (deleted), or is not the bot's to edit."""

PERMANENT = (
    TOKEN_DEAD
    | CHANNEL_GONE
    | CARD_GONE
    | frozenset(
        {
            "missing_scope",
            "no_permission",
            "invalid_blocks",
            "invalid_arguments",
            "msg_too_long",
            "no_text",
            "invalid_metadata_format",
            "user_not_found",
            "user_not_visible",
            "user_disabled",
            "cannot_dm_bot",
            "team_access_not_granted",
        }
    )
)
"""Errors that asking again will not clear."""

Verdict = Literal["retry", "permanent", "token"]


def error_code(error: SlackApiError) -> str:
    """Slack's error code (`channel_not_found`), or "" when the answer carried none."""
    response = error.response
    code = response.get("error") if response is not None else None
    return code if isinstance(code, str) else ""


def verdict(error: SlackApiError) -> Verdict:
    """`token` when the bot token is refused, `permanent` for another error that will never
    clear, `retry` for the rest (429, 5xx, an unknown code: retrying is the safe side)."""
    code = error_code(error)
    if code in TOKEN_DEAD:
        return "token"
    status = error.response.status_code if error.response is not None else None
    if status == 429 or (status is not None and status >= 500):
        return "retry"
    return "permanent" if code in PERMANENT else "retry"
