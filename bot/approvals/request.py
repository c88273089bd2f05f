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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from graphs import interrupt

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

    Returns:
        The decision. Run the action only if `decision.approved`, with `decision.args`.
    """
    return ask(action, args, title=title, dedupe_key=dedupe_key, note=note)


def ask(
    action: str,
    args: Mapping[str, Any],
    *,
    title: str | None = None,
    dedupe_key: str | None = None,
    note: str | None = None,
    turn: tuple[str, TurnPlace] | None = None,
) -> Decision:
    """`request_approval`, and for a tool call of an agent's model turn (`approval_gate`)
    `turn`: the turn's id and the call's place in it, so that the turn's calls share one card
    and a call waits for those it runs after."""
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
    while True:
        decision = Decision.from_json(interrupt(payload))
        if decision.fingerprint == fp and decision.action == action:
            # Decisions carry only the edits (secret fields never leave the checkpoint).
            return replace(decision, args={**proposal, **decision.edits})
        # Decided for a different proposal: never act on it. The next interrupt() pauses again
        # with a fresh id, and signoff opens a new approval for what is proposed now.
