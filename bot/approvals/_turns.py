"""An agent's model turn, as governance sees it: the approvals of the gated tool calls one model
turn proposed (`approval_gate`), which of them a call runs after (the policy's `after`), and
what a settled one means for the calls that wait for it.

The rules (applied by `decisions.settled` and the vote):

- a call never runs before the calls it runs after are settled: approved by its own approvers
  while one of them is pending, it stays pending ("held"), and is settled once they are;
- when one of them is rejected, denied, expires or is cancelled, the call does not run: it is
  denied, and the model is told which call and who refused it, and why;
- when one of them is approved with edits, approvals given to the call before count no more: it
  is asked again, to be decided against what will run.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from . import tables as t
from ._locks import hold
from .models import Approval
from .store import _votes_of

__all__ = [
    "dependencies",
    "drop_votes",
    "held_by",
    "lock_turn",
    "refusal_note",
    "refused_by",
    "turn_approvals",
]


async def lock_turn(conn: AsyncConnection, thread_id: str, turn_id: str) -> None:
    """On PostgreSQL, hold the turn until the transaction ends (an advisory lock), so that a
    vote on a call that runs after another and the settlement of that other are judged one
    after the other: neither reads the turn as it was before the other committed. Taken by
    the vote before it writes anything, so that no row lock is held while it waits. SQLite's
    write transactions are one at a time already."""
    await hold(conn, "signoff.turn", thread_id, turn_id)


async def turn_approvals(conn: AsyncConnection, thread_id: str, turn_id: str) -> list[Approval]:
    """The approvals of one model turn of a thread, in the order the model proposed the calls."""
    query = select(t.approvals).where(
        t.approvals.c.thread_id == thread_id, t.approvals.c.turn_id == turn_id
    )
    rows = (await conn.execute(query)).mappings().all()
    votes = await _votes_of(conn, [row["id"] for row in rows])
    found = [Approval.from_row(row, votes.get(row["id"], ())) for row in rows]
    return sorted(found, key=lambda a: (a.turn.position if a.turn else 0, a.created_at))


def dependencies(a: Approval, turn: Sequence[Approval]) -> list[Approval]:
    """The approvals of the calls `a` runs after, among its turn's (`turn`)."""
    after = set(a.turn.after) if a.turn else set()
    return [o for o in turn if o.turn is not None and o.turn.call_id in after and o.id != a.id]


def held_by(a: Approval, turn: Sequence[Approval]) -> list[str]:
    """The call ids `a` still waits for: those of its turn not settled yet (pending, or not
    even asked for yet)."""
    if a.turn is None:
        return []
    settled = {o.turn.call_id for o in dependencies(a, turn) if o.status != "pending" and o.turn}
    return [c for c in a.turn.after if c not in settled]


def refused_by(a: Approval, turn: Sequence[Approval]) -> Approval | None:
    """The first call `a` runs after that was settled without being approved, if any."""
    for o in dependencies(a, turn):
        if o.status != "pending" and not (o.decision or {}).get("approved"):
            return o
    return None


def refusal_note(a: Approval, refused: Approval) -> str:
    """Why `a` does not run: what happened to `refused`, the call it runs after."""
    decision = refused.decision or {}
    status = decision.get("status") or refused.status
    by = ", ".join(str(b) for b in decision.get("by") or ()) or "nobody"
    why = str(decision.get("note") or refused.reason or "")
    what = {
        "rejected": f"was rejected by {by}",
        "denied": "was denied by policy",
        "expired": "expired before anyone approved it",
        "cancelled": "was cancelled",
    }.get(str(status), f"was {status}")
    return f"{a.action} runs only after {refused.action}, which {what}" + (
        f": {why}" if why else ""
    )


async def drop_votes(conn: AsyncConnection, approval_id: str) -> None:
    """Forget the votes on a call asked again (the audit log keeps them)."""
    await conn.execute(delete(t.votes).where(t.votes.c.approval_id == approval_id))
