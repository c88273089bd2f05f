"""The built-in workflow an external approval runs as (`external_approval`): one node that asks
`request_approval` with the request a service made, and returns the decision."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

from graphs import END, START, StateGraph

from ._service_threads import EXTERNAL_WORKFLOW
from .effects import NodeServices, services
from .models import Workflow
from .policy.schema import Field, Schema
from .request import ask

__all__ = ["INPUTS", "external_workflow"]


INPUTS = Schema(
    {
        "service": Field("string", required=True),
        "action": Field("string", required=True),
        "args": Field("any"),
        "title": Field("string"),
        "dedupe_key": Field("string"),
        "callback_url": Field("string"),
        "request_hash": Field("string"),
        "named_requester": Field("string"),
    }
)
"""What a run of it holds: the request as the service made it (checked before the run starts)."""


class _State(TypedDict, total=False):
    service: str
    action: str
    args: dict[str, Any]
    title: str
    dedupe_key: str
    callback_url: str
    request_hash: str
    named_requester: str
    """Whom the request named as requester when the service may not act for them (the run's
    requester is then the service)."""
    decision: dict[str, Any]


def _ask(state: _State, config: Any) -> dict[str, Any]:
    decision = ask(
        state["action"],
        state.get("args") or {},
        # What the service wrote is its note, never the title: the header and a confirmation
        # show only the action's title, filled with the arguments.
        dedupe_key=state.get("dedupe_key") or None,
        note=state.get("title") or None,
        reader=_check_of(state, services(config)),
    )
    return {"decision": decision.to_record()}


def _check_of(state: _State, svc: NodeServices) -> Callable[[], dict[str, Any]] | None:
    """The service's check (`check_url` in its policy section), read from this node's thread,
    or None when it declares none. A process that cannot read it fails the check."""
    service = state["service"]
    found = svc.policy.services.get(service) if svc.policy is not None else None
    if found is None or found.check_url is None:
        return None
    request = {"approval_id": svc.thread_id, "action": state["action"], "args": state.get("args")}

    def reader() -> dict[str, Any]:
        if svc.service_facts is None:
            return {"at": time.time(), "error": "this process cannot read a check_url"}
        return svc.service_facts(service, request)

    return reader


def _build() -> StateGraph:
    graph = StateGraph(_State)
    graph.add_node("ask", _ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


def external_workflow() -> Workflow:
    """The workflow an external approval runs as; every `Signoff` registers it."""
    return Workflow(
        EXTERNAL_WORKFLOW,
        _build,
        "An approval asked for from outside signoff (the approvals API, MCP)",
        INPUTS,
    )
