"""Governance: who may approve what, the approvals a paused run opens, the decisions that resume
it exactly once, the audit log, and the sweep. No Slack here.

```python
from bot.approvals import Decision, request_approval

def issue_refund(state, config):
    decision: Decision = request_approval("send_refund", {"amount": state["amount"]})
    ...
```

Importing this package loads neither Slack, aiohttp, SQLAlchemy nor the graph runtime: the
names that need the database (`Signoff`, `Database`, `AuditLog`, `RunReport`, `PendingView`,
`DecideResult`) are imported on first use, and so are `request_approval` (which pauses a run
through `graphs`) and `approval_gate` (an agent's tool calls gated by the policy), which loads
langchain_core. A command that only reads the policy (`signoff --help`) starts without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyDecidedError,
    AlreadyStartedError,
    AlreadyVotedError,
    ApprovalError,
    ApprovalExpiredError,
    AwayRefused,
    DatabaseBusy,
    DatabaseUnavailable,
    DecisionRefused,
    DelegationRefused,
    GrantRefused,
    GroupsUnavailable,
    IdempotencyConflict,
    InvalidEditError,
    InvalidInputError,
    MissingInputError,
    NotAuthorizedError,
    PolicyError,
    RunControlRefused,
    RunStateError,
    SelfApprovalError,
    ServiceNotAllowed,
    StaleRevisionError,
    StartRefused,
    StorageError,
    UnknownAction,
    UnknownApprovalError,
    UnknownRunError,
    UnknownWorkflowError,
    Unreachable,
)
from .events import Event, EventKind, EventSink, NullSink, RecordingSink, RetryLater, SinkView
from .models import (
    APPROVAL_KIND,
    Approval,
    ApprovalStatus,
    Decision,
    DecisionStatus,
    RunStatus,
    Vote,
    Workflow,
)
from .policy import GroupResolver, Policy, StaticGroups, load_policy, parse_policy

if TYPE_CHECKING:
    from .audit import AuditLog
    from .db import Database
    from .decisions import DecideResult
    from .external import ExternalApproval, ExternalApprovals
    from .gate import approval_gate
    from .request import request_approval
    from .runs import RunReport
    from .service import Signoff
    from .views import PendingView

__all__ = [
    "APPROVAL_KIND",
    "AlreadyDecidedError",
    "AlreadyStartedError",
    "AlreadyVotedError",
    "Approval",
    "ApprovalError",
    "ApprovalExpiredError",
    "ApprovalStatus",
    "AuditLog",
    "AwayRefused",
    "Database",
    "DatabaseBusy",
    "DatabaseUnavailable",
    "DecideResult",
    "Decision",
    "DecisionRefused",
    "DecisionStatus",
    "DelegationRefused",
    "Event",
    "EventKind",
    "EventSink",
    "ExternalApproval",
    "ExternalApprovals",
    "GrantRefused",
    "GroupResolver",
    "GroupsUnavailable",
    "IdempotencyConflict",
    "InvalidEditError",
    "InvalidInputError",
    "MissingInputError",
    "NotAuthorizedError",
    "NullSink",
    "PendingView",
    "Policy",
    "PolicyError",
    "RecordingSink",
    "RetryLater",
    "RunControlRefused",
    "RunReport",
    "RunStateError",
    "RunStatus",
    "SelfApprovalError",
    "ServiceNotAllowed",
    "Signoff",
    "SinkView",
    "StaleRevisionError",
    "StartRefused",
    "StaticGroups",
    "StorageError",
    "UnknownAction",
    "UnknownApprovalError",
    "UnknownRunError",
    "UnknownWorkflowError",
    "Unreachable",
    "Vote",
    "Workflow",
    "approval_gate",
    "load_policy",
    "parse_policy",
    "request_approval",
]

_LAZY = {
    "AuditLog": "audit",
    "Database": "db",
    "DecideResult": "decisions",
    "ExternalApproval": "external",
    "ExternalApprovals": "external",
    "PendingView": "views",
    "RunReport": "runs",
    "Signoff": "service",
    "approval_gate": "gate",
    "request_approval": "request",
}
"""Names whose modules need SQLAlchemy (or `graphs`, or, `approval_gate`, langchain_core):
imported on first use."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
