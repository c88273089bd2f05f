"""`request_approval()`: how a workflow node asks a person before it acts.

```python
from bot.approvals import request_approval

def issue_refund(state, config):
    decision = request_approval(
        "send_refund",
        {"customer_id": state["customer_id"], "amount": state["amount"], "reason": state["reason"]},
        dedupe_key=f"refund:{state['order_id']}",
    )
    if not decision.approved:
        return {"outcome": f"declined: {decision.note}"}
    refund(**decision.args, idempotency_key=decision.idempotency_key)   # the edited values
    return {"outcome": "refunded"}
```

The call pauses the run (through `graphs.interrupt()`); signoff records an approval, asks the
approvers, and resumes the node with a `Decision` once it is settled. The node runs again from its
top on resume (see `graphs._context`): keep the side effect *after* this call.

The approval is bound to the proposal: the action name and arguments are fingerprinted. If the
node, replayed on resume, proposes different arguments than those decided (the state changed in
between, or the code did), the old decision is not used: a new approval is asked for.

With `check=`, the approval is bound to the facts too: the check reads them before the card is
posted (the card shows them), and again once the approval is decided, before the node goes on. If
they changed, the decision is not used and a new approval shows what changed (old → new); if the
check fails or runs out of time, the action does not run (see `bot.approvals.checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from graphs import interrupt, once

from .checks import CHECK_TIMEOUT, Check, read_facts, recheck
from .models import APPROVAL_KIND, Decision, TurnPlace
from .policy import fingerprint

__all__ = ["request_approval"]


def request_approval(
    action: str,
    args: Mapping[str, Any],
    *,
    title: str | None = None,
    dedupe_key: str | None = None,
    note: str | None = None,
    check: Check | None = None,
    check_timeout: float = CHECK_TIMEOUT,
) -> Decision:
    """Pause until `action` with `args` is approved or rejected; return the `Decision`.

    Args:
        action: the policy's name for the action (`[actions.<name>]` in `signoff.toml`). An
            action the policy does not name is denied.
        args: everything a reviewer needs to decide, JSON-like. Fields the policy marks
            `secret` are never shown in clear.
        title: a readable one-line summary for the card (default: the policy's title). Write
            the values in it as `{field}` placeholders (`"Refund {amount:.2f} to
            {customer_id}"`, `str.format` syntax, plain names of `args`; `{{` for a brace):
            they are filled with the current values wherever the title is shown, so that
            after an approver's edit it names what runs.
        dedupe_key: names the entity acted on (e.g. `"refund:order-1234"`): a second request
            with the same key while one is pending joins it, or is refused if its arguments
            differ.
        note: the requester's own words beside the arguments (an external approval's is
            what its service sent as `title`): the card shows it labelled as theirs, never as
            its header or in a confirmation. Default none.
        check: reads the facts the decision rests on: `check(args)` returns a small mapping
            of named facts (`{"balance": "120.00", "refunded_before": "no"}`) and changes
            nothing. Read before the card is posted (it shows them) and again once the
            approval is decided: an approval whose facts changed since is not used (a new one
            is asked, showing old → new); a check that raises or runs past `check_timeout`
            seconds (default 10) refuses the action. It runs in a thread of its own, and
            again each time the node is replayed before its pause. Default none.

    Returns:
        The decision. Run the action only if `decision.approved`, with `decision.args`.
    """
    reader = None
    if check is not None:
        proposal = dict(args)

        def reader() -> dict[str, Any]:
            return read_facts(check, proposal, check_timeout)

    return ask(action, args, title=title, dedupe_key=dedupe_key, note=note, reader=reader)


def ask(
    action: str,
    args: Mapping[str, Any],
    *,
    title: str | None = None,
    dedupe_key: str | None = None,
    note: str | None = None,
    turn: tuple[str, TurnPlace] | None = None,
    seen: Mapping[str, Any] | None = None,
    reader: Callable[[], dict[str, Any]] | None = None,
) -> Decision:
    """`request_approval`, and for a tool call of an agent's model turn (`approval_gate`)
    `turn`: the turn's id and the call's place in it, so that the turn's calls share one card
    and a call waits for those it runs after; `seen`: what the model saw and said when it
    proposed the call (`{"reason": ..., "results": [{"tool", "content"}]}`), for the card;
    `reader`: reads the request's check (a record of `bot.approvals.checks`), never raising."""
    proposal = dict(args)
    fp = fingerprint(action, proposal)
    payload = {
        "kind": APPROVAL_KIND,
        "action": action,
        "args": proposal,
        "fingerprint": fp,
        "title": title,
        "dedupe_key": dedupe_key,
    }
    if note:
        payload["note"] = note
    if turn is not None:
        payload["turn_id"], payload["turn"] = turn[0], turn[1].to_json()
    if seen is not None:
        payload["seen"] = dict(seen)
    if reader is not None:
        payload["check"] = reader()
    while True:
        answer = interrupt(payload)
        decision = Decision.from_json(answer)
        if decision.fingerprint == fp and decision.action == action:
            # Decisions carry only the edits (secret fields never leave the checkpoint).
            decision = replace(decision, args={**proposal, **decision.edits})
            if reader is None or not decision.approved:
                return decision
            # Read again now that it is approved, once per approval: a replay of this node
            # finds the same answer in the checkpoint, so what was refused stays refused.
            now = once(f"signoff.check:{decision.approval_id}", reader, retry_unknown=True)
            refused = recheck(answer.get("checked"), now)
            if refused is None:
                return decision
            # The facts changed (or the check failed): this approval is not used. The next
            # interrupt() asks again, showing what changed; a failed check is refused at once.
            payload = {**payload, "check": refused, "after": decision.approval_id}
            continue
        # Decided for a different proposal: never act on it. The next interrupt() pauses again
        # with a fresh id, and signoff opens a new approval for what is proposed now.
