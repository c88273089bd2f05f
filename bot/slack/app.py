"""The Slack app: the group resolver on Slack's user groups, and the Bolt app with every
listener registered here, in one place. The process (`bot.server`) wires it to the governance
core and its configuration."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import GroupsUnavailable
from ..approvals.service import Signoff
from . import payloads
from .handlers import Handlers

__all__ = ["SlackGroups", "build_bolt_app"]


class _ClientTokenIsTheToken(logging.Filter):
    """Drops Bolt's "`token` will be unused" warning: Bolt reads `SLACK_BOT_TOKEN` by itself
    and warns that the client's token wins, but the client was made from that same token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


_QUIET = _ClientTokenIsTheToken()


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
            groups: list[dict[str, Any]] = resp.get("usergroups") or []
            self._ids = (now, {g["handle"]: g["id"] for g in groups})
        return self._ids[1].get(handle)

    async def group_id(self, handle: str) -> str | None:
        """The id of the user group `@handle` (for a `<!subteam^ID>` mention), or None when
        there is none or Slack cannot say now (the caller writes the handle as text)."""
        try:
            return await self._group_id(handle)
        except (SlackApiError, aiohttp.ClientError, TimeoutError):
            return None

    def cached_members(self, group: str) -> frozenset[str] | None:
        """The members of `group` if a lookup is still fresh, else None; never asks Slack."""
        cached = self._members.get(group)
        if cached is not None and time.monotonic() - cached[0] <= self.ttl:
            return cached[1]
        return None

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


def build_bolt_app(
    signoff: Signoff,
    client: AsyncWebClient,
    kick: Callable[[], None],
    *,
    signing_secret: str | None,
    default_channel: str | None,
) -> AsyncApp:
    """The Bolt app. With a signing secret (HTTP mode) every request is verified with it;
    without one the app serves Socket Mode, whose envelopes come over the authenticated
    WebSocket and carry no signature.

    Args:
        kick: wakes the job runner when a click or command queued work.
    """
    bolt_log = logging.getLogger("slack_bolt.AsyncApp")  # Bolt's framework logger
    if _QUIET not in bolt_log.filters:
        bolt_log.addFilter(_QUIET)
    app = AsyncApp(
        signing_secret=signing_secret or "socket-mode",
        client=client,
        request_verification_enabled=signing_secret is not None,
    )
    h = Handlers(signoff, client, kick, default_channel=default_channel)
    app.action(re.compile(r"^signoff\.(approve|reject|edit|payload)$"))(h.actions.on_button)
    app.view(payloads.REJECT_CALLBACK)(h.views.on_reject_submit)
    app.view(payloads.EDIT_CALLBACK)(h.views.on_edit_submit)
    app.command("/agent")(h.commands.on_agent)
    app.event("app_home_opened")(h.home.on_home_opened)
    return app
