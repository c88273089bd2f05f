"""`/agent status`, `/agent status THREAD_ID`, `/agent help` and the App Home tab.

Pure: values in, a message (`{"text", "blocks"}`, for `respond()`) or a Home view (for
`views.publish(view=...)`) out; `now` is passed in (epoch seconds, default the current time).
Wording comes from `messages`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from bot.approvals.checks import facts_text
from bot.approvals.grants import Grant
from bot.approvals.models import Approval

from . import messages as m
from . import turn_card
from ._blocks import (
    context,
    deciders,
    decision_of,
    divider,
    field,
    field_sections,
    header,
    message,
    plain,
    section,
    text_length,
    title_of,
)
from .limits import (
    BUTTON_TEXT_MAX,
    ERROR_MAX,
    HISTORY_LINES_MAX,
    LIST_TITLE_MAX,
    MESSAGE_BLOCKS_MAX,
    MESSAGE_BLOCKS_TEXT_MAX,
    SECTION_TEXT_MAX,
    VIEW_BLOCKS_MAX,
)
from .mrkdwn import (
    channel,
    clean,
    code,
    date,
    escape,
    escape_fit,
    link_label,
    mention,
    one_line,
    shorten,
    slack_len,
)
from .payloads import AWAY_BACK, REVOKE_GRANT

__all__ = [
    "help_blocks",
    "home_unavailable_view",
    "home_view",
    "status_blocks",
    "thread_status_blocks",
]


def _permalink(url: object) -> str | None:
    if not isinstance(url, str) or not url.startswith("https://") or len(url) > 1000:
        return None
    if any(c in url for c in '<>| \n\t"') or clean(url) != url:
        return None
    return url


def _voted(approval: Approval, user: str | None) -> bool:
    return user is not None and any(v.user_id == user for v in approval.votes)


def _may_decide(approval: Approval, user: str) -> bool:
    return user in approval.approvers and user != approval.requester and not _voted(approval, user)


def _pending_item(
    approval: Approval,
    *,
    now: float,
    user: str | None,
    permalinks: Mapping[str, str] | None,
    mentions: Sequence[str] | None = None,
) -> dict[str, Any]:
    title = title_of(approval)[:LIST_TITLE_MAX]
    url = _permalink((permalinks or {}).get(approval.id))
    shown = f"<{url}|{link_label(title)}>" if url else escape(title)
    waits = m.waits_on(
        approval.approvals_count,
        approval.required,
        [shorten(a, 100) for a in approval.approvers[:10]],
        voted=_voted(approval, user),
        mentioned=list(mentions[:20]) if mentions else None,
    )
    lines = [
        f"{m.tier_emoji(approval.risk_tier)} *{shown}*",
        m.status_item_meta(
            shorten(approval.action, 200), approval.created_at, waits, approval.expire_at, now=now
        ),
        f"requested by {mention(shorten(approval.requester, 200))}",
    ]
    if approval.status == "pending":
        lines += _waiting_on_facts_and_people(approval)
    return section("\n".join(lines))


def _waiting_on_facts_and_people(approval: Approval) -> list[str]:
    """Under a pending approval, as its card says: the facts its check read, and that
    everyone who could decide it is away."""
    lines = []
    checked = approval.checked or {}
    facts, at = checked.get("facts"), checked.get("at")
    if isinstance(facts, Mapping) and facts and "error" not in checked:
        when = date(at if isinstance(at, (int, float)) else None)
        lines.append(m.facts_checked(when, shorten(facts_text(facts), 200)))
    if approval.away:
        lines.append(m.status_away(approval.away[:5]))
    return lines


_MORE_LINE = 200
"""Characters kept for a list's "and N more" line within its text budget."""


