"""Budgets on auto-approval: how much a rule has approved in its window, and whether one more
request would take it past a cap (`[[actions.X.auto_approve]] budget = {...}`).

A rule judges one request at a time; a budget judges the rule's recent work: twelve refunds of
5.00 for one customer in a day, or six in one agent turn, are each routine and together not.
Past a cap the request is asked of people like any other, and its card says which cap.

Spent is counted from the approvals the rule itself approved (decided by `rule:NAME`) in the
window, matched on the budget's `per` arguments as stored (redacted the same way, so a secret
key compares by its hash). The count and the check run under the transaction that records the
request: SQLite's write transactions are one at a time, and on PostgreSQL an advisory lock per
action and rule makes two requests judged at once count each other.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from . import tables as t
from ._locks import hold
from .policy import AutoApproveRule, AutoBudget

__all__ = ["past_budget"]


async def past_budget(
    conn: AsyncConnection,
    action: str,
    rule: AutoApproveRule,
    shown: Mapping[str, Any],
    requester: str,
    now: float,
) -> str | None:
    """Why approving this request by `rule` would take it past its budget (which cap, how much
    is spent), or None when it is within it, or the rule has none.

    Args:
        shown: the request's arguments as they are stored (redacted).
        requester: who asked (`per = "requester"`).
    """
    budget = rule.budget
    if budget is None:
        return None
    await hold(conn, "signoff.budget", action, rule.name)
    mine = _key(budget, shown, requester)
    query = select(t.approvals.c.payload, t.approvals.c.requester, t.approvals.c.decision).where(
        t.approvals.c.action == action,
        t.approvals.c.status == "approved",
        t.approvals.c.decided_at >= now - budget.window.total_seconds(),
    )
    count, total = 0, 0.0
    for row in (await conn.execute(query)).mappings():
        decision = json.loads(row["decision"]) if row["decision"] else {}
        if decision.get("by") != [f"rule:{rule.name}"]:
            continue  # decided by people, or by another rule: not this rule's spending
        payload = json.loads(row["payload"]) if row["payload"] else {}
        if _key(budget, payload, row["requester"]) != mine:
            continue
        count += 1
        total += _number(payload.get(budget.of)) if budget.of else 0.0
    return _over(rule, budget, count, total, _number(shown.get(budget.of)) if budget.of else 0.0)


def _over(
    rule: AutoApproveRule, budget: AutoBudget, count: int, total: float, this: float
) -> str | None:
    spent: str | None = None
    if budget.count is not None and count + 1 > budget.count:
        spent = f"it approved {count} already"
    elif budget.total is not None and total + this > budget.total:
        spent = f"it approved {total:g} of {budget.of} already, and this asks {this:g}"
    if spent is None:
        return None
    return (
        f"the rule {rule.name!r} is past its budget ({budget.describe()}): {spent}, so a person "
        "decides this one"
    )


def _key(budget: AutoBudget, args: Mapping[str, Any], requester: str) -> tuple[str, ...]:
    return tuple(
        requester if name == "requester" else json.dumps(args.get(name), sort_keys=True)
        for name in budget.per
    )


def _number(value: Any) -> float:
    """A summed argument's value; a value that is not a finite number counts as the whole
    budget (never as nothing), so it cannot slip under a cap."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return math.inf
    return float(value) if math.isfinite(value) else math.inf
