"""A workflow whose action declares a check, for the tests of checks: pay an amount out of an
account after a person approves it, the approval resting on the account's balance.

The balance is read from a JSON file the run names (`ledger`), so a test changes the world
between the card and the click by writing that file: `{"balance": "120.00"}`; `"sleep": 2`
makes the check slow, a missing file makes it raise.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TypedDict

from bot.approvals.effects import services
from bot.approvals.request import request_approval
from graphs import END, START, StateGraph, once

CHECK_TIMEOUT = 0.5
"""The check's timeout here (seconds): a ledger with `"sleep": 2` runs past it."""


class _State(TypedDict, total=False):
    account: str
    amount: float
    ledger: str
    decision: dict[str, Any]
    outcome: str


def read_ledger(path: str) -> dict[str, Any]:
    """The facts the payout rests on: the account's balance, as the ledger file says now."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("sleep"):
        time.sleep(float(data["sleep"]))
    return {"balance": data["balance"]}


def _ask(state: _State) -> dict[str, Any]:
    decision = request_approval(
        "pay_out",
        {"account": state["account"], "amount": state["amount"]},
        check=lambda _args: read_ledger(state["ledger"]),
        check_timeout=CHECK_TIMEOUT,
    )
    return {"decision": {**decision.to_json(), "args": decision.args}}


def _act(state: _State, config: Any) -> dict[str, Any]:
    decision, svc = state["decision"], services(config)
    if not decision["approved"]:
        return {"outcome": f"not paid: {decision['note']}"}
    key = decision["idempotency_key"]
    once(f"pay:{key}", svc.effects.record, "payout", key, decision["args"], thread_id=svc.thread_id)
    return {"outcome": "paid"}


def build() -> StateGraph:
    graph = StateGraph(_State)
    graph.add_node("ask", _ask)
    graph.add_node("act", _act)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "act")
    graph.add_edge("act", END)
    return graph
