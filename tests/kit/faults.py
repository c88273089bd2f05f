"""Helpers of the fault tests: the invariants every approved refund must keep once the dust
settles, whatever was killed, restarted or refused on the way."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import sqlalchemy as sa

from bot.approvals import tables as t
from bot.slack import messages, replies
from tests.kit.e2e import E2E, WAIT, BotDatabase, BotProcess, Run, card_of, in_channel, replies_of

QUICK = os.environ.get("SIGNOFF_TEST_QUICK", "") not in ("", "0")
"""`SIGNOFF_TEST_QUICK=1` shortens the loops (CI), never skips them."""

STUCK = ("failed", "outcome_unknown", "cancelled")
"""Run statuses nothing moves on from without a person (a retry, a look at the outcome)."""
SETTLE = 60.0
"""Seconds for the bot to finish everything after a fault (leases must run out first)."""


async def until(
    predicate: Callable[[], object], what: str, bot: BotProcess | None = None, timeout: float = WAIT
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            said = f"; the bot said:\n{bot.output()}" if bot is not None else ""
            raise AssertionError(f"{what} did not happen within {timeout:g}s{said}")
        await asyncio.sleep(0.05)


def outcome(run: Run, customer: str, amount: float = 42.5) -> str:
    return messages.run_completed("refund", run.thread_id, f"refunded {amount:.2f} to {customer}")


def run_outcome(db: BotDatabase, run: Run, customer: str) -> str:
    """What the run's thread should hear last: its completion, or that its refund's outcome is
    unknown (the process died between starting the refund and recording that it returned)."""
    found = db.run(run.thread_id) or {}
    if found.get("status") == "outcome_unknown":
        return replies.thread_reply_outcome_unknown(
            "refund", run.thread_id, found.get("error") or ""
        )
    return outcome(run, customer)


async def settled(
    e2e: E2E,
    runs: dict[str, Run],
    approver: str,
    *,
    timeout: float = SETTLE,
    unknown_allowed: bool = False,
) -> None:
    """Wait until every run of `runs` (by customer) completed and told its thread, then check that
    each was decided once, resumed once, refunded once, its card posted once and its thread told
    each thing once (the sink may deliver an event twice, but nothing visible may repeat).

    With `unknown_allowed` (a process killed at random), a run may end "outcome_unknown" instead:
    killed inside the refund's `once()`, the next attempt refuses to guess; then at most one
    refund, and the thread is told so, once. A run that ends otherwise (failed, cancelled)
    fails the wait at once: nothing moves it on without a person."""
    db: BotDatabase = e2e.db
    ends = ("completed", "outcome_unknown") if unknown_allowed else ("completed",)

    def over() -> bool:
        status = {c: (db.run(r.thread_id) or {}).get("status") for c, r in runs.items()}
        if failed := {c: s for c, s in status.items() if s in STUCK and s not in ends}:
            raise AssertionError(f"runs ended and will not move again: {failed}")
        return all(s in ends for s in status.values()) and not db.jobs(undone=True)

    try:
        await until(over, "every run completed, every job done", e2e.bot, timeout)
    except AssertionError as e:
        stuck = {c: (db.approval(r.approval_id)["status"], (db.run(r.thread_id) or {}).get("status"), (db.run(r.thread_id) or {}).get("error"))
                 for c, r in runs.items() if (db.run(r.thread_id) or {}).get("status") not in ends}  # fmt: skip
        raise AssertionError(
            f"{e}\nnot completed: {stuck}\njobs left: {db.jobs(undone=True)}"
        ) from None
    expected = {
        c: [messages.run_approved(f"Refund 42.50 to {c}", [approver]), run_outcome(db, r, c)]
        for c, r in runs.items()
    }
    try:
        state = await e2e.slack.wait_for(
            lambda s: all(replies_of(s, r.card) == expected[c] for c, r in runs.items()),
            timeout=timeout,
        )
    except TimeoutError:
        state = await e2e.slack.state()
        wrong = {
            c: replies_of(state, r.card)
            for c, r in runs.items()
            if replies_of(state, r.card) != expected[c]
        }
        raise AssertionError(
            f"threads not told their approval and outcome once each: {wrong}"
        ) from None
    top = in_channel(state)
    for customer, run in runs.items():
        assert db.approval(run.approval_id)["status"] == "approved", customer
        assert [
            v["user_id"]
            for v in db.rows(sa.select(t.votes).where(t.votes.c.approval_id == run.approval_id))
        ] == [approver], customer
        refunds = [(e["kind"], e["data"]["customer_id"]) for e in db.effects(run.thread_id)]
        if (db.run(run.thread_id) or {}).get("status") == "outcome_unknown":
            assert refunds in ([], [("refund", customer)]), customer
        else:
            assert refunds == [("refund", customer)], customer
        resumes = [j for j in db.jobs(thread_id=run.thread_id) if j["kind"] == "resume"]
        assert len(resumes) == 1 and resumes[0]["done_at"] is not None, (customer, resumes)
        cards = [m for m in top if f"`{run.approval_id}`" in str(m.get("blocks"))]
        assert len(cards) == 1, (customer, "cards posted", len(cards))
        card = card_of(state, run.approval_id)
        assert card is not None and card["ts"] == run.card["ts"]
        notices = [m for m in top if m.get("text") == run_outcome(db, run, customer)]
        assert len(notices) == 1, (customer, "channel notices", len(notices))
