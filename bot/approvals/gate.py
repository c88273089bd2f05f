"""`approval_gate()`: an agent's tool calls, governed by the policy, in one function call.

```python
from graphs.prebuilt import create_react_agent
from bot.approvals import approval_gate

agent = create_react_agent(model, [lookup_order, send_refund], before_call=approval_gate())
```

Each tool call the model makes is gated by its tool's name, as the policy says:

- a tool named like an action (`[actions.send_refund]`) asks for that action's approval with the
  call's arguments (`request_approval`): the card shows them, and the action's argument schema
  checks them (a call the schema refuses is denied by policy, on the audit log, and the model is
  told what was wrong). Approved, the tool runs with those arguments; approved with an edit, it
  runs with the edited ones and its result starts with a note saying what was changed; rejected
  (or expired, or denied), it does not run and the model gets an error `ToolMessage` saying who
  decided and why, so that it can go on or give up;
- a tool in `[agents] free_tools` runs without asking;
- any other tool call is denied, like an action the policy does not name.

Several gated calls in one model turn are one decision for people: each call keeps its own
approval (the policy applies per call: approvers, quorum, self-approval, auto-approval), and
they share the turn's id, so that Slack shows them on one card, each with its own buttons. A
call whose action the policy says runs `after` another (`[actions.email_customer] after =
["send_refund"]`) waits for that call of the same turn: it never runs before it is settled,
does not run when it is rejected, denied or expires (the model is told which call was refused,
by whom and why), and is decided again when it is approved with edits. Approved, it runs only
once that call has run, and not at all when that one failed (the tool raised, or answered with
an error): the model is told so (`RunsAfter`). A call let through runs at most once per tool
call id, across replays, crashes and restarts. With
`create_react_agent`'s default `version="v2"` each call is a task of its own, so an approved
call (and a free one) runs as soon as it is settled, whatever the others wait on; with
`version="v1"` (or one `ToolNode` for the turn, as `support_agent` has) no tool of the turn
runs until all are settled. The order in which approved calls run (an email only after the
refund it announces ran) holds inside one `ToolNode`: use one for a turn whose calls depend on
each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolCall, ToolMessage

from graphs.prebuilt import BeforeCall, Edited, Rejected, RunsAfter

from .effects import NodeServices
from .models import Decision, TurnPlace
from .policy import Policy
from .request import ask

__all__ = ["approval_gate", "decision_note"]


def approval_gate(
    policy: Policy | None = None, *, titles: Mapping[str, str] | None = None
) -> BeforeCall:
    """A `before_call` hook (for `ToolNode` and `create_react_agent`) that gates each tool call
    by the policy.

    Args:
        policy: the policy to read the free tools from. Default: the policy of the signoff run
            the graph runs in (read from the node's config), so one graph follows whatever
            policy file the bot was started with. Outside a signoff run, pass it.
        titles: a card title per action, with `{field}` placeholders filled from the call's
            arguments (`{"send_refund": "Refund {amount:.2f} to {customer_id}"}`). Default:
            the policy's title of the action.
    """
    chosen = dict(titles or {})

    def gate(call: Any, state: Any, config: Any) -> Edited | Rejected | RunsAfter | None:
        name = call["name"]
        rules = _policy(policy, config)
        if name in rules.free_tools:
            return None
        args = call.get("args") or {}
        if not isinstance(args, Mapping):
            return Rejected(f"Error: the arguments of {name} must be an object, got {args!r}")
        # Not an action of the policy: request_approval is denied, and that is audited.
        turn = _turn_of(call, state, rules)
        seen = _seen(call, state)
        decision = ask(name, dict(args), title=chosen.get(name), turn=turn, seen=seen)
        verdict = _verdict(call, decision)
        if turn is not None and turn[1].after and not isinstance(verdict, Rejected):
            # approved: it still runs only once the calls it runs after ran, and succeeded
            return RunsAfter(turn[1].after, verdict)
        return verdict

    return gate


def _policy(policy: Policy | None, config: Any) -> Policy:
    if policy is not None:
        return policy
    found = ((config or {}).get("configurable") or {}).get("signoff")
    if isinstance(found, NodeServices) and found.policy is not None:
        return found.policy
    raise RuntimeError(
        "approval_gate(): this graph runs outside signoff, so there is no policy to gate its "
        "tool calls by; pass one (approval_gate(load_policy('signoff.toml'))), or run the "
        "workflow through signoff"
    )


def _messages(state: Any) -> list[Any]:
    """The conversation in the tool node's state (a graph state's `messages`, or the list)."""
    if isinstance(state, Mapping):
        messages = state.get("messages")
    else:
        messages = state if isinstance(state, list) else getattr(state, "messages", None)
    return messages if isinstance(messages, list) else []


def _turn_message(call: Any, messages: list[Any]) -> tuple[int, AIMessage] | None:
    """The model's message that proposed `call`, and where it is in the conversation."""
    call_id = call.get("id")
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AIMessage) and any(c.get("id") == call_id for c in m.tool_calls):
            return i, m
    return None


