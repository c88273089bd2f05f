"""Workflows and a policy for the governance tests, registered by dotted path like a user's own.

Importable as `tests.kit.flows` from the tests and from the subprocesses they start (`env()` puts
the repository root on `PYTHONPATH`).

- `build_ask`: asks for approval of whatever `action` and `args` the run was started with, then
  records an `act` effect (approved) or a `declined` effect (anything else).
- `build_replay`: proposes `{"amount": state["amount"]}`, so a state update between pause and
  resume changes the proposal.
- `build_parallel`: two branches that each ask for an approval (`deploy`, `crowd`) at once.
- `build_nested`: `build_ask`'s ask-then-act, run as a subgraph of a node `review`.
- `build_crowding`: `build_ask` after a node `crowd` that first awaits what a test put in
  `CROWD` (to use up the database's connections while the run is between two checkpoints).
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from bot.approvals.effects import services
from bot.approvals.request import request_approval
from graphs import END, START, StateGraph, once

ROOT = Path(__file__).resolve().parents[2]
"""The repository root, where `tests.kit.flows` imports from."""
DEMO_POLICY = ROOT / "bot" / "policies" / "demo.toml"

APPROVERS_20 = [f"U_P{i:02d}" for i in range(20)]

EXTRA_POLICY = f"""
[workflows.ask]
path = "tests.kit.flows:build_ask"
starters = ["@support"]

[workflows.replay]
path = "tests.kit.flows:build_replay"
starters = ["@support"]

[workflows.parallel]
path = "tests.kit.flows:build_parallel"
starters = ["@support"]

[workflows.nested]
path = "tests.kit.flows:build_nested"
starters = ["@support"]

[workflows.crowding]
path = "tests.kit.flows:build_crowding"
starters = ["@support"]

[actions.deploy]
title = "Deploy to production"
tier = "high"
approvers = ["U_ALICE", "U_BOB", "U_DAVE"]
required = 2

[actions.crowd]
title = "Anyone of twenty may approve"
tier = "medium"
approvers = {json.dumps(APPROVERS_20)}
required = 1

[actions.slow]
title = "Waits for a long time"
tier = "medium"
approvers = ["@finance"]
remind_after = "10m"
escalate_after = "1h"
escalate_to = ["@ops"]
expire_after = "1d"
on_expiry = "reject"

[actions.charge_card]
title = "Charge a card"
tier = "high"
approvers = ["@finance"]
secret = ["card_number"]
editable = ["amount"]
"""

POLICY = DEMO_POLICY.read_text(encoding="utf-8") + EXTRA_POLICY
"""The demo policy (refunds, delete_row, vendor payments) plus the test actions above."""


def env(database_url: str, policy_path: str | os.PathLike[str]) -> dict[str, str]:
    """The environment of a `signoff` subprocess on this database and policy."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "SIGNOFF_DATABASE_URL": database_url,
        "SIGNOFF_POLICY": os.fspath(policy_path),
        "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
    }


class AskState(TypedDict, total=False):
    action: str
    args: dict[str, Any]
    dedupe_key: str
    decision: dict[str, Any]
    outcome: str


def _ask(state: AskState) -> dict[str, Any]:
    d = request_approval(state["action"], state["args"], dedupe_key=state.get("dedupe_key"))
    return {"decision": {**d.to_json(), "args": d.args}}


def _act(state: AskState, config: Any) -> dict[str, Any]:
    d, svc = state["decision"], services(config)
    once("act", svc.effects.record, "act", d["idempotency_key"], d["args"], thread_id=svc.thread_id)
    return {"outcome": f"did {d['action']}"}


def _declined(state: AskState, config: Any) -> dict[str, Any]:
    d, svc = state["decision"], services(config)
    once(
        "declined",
        svc.effects.record,
        "declined",
        d["approval_id"],
        {"status": d["status"], "note": d["note"]},
        thread_id=svc.thread_id,
    )
    return {"outcome": f"declined ({d['status']}): {d['note']}"}


