"""`TokenGuard`: the Web API client that stops calling Slack once the bot token is dead.

After Slack refused the token (`token_revoked`, `invalid_auth`, `account_inactive`) or said it
is gone (`tokens_revoked`, `app_uninstalled`), every further call would be refused too, and at
scale would be thousands of refused calls a minute. The guard answers them itself, as Slack
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

__all__ = ["TokenGuard"]


class TokenGuard(AsyncWebClient):
    """An `AsyncWebClient` that refuses every call, unsent, once `health` says the token is
    dead."""

    def __init__(self, *, health: SlackHealth, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.health = health

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
        return await super().api_call(api_method, **kwargs)


def _answer_for(code: str) -> str:
    """What Slack answers a call with a token it refused: the code it gave, or, after an
    event that said the token is gone, `token_revoked`."""
    return "token_revoked" if code in ("tokens_revoked", "app_uninstalled") else code