SEEN_TEXT_MAX = 4000
"""Characters kept of the model's words and of each tool result a proposal rests on."""
SEEN_RESULTS_MAX = 10
"""Tool results kept of the turn before the proposal (the latest ones)."""


def _seen(call: Any, state: Any) -> dict[str, Any] | None:
    """What the model saw and said when it proposed `call`: the tool results that came back
    since its previous turn (the facts the proposal rests on) and its own words beside the
    call, for the card ("What the agent saw") and the payload view; None when the state holds
    no conversation."""
    messages = _messages(state)
    found = _turn_message(call, messages)
    if found is None:
        return None
    at, turn = found
    results: list[dict[str, str]] = []
    for m in reversed(messages[:at]):
        if isinstance(m, AIMessage):
            break  # the model's previous turn: what came before it was seen then
        if isinstance(m, ToolMessage):
            text = m.content if isinstance(m.content, str) else str(m.content)
            results.append({"tool": str(m.name or ""), "content": text[:SEEN_TEXT_MAX]})
    reason = turn.content if isinstance(turn.content, str) else str(turn.content)
    results = results[:SEEN_RESULTS_MAX][::-1]
    if not results and not reason.strip():
        return None
    return {"reason": reason[:SEEN_TEXT_MAX], "results": results}


def _turn_of(call: Any, state: Any, policy: Policy) -> tuple[str, TurnPlace] | None:
    """The model turn `call` was proposed in (its `AIMessage`, found in the state's messages)
    and the call's place in it, when the turn proposed more than one gated call; else None."""
    call_id = call.get("id")
    found = _turn_message(call, _messages(state))
    if found is None or not call_id:
        return None
    turn = found[1]
    gated = [c for c in turn.tool_calls if c["name"] not in policy.free_tools and c.get("id")]
    if len(gated) < 2:
        return None
    rule = policy.actions.get(call["name"])
    waits_for = set(rule.after) if rule is not None else set()
    after = tuple(str(c["id"]) for c in gated if c["name"] in waits_for and c["id"] != call_id)
    position = next(i for i, c in enumerate(gated) if c.get("id") == call_id)
    turn_id = turn.id or str(gated[0]["id"])
    return turn_id, TurnPlace(str(call_id), position, after)


def _verdict(call: Any, decision: Decision) -> Edited | Rejected | None:
    if not decision.approved:
        return Rejected(decision_note(call["name"], decision))
    if not decision.edits:
        return None
    edited = cast(ToolCall, {**call, "args": decision.args})
    return Edited(edited, decision_note(call["name"], decision, proposed=call.get("args")))


def decision_note(name: str, decision: Decision, proposed: Any = None) -> str:
    """What the model is told about a decision on its call to `name`: an error for a refusal,
    a note before the result for an approval with edits."""
    who = ", ".join(decision.by) or "nobody"
    why = decision.note or "no reason given"
    if decision.status == "rejected":
        return f"Rejected: {who} rejected the call to {name}, so it did not run. Reason: {why}"
    if decision.status == "denied" and why.startswith(f"{name} runs only after "):
        return f"Not run: {why}"  # a call of its turn that it runs after was refused
    if decision.status == "denied":
        return f"Denied: signoff's policy refused the call to {name}, so it did not run: {why}"
    if decision.status == "expired":
        return f"Expired: nobody approved the call to {name} in time, so it did not run."
    if decision.status == "cancelled":
        return f"Cancelled: the approval of the call to {name} was withdrawn; it did not run."
    was = dict(proposed) if isinstance(proposed, Mapping) else {}
    changes = ", ".join(
        f"{k}={v!r} (you proposed {was[k]!r})" if k in was else f"{k}={v!r}"
        for k, v in decision.edits.items()
    )
    return (
        f"Edited: {who} approved the call to {name} with changed arguments: {changes}. "
        "It ran with those; the result follows."
    )
