"""The governance core wired to Slack for `signoff run` (`build_runtime`), and what start-up
does with Slack before anything is served: check the tokens, check that every `@group` the
policy names exists and every action can reach someone, release the messages held back while
Slack refused the last one, keep the policy's user groups fresh, share the rate limits between
replicas."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import GroupsUnavailable
from ..approvals.policy import StaticGroups, load_policy, unreachable
from ..approvals.policy.load import undefined_group
from ..approvals.service import Signoff
from ..config import Settings, SettingsError, build_signoff
from ..slack.app import SlackGroups
from ..slack.away import SlackWhereabouts
from ..slack.credentials import CredentialsRefused, SlackUnreachable, check_credentials
from ..slack.guard import TokenGuard
from ..slack.health import SlackHealth
from ..slack.notify import TOKEN_HELD, SlackSink
from ..slack.shared_pace import SharedSlots
from .metrics import Metrics

__all__ = [
    "SLACK_START_WAIT",
    "build_runtime",
    "check_reach",
    "check_slack",
    "check_tokens",
    "keep_groups_fresh",
    "release_held",
    "share_rate_limits",
]

log = logging.getLogger("signoff.server")


def build_runtime(
    settings: Settings, *, metrics: Metrics | None = None, session: Any = None
) -> tuple[Signoff, AsyncWebClient]:
    """The governance core wired to Slack: events go to Slack, groups come from Slack.

    Args:
        session: the `aiohttp.ClientSession` every call to Slack's Web API goes through (its
            connections kept alive), which the caller closes; without one, slack_sdk opens a
            session and a connection for each call.
    """
    kwargs: dict[str, Any] = {
        "token": settings.slack_bot_token,
        "timeout": settings.slack_timeout,
        "session": session,
    }
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    health = SlackHealth()
    client = TokenGuard(health=health, **kwargs)  # no calls once the token is dead
    policy = load_policy(settings.policy_path)
    slack_groups = SlackGroups(client)
    groups = StaticGroups(policy.groups, fallback=slack_groups)
    signoff = build_signoff(settings, policy=policy, groups=groups)
    signoff.away.whereabouts = SlackWhereabouts(client)
    signoff.sink = SlackSink(
        client,
        signoff,
        default_channel=settings.default_channel,
        notify_channel=settings.notify_channel,
        metrics=metrics,
        group_ids=slack_groups,
        policy=lambda: signoff.policy,
        health=health,
    )

    async def card_link(approval: Any) -> str | None:
        found = await client.chat_getPermalink(
            channel=approval.channel, message_ts=approval.message_ts
        )
        link = found.get("permalink")
        return link if isinstance(link, str) else None

    signoff.external.card_link = card_link
    return signoff, client


SLACK_START_WAIT = 60.0
"""Seconds `serve` keeps asking a Slack it cannot reach before it gives up (see
`bot.slack.credentials`: stopping, said plainly, beats serving unchecked)."""


async def check_tokens(client: AsyncWebClient, app_token: str | None) -> str | None:
    """Slack's word on the tokens before anything is served, as a `SettingsError` (one line,
    exit 1) when it refuses one or cannot be reached; the Socket Mode URL it gave, if any."""
    try:
        who = await check_credentials(client, app_token, wait=SLACK_START_WAIT)
    except (CredentialsRefused, SlackUnreachable) as e:
        raise SettingsError(e.message) from e
    log.info("Slack accepts the bot token: bot %s in workspace %s", who.user_id, who.team)
    return who.socket_url


async def check_slack(signoff: Signoff, client: AsyncWebClient, settings: Settings) -> str | None:
    """`check_tokens`, then `check_reach`: what start-up asks Slack before anything is served
    (it needs no database, and runs beside the database's own start-up). The Socket Mode URL
    Slack gave, if any.

    Raises:
        SettingsError: Slack refused a token or could not be reached; the policy names an
            `@group` Slack does not define.
    """
    socket_url = await check_tokens(client, settings.slack_app_token)
    await check_reach(signoff, settings.default_channel)
    return socket_url


async def check_reach(signoff: Signoff, default_channel: str | None) -> None:
    """Before serving: refuse an `@group` that neither the policy's `[groups]` nor Slack
    defines (a typo would approve nobody), and warn of each action that can reach no one
    now (fewer people may approve it than it needs) and of a missing default channel.

    Raises:
        SettingsError: Slack lists no user group of a handle the policy names (one line,
            naming the file, where and the handle).
    """
    policy = signoff.policy
    slack_groups = getattr(signoff.sink, "group_ids", None)
    if isinstance(slack_groups, SlackGroups) and policy.external_groups:
        try:
            handles: frozenset[str] | None = await slack_groups.handles()
        except Exception as e:  # noqa: BLE001 - Slack's word is wanted, not required
            log.warning("could not list Slack's user groups to check the policy's: %s", e)
            handles = None
        undefined = undefined_group(policy, handles) if handles is not None else None
        if undefined is not None:
            raise SettingsError(undefined)
    for name, rule in policy.actions.items():
        try:
            problem = await unreachable(rule, None, signoff.groups)
        except GroupsUnavailable as e:
            log.warning("could not check who may approve %s: %s", name, e.message)
            continue
        if problem is not None:
            log.warning("action %s can reach no one: %s", name, problem)
    if default_channel is None:
        log.warning(
            "SIGNOFF_DEFAULT_CHANNEL is unset: a run or request that names no channel (nor its "
            "service's [services.NAME] channel) is refused, as no card could be posted"
        )


async def release_held(signoff: Signoff) -> None:
    """Messages held back because Slack refused the previous token go out now: this start's
    check found the token accepted (`SlackSink.deliver`, `TOKEN_HELD`)."""
    held = await signoff.jobs.due_now(TOKEN_HELD)
    if held:
        log.info("Slack accepts the bot token again: sending the %d message(s) held back", held)


def keep_groups_fresh(signoff: Signoff) -> asyncio.Task[None] | None:
    """Keep the Slack user groups the policy names cached, asked again in the background, so
    that a click is judged without waiting on Slack (`SlackGroups.refresh_forever`)."""
    slack_groups = getattr(signoff.sink, "group_ids", None)
    if not isinstance(slack_groups, SlackGroups):
        return None
    return asyncio.ensure_future(slack_groups.refresh_forever(signoff.policy.external_groups))


def share_rate_limits(signoff: Signoff, client: AsyncWebClient) -> None:
    """On PostgreSQL, the client's pacing draws on the budget every replica shares (Slack
    counts its limits per workspace). Once the schema is migrated: the token check before it
    calls Slack once, with nothing to share yet."""
    if signoff.db.dialect == "postgresql" and isinstance(client, TokenGuard):
        client.pace.shared = SharedSlots(signoff.db)
