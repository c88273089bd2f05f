"""`signoff run` that SIGKILLs itself at one chosen point of the first refund to a customer whose
id starts with `DIE_FOR` (the refunds it finishes for others go on as usual):
`BotProcess(..., main="tests.kit.dying_bot", DIE_AT=point, DIE_FOR=prefix)`. It lands a kill exactly where
random ones rarely do. The points are in the refund workflow's node and in the outside world's
stand-in (`Effects`, the provider), never in the engine or the bot, whose recovery is what the
fault tests check:

- "refund node start": the resume began (the decision is in the thread), the refund did not;
- "provider, before the refund": `once()` recorded the refund's start and called the provider,
  which dies before doing anything;
- "provider, after the refund": the provider made the refund; its result is not recorded;
- "refund node returned": the refund and its result are recorded, the step is not saved.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from bot.approvals.effects import Effects
from bot.cli import main
from bot.workflows import refund

POINTS = (
    "refund node start",
    "provider, before the refund",
    "provider, after the refund",
    "refund node returned",
)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def patch(point: str, customers: str) -> None:
    if point not in POINTS:
        raise SystemExit(f"DIE_AT={point!r}: expected one of {POINTS}")
    if not customers:
        raise SystemExit("DIE_FOR is empty: give the start of the customer ids to die for")
    issue_refund, record = refund.issue_refund, Effects.record

    def dying_issue_refund(state: refund.RefundState, config: Any) -> dict[str, Any]:
        mine = state["customer_id"].startswith(customers)
        if mine and point == "refund node start":
            die()
        result = issue_refund(state, config)
        if mine and point == "refund node returned":
            die()
        return result

    def dying_record(
        self: Effects, kind: str, key: str, data: Mapping[str, Any], **kw: Any
    ) -> dict[str, Any]:
        mine = kind == "refund" and str(data.get("customer_id")).startswith(customers)
        if mine and point == "provider, before the refund":
            die()
        result = record(self, kind, key, data, **kw)
        if mine and point == "provider, after the refund":
            die()
        return result

    # The graph is built on first use, after this: it takes the node from the module.
    refund.issue_refund = dying_issue_refund  # type: ignore[assignment]
    Effects.record = dying_record  # type: ignore[method-assign]


if __name__ == "__main__":
    patch(os.environ["DIE_AT"], os.environ.get("DIE_FOR", ""))
    sys.exit(main())