def _list(
    heading: str,
    items: Sequence[Approval],
    render: Callable[[Approval], dict[str, Any]],
    room: int,
    more: Callable[[int], str],
    total: int | None = None,
    chars: int | None = None,
) -> list[dict[str, Any]]:
    """A heading and one block per item, within `room` blocks and, for a message, `chars`
    characters of text (Slack refuses a message whose blocks hold more); when not all of
    `total` (default `len(items)`: `items` may be the first page of more) fit, the last says
    how many more."""
    total = len(items) if total is None else max(total, len(items))
    out = [section(heading)]
    rendered = [render(i) for i in items[: max(room - 1, 0)]]
    if total == len(rendered) and (chars is None or text_length(out + rendered) <= chars):
        return out + rendered
    kept = rendered[: max(room - 2, 0)]
    if chars is not None:
        while kept and text_length(out + kept) > chars - _MORE_LINE:
            kept.pop()
    return out + kept + [context(more(total - len(kept)))]


def status_blocks(
    approvals: Sequence[Approval],
    user: str,
    now: float,
    *,
    decidable: Collection[str] | None = None,
    permalinks: Mapping[str, str] | None = None,
    totals: tuple[int, int] | None = None,
    mentions: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The `/agent status` reply: pending approvals, those `user` can decide first, each with
    its age, what it waits on and a link to its card.

    Args:
        approvals: pending approvals, oldest first (`Signoff.pending(user=...)`).
        user: who asked.
        now: epoch seconds.
        decidable: ids of the approvals `user` may decide (groups resolved). Default: those
            listing `user` by id, not requested by them, and not voted on by them.
        permalinks: approval id -> the card's permalink (`chat.getPermalink`), when known.
        totals: how many are waiting on `user` and on others in all, when `approvals` holds
            only the first of each (`Signoff.pending_view`).
        mentions: approval id -> who may approve it, as the card names them (the policy's
            groups as their members, the requester left out: `mentions.approver_mentions`).
            Default: the policy's entries as written.
    """
    pending = [a for a in approvals if a.status == "pending"]
    if decidable is None:
        mine = [a for a in pending if _may_decide(a, user)]
    else:
        mine = [a for a in pending if a.id in decidable]
    ids = {a.id for a in mine}
    others = [a for a in pending if a.id not in ids]
    mine_total, others_total = totals if totals is not None else (len(mine), len(others))

    def render(a: Approval) -> dict[str, Any]:
        return _pending_item(
            a, now=now, user=user, permalinks=permalinks, mentions=(mentions or {}).get(a.id)
        )

    blocks: list[dict[str, Any]] = []
    if not pending:
        blocks.append(section(m.status_none()))
    if mine:  # the first, and most of the room; some is left to say what waits on others
        room = MESSAGE_BLOCKS_MAX - (3 if others else 0)
        chars = MESSAGE_BLOCKS_TEXT_MAX * 3 // 4 if others else MESSAGE_BLOCKS_TEXT_MAX
        blocks += _list(
            m.status_mine_heading(mine_total), mine, render, room, m.status_more, mine_total,
            chars,
        )  # fmt: skip
    if others:
        if blocks:
            blocks.append(divider())
        room = MESSAGE_BLOCKS_MAX - len(blocks)
        chars = MESSAGE_BLOCKS_TEXT_MAX - text_length(blocks)
        blocks += _list(
            m.status_others_heading(others_total), others, render, room, m.status_more,
            others_total, chars,
        )  # fmt: skip
    return message(m.status_fallback(mine_total, others_total), blocks)


def _approval_line(approval: Approval) -> str:
    status: str = approval.status
    if status == "rejected" and decision_of(approval).get("status") == "denied":
        status = "denied"
    return m.approval_line(
        status, title_of(approval)[:LIST_TITLE_MAX], deciders(approval), approval.decided_at
    )


def _lines_section(
    heading: str, lines: Sequence[str], more: Callable[[int], str]
) -> dict[str, Any]:
    """A section of `heading` and as many whole lines as fit, then how many did not."""
    out = heading
    for i, line in enumerate(lines):
        tail = "\n" + m.home_more(len(lines) - i)
        if slack_len(out) + 1 + slack_len(line) + slack_len(tail) > SECTION_TEXT_MAX:
            return section(out + "\n" + more(len(lines) - i))
        out += "\n" + line
    return section(out)


def _summary(state: object) -> Mapping[str, Any]:
    """A state summary from a mapping or from a `graphs.StateSnapshot` (its `next` and step)."""
    if state is None:
        return {}
    if isinstance(state, Mapping):
        return state
    metadata = getattr(state, "metadata", None) or {}
    step = metadata.get("step") if isinstance(metadata, Mapping) else None
    summary: dict[str, Any] = {"next": list(getattr(state, "next", None) or [])}
    if isinstance(step, int):
        summary["step"] = step
    return summary


def thread_status_blocks(
    run: Mapping[str, Any],
    state_summary: Mapping[str, Any] | object | None,
    approvals: Sequence[Approval],
) -> dict[str, Any]:
    """The `/agent status THREAD_ID` reply: the run, where it is paused, on what, its history.
    Its times are Slack date tokens (the reply stays on screen; no "2h ago" to go stale).

    Args:
        run: the run record (`Signoff.run_info`): thread_id, workflow, requester, channel,
            status, error, created_at, updated_at.
        state_summary: a `graphs.StateSnapshot` (`aget_state`), or a mapping with, all
            optional: `next` (node names it is paused at), `step` (supersteps so far) and
            `history` (short lines, oldest first).
        approvals: the thread's approvals (`Signoff.thread_approvals`).
    """
    thread_id = str(run.get("thread_id") or "?")
    status = str(run.get("status") or "unknown")
    fields = [
        field(m.FIELD_WORKFLOW, code(shorten(run.get("workflow") or "?", 200))),
        field(
            m.FIELD_STATUS,
            f"{m.RUN_STATUS_EMOJI.get(status, '•')} {escape(m.status_word(shorten(status, 40)))}",
        ),
        field(m.FIELD_REQUESTER, mention(shorten(run.get("requester") or "?", 200))),
    ]
    if run.get("channel"):
        fields.append(field(m.FIELD_CHANNEL, channel(shorten(run["channel"], 100))))
    for label, key in ((m.FIELD_STARTED, "created_at"), (m.FIELD_UPDATED, "updated_at")):
        ts = run.get(key)
        if isinstance(ts, (int, float)) and math.isfinite(ts):
            fields.append(field(label, date(ts)))
    blocks: list[dict[str, Any]] = [
        header(m.thread_heading_plain(shorten(thread_id, 200))),
        *field_sections(fields),
    ]
    if run.get("error"):
        blocks.append(section(m.thread_error(shorten(run["error"], ERROR_MAX))))
    summary = _summary(state_summary)
    nodes = [shorten(n, 100) for n in list(summary.get("next") or [])[:20]]
    waiting = [a for a in approvals if a.status == "pending"] if status == "paused" else []
    if waiting:  # in the run's words: the calls it waits for, and on whom; not engine steps
        lines = [turn_card.waits_line(a, approvals) for a in waiting]
        blocks.append(_lines_section(m.run_waits_heading(len(waiting)), lines, m.home_more))
    elif nodes or status == "paused":
        step = summary.get("step")
        blocks.append(section(m.thread_paused_at(nodes, step if isinstance(step, int) else None)))
    history = [str(h) for h in list(summary.get("history") or [])]
    if history and not waiting:
        last = history[-HISTORY_LINES_MAX:]
        lines = [f"• {escape_fit(one_line(h), 200)}" for h in last]
        blocks.append(
            section("\n".join([m.thread_history_heading(len(last), len(history)), *lines]))
        )
    if approvals:
        lines = [_approval_line(a) for a in approvals]
        blocks.append(
            _lines_section(m.thread_approvals_heading(len(approvals)), lines, m.home_more)
        )
    else:
        blocks.append(context(m.thread_no_approvals()))
    fallback = (
        f"Thread {code(shorten(thread_id, 200))}: {escape(m.status_word(shorten(status, 40)))}"
    )
    return message(fallback, blocks)


def help_blocks(workflows: Sequence[str] = (), *, unknown: str | None = None) -> dict[str, Any]:
    """The `/agent help` reply, and the answer to anything `/agent` does not know.

    Args:
        workflows: workflow names to list.
        unknown: the word `/agent` did not know (`AgentCommand.unknown`), said first.
    """
    names = [shorten(w, 100) for w in workflows[:50]]
    head = [section(m.unknown_command(shorten(unknown, 100)))] if unknown else []
    return message(m.help_fallback(), [*head, header(m.HELP_TITLE), section(m.help_text(names))])


def _away_section(until: float | None, delegate: str | None) -> dict[str, Any]:
    """Home's line while its person is away, with the button that ends it."""
    block = section(m.home_away(until, delegate))
    block["accessory"] = {
        "type": "button",
        "text": {"type": "plain_text", "text": m.back_button_plain()},
        "action_id": AWAY_BACK,
        "value": "back",
    }
    return block


def home_view(
    pending: Sequence[Approval],
    recent: Sequence[Approval],
    *,
    user: str | None = None,
    now: float | None = None,
    permalinks: Mapping[str, str] | None = None,
    notice: str | None = None,
    pending_total: int | None = None,
    mentions: Mapping[str, Sequence[str]] | None = None,
    grants: Sequence[Grant] = (),
    away: tuple[float | None, str | None] | None = None,
) -> dict[str, Any]:
    """The App Home tab: the user's pending approvals, the live grants they may revoke, and
    recent decisions (`views.publish`).

    Args:
        pending: approvals waiting on the user.
        recent: recently settled approvals, newest first.
        user: the user (to say "you approved" on the ones they voted on).
        now: epoch seconds; default the current time.
        permalinks: approval id -> card permalink.
        notice: a `messages` string shown first (e.g. `messages.database_unavailable()`).
        pending_total: how many wait on the user in all, when `pending` is the first of them.
        mentions: approval id -> who may approve it, as the card names them (`status_blocks`).
        grants: live grants the user may revoke, each shown with a Revoke button.
        away: (until, delegate) while the user is away (`/agent away`): a line saying so,
            with a button to end it.
    """
    now = time.time() if now is None else now
    total = len(pending) if pending_total is None else pending_total
    blocks: list[dict[str, Any]] = [header(m.home_heading_plain())]
    if notice:
        blocks.append(section(notice))
    if away is not None:
        blocks.append(_away_section(*away))
    half = (VIEW_BLOCKS_MAX - 4) // 2

    def render(a: Approval) -> dict[str, Any]:
        return _pending_item(
            a, now=now, user=user, permalinks=permalinks, mentions=(mentions or {}).get(a.id)
        )

    if pending:
        blocks += _list(m.home_pending_heading(total), pending, render, half, m.home_more, total)
    else:
        blocks.append(section(m.home_none_pending()))
    if grants:
        blocks.append(divider())
        blocks += _grant_blocks(grants)
    blocks.append(divider())
    if recent:
        room = VIEW_BLOCKS_MAX - len(blocks)
        blocks += _list(
            m.home_recent_heading(len(recent)),
            recent,
            lambda a: section(_approval_line(a)),
            room,
            m.home_more,
        )
    else:
        blocks.append(section(m.home_none_recent()))
    return {"type": "home", "blocks": blocks[:VIEW_BLOCKS_MAX]}


_GRANTS_SHOWN = 10
"""The most grants Home lists (the oldest first); the block budget is the pending list's."""


def _grant_blocks(grants: Sequence[Grant]) -> list[dict[str, Any]]:
    """A heading, then each grant as a line with its Revoke button."""
    blocks = [section(m.home_grants_heading())]
    for g in grants[:_GRANTS_SHOWN]:
        line = m.home_grant_line(
            shorten(g.id, 100), shorten(g.action, 100), shorten(g.grantor, 100),
            shorten(g.requester, 100), g.left, g.uses, g.expires_at,
        )  # fmt: skip
        block = section(line)
        block["accessory"] = {
            "type": "button",
            "text": plain(m.REVOKE_BUTTON, BUTTON_TEXT_MAX),
            "action_id": REVOKE_GRANT,
            "value": g.id,
            "style": "danger",
        }
        blocks.append(block)
    if len(grants) > _GRANTS_SHOWN:
        blocks.append(context(m.home_more(len(grants) - _GRANTS_SHOWN)))
    return blocks


def home_unavailable_view() -> dict[str, Any]:
    """The App Home tab when the database cannot be reached."""
    return {
        "type": "home",
        "blocks": [header(m.home_heading_plain()), section(m.home_unavailable())],
    }