CROWD: list[Callable[[], Awaitable[None]]] = []
"""What `build_crowding`'s `crowd` node awaits (each once, then it is gone) before it returns."""


async def _crowd(state: AskState) -> dict[str, Any]:
    while CROWD:
        await CROWD.pop(0)()
    return {}


def build_crowding() -> StateGraph:
    """`build_ask`, after a node `crowd` that awaits what is in `CROWD`."""
    g = StateGraph(AskState)
    g.add_node("crowd", _crowd)
    g.add_node("ask", _ask)
    g.add_node("act", _act)
    g.add_node("declined", _declined)
    g.add_edge(START, "crowd")
    g.add_edge("crowd", "ask")
    g.add_conditional_edges(
        "ask", lambda s: "act" if s["decision"]["approved"] else "declined", ["act", "declined"]
    )
    g.add_edge("act", END)
    g.add_edge("declined", END)
    return g


def build_ask() -> StateGraph:
    """Ask for approval of any action, then act or record the refusal."""
    g = StateGraph(AskState)
    g.add_node("ask", _ask)
    g.add_node("act", _act)
    g.add_node("declined", _declined)
    g.add_edge(START, "ask")
    g.add_conditional_edges(
        "ask", lambda s: "act" if s["decision"]["approved"] else "declined", ["act", "declined"]
    )
    g.add_edge("act", END)
    g.add_edge("declined", END)
    return g


class ReplayState(TypedDict, total=False):
    amount: float
    decision: dict[str, Any]
    outcome: str


def _propose(state: ReplayState) -> dict[str, Any]:
    d = request_approval(
        "send_refund",
        {"customer_id": "c1", "order_id": "", "amount": state["amount"], "reason": "r"},
    )
    return {"decision": {**d.to_json(), "args": d.args}}


def _pay(state: ReplayState, config: Any) -> dict[str, Any]:
    d, svc = state["decision"], services(config)
    if d["approved"]:
        once(
            "pay",
            svc.effects.record,
            "refund",
            d["idempotency_key"],
            d["args"],
            thread_id=svc.thread_id,
        )
    return {"outcome": f"{d['status']} {d['args']['amount']}"}


def build_replay() -> StateGraph:
    """Propose a refund of the state's amount, then pay it if approved."""
    g = StateGraph(ReplayState)
    g.add_node("propose", _propose)
    g.add_node("pay", _pay)
    g.add_edge(START, "propose")
    g.add_edge("propose", "pay")
    g.add_edge("pay", END)
    return g


class ParallelState(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def _branch(action: str, args: dict[str, Any]) -> Any:
    def node(state: ParallelState, config: Any) -> dict[str, Any]:
        d = request_approval(action, args)
        if d.approved:
            svc = services(config)
            once(
                action,
                svc.effects.record,
                action,
                d.idempotency_key,
                d.args,
                thread_id=svc.thread_id,
            )
        return {"done": [f"{action}:{d.status}"]}

    return node


def build_parallel() -> StateGraph:
    """Two approvals asked at once, in parallel branches."""
    g = StateGraph(ParallelState)
    g.add_node("one", _branch("deploy", {"service": "a"}))
    g.add_node("two", _branch("crowd", {"what": "b"}))
    g.add_edge(START, "one")
    g.add_edge(START, "two")
    g.add_edge("one", END)
    g.add_edge("two", END)
    return g


class NestedState(TypedDict, total=False):
    action: str
    args: dict[str, Any]
    outcome: str
    steps: Annotated[list[str], operator.add]


def build_nested() -> StateGraph:
    """Prepare, then `build_ask`'s approval and action as a subgraph `review`, then wrap up."""
    g = StateGraph(NestedState)
    g.add_node("prepare", lambda state: {"steps": ["prepare"]})
    g.add_node("review", build_ask().compile())
    g.add_node("wrap", lambda state: {"steps": [f"wrap: {state['outcome']}"]})
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "review")
    g.add_edge("review", "wrap")
    g.add_edge("wrap", END)
    return g
