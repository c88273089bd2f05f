"""`SlackSink`: turns the governance layer's events into Slack messages.

Each event arrives from the durable job queue, in order per thread, and may arrive twice (a
crash after Slack answered, before the job was marked done): every handler is written so that a
second delivery changes nothing visible: a card is posted once and then only updated, and each
message the bot posts carries metadata naming what posted it (the card of an approval, a step of
an event), so a redelivery first looks in the channel or thread and posts only what is missing.

Slack errors are translated at this edge (`errors.verdict`): a 429 becomes
`RetryLater(Retry-After)`; an error that will clear (5xx, a timeout) propagates and the queue
retries it with backoff. One that never will (`channel_not_found`, `message_not_found`, ...) is
not retried: it is logged, counted (`SlackHealth.undeliverable`, `/metrics`) and the event is done
(`Undeliverable`: `signoff pending` / `show` list it, `signoff redeliver` queues it again), so the
run's later messages go out; a card that is gone (deleted, or its channel archived) is
posted afresh (in the default channel when its own is gone). A refused bot token (`token_revoked`)
degrades `/healthz`, is said once in the log, and stops every call to Slack (`TokenGuard`): the
messages wait in the queue (`TOKEN_HELD`) until a restart with a new token sends them.

Updates still queued for one card coalesce: an event whose card update a later queued event
will redo (`Event.card_superseded`: a vote, then the decision, while Slack was slow or rate
limited) leaves the card alone and does only its other steps; the last one renders the card
from the approval's current state, once.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.events import Event, RetryLater, SinkView, Undeliverable
from ..approvals.models import Approval
from ..approvals.policy import Policy, resolve_members
from . import cards, messages, replies, turn_card
from .errors import CARD_GONE, CHANNEL_GONE, NO_DMS, error_code, verdict, what_was_refused
from .guard import rate_limited, retry_after
from .health import SlackHealth
from .mentions import GroupIds, approver_mentions
from .mrkdwn import SLACK_USER_ID

__all__ = ["SlackSink"]

log = logging.getLogger("signoff.slack")

TOKEN_HELD = "Slack refused the bot token: "
"""How the last error of a job held back by a dead token starts: `serve` makes those due at
once when it starts with a token Slack accepts (`JobQueue.due_now`)."""
TOKEN_HOLD = 7 * 86400.0
"""Seconds a held job waits: in effect until the restart that brings a new token."""

_META = "signoff_message"
"""The metadata event type of every message the sink posts (see `SlackSink._post`)."""
_UNSEEN: Any = object()
_REFUSED_POSTS_KEPT = 10_000
"""How many refused posts `SlackSink` remembers (their retries skip the lookup)."""


def _without_resend(client: AsyncWebClient) -> AsyncWebClient:
    """`client` without slack_sdk's resend on a dropped connection. Slack has no idempotency
    key for `chat.postMessage`: when the answer is lost the message may be posted already, and
    a resend inside the same attempt would post it twice. The error goes to the job queue
    instead, whose next attempt looks for the tagged message before posting (`_post`)."""
    poster = copy.copy(client)
    poster.retry_handlers = [
        h for h in client.retry_handlers if not isinstance(h, AsyncConnectionErrorRetryHandler)
    ]
    return poster


class SlackSink:
    """Delivers events to Slack through `client` (whose base URL may point at the sandbox).

    The client paces its calls (`TokenGuard.pace`, shared with the listeners, which use the
    same client): once Slack rate-limited a channel's posts or a method, the sink's calls take
    their turns with everyone else's, and a turn too far off raises `RetryLater`, which sends
    the event back to the queue."""

    def __init__(
        self,
        client: AsyncWebClient,
        signoff: SinkView,
        *,
        default_channel: str | None,
        notify_channel: bool = True,
        metrics: Any | None = None,
        group_ids: GroupIds | None = None,
        policy: Callable[[], Policy] | None = None,
        health: SlackHealth | None = None,
    ) -> None:
        self.client = client
        self._poster = _without_resend(client)
        """`client` for `chat.postMessage` (see `_without_resend`)."""
        self.signoff = signoff
        self.default_channel = default_channel
        self.notify_channel = notify_channel
        self.metrics = metrics
        self.group_ids = group_ids
        """Slack user group ids, for `<!subteam^ID>` mentions. None: groups as plain text."""
        self.policy = policy
        """The policy in force: its `[groups]` and each action's `notify`. None: channel only."""
        self.health = health or SlackHealth()
        """Whether Slack accepts the token; what was given up on."""
        self._dm_cards: dict[tuple[str, str], tuple[str, str]] = {}
        """(approval id, user) to (DM channel, ts) of the DM copies posted or found so far."""
        self._given_up: dict[int, dict[str, str]] = {}
        """Event id to what Slack refused for good while delivering it (see `deliver`)."""
        self._dms: dict[str, str] = {}
        """User id to the id of the bot's DM with them (`_dm_channel`)."""
        self._updated: OrderedDict[tuple[int, str], None] = OrderedDict()
        """(event id, approval id) of card updates done: a retry of the event (a later step
        was rate limited) does not update the card again, spending Slack's budget for nothing."""
        self._refused_posts: OrderedDict[tuple[int, str], None] = OrderedDict()
        """(event id, tag) of posts Slack answered with a refusal (a 429, an error): certainly
        not posted, so their retry posts without first reading the channel for them (a read
        that is rate limited too, and under a burst of 429s would double the calls)."""

    async def deliver(self, event: Event) -> None:
        """Deliver `event`; raise `RetryLater` (a 429, a dead token) or another error to have
        it retried, `Undeliverable` when part of it was given up on (the rest went out)."""
        try:
            await self._deliver_or_give_up(event)
        finally:
            given_up = self._given_up.pop(event.id, None)
        if given_up is not None:
            raise Undeliverable(given_up)

    async def _deliver_or_give_up(self, event: Event) -> None:
        try:
            await self._deliver(event)
        except SlackApiError as e:
            kind = verdict(e)
            if kind == "token":
                code = error_code(e)
                if self.health.token_refused(code):
                    log.error(
                        "Slack refused the bot token (%s) delivering event %s (%s): signoff "
                        "calls Slack no more until it restarts. Fix SLACK_BOT_TOKEN (reinstall "
                        "the app for a new one) and restart: every card and update waits in "
                        "the queue and goes out then",
                        code, event.id, event.kind,
                    )  # fmt: skip
                raise RetryLater(TOKEN_HOLD, TOKEN_HELD + code) from e
            if kind == "permanent":
                self._gave_up(event, e)
                return
            if rate_limited(e):
                raise RetryLater(retry_after(e), f"Slack rate limit on {event.kind}") from e
            raise

    def _gave_up(self, event: Event, e: SlackApiError, what: str = "") -> None:
        """Record a message that can never be delivered (the log, `/metrics`), and move on."""
        code = error_code(e)
        self._given_up.setdefault(event.id, what_was_refused(e))
        self.health.gave_up(code)
        if self.metrics is not None:
            self.metrics.undeliverable.labels(code or "unknown").inc()
        log.error(
            "gave up on %sevent %s (%s, approval %s, thread %s): Slack answered %s, which "
            "retrying will not change",
            what, event.id, event.kind, event.approval_id, event.thread_id, code or e,
        )  # fmt: skip

    async def _deliver(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is None:
            log.debug("no Slack message for event %s", event.kind)
            return
        await handler(event)

    # ---- cards --------------------------------------------------------------------------

    async def _approval(self, event: Event) -> Approval | None:
        if event.approval_id is None:
            return None
        return await self.signoff.get(event.approval_id)

    async def _posted_before(
        self, event: Event, tag: dict[str, Any], channel: str, thread_ts: str | None = None
    ) -> dict[str, Any] | None:
        """On a redelivery, the message tagged `tag` if an earlier attempt posted it already."""
        if event.attempt <= 1:
            return None
        return await self._find_tagged(event, tag, channel, thread_ts)

    async def _find_tagged(
        self, event: Event, tag: dict[str, Any], channel: str, thread_ts: str | None = None
    ) -> dict[str, Any] | None:
        """The message the sink posted tagged `tag` in `channel` (or the thread), if any."""
        try:
            if thread_ts:
                resp = await self.client.conversations_replies(
                    channel=channel,
                    ts=thread_ts,
                    include_all_metadata=True,
                    limit=200,
                )
            else:
                resp = await self.client.conversations_history(
                    channel=channel,
                    include_all_metadata=True,
                    limit=200,
                )
        except SlackApiError as e:
            if e.response is not None and (
                e.response.status_code == 429 or e.response.status_code >= 500
            ):
                raise  # retried later, like the post itself
            # e.g. missing_scope (channels:history): post anyway, at worst twice, never lost
            log.warning(
                "could not look for an earlier delivery of event %s in %s: %s", event.id, channel, e
            )
            return None
        for m in resp.get("messages") or []:
            meta = m.get("metadata") or {}
            if meta.get("event_type") == _META and meta.get("event_payload") == tag:
                return dict(m)
        return None

    async def _post(
        self,
        event: Event,
        tag: dict[str, Any],
        channel: str,
        *,
        thread_ts: str | None = None,
        **message: Any,
    ) -> tuple[str, str]:
        """Post once per `tag`: (channel, ts) of the new message, or of the one posted before.

        A redelivery looks for the message first (an earlier attempt may have posted it and
        lost Slack's answer), unless this process heard Slack refuse that very post."""
        key = (event.id, json.dumps(tag, sort_keys=True))
        if self._refused_posts.pop(key, _UNSEEN) is _UNSEEN:
            found = await self._posted_before(event, tag, channel, thread_ts)
            if found is not None:
                return channel, str(found["ts"])
        try:
            resp = await self._poster.chat_postMessage(
                channel=channel,
                thread_ts=thread_ts,
                metadata={"event_type": _META, "event_payload": tag},
                # no previews: a link in a request (an order page, a ticket) is the requester's
                # text, and a preview would put a stranger's page inside the approval thread
                unfurl_links=False,
                unfurl_media=False,
                **message,
            )
        except RetryLater:
            # its turn is far off: not sent, so the retry posts without looking for it first
            self._refused(key)
            raise
        except TimeoutError as e:
            # Sent, unanswered: Slack may be posting it still. Looked for as soon as the
            # queue's backoff allows (a second), a post that lands later is posted twice; a
            # wait as long as the one that timed out gives it that long again to land.
            wait = float(self._poster.timeout)
            raise RetryLater(wait, f"Slack did not answer chat.postMessage within {wait:g}s") from e
        except SlackApiError as e:
            if e.response is not None and e.response.status_code < 500:
                # Slack answered and refused (a 429, `ok: false`): nothing was posted. A 5xx
                # or a lost answer may have posted it: the retry looks first.
                self._refused(key)
            raise
        return str(resp["channel"]), str(resp["ts"])

    def _refused(self, key: tuple[int, str]) -> None:
        """Remember that the post `key` certainly did not go out (see `_refused_posts`)."""
        self._refused_posts[key] = None
        while len(self._refused_posts) > _REFUSED_POSTS_KEPT:
            self._refused_posts.popitem(last=False)

    async def _post_card(self, a: Approval, event: Event) -> Approval:
        """Post the approval's card once; return the approval with where it is."""
        if a.message_ts:
            return a
        channel = a.channel or self.default_channel
        if channel is None:
            log.warning(
                "approval %s has no channel and SIGNOFF_DEFAULT_CHANNEL is unset; no card", a.id
            )
            return a
        mode = self._notify_mode(a)
        turn = await self._turn(a)
        if turn is not None:
            posted = next((o for o in turn if o.message_ts and o.channel), None)
            if posted is not None:  # the turn's card is out: this call is on it
                assert posted.channel is not None and posted.message_ts is not None
                await self.signoff.mark_posted(a.id, posted.channel, posted.message_ts)
                return await self._update_card(await self.signoff.get(a.id), event)
        card = await self._body(a, turn, mode)
        tag = {"turn": a.turn_id} if turn is not None else {"card": a.id}
        where, ts = await self._post(event, tag, channel, **card)
        for o in turn or [a]:
            await self.signoff.mark_posted(o.id, where, ts)
        a = await self.signoff.get(a.id)
        if mode != "channel":
            await self._dm_copies(a, event, post=True)
        return a

    async def _update_card(self, a: Approval, event: Event) -> Approval:
        if not a.message_ts or not a.channel:  # a posted card has both (`mark_posted`)
            return await self._post_card(a, event)
        if event.card_superseded:
            # a later update of this card is queued: it renders the approval as it stands then,
            # so this one would spend Slack's Tier 3 budget on a state nobody gets to see
            log.debug("card of %s: update of event %s left to a later one", a.id, event.id)
            return a
        mode = self._notify_mode(a)
        body = await self._body(a, await self._turn(a), mode)
        done = (event.id, a.id)
        if done not in self._updated:
            try:
                await self.client.chat_update(
                    channel=a.channel,
                    ts=a.message_ts,
                    **body,
                )
            except SlackApiError as e:
                a = await self._repost_card(a, event, e, body)
            self._updated[done] = None
            while len(self._updated) > _REFUSED_POSTS_KEPT:
                self._updated.popitem(last=False)
        if mode != "channel":
            await self._dm_copies(a, event, post=False)
        return a

    async def _turn(self, a: Approval) -> list[Approval] | None:
        """The approvals of `a`'s agent turn, in the order the model proposed the calls, when
        they share one card (`turn_card`); None for an approval shown on its own."""
        if a.turn_id is None:
            return None
        turn = [
            o for o in await self.signoff.thread_approvals(a.thread_id) if o.turn_id == a.turn_id
        ]
        turn.sort(key=lambda o: (o.turn.position if o.turn else 0, o.created_at))
        return turn if turn_card.is_turn(turn) else None

    async def _body(self, a: Approval, turn: list[Approval] | None, mode: str) -> dict[str, Any]:
        """The card `a` is on: its own, or its turn's."""
        if turn is None:
            mentions = await self._mentions(a) if mode != "dm" else None
            rule = self.policy().actions.get(a.action) if self.policy is not None else None
            grants = rule.grants if rule is not None else None
            return cards.card(a, now=time.time(), mentions=mentions, grants=grants)
        by_id = {}
        if mode != "dm":
            by_id = {o.id: await self._mentions(o) for o in turn if o.status == "pending"}
        return turn_card.turn_card(turn, now=time.time(), mentions=by_id)

    async def _repost_card(
        self, a: Approval, event: Event, e: SlackApiError, body: dict[str, Any]
    ) -> Approval:
        """The card could not be updated: when it is gone (deleted, or its channel archived or
        closed to the bot), post it afresh, in the default channel if its own is gone."""
        code = error_code(e)
        if code in CARD_GONE:
            channel: str | None = a.channel
        elif code in CHANNEL_GONE and self.default_channel not in (None, a.channel):
            channel = self.default_channel
        else:
            raise e
        assert channel is not None
        log.warning(
            "the card of approval %s in %s is gone (%s): posting it afresh in %s",
            a.id, a.channel, code, channel,
        )  # fmt: skip
        turn = await self._turn(a)
        tag = {"turn" if turn else "card": a.turn_id if turn else a.id, "replaces": a.message_ts}
        where, ts = await self._post(event, tag, channel, **body)
        for o in turn or [a]:  # every call of a turn was on the card that is gone
            if o.id == a.id or o.message_ts == a.message_ts:
                await self.signoff.mark_posted(o.id, where, ts)
        return await self.signoff.get(a.id)

    # ---- who is pinged ------------------------------------------------------------------

    def _notify_mode(self, a: Approval) -> str:
        rule = self.policy().actions.get(a.action) if self.policy is not None else None
        return rule.notify if rule is not None else "channel"

    async def _mentions(self, a: Approval) -> list[str]:
        static = self.policy().groups if self.policy is not None else {}
        return await approver_mentions(
            a.approvers, static=static, slack=self.group_ids, skip=(a.requester,)
        )

    async def _dm_copies(self, a: Approval, event: Event, *, post: bool) -> None:
        """The card in a direct message to each approver (`notify = "dm"` or `"both"`): posted
        with the card (`post`), then updated in place like the channel card. An agent turn's
        calls are one card, so one DM per approver of any of them, which an approver of a call
        proposed later in the turn gets when that call's approval arrives."""
        turn = await self._turn(a)
        calls = turn or [a]
        members: set[str] = set()
        for o in calls:
            found = await resolve_members(o.approvers, self.signoff.groups)
            members |= {u for u in found if u != o.requester and SLACK_USER_ID.fullmatch(u)}
        body = await self._body(a, turn, "dm") if turn else cards.card(a, now=time.time())
        tag = {"turn": a.turn_id} if turn else {"card": a.id}
        for user in sorted(members):
            try:
                await self._dm_copy(tag, event, user, body, post=post, turn=turn is not None)
            except SlackApiError as e:  # one approver's DM (deactivated) holds back no other
                if verdict(e) != "permanent":
                    raise
                if error_code(e) == NO_DMS and post:
                    await self._in_thread_instead(a, user, messages.waits_for_you(a.title), event)
                    continue
                self._gave_up(event, e, f"the DM copy for {user} of ")

    async def _dm_copy(
        self,
        tag: dict[str, Any],
        event: Event,
        user: str,
        body: dict[str, Any],
        *,
        post: bool,
        turn: bool,
    ) -> None:
        """One approver's copy of the card tagged `tag`: posted (`post`, or a turn's that this
        approver has none of yet), else updated; a card's copy never sent (the policy said
        "channel" then) is not made on an update."""
        key = (json.dumps(tag, sort_keys=True), user)
        where = self._dm_cards.get(key)
        if where is None:
            dm = await self._dm_channel(user)
            found = None if post else await self._find_tagged(event, tag, dm)
            if found is None:
                # (`_post` finds the copy an earlier attempt sent; a turn's approver of a call
                # proposed after the card went out has none yet)
                if post or turn:
                    self._dm_cards[key] = await self._post(event, tag, dm, **body)
                return
            where = self._dm_cards[key] = (dm, str(found["ts"]))
        if not post:
            await self.client.chat_update(channel=where[0], ts=where[1], **body)

    async def _reply(
        self, a: Approval, text: str, event: Event, **message: Any
    ) -> tuple[str, str] | None:
        """Reply in the card's thread once per event: (channel, ts) of the reply; None when
        the card was never posted."""
        if not (a.message_ts and a.channel):
            return None
        return await self._post(
            event,
            {"event": event.id, "step": "reply"},
            a.channel,
            thread_ts=a.message_ts,
            text=text,
            **message,
        )

    async def _on_approval_requested(self, event: Event) -> None:
        a = await self._approval(event)
        if a is not None:
            await self._post_card(a, event)

    async def _on_vote_recorded(self, event: Event) -> None:
        a = await self._approval(event)
        if a is not None:
            await self._update_card(a, event)

    async def _on_decided(self, event: Event) -> None:
        a = await self._approval(event)
        if a is None:
            return
        a = await self._update_card(a, event)
        await self._reply(a, replies.thread_reply_decided(a), event)
        await self._tell_requester(a, event)
        if self.metrics is not None and a.decided_at is not None:
            self.metrics.decision_latency.observe(max(0.0, a.decided_at - a.created_at))

    async def _on_expired(self, event: Event) -> None:
        a = await self._approval(event)
        if a is None:
            return
        a = await self._update_card(a, event)
        await self._reply(a, replies.thread_reply_decided(a), event)
        await self._tell_requester(a, event)

    async def _on_reminded(self, event: Event) -> None:
        a = await self._approval(event)
        if a is not None and a.status == "pending":
            mentions = await self._who_can_decide(a)
            await self._reply(
                a, replies.reminder_text(a, now=time.time(), mentions=mentions), event
            )

    async def _on_escalated(self, event: Event) -> None:
        a = await self._approval(event)
        if a is not None and a.status == "pending":
            await self._update_card(a, event)
            added = await resolve_members(event.data.get("to") or (), self.signoff.groups)
            away = event.data.get("away")
            text = (
                replies.escalation_away_text(a, away, sorted(added))
                if isinstance(away, list) and away
                else replies.escalation_text(a, now=time.time(), added=sorted(added))
            )
            await self._reply(a, text, event)

    async def _tell_requester(self, a: Approval, event: Event) -> None:
        """The outcome, in a DM to the requester when they are a Slack user (a thread reply
        does not notify them), with a link to the card."""
        if not SLACK_USER_ID.fullmatch(a.requester):
            return
        text = replies.thread_reply_decided(a)
        link = await self._permalink(a)
        if link is not None:
            text += " " + messages.card_link(link)
        dm = await self._dm_channel(a.requester)
        try:
            await self._post(event, {"event": event.id, "step": "requester"}, dm, text=text)
        except SlackApiError as e:
            if error_code(e) != NO_DMS:
                raise
            await self._in_thread_instead(a, a.requester, text, event)

    async def _in_thread_instead(self, a: Approval, user: str, text: str, event: Event) -> None:
        """What a DM would have told `user`, said in the card's thread to them by name: the
        app's Messages tab is hidden, and Slack refuses the bot's DMs (`NO_DMS`)."""
        if not (a.channel and a.message_ts):
            return
        log.warning(
            "Slack refuses the bot's DMs (%s: the app's Messages tab is hidden); told %s in the "
            "card's thread instead. Show the tab (manifest.yml: messages_tab_enabled: true)",
            NO_DMS, user,
        )  # fmt: skip
        await self._post(
            event,
            {"event": event.id, "step": f"dm-in-thread-{user}"},
            a.channel,
            thread_ts=a.message_ts,
            text=f"<@{user}> {text}",
        )

    async def _permalink(self, a: Approval) -> str | None:
        """The link to the approval's card; None when it has none (never posted, or gone)."""
        if not (a.channel and a.message_ts):
            return None
        return await self._link(a.channel, a.message_ts)

    async def _link(self, channel: str, ts: str) -> str | None:
        """The link to a message; None when it is gone."""
        try:
            link = await self.client.chat_getPermalink(channel=channel, message_ts=ts)
        except SlackApiError as e:
            if verdict(e) != "permanent":
                raise
            return None
        return str(link["permalink"])

    async def _dm_channel(self, user: str) -> str:
        """The id of the bot's direct message with `user`, opened once per process (it never
        changes): a burst of outcomes to one requester does not spend Slack's Tier 3 budget of
        `conversations.open` on the same answer."""
        dm = self._dms.get(user)
        if dm is None:
            opened = await self.client.conversations_open(users=user)
            dm = self._dms[user] = str(opened["channel"]["id"])
        return dm

    async def _who_can_decide(self, a: Approval) -> list[str]:
        """User ids to mention: the approvers, groups resolved, who have not voted."""
        members = await resolve_members(a.approvers, self.signoff.groups)
        voted = {v.user_id for v in a.votes}
        return sorted(u for u in members if u not in voted and u != a.requester)

    # ---- runs ---------------------------------------------------------------------------

    async def _run_message(self, event: Event, text: str, **message: Any) -> None:
        """Tell the run's card thread (its latest card), and the channel when configured;
        `message` holds its blocks, when it has any.

        Where the card is in the run's channel, that is one message: the thread reply,
        broadcast to the channel (`reply_broadcast`), so the channel sees the outcome beside
        the card it settles and the thread keeps the whole story. Where it is elsewhere (its
        own channel gone, it was posted afresh in the default one), the channel gets a message
        of its own that links to the card. With no card to reply to, the channel message alone.

        A message with buttons (a failure's Retry and Cancel) is never broadcast: Slack takes
        no buttons in a broadcast reply. The thread reply has them, and the channel gets a
        message of its own without them, linking to that reply.
        """
        if event.thread_id is None:
            return
        approvals = await self.signoff.thread_approvals(event.thread_id)
        posted = [a for a in approvals if a.message_ts]
        card = posted[-1] if posted else None
        run = await self.signoff.run_info(event.thread_id)
        channel = (run["channel"] if run else None) or self.default_channel
        buttons = replies.has_buttons(message)
        reply: tuple[str, str] | None = None
        if card is not None:
            broadcast = self.notify_channel and card.channel == channel and not buttons
            try:
                reply = await self._reply(
                    card, text, event, **message, **({"reply_broadcast": True} if broadcast else {})
                )
            except SlackApiError as e:  # the card is gone: the channel message still goes out
                if verdict(e) != "permanent":
                    raise
                self._gave_up(event, e, "the thread reply of ")
                card = None
            else:
                if broadcast:
                    return
        if channel and (self.notify_channel or card is None):
            notice: dict[str, Any] = {"text": text, **message}
            if card is not None and buttons and reply is not None:
                link = await self._link(*reply)
                if link is not None:
                    notice = replies.with_controls_link(notice, link)
            elif card is not None:
                link = await self._permalink(card)
                if link is not None:
                    notice = replies.with_card_link(notice, link)
            await self._post(event, {"event": event.id, "step": "channel"}, channel, **notice)

    async def _on_run_completed(self, event: Event) -> None:
        values = event.data.get("values") or {}
        outcome = values.get("outcome") if isinstance(values, dict) else None
        settled = [
            a
            for a in await self.signoff.thread_approvals(event.thread_id or "")
            if a.status != "pending"
        ]
        last = max(settled, key=lambda a: a.decided_at or 0.0) if settled else None
        # Declined only when nothing was approved: an agent whose refund was approved and whose
        # email was rejected did act. Several decisions are each named.
        acted = any(a.status == "approved" or (a.decision or {}).get("approved") for a in settled)
        declined = None if acted or last is None else last.status
        decisions = (
            [(a.action, a.status) for a in sorted(settled, key=lambda a: a.decided_at or 0.0)]
            if len(settled) > 1
            else None
        )
        await self._run_message(
            event,
            replies.thread_reply_completed(
                event.data.get("workflow", ""), event.thread_id or "", outcome, declined, decisions
            ),
        )

    async def _on_run_failed(self, event: Event) -> None:
        if self.metrics is not None:
            self.metrics.resume_failures.inc()
        failed = replies.failed_message(
            event.data.get("workflow", ""), event.thread_id or "", event.data.get("error", "")
        )
        await self._run_message(event, **failed)

    async def _on_run_outcome_unknown(self, event: Event) -> None:
        await self._run_message(
            event,
            replies.thread_reply_outcome_unknown(
                event.data.get("workflow", ""), event.thread_id or "", event.data.get("error", "")
            ),
        )

    async def _on_run_retried(self, event: Event) -> None:
        await self._run_message(
            event,
            replies.thread_reply_retried(
                event.data.get("workflow", ""), event.thread_id or "", event.data.get("by", "")
            ),
        )

    async def _on_run_cancelled(self, event: Event) -> None:
        await self._run_message(
            event,
            replies.thread_reply_cancelled(
                event.data.get("workflow", ""),
                event.thread_id or "",
                event.data.get("by", ""),
                event.data.get("note", ""),
            ),
        )
