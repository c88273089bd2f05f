"""Which Slack errors clear by themselves and which never will.

Slack answers every Web API call with `{"ok": false, "error": "<code>"}` on failure. A few codes
say "not now" (a rate limit, a server error: asked again later, they succeed); every other says
"never" (the channel is gone or read-only, the message was deleted, the blocks are refused):
asking again changes nothing, so the sink records it and moves on instead of retrying forever and
holding back the run's later messages. The rule is written that way round, retrying only what
Slack documents as transient, because Slack adds refusals over time
(`restricted_action_read_only_channel`, `ekm_access_denied`, ...): a code nobody listed is given
up on, surfaced, and never blocks a run.
"""

from __future__ import annotations

from typing import Literal

from slack_sdk.errors import SlackApiError

__all__ = [
    "CARD_GONE",
    "CHANNEL_GONE",
    "NO_DMS",
    "PERMANENT",
    "TOKEN_DEAD",
    "TRANSIENT",
    "Verdict",
    "error_code",
    "verdict",
    "what_was_refused",
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

NO_DMS = "messages_tab_disabled"
"""The app's Messages tab is hidden (its manifest's `messages_tab_enabled: false`): Slack
refuses every direct message from the bot until someone shows it again."""

TRANSIENT = frozenset(
    {
        "ratelimited",
        "rate_limited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
    }
)
"""What Slack documents as clearing by itself: its rate limit, its own failures (`fatal_error`:
"it's possible some aspect of the operation succeeded", which a redelivery looks for before
posting again), a workspace migrating into an Enterprise org. Every other code is given up on."""

PERMANENT = TOKEN_DEAD | CHANNEL_GONE | CARD_GONE
"""The refusals the sink knows by name (the rest it gives up on just the same)."""

Verdict = Literal["retry", "permanent", "token"]


def error_code(error: SlackApiError) -> str:
    """Slack's error code (`channel_not_found`), or "" when the answer carried none."""
    response = error.response
    code = response.get("error") if response is not None else None
    return code if isinstance(code, str) else ""


def verdict(error: SlackApiError) -> Verdict:
    """`token` when the bot token is refused; `retry` for what clears by itself (an HTTP 429 or
    5xx, a `TRANSIENT` code, an answer with no code at all); `permanent` for every other
    refusal, known or not."""
    code = error_code(error)
    if code in TOKEN_DEAD:
        return "token"
    status = error.response.status_code if error.response is not None else None
    if status == 429 or (status is not None and status >= 500):
        return "retry"
    return "retry" if not code or code in TRANSIENT else "permanent"


def what_was_refused(e: SlackApiError) -> dict[str, str]:
    """What Slack refused: its error code, the method, the channel (from the request)."""
    response = e.response
    method = channel = ""
    if response is not None:
        method = str(response.api_url or "").rsplit("/", 1)[-1]
        args = response.req_args or {}
        for part in ("json", "params", "data"):
            found = (
                (args.get(part) or {}).get("channel") if isinstance(args.get(part), dict) else None
            )
            if found:
                channel = str(found)
                break
    return {"error": error_code(e) or "unknown", "method": method, "channel": channel}
