"""Pauses asked in another library's shape, as signoff's approvals: LangChain's human-in-the-loop
request (`HumanInTheLoopMiddleware`: `{"action_requests": [...], "review_configs": [...]}`) and
Agent Inbox's `HumanInterrupt` (`langgraph.prebuilt.interrupt`: one, or a list of them).

Each action request is one approval (its `name`, or Agent Inbox's `action`, is the policy's
action; its `args` are what is approved), all of one interrupt on one card when there are
several (an agent turn's card: each call with its own buttons). The request's config bounds what
an approver can choose: no Edit where it allows no edit. Once every one is settled, the
interrupt is answered once, in the shape its code reads:

- LangChain's: `{"decisions": [...]}` in the order of the action requests, each `{"type":
  "approve"}`, `{"type": "edit", "edited_action": {"name", "args"}}` (approved with edits: the
  whole arguments that run), or `{"type": "reject", "message": why}` (or `"respond"` with that
  message where the config allows no reject);
- Agent Inbox's: one `HumanResponse` per request, a list for a list: `{"type": "accept", "args":
  None}`, `{"type": "edit", "args": {"action", "args"}}`, or `{"type": "response", "args": why}`
  (or `"ignore"` where the config allows no response).

A refusal the config cannot express (neither reject nor respond; neither respond nor ignore)
is never turned into a yes: the run fails, saying so, and the tool does not run. Pure: no
database, no graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .models import APPROVAL_KIND, Approval, TurnPlace
from .policy import fingerprint

__all__ = [
    "SEPARATOR",
    "Ask",
    "CannotAnswer",
    "ForeignRequest",
    "answer",
    "part_of",
    "payloads",
    "read",
    "refusal_text",
]

SEPARATOR = "#"
"""Between an interrupt's id and an action request's place in it: the approval of the second
request of interrupt `abc` waits on `abc#1`."""

Form = Literal["hitl", "inbox", "inbox_list"]


@dataclass(frozen=True, slots=True)
class Ask:
    """One action request of a foreign interrupt."""

    action: str
    """The tool's (or Agent Inbox action's) name: the policy's action."""
    args: dict[str, Any]
    """The arguments proposed."""
    description: str
    """The request's own words for the reviewer (shown as its note)."""
    may_accept: bool
    """Its config allows an unedited yes (`approve`; `allow_accept`)."""
    may_edit: bool
    """Its config allows an edit."""
    refusal: str | None
    """The decision type a refusal is sent as (`reject`, `respond`; `response`, `ignore`), or
    None when its config allows none."""


@dataclass(frozen=True, slots=True)
class ForeignRequest:
    """A foreign interrupt's value, read."""

    form: Form
    asks: tuple[Ask, ...]


def read(value: Any) -> ForeignRequest | None:
    """`value` (an interrupt's) as a LangChain HITL request or Agent Inbox request(s); None for
    anything else (signoff's own requests, a question of the workflow's)."""
    if isinstance(value, Mapping) and "action_requests" in value and "review_configs" in value:
        return _hitl(value)
    if isinstance(value, Mapping) and "action_request" in value:
        one = _inbox(value)
        return ForeignRequest("inbox", (one,)) if one is not None else None
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        asks = [_inbox(v) for v in value]
        if all(a is not None for a in asks):
            return ForeignRequest("inbox_list", tuple(a for a in asks if a is not None))
    return None


def _hitl(value: Mapping[str, Any]) -> ForeignRequest | None:
    requests, configs = value["action_requests"], value["review_configs"]
    if not isinstance(requests, list) or not requests or not isinstance(configs, list):
        return None
    allowed: dict[str, set[str]] = {}
    for c in configs:
        if isinstance(c, Mapping) and isinstance(c.get("action_name"), str):
            allowed[c["action_name"]] = set(c.get("allowed_decisions") or ())
    asks = []
    for r in requests:
        if not (isinstance(r, Mapping) and isinstance(r.get("name"), str)):
            return None
        if not isinstance(r.get("args"), Mapping):
            return None
        # a request no config names: a yes or a no, never an edit
        ok = allowed.get(r["name"], {"approve", "reject"})
        refusal = next((d for d in ("reject", "respond") if d in ok), None)
        asks.append(
            Ask(r["name"], dict(r["args"]), str(r.get("description") or ""),
                "approve" in ok, "edit" in ok, refusal)
        )  # fmt: skip
    return ForeignRequest("hitl", tuple(asks))


