"""`signoff doctor`: a real setup checked from the outside, the way a person installing signoff
would check it by hand, each finding with what to do.

It reads the same settings `signoff run` reads and asks what `signoff run` would need: the policy
loads; the database answers and its schema is this version's (migrations run before a new version
starts); Slack takes the bot token, and the token has the scopes the manifest requests; Socket
Mode's app-level token opens a connection (or HTTP mode has its signing secret); the bot is in
every channel cards go to; every `@group` the policy names outside `[groups]` is a Slack user
group; this machine's clock agrees with Slack's (Slack's request signatures are refused five
minutes old). It writes nothing, and posts nothing to Slack.

A finding is `ok`, `warn` (works, but not as the operator likely meant) or `fail` (something
signoff needs is missing); the command's exit status is 1 when any fails.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .approvals.db import Database
from .approvals.errors import ApprovalError
from .approvals.policy import Policy
from .approvals.policy.load import load_policy, unknown_groups
from .approvals.tables import SCHEMA_REVISION
from .config import Settings
from .slack.credentials import token_refused
from .slack.errors import error_code
from .slack.scopes import BOT_SCOPES

__all__ = ["CLOCK_FAIL", "CLOCK_WARN", "Finding", "diagnose"]

Status = Literal["ok", "warn", "fail"]

CLOCK_WARN = 30.0
"""Seconds of difference from Slack's clock worth a warning."""
CLOCK_FAIL = 240.0
"""Seconds past which it fails: near the five minutes after which a signed request is refused."""


@dataclass(frozen=True)
class Finding:
    """One thing checked: how it stands, what was found, and (unless ok) what to do."""

    status: Status
    check: str
    said: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "check": self.check, "said": self.said, "fix": self.fix}


class _Findings(list[Finding]):
    def add(self, status: Status, check: str, said: str, fix: str = "") -> None:
        self.append(Finding(status, check, said, fix))


async def diagnose(settings: Settings, *, clock: Callable[[], float] = time.time) -> list[Finding]:
    """Every finding about this setup, in the order a person would fix them."""
    found = _Findings()
    policy = _policy(settings, found)
    await _database(settings, found)
    if not settings.slack_bot_token:
        found.add("fail", "bot token", "SLACK_BOT_TOKEN is not set",
                  "copy the Bot User OAuth Token (xoxb-...) from your app's page, under OAuth & "
                  "Permissions, after installing the app to your workspace")  # fmt: skip
        return found
    kwargs: dict[str, Any] = {"token": settings.slack_bot_token, "retry_handlers": []}
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    client = AsyncWebClient(**kwargs)
    if not await _bot_token(client, found, clock):
        return found
    await _app_token(client, settings, found)
    await _channels(client, settings, policy, found)
    if policy is not None:
        await _groups(client, policy, found)
    return found


def _policy(settings: Settings, found: _Findings) -> Policy | None:
    try:
        policy = load_policy(settings.policy_path)
    except (ApprovalError, OSError) as e:
        found.add("fail", "policy", str(e), "correct the policy file (SIGNOFF_POLICY)")
        return None
    found.add("ok", "policy", f"{settings.policy_path}: {len(policy.actions)} action(s), "
              f"{len(policy.workflows)} workflow(s)")  # fmt: skip
    return policy


async def _database(settings: Settings, found: _Findings) -> None:
    try:
        db = Database(settings.database_url)
    except ValueError as e:
        found.add("fail", "database", str(e), "correct SIGNOFF_DATABASE_URL")
        return
    try:
        if db.dialect == "sqlite" and not Path(db.url.database or "").exists():
            found.add("fail", "database", f"no database file at {db.display_url}",
                      "run `signoff db upgrade` (or correct SIGNOFF_DATABASE_URL)")  # fmt: skip
            return
        revision = await db.schema_revision()
    except ApprovalError as e:
        found.add("fail", "database", str(e), "start the database, or correct the URL")
        return
    finally:
        await db.aclose()
    if revision is None:
        found.add("fail", "database", f"{db.display_url} has no signoff tables",
                  "run `signoff db upgrade` before starting signoff")  # fmt: skip
    elif revision != SCHEMA_REVISION:
        found.add("fail", "database", f"{db.display_url} is at schema revision {revision}; this "
                  f"signoff needs {SCHEMA_REVISION}",
                  "run `signoff db upgrade` with this version before starting it (with an older "
                  "revision), or upgrade signoff (with a newer one)")  # fmt: skip
    else:
        found.add("ok", "database", f"{db.display_url}, schema revision {revision}")


async def _bot_token(client: AsyncWebClient, found: _Findings, clock: Callable[[], float]) -> bool:
    """auth.test: the token, its scopes (Slack names them on every answer), and the clock."""
    try:
        answer = await client.auth_test()
    except SlackApiError as e:
        meaning, fix = token_refused(False, error_code(e))
        found.add("fail", "bot token", f"auth.test answered {error_code(e)} ({meaning})", fix)
        return False
    except OSError as e:  # aiohttp's connection errors are OSErrors
        found.add("fail", "bot token", f"Slack could not be reached: {e}",
                  "check this machine's network, proxy and SIGNOFF_SLACK_API_URL")  # fmt: skip
        return False
    found.add("ok", "bot token", f"the bot user {answer.get('user_id')} in {answer.get('team')}")
    headers = {k.lower(): v for k, v in answer.headers.items()}
    _scopes(headers.get("x-oauth-scopes"), found)
    _clock(headers.get("date"), clock(), found)
    return True


