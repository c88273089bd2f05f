"""Reading: an approval, what waits on whom (`pending_view`), the latest decisions, a run.
Reads only (besides `mark_posted`, which notes where a card is): no decision is made here, and
the policy check (`may_decide`) is the authority over what the database's filter suggests."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, exists, or_

from . import store
from . import tables as t
from .errors import UnknownApprovalError
from .models import Approval
from .policy import GroupResolver, Policy, check_voter, resolve_members

if TYPE_CHECKING:
    from .db import Database

__all__ = ["LAST_READ_KEPT", "PendingView", "Views"]

LAST_READ_KEPT = 2000
"""How many approvals `Views.last_read` remembers (the most recently read)."""


@dataclass(frozen=True, slots=True)
class PendingView:
    """What waits on one person (`Signoff.pending_view`): the oldest of each list, and totals."""

    mine: list[Approval]
    """Pending approvals they may decide, oldest first."""
    others: list[Approval]
    """Pending approvals waiting on someone else, oldest first."""
    mine_total: int
    others_total: int


class Views:
    """What the CLI, Slack's App Home and `/agent status` show."""

    def __init__(self, db: Database, policy: Policy, groups: GroupResolver) -> None:
        self.db = db
        self.policy = policy
        self.groups = groups
        self._last_read: OrderedDict[str, Approval] = OrderedDict()
        """The approvals this process read last, newest last (`last_read`)."""

    async def get(self, approval_id: str, *, deadline: float | None = None) -> Approval:
        async with self.db.read(deadline=deadline) as conn:
            a = await store.get_approval(conn, approval_id)
        if a is None:
            self._last_read.pop(approval_id, None)
            raise UnknownApprovalError(approval_id)
        self._last_read[approval_id] = a
        self._last_read.move_to_end(approval_id)
        while len(self._last_read) > LAST_READ_KEPT:
            self._last_read.popitem(last=False)
        return a

    def last_read(self, approval_id: str) -> Approval | None:
        """The approval as this process last read it (`get`), or None: possibly stale, so
        only a hint, for a caller that checks it against the database before acting on it
        (a click's vote: compare-and-set on its version, `Signoff.vote(seen=...)`)."""
        return self._last_read.get(approval_id)

    def forget(self, approval_id: str) -> None:
        """Drop what `last_read` holds of the approval (a vote has just changed it)."""
        self._last_read.pop(approval_id, None)

    async def pending(self, *, user: str | None = None) -> list[Approval]:
        """The oldest pending approvals (at most 200); with `user`, those they may decide first."""
        async with self.db.read() as conn:
            items = await store.list_approvals(conn)
        if user is None:
            return items
        mine = [await self.may_decide(a, user) for a in items]
        return [a for a, m in zip(items, mine) if m] + [a for a, m in zip(items, mine) if not m]

    async def pending_view(self, user: str, *, limit: int = 50) -> PendingView:
        """What waits on `user` and what waits on others: the oldest `limit` of each, and how
        many there are in all. The database does the sorting and counting (five indexed
        queries whatever the number of pauses), so the answer stays quick with 100,000 pending.

        Raises:
            GroupsUnavailable: the user's groups could not be looked up.
        """
        decidable = await self._decidable_by(user)
        pending = t.approvals.c.status == "pending"
        async with self.db.read() as conn:
            total = await store.count_approvals(conn, pending)
            mine_total = await store.count_approvals(conn, and_(pending, decidable))
            mine = await store.list_approvals(conn, where=decidable, limit=limit)
            others = await store.list_approvals(conn, where=~decidable, limit=limit)
        # The query decides from what is stored; the policy check is the authority.
        checked = [a for a in mine if await self.may_decide(a, user)]
        return PendingView(
            checked, others, mine_total - (len(mine) - len(checked)), total - mine_total
        )

    async def _decidable_by(self, user: str) -> ColumnElement[bool]:
        """A condition on `approvals`: those `user` may vote on, as `may_decide` would say, for
        the database to filter with. An approval's `approvers` is a JSON list of user ids and
        @groups; `user` matches it by id or through a group of the policy they are in."""
        names = {
            e[1:]
            for rule in self.policy.actions.values()
            for e in (*rule.approvers, *rule.escalate_to)
            if e.startswith("@")
        }
        names |= {g.removeprefix("@") for g in self.policy.groups}
        entries = [user] + [f"@{g}" for g in sorted(names) if user in await self.groups.members(g)]
        c = t.approvals.c
        self_ok = [name for name, rule in self.policy.actions.items() if rule.allow_self_approval]
        return and_(
            or_(*(c.approvers.contains(json.dumps(e), autoescape=True) for e in entries)),
            c.action.in_(list(self.policy.actions)),
            or_(c.requester != user, c.action.in_(self_ok)),
            ~exists().where(t.votes.c.approval_id == c.id, t.votes.c.user_id == user),
        )

    async def mark_posted(self, approval_id: str, channel: str, message_ts: str) -> None:
        """Record where the approval's card was posted (Slack), so later updates edit it."""
        async with self.db.transaction() as conn:
            await store.set_posted(conn, approval_id, channel, message_ts)
        self.forget(approval_id)  # where the card is is not versioned: read it again

    async def may_decide(self, approval: Approval, user: str) -> bool:
        """Whether `user` may vote on `approval` now (policy, groups, self-approval, votes)."""
        if approval.status != "pending" or any(v.user_id == user for v in approval.votes):
            return False
        rule = self.policy.actions.get(approval.action)
        if rule is None:
            return False
        members = await resolve_members(approval.approvers, self.groups)
        service = self.policy.services.get(approval.service or "")
        if service is not None and user in await resolve_members(service.owners, self.groups):
            return False  # an owner of the service that asked may not approve it
        return (
            check_voter(rule, requester=approval.requester, actor=user, approvers=members) is None
        )

    async def approval_counts(self) -> dict[str, int]:
        """How many approvals there are in each status (one grouped query)."""
        async with self.db.read() as conn:
            return await store.count_by_status(conn)

    async def recent(self, limit: int = 10) -> list[Approval]:
        """The most recently decided approvals, newest first."""
        async with self.db.read() as conn:
            return await store.recent_decided(conn, limit)

    async def run_info(self, thread_id: str) -> Mapping[str, Any] | None:
        """The run's row (`RunRecord.to_row`), or None."""
        async with self.db.read() as conn:
            run = await store.get_run(conn, thread_id)
        return run.to_row() if run is not None else None

    async def thread_approvals(self, thread_id: str) -> list[Approval]:
        async with self.db.read() as conn:
            return await store.list_approvals(
                conn,
                statuses=("pending", "approved", "rejected", "expired", "cancelled"),
                thread_id=thread_id,
            )
