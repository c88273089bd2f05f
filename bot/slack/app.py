"""Wiring of the Slack app: the Web API client, the governance core with its Slack event sink,
the group resolver, and the Bolt app with every listener registered here, in one place."""

from __future__ import annotations

import re
import time
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import GroupsUnavailable
from ..approvals.policy import StaticGroups, load_policy
from ..approvals.service import Signoff
from ..config import Settings, build_signoff
from . import payloads
from .handlers import Handlers
from .notify import SlackSink

__all__ = ["SlackGroups", "build_bolt_app", "build_runtime"]


class SlackGroups:
    """Resolves `@handle` approver groups through Slack user groups, cached for `ttl` seconds.

    A handle that names no user group resolves to nobody (deny by default).
    """

    def __init__(self, client: AsyncWebClient, *, ttl: float = 60.0) -> None:
        self.client = client
        self.ttl = ttl
        self._ids: tuple[float, dict[str, str]] | None = None
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    async def _group_id(self, handle: str) -> str | None:
        now = time.monotonic()
        if self._ids is None or now - self._ids[0] > self.ttl:
            resp = await self.client.usergroups_list()
            self._ids = (now, {g["handle"]: g["id"] for g in resp.get("usergroups", [])})
        return self._ids[1].get(handle)

    async def members(self, group: str) -> frozenset[str]:
        """Raises `GroupsUnavailable` when Slack cannot be asked (never a guess either way)."""
        now = time.monotonic()
        cached = self._members.get(group)
        if cached is not None and now - cached[0] <= self.ttl:
            return cached[1]
        try:
            group_id = await self._group_id(group)
            users: frozenset[str] = frozenset()
            if group_id is not None:
                resp = await self.client.usergroups_users_list(usergroup=group_id)
                users = frozenset(resp.get("users", []))
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as e:
            raise GroupsUnavailable(
                f"could not look up the members of @{group} in Slack ({type(e).__name__}: {e}); "
                "nothing was changed: try again in a minute"
            ) from e
        self._members[group] = (now, users)
        return users


def build_runtime(
    settings: Settings, *, metrics: Any | None = None
) -> tuple[Signoff, AsyncWebClient]:
    """The governance core wired to Slack: events go to Slack, groups come from Slack."""
    kwargs: dict[str, Any] = {"token": settings.slack_bot_token}
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    client = AsyncWebClient(**kwargs)
    policy = load_policy(settings.policy_path)
    groups = StaticGroups(policy.groups, fallback=SlackGroups(client))
    signoff = build_signoff(settings, policy=policy, groups=groups)
    signoff.sink = SlackSink(
        client,
        signoff,
        default_channel=settings.default_channel,
        notify_channel=settings.notify_channel,
        metrics=metrics,
    )
    return signoff, client


def build_bolt_app(
    settings: Settings, signoff: Signoff, client: AsyncWebClient, runner: Any
) -> AsyncApp:
    """The Bolt app. Every request is verified with the signing secret (HTTP mode)."""
    app = AsyncApp(
        signing_secret=settings.slack_signing_secret or "socket-mode",
        client=client,
        request_verification_enabled=settings.slack_app_token is None,
    )
    h = Handlers(signoff, client, runner.kick, default_channel=settings.default_channel)
    app.action(re.compile(r"^signoff\.(approve|reject|edit|payload)$"))(h.on_button)
    app.view(payloads.REJECT_CALLBACK)(h.on_reject_submit)
    app.view(payloads.EDIT_CALLBACK)(h.on_edit_submit)
    app.command("/agent")(h.on_agent)
    app.event("app_home_opened")(h.on_home_opened)
    return app
