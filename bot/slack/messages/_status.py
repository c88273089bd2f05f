"""`/agent status`, `/agent status THREAD`, `/agent help`, App Home, and what a command says
when its form or its run's cards cannot go where it was asked."""

from __future__ import annotations

from collections.abc import Sequence

from ..mrkdwn import channel, clean, code, date, escape
from ._card import expiry
from ._refusals import NOTHING_CHANGED, database_unavailable
from ._words import STATUS_EMOJI, decider, join, plural, status_word, who

# ---------------------------------------------------------------------------------------------
# /agent status, /agent status THREAD, /agent help, App Home
# ---------------------------------------------------------------------------------------------


def status_mine_heading(n: int) -> str:
    return f"*Waiting on you* ({n})"


def status_others_heading(n: int) -> str:
    return f"*Waiting on others* ({n})"


def status_none() -> str:
    return "🎉 Nothing is waiting for approval."


def status_more(n: int) -> str:
    return f"…and {n} more. `signoff pending` lists every pending approval."


def status_fallback(mine: int, others: int) -> str:
    return f"{mine} waiting on you, {others} waiting on others"


def waits_on(
    approved: int,
    required: int,
    approvers: Sequence[str],
    *,
    voted: bool = False,
    mentioned: Sequence[str] | None = None,
) -> str:
    """What a pending approval waits on: `needs 1 more approval from @finance or <@U_DAVE>`;
    with `mentioned` (mrkdwn mentions, as the card names the approvers), from those."""
    remaining = max(required - approved, 1)
    named = join(list(mentioned), "or") if mentioned else who(approvers)
    text = f"needs {plural(remaining, 'more approval')} from {named}"
    if voted:
        text = "you approved; " + text
    return text


def status_item_meta(
    action: str, since: float, waits: str, expire_at: float | None, *, now: float
) -> str:
    """`/agent status`'s and Home's line under a pending approval: its action, since when it
    waits, on whom, until when. Times are Slack date tokens, as on the card (`expiry`): the
    message and the tab stay on screen, where "waiting 2h" or "expires in 3h" would go stale."""
    text = f"{code(action)} · waiting since {date(since)} · {waits}"
    if expire_at is not None:
        text += f" · expires {expiry(expire_at - now, expire_at)}"
    return text


def thread_heading_plain(thread_id: str) -> str:
    return f"Thread {clean(thread_id)}"


def thread_paused_at(nodes: Sequence[str], step: int | None = None) -> str:
    text = "*Paused at:* " + (", ".join(code(n) for n in nodes) if nodes else "nothing")
    return text + (f" (after step {step})" if step is not None else "")


def thread_history_heading(shown: int, total: int) -> str:
    if shown < total:
        return f"*History* (last {shown} of {total} steps):"
    return "*History:*"


def history_line(step: object, source: object, next_nodes: Sequence[str] = ()) -> str:
    """One checkpoint in a thread's history, as plain text (`thread_status_blocks` escapes it):
    `step 3 (loop) → request_approval`, `step 5 (loop): finished`."""
    where = f"step {step}" if isinstance(step, int) else "a step"
    how = f" ({source})" if isinstance(source, str) and source else ""
    then = f" → {', '.join(str(n) for n in next_nodes)}" if next_nodes else ": finished"
    return where + how + then


def thread_error(error: str) -> str:
    return f"*Error:* {escape(error)}"


def thread_approvals_heading(n: int) -> str:
    return f"*Approvals* ({n}):"


def thread_no_approvals() -> str:
    return "No approvals were asked for in this thread."


def approval_line(status: str, title: str, by: Sequence[str], at: float | None) -> str:
    """One approval in a list: `✅ Send a refund — approved by <@U1> <date>`."""
    emoji = STATUS_EMOJI.get(status, "•")
    if status == "pending":
        return f"{emoji} {escape(title)} — pending"
    who_ = join([decider(b) for b in by])
    by_ = f" by {who_}" if who_ else ""
    return f"{emoji} {escape(title)} — {status_word(status)}{by_} {date(at)}"


def home_heading_plain() -> str:
    return "signoff"


def home_pending_heading(n: int) -> str:
    return f"*Waiting on you* ({n})"


def home_recent_heading(n: int) -> str:
    return f"*Recent decisions* ({n})"


def home_none_pending() -> str:
    return "🎉 Nothing is waiting on you."


def home_none_recent() -> str:
    return "No decisions yet."


def home_more(n: int) -> str:
    return f"…and {n} more."


HELP_TITLE = "signoff: /agent"


def help_text(workflows: Sequence[str] = ()) -> str:
    lines = [
        "`/agent status`: what is waiting for approval, what waits on you first.",
        "`/agent status THREAD_ID`: one run: where it is paused, on what, its history.",
        '`/agent run WORKFLOW key=value key="quoted value"`: start a workflow, if the policy lets you.',
        "`/agent retry THREAD_ID`: go on with a failed run from its last checkpoint.",
        "`/agent cancel THREAD_ID [why]`: cancel a run and its pending approvals.",
        (
            "`/agent away [until DATE] [delegate @person]`: you are away; your delegate "
            "decides for you where the policy allows it. `/agent back` ends it."
        ),
        "`/agent help`: this message.",
        "Approve, reject or edit on the cards in the channel; refusals are only shown to you.",
    ]
    if workflows:
        lines.append("Workflows: " + ", ".join(code(w) for w in workflows))
    return "\n".join(lines)


def home_unavailable() -> str:
    return f"⚠️ {database_unavailable()}."


def help_fallback() -> str:
    return (
        "/agent status, /agent status THREAD_ID, /agent run WORKFLOW key=value, "
        "/agent retry THREAD_ID, /agent cancel THREAD_ID, /agent away, /agent back, /agent help"
    )


def modal_not_opened(form: str, error: str) -> str:
    """A click on a button that opens a modal (`form`: Reject, Edit, Full payload) whose modal
    Slack would not open (`error`: its code, `expired_trigger_id` when signoff was too slow)."""
    if error == "expired_trigger_id":
        why = "Slack only lets a form open within 3 seconds of the click, and that passed"
    elif error == "ratelimited":
        why = "Slack asked signoff to wait before it opens more forms"
    else:
        why = f"Slack answered {code(error)}"
    return f"⚠️ The {form} form could not open ({why}). {NOTHING_CHANGED} Click {form} again."


def run_card_elsewhere(channel_id: str) -> str:
    """Said after a run started from a conversation signoff cannot post in (a DM, a private
    channel it was not invited to): where its approval cards go instead."""
    return (
        f"signoff is not in this conversation, so its cards go to {channel(channel_id)}; "
        "invite it here (`/invite @signoff`) to have them here."
    )


def run_nowhere_to_post() -> str:
    """A run asked for where signoff cannot post, with no default channel to post in instead."""
    return (
        "🚫 signoff is not in this conversation, so no one could approve what the run asks "
        "for; nothing was started. Invite it (`/invite @signoff`) or run the command in a "
        "channel it is in."
    )
