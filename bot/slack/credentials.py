"""The tokens checked before the bot serves anything: `auth.test` with the bot token and, in
Socket Mode, `apps.connections.open` with the app-level token.

A token Slack refuses (wrong, mistyped, revoked, of the wrong kind) will never start working by
itself, so start-up stops with one line saying which token, what Slack answered and where to get
the right one (`CredentialsRefused`), instead of serving, answering `/healthz` 200 and failing on
every message later.

A Slack that cannot be reached (no network yet, a proxy, Slack's own outage) is asked again
with backoff for `wait` seconds, each attempt logged, and then start-up stops with
`SlackUnreachable`. We chose stopping over starting degraded: an unchecked bot could be serving
with a bad token for hours, and in Socket Mode it cannot receive a single click without Slack,
while a process supervisor (systemd, Kubernetes) restarts a process that exits and says why.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .errors import error_code

__all__ = [
    "BotIdentity",
    "CredentialsRefused",
    "SlackUnreachable",
    "check_credentials",
    "token_refused",
]

log = logging.getLogger("signoff.slack")

APPS_PAGE = "https://api.slack.com/apps"

_BOT_WHERE = (
    f"copy the Bot User OAuth Token (xoxb-...) from your app's page at {APPS_PAGE}, under "
    "OAuth & Permissions (reinstall the app to the workspace if it was uninstalled), into "
    "SLACK_BOT_TOKEN and start signoff again"
)
_APP_WHERE = (
    f"create or copy an app-level token (xapp-...) with the connections:write scope on your "
    f"app's page at {APPS_PAGE}, under Basic Information > App-Level Tokens, into "
    "SLACK_APP_TOKEN and start signoff again (or unset SLACK_APP_TOKEN to serve HTTP)"
)

_MEANING = {
    "invalid_auth": "the token is wrong, mistyped or from another workspace",
    "not_authed": "no token reached Slack",
    "token_revoked": "the token was revoked or the app uninstalled",
    "token_expired": "the token has expired (token rotation is on)",
    "account_inactive": "the bot user or the workspace was deactivated",
    "not_allowed_token_type": "it is the wrong kind of token for this setting",
    "missing_scope": "the token lacks the scope this call needs",
    "invalid_token": "the token is not one Slack issued",
}
"""What each refusal means, in the words a person fixing it needs."""


class CredentialsRefused(Exception):
    """Slack refused a token at start; `message` is the one line to print."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SlackUnreachable(Exception):
    """Slack could not be asked at start within the time allowed; `message` says so."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class BotIdentity:
    """Who Slack says the bot token belongs to (`auth.test`)."""

    team: str
    team_id: str
    user_id: str
    bot_id: str
    socket_url: str | None = None
    """The Socket Mode URL `apps.connections.open` gave (app token given): connect with it,
    as asking again at once would spend `apps.connections.open`'s rate limit (Tier 1)."""


def _refusal(setting: str, method: str, code: str, where: str) -> CredentialsRefused:
    meaning = _MEANING.get(code, "Slack refuses it")
    return CredentialsRefused(
        f"Slack refused {setting}: {method} answered {code} ({meaning}); {where}"
    )


def token_refused(app_level: bool, code: str) -> tuple[str, str]:
    """A refused token's (meaning, what to do): the words start-up stops with, for `signoff
    doctor` to give as a finding."""
    return _MEANING.get(code, "Slack refuses it"), _APP_WHERE if app_level else _BOT_WHERE


def _retryable(error: SlackApiError) -> bool:
    """A 429 or a 5xx: Slack is there but cannot answer now."""
    status = error.response.status_code if error.response is not None else None
    return status == 429 or (status is not None and status >= 500)


async def check_credentials(
    client: AsyncWebClient, app_token: str | None = None, *, wait: float = 60.0
) -> BotIdentity:
    """Ask Slack whether it accepts the bot token (and the app-level token, when given).

    Args:
        client: the bot's Web API client (its token and base URL).
        app_token: `SLACK_APP_TOKEN` in Socket Mode; None in HTTP mode.
        wait: seconds to keep asking while Slack cannot be reached.

    Raises:
        CredentialsRefused: a token is refused (or not what its setting needs).
        SlackUnreachable: Slack did not answer within `wait` seconds.
    """
    deadline = time.monotonic() + wait
    delay = 0.5
    attempt = 0
    while True:
        attempt += 1
        try:
            return await _check_once(client, app_token)
        except (aiohttp.ClientError, TimeoutError, SlackApiError) as e:
            if isinstance(e, SlackApiError) and not _retryable(e):
                raise  # pragma: no cover - _check_once turns every refusal into words
            why = _why(e)
            left = deadline - time.monotonic()
            if left <= 0 and attempt >= 2:  # asked twice at least, however slow the first
                raise SlackUnreachable(
                    f"could not reach Slack at {client.base_url} to check the tokens "
                    f"({attempt} attempts in {wait:g}s; last: {why}); check the network or "
                    "proxy (or SIGNOFF_SLACK_API_URL) and start signoff again"
                ) from e
            log.warning(
                "cannot reach Slack at %s to check the tokens (%s); asking again in %.1fs",
                client.base_url, why, max(0.0, min(delay, left)),
            )  # fmt: skip
            await asyncio.sleep(max(0.0, min(delay, left)))
            delay = min(delay * 2, 10.0)


def _why(error: BaseException) -> str:
    if isinstance(error, SlackApiError) and error.response is not None:
        return f"HTTP {error.response.status_code} {error_code(error) or ''}".strip()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def _check_once(client: AsyncWebClient, app_token: str | None) -> BotIdentity:
    try:
        resp = await client.auth_test()
    except SlackApiError as e:
        if _retryable(e):
            raise
        raise _refusal("SLACK_BOT_TOKEN", "auth.test", error_code(e), _BOT_WHERE) from e
    identity = BotIdentity(
        team=str(resp.get("team") or ""),
        team_id=str(resp.get("team_id") or ""),
        user_id=str(resp.get("user_id") or ""),
        bot_id=str(resp.get("bot_id") or ""),
    )
    if app_token is None:
        return identity
    try:
        opened = await client.apps_connections_open(app_token=app_token)
    except SlackApiError as e:
        if _retryable(e):
            raise
        raise _refusal("SLACK_APP_TOKEN", "apps.connections.open", error_code(e), _APP_WHERE) from e
    return dataclasses.replace(identity, socket_url=str(opened.get("url") or "") or None)