def _scopes(header: str | list[str] | None, found: _Findings) -> None:
    if isinstance(header, list):
        header = ",".join(header)
    if header is None:
        found.add("warn", "scopes", "Slack did not say which scopes the token has")
        return
    has = {s.strip() for s in header.split(",") if s.strip()}
    missing = [s for s in BOT_SCOPES if s not in has]
    for scope in missing:
        found.add("fail", "scopes", f"the token lacks {scope} ({BOT_SCOPES[scope]})",
                  f"add {scope} under OAuth & Permissions > Bot Token Scopes (or create the app "
                  "again from manifest.yml), then reinstall the app")  # fmt: skip
    extra = sorted(has - set(BOT_SCOPES))
    if extra:
        found.add("warn", "scopes", f"the token has scopes signoff does not use: {', '.join(extra)}",
                  "remove them from the app (a scope unused is one more thing to trust it with)")  # fmt: skip
    if not missing:
        found.add("ok", "scopes", f"all {len(BOT_SCOPES)} the manifest requests")


def _clock(header: str | list[str] | None, now: float, found: _Findings) -> None:
    if isinstance(header, list):
        header = header[0] if header else None
    try:
        slack_now = email.utils.parsedate_to_datetime(header or "").timestamp()
    except (TypeError, ValueError):
        found.add("warn", "clock", "Slack's answer had no Date to compare this clock with")
        return
    off = now - slack_now
    said = f"this machine's clock is {abs(off):.0f}s {'ahead of' if off > 0 else 'behind'} Slack's"
    fix = "keep the clock in sync (NTP): Slack's signed requests are refused 5 minutes old"
    if abs(off) > CLOCK_FAIL:
        found.add("fail", "clock", said, fix)
    elif abs(off) > CLOCK_WARN:
        found.add("warn", "clock", said, fix)
    else:
        found.add("ok", "clock", f"within {CLOCK_WARN:g}s of Slack's")


async def _app_token(client: AsyncWebClient, settings: Settings, found: _Findings) -> None:
    if settings.slack_app_token is None:
        if settings.slack_signing_secret:
            found.add("ok", "connection", "HTTP mode: SLACK_SIGNING_SECRET is set (Slack's "
                      "signatures are checked with it as requests arrive)")  # fmt: skip
        else:
            found.add("fail", "connection", "neither SLACK_APP_TOKEN (Socket Mode) nor "
                      "SLACK_SIGNING_SECRET (HTTP) is set",
                      "set SLACK_APP_TOKEN (xapp-..., connections:write) for Socket Mode, or "
                      "SLACK_SIGNING_SECRET from Basic Information for HTTP")  # fmt: skip
        return
    try:
        await client.apps_connections_open(app_token=settings.slack_app_token)
    except SlackApiError as e:
        meaning, fix = token_refused(True, error_code(e))
        found.add("fail", "connection",
                  f"apps.connections.open answered {error_code(e)} ({meaning})", fix)  # fmt: skip
        return
    found.add("ok", "connection", "Socket Mode: Slack opens a connection for the app token")


async def _channels(
    client: AsyncWebClient, settings: Settings, policy: Policy | None, found: _Findings
) -> None:
    """The bot must be in every channel cards go to: it reads them (conversations.history) to
    find what an earlier attempt posted, and Slack allows that only to members."""
    where: dict[str, str] = {}
    if settings.default_channel:
        where[settings.default_channel] = "SIGNOFF_DEFAULT_CHANNEL"
    for name, service in (policy.services if policy is not None else {}).items():
        if service.channel:
            where.setdefault(service.channel, f"[services.{name}] channel")
    if not where:
        found.add("warn", "channels", "SIGNOFF_DEFAULT_CHANNEL is not set: a run that names no "
                  "channel has nowhere for its cards", "set it to the channel id approvals "
                  "go to (and /invite @signoff there)")  # fmt: skip
    for channel, named in where.items():
        try:
            await client.conversations_history(channel=channel, limit=1)
        except SlackApiError as e:
            code = error_code(e)
            fix = {
                "not_in_channel": f"/invite @signoff in {channel}",
                "channel_not_found": f"check the id in {named}; if {channel} is private, "
                "/invite @signoff there",
            }.get(code, "see Slack's answer")
            found.add("fail", f"channel {channel}", f"{named}: conversations.history answered "
                      f"{code}", fix)  # fmt: skip
            continue
        found.add("ok", f"channel {channel}", f"{named}: the bot is in it")


async def _groups(client: AsyncWebClient, policy: Policy, found: _Findings) -> None:
    named: Mapping[str, str] = {g: f"{where} {key}" for where, key, g in unknown_groups(policy)}
    if not named:
        found.add("ok", "groups", "every @group the policy names is defined in [groups]")
        return
    try:
        answer = await client.usergroups_list()
    except SlackApiError as e:
        found.add("fail", "groups", f"usergroups.list answered {error_code(e)}",
                  "define the groups under [groups] in the policy instead")  # fmt: skip
        return
    handles = {str(g.get("handle")) for g in answer.get("usergroups") or []}
    for group, where in sorted(named.items()):
        if group in handles:
            found.add("ok", f"group @{group}", f"{where}: a Slack user group")
        else:
            found.add("fail", f"group @{group}", f"{where}: no Slack user group @{group}",
                      f"create @{group} in Slack, or define it under [groups]")  # fmt: skip
