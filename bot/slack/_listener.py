"""What every Bolt listener of signoff shares: the governance core, the Web API client, the job
runner's kick, background tasks, and telling one person something only they see. Private to
`bot.slack`; the listeners are `actions`, `views`, `commands` and `home`, bound together by
`handlers.Handlers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from ..approvals.models import Approval
from ..approvals.service import Signoff
from .mentions import approver_mentions

log = logging.getLogger("signoff.slack")

CLICK_WAIT = 2.0
"""Seconds a click's decision may take, from its lookups to its commit: Slack wants an answer
within 3 s, and past that it shows the user an error even if the click went through. A decision
that cannot commit within it is refused ("busy, nothing was recorded") and answered in time."""
RECEIVED_AT = "signoff_received_at"
"""The Bolt context key of when the HTTP route received the request (`time.monotonic()`), before
reading its body: a click that queued behind a busy process has spent part of its budget."""


def click_wait(context: Mapping[str, Any] | None) -> float:
    """What is left of `CLICK_WAIT` for the click of this Bolt `context`: counted from when the
    request was received, when the route stamped it (`RECEIVED_AT`), else from now (Socket
    Mode: Bolt hands the envelope over as it arrives). At or below 0 the vote is refused busy
    without touching the database: Slack has given up on the click, or is about to."""
    received = (context or {}).get(RECEIVED_AT)
    if not isinstance(received, float):
        return CLICK_WAIT
    return CLICK_WAIT - (time.monotonic() - received)


STATUS_LIMIT = 50
"""How many approvals of each list (yours, others') `/agent status` and Home load; a message
holds at most 50 blocks anyway, and the totals are counted by the database."""
PERMALINKS = 20
"""How many card links `/agent status` and Home ask Slack for at a time (the first listed)."""
PERMALINK_WAIT = 1.0
"""Seconds Slack may take to give a card's link before the list goes without it."""
_LINKS_KEPT = 5000
"""Card links remembered (a card's link never changes: each is asked for once)."""


class Listener:
    """The base of each group of listeners, bound to one `Signoff`, Web API client and job
    runner."""

    def __init__(
        self,
        signoff: Signoff,
        client: AsyncWebClient,
        kick: Callable[[], None],
        *,
        default_channel: str | None = None,
        serving: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        self.signoff = signoff
        self.client = client
        self.kick = kick
        """Wakes the job runner when a click or command queued work."""
        self.serving = serving or contextlib.nullcontext
        """`with self.serving():` around the part of a click the person waits for (its vote
        and ack): the job workers give way to it (`bot.scheduler.Foreground`)."""
        self.default_channel = default_channel
        self._background: set[asyncio.Task[None]] = set()
        self._links: OrderedDict[tuple[str, str], str] = OrderedDict()
        """(channel, ts) of a card to its permalink, as Slack gave it (`_card_links`)."""

    async def _approver_names(self, approvals: Sequence[Approval]) -> dict[str, list[str]]:
        """Who may approve each approval, by id, named as its card names them: a policy group
        by its members, the requester left out (`mentions.approver_mentions`)."""
        groups = self.signoff.policy.groups
        return {
            a.id: await approver_mentions(
                a.approvers, static=groups, slack=None, skip=(a.requester,)
            )
            for a in approvals
        }

    async def _card_links(self, approvals: Sequence[Approval]) -> dict[str, str]:
        """Links to the approvals' cards, by approval id: the first PERMALINKS posted, asked of
        Slack together (`chat.getPermalink`) and remembered; one Slack does not give within
        PERMALINK_WAIT is left out, so the list is never held up by it."""
        posted = [(a.id, a.channel, a.message_ts) for a in approvals if a.message_ts and a.channel]

        async def one(channel: str, ts: str) -> str | None:
            known = self._links.get((channel, ts))
            if known is not None:
                return known
            # the client's turns (`TokenGuard.pace`), the sink's too: no 429s of our own making
            call = self.client.chat_getPermalink(channel=channel, message_ts=ts)
            try:
                async with asyncio.timeout(PERMALINK_WAIT):
                    resp = await call
            except Exception:  # noqa: BLE001 - a missing link is fine (a turn far off, too)
                return None
            link = resp.get("permalink")
            if not isinstance(link, str):
                return None
            self._links[(channel, ts)] = link
            while len(self._links) > _LINKS_KEPT:
                self._links.popitem(last=False)
            return link

        shown = posted[:PERMALINKS]
        found = await asyncio.gather(*(one(channel, ts) for _, channel, ts in shown))
        return {approval_id: url for (approval_id, _, _), url in zip(shown, found) if url}

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _tell(
        self, channel: str, user: str, text: str, blocks: list[dict[str, Any]] | None = None
    ) -> None:
        """An ephemeral message to `user` in `channel`; a failure is only logged (the click or
        command is acknowledged already)."""
        try:
            await self.client.chat_postEphemeral(
                channel=channel, user=user, text=text, blocks=blocks
            )
        except Exception as e:  # noqa: BLE001 - the click is acknowledged; a refusal that cannot be shown is only logged
            log.warning("could not tell %s in %s: %s (%s)", user, channel, text, e)

    async def _respond(
        self,
        response_url: str | None,
        channel: str | None,
        user: str,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
    ) -> None:
        """An ephemeral answer to a command or click after its ack: through the `response_url`
        Slack gave it (which reaches the person wherever they typed, even in a DM or a
        private channel the bot is not in), else as `_tell` does. A failure is only logged."""
        if response_url:
            try:
                resp = await AsyncWebhookClient(response_url).send(
                    text=text, blocks=blocks, response_type="ephemeral"
                )
                if resp.status_code == 200:
                    return
                log.warning("the response_url refused an answer to %s: %s", user, resp.body)
            except Exception as e:  # noqa: BLE001 - fall back to an ephemeral message
                log.warning("could not answer %s through the response_url: %s", user, e)
        if channel and user:
            await self._tell(channel, user, text, blocks)

    async def _ephemeral(self, body: dict[str, Any], text: str) -> None:
        """Tell the person who clicked, where they clicked."""
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
            "channel_id"
        )
        user = (body.get("user") or {}).get("id")
        if channel and user:
            await self._tell(channel, user, text)