def _inbox(value: Mapping[str, Any]) -> Ask | None:
    request, config = value.get("action_request"), value.get("config")
    if not (isinstance(request, Mapping) and isinstance(request.get("action"), str)):
        return None
    if not isinstance(request.get("args"), Mapping) or not isinstance(config, Mapping):
        return None
    flags = {k: bool(config.get(f"allow_{k}")) for k in ("accept", "edit", "respond", "ignore")}
    refusal = "response" if flags["respond"] else "ignore" if flags["ignore"] else None
    return Ask(
        request["action"],
        dict(request["args"]),
        str(value.get("description") or ""),
        flags["accept"],
        flags["edit"],
        refusal,
    )


def payloads(interrupt_id: str, request: ForeignRequest) -> list[tuple[str, dict[str, Any]]]:
    """Each action request as the payload a `request_approval()` would have paused with, under
    the id its approval waits on (`<interrupt id>#<place>`): one turn (the interrupt), the
    request's description as its note, no Edit where its config allows none."""
    out = []
    for i, ask in enumerate(request.asks):
        payload: dict[str, Any] = {
            "kind": APPROVAL_KIND,
            "action": ask.action,
            "args": ask.args,
            "fingerprint": fingerprint(ask.action, ask.args),
            "title": None,
            "dedupe_key": None,
            "turn_id": interrupt_id,
            "turn": TurnPlace(call_id=str(i + 1), position=i).to_json(),
            "foreign": request.form,
        }
        if ask.description:
            payload["note"] = ask.description
        if not ask.may_edit:
            payload["no_edit"] = True
        out.append((f"{interrupt_id}{SEPARATOR}{i}", payload))
    return out


def part_of(waited_on: str) -> tuple[str, int] | None:
    """The interrupt id and place an approval's `interrupt_id` names, for a foreign request's
    (`payloads`); None for an interrupt of signoff's own."""
    base, sep, place = waited_on.rpartition(SEPARATOR)
    if not sep or not place.isdigit():
        return None
    return base, int(place)


class CannotAnswer(ValueError):
    """A foreign request whose decision its config cannot express: nothing is resumed."""


def answer(request: ForeignRequest, approvals: Sequence[Approval]) -> Any:
    """The resume value of `request` once `approvals` (one per action request, in their order,
    each settled) are decided, in the request's own shape.

    Raises:
        CannotAnswer: an approval was decided for other arguments than the request proposes
            now, or its decision is one the request's config does not allow (a refusal where
            none is allowed): the run fails, and no tool runs on a decision nobody made.
    """
    if len(approvals) != len(request.asks):
        raise CannotAnswer(
            f"the request has {len(request.asks)} action requests and {len(approvals)} "
            "approvals: nothing was resumed"
        )
    each = [_one(request.form, ask, a) for ask, a in zip(request.asks, approvals, strict=True)]
    if request.form == "hitl":
        return {"decisions": each}
    return each if request.form == "inbox_list" else each[0]


def _one(form: Form, ask: Ask, a: Approval) -> dict[str, Any]:
    decision = a.decision or {}
    if decision.get("fingerprint") != fingerprint(ask.action, ask.args):
        raise CannotAnswer(
            f"approval {a.id} of {ask.action!r} was decided for other arguments than the "
            "request proposes: nothing was resumed"
        )
    hitl = form == "hitl"
    if decision.get("approved"):
        edits = dict(decision.get("edits") or {})
        if not (ask.may_accept or ask.may_edit) or (edits and not ask.may_edit):
            raise CannotAnswer(
                f"approval {a.id} of {ask.action!r} was approved"
                f"{' with edits' if edits else ''}, which its request's config does not "
                "allow: nothing was resumed"
            )
        if not edits and ask.may_accept:
            return {"type": "approve"} if hitl else {"type": "accept", "args": None}
        ran = {"name" if hitl else "action": ask.action, "args": {**ask.args, **edits}}
        return {"type": "edit", "edited_action": ran} if hitl else {"type": "edit", "args": ran}
    why = refusal_text(a)
    if ask.refusal is None:
        raise CannotAnswer(
            f"{ask.action} was not approved ({why}), and its request's config allows no "
            "refusal to be sent back: the run stops here and the tool does not run"
        )
    if hitl:
        return {"type": ask.refusal, "message": why}
    return {"type": ask.refusal, "args": why if ask.refusal == "response" else None}


def refusal_text(a: Approval) -> str:
    """Why a settled approval was not approved, in a sentence the model is told: who
    rejected it and their reason, the policy's refusal, or that it expired."""
    decision = a.decision or {}
    status = str(decision.get("status") or a.status)
    by = ", ".join(str(b) for b in decision.get("by") or ()) or "nobody"
    note = str(decision.get("note") or a.reason or "")
    said = {
        "rejected": f"rejected by {by}",
        "denied": "denied by policy",
        "expired": "expired before anyone approved it",
        "cancelled": "cancelled",
    }.get(status, status)
    return f"{a.action} was {said}" + (f": {note}" if note else "")
