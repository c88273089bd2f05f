"""`TokenGuard`: the bot's Web API client. It paces what Slack rate-limited, and stops calling
Slack once the bot token is dead.

Pacing: every call takes its turn of one `Pace` (`pacing`), owned here, where the client is
made, so that the sink's messages, the listeners' card links, modals and updates, and the group
lookups all keep inside the one budget Slack counts per app: a 429 to any of them makes every
later call to that key (`post:C123` for a channel's posts, else the method) wait its turn. No
caller can bypass it by holding another object. A turn further off than `Pace.longest_wait` is
a `RetryLater` (the sink's job goes back to the queue; a listener says it could not).

The token: after Slack refused it (`token_revoked`, `invalid_auth`, `account_inactive`) or said
it is gone (`tokens_revoked`, `app_uninstalled`), every further call would be refused too, and
at scale would be thousands of refused calls a minute. The guard answers them itself, as Slack
would (`SlackApiError` with the code), without a request: the sink keeps its messages queued
(`SlackSink.deliver`), and they go out after the restart that brings a new token (whose
start-up check, `bot.slack.credentials`, verifies it).
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from .health import SlackHealth
from .limits import rate_window
from .pacing import Pace

__all__ = ["TokenGuard", "pace_key", "rate_limited", "retry_after"]


def retry_after(e: SlackApiError) -> float:
    """Slack's `Retry-After` (seconds), 1 when it sent none."""
    try:
        return float(e.response.headers.get("Retry-After", 1)) if e.response is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


def rate_limited(e: SlackApiError) -> bool:
    """Whether Slack refused the call for its rate limit (429, `ratelimited`)."""
    return e.response is not None and (
        e.response.status_code == 429 or e.response.get("error") == "ratelimited"
    )


def pace_key(api_method: str, kwargs: dict[str, Any]) -> str:
    """The `Pace` key of a call: `post:CHANNEL` for `chat.postMessage` (Slack limits a
    channel's posts), else the method's name (its tier)."""
    if api_method == "chat.postMessage":
        for part in ("json", "data", "params"):
            args = kwargs.get(part)
            if isinstance(args, dict) and args.get("channel"):
                return f"post:{args['channel']}"
    return api_method


class TokenGuard(AsyncWebClient):
    """An `AsyncWebClient` whose calls take their turns of `pace`, and which refuses every
    call, unsent, once `health` says the token is dead.

    Args:
        health: shared with the sink, which records what Slack said of the token.
        pace: the turns every call takes; default one for Slack's windows
            (`limits.rate_window`). A copy of the client (`copy.copy`) shares it.
    """

    def __init__(self, *, health: SlackHealth, pace: Pace | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.health = health
        self.pace = pace or Pace(rate_window)

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        code = self.health.token_error
        if code is not None:
            answer = AsyncSlackResponse(
                client=self,
                http_verb="POST",
                api_url=self.base_url + api_method,
                req_args={},
                data={"ok": False, "error": _answer_for(code)},
                headers={},
                status_code=200,
            )
            raise SlackApiError(  # type: ignore[no-untyped-call]
                f"not sent: Slack refused the bot token ({code}); restart signoff with a "
                "valid SLACK_BOT_TOKEN",
                answer,
            )
        async with self.pace.turn(pace_key(api_method, kwargs)) as turn:
            try:
                return await super().api_call(api_method, **kwargs)
            except SlackApiError as e:
                if rate_limited(e):
                    turn.refused(retry_after(e))
                raise


def _answer_for(code: str) -> str:
    """What Slack answers a call with a token it refused: the code it gave, or, after an
    event that said the token is gone, `token_revoked`."""
    return "token_revoked" if code in ("tokens_revoked", "app_uninstalled") else code
