"""Every error of the governance layer, in one tree.

```
ApprovalError                  root
├── PolicyError                the policy file is invalid (names file, line and key)
├── UnknownApprovalError       no approval has this id
├── DecisionRefused            a vote that policy or state refuses; nothing changed
│   ├── NotAuthorizedError     the user is not an approver of this action
│   │   └── DelegationRefused  ... and the policy lets no delegate decide it for an away one
│   ├── SelfApprovalError      the requester may not approve their own request
│   ├── AlreadyDecidedError    the approval was decided already (by whom, when)
│   ├── AlreadyVotedError      this user has voted on it already
│   ├── ApprovalExpiredError   the approval expired
│   ├── InvalidEditError       an edit names a field that is not editable, or a bad value
│   ├── StaleRevisionError     the vote was for values an edit has changed since
│   └── GrantRefused           a grant the policy does not allow, or a revocation refused
├── UnknownWorkflowError       no workflow is registered under this name
├── StartRefused               the user may not start this workflow
│   ├── AlreadyStartedError    this very request started a run already (a replay)
│   ├── ServiceNotAllowed      a service asked for an action its [services] entry does not list
│   └── UnknownAction          an action the policy does not name (deny by default)
├── IdempotencyConflict        an Idempotency-Key used again for a different request
├── InvalidInputError          a run was asked for with inputs its workflow's schema refuses
│   └── MissingInputError      ... without an input it needs
├── UnknownRunError            no run has this thread id
├── RunStateError              a run is not where a retry or a cancel can act (e.g. completed)
├── RunControlRefused          the user may not retry or cancel this run
├── Unreachable                a request no one could be asked about (no channel, too few
│                              people who may approve it)
├── GroupsUnavailable          group membership could not be looked up (e.g. Slack is down)
├── AwayRefused                `/agent away` or `/agent back` that cannot be done (a date in
│                              the past, oneself as delegate, not away)
└── StorageError               the database did not do what was asked; nothing was recorded
    └── DatabaseUnavailable    it cannot be reached, or the connection dropped (also a
        │                      ConnectionError)
        └── DatabaseBusy       it could not take a write in time; the same request can be
                               made again
```

Driver errors become storage errors in one place, `bot.approvals.db.Database`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "AlreadyDecidedError",
    "AlreadyStartedError",
    "AlreadyVotedError",
    "ApprovalError",
    "ApprovalExpiredError",
    "AwayRefused",
    "DatabaseBusy",
    "DatabaseUnavailable",
    "DecisionRefused",
    "DelegationRefused",
    "GrantRefused",
    "GroupsUnavailable",
    "IdempotencyConflict",
    "InvalidEditError",
    "InvalidInputError",
    "MissingInputError",
    "NotAuthorizedError",
    "PolicyError",
    "RunControlRefused",
    "RunStateError",
    "SelfApprovalError",
    "ServiceNotAllowed",
    "StaleRevisionError",
    "StartRefused",
    "StorageError",
    "UnknownAction",
    "UnknownApprovalError",
    "UnknownRunError",
    "UnknownWorkflowError",
    "Unreachable",
]


class ApprovalError(Exception):
    """Root of the governance layer's errors."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class PolicyError(ApprovalError, ValueError):
    """The policy file is invalid. The message starts with `file:line:` and names the key.

    Attributes:
        source: the file name.
        line: the 1-based line, when it can be told.
        key: the dotted key, e.g. `actions.send_refund.tier`.
    """

    def __init__(
        self, message: str, *, source: str = "", line: int | None = None, key: str = ""
    ) -> None:
        where = source + (f":{line}" if line else "")
        prefix = f"{where}: " if where else ""
        at = f"{key}: " if key else ""
        super().__init__(f"{prefix}{at}{message}")
        self.source = source
        self.line = line
        self.key = key


class UnknownApprovalError(ApprovalError, LookupError):
    def __init__(self, approval_id: str) -> None:
        super().__init__(
            f"no approval has id {approval_id!r}; `signoff pending` lists the pending ones"
        )
        self.approval_id = approval_id


class AwayRefused(ApprovalError):
    """`/agent away` or `/agent back` could not be done; nothing was recorded. The message says
    what was wrong and what to write instead."""


class DecisionRefused(ApprovalError):
    """A vote was refused. Nothing was recorded. `code` is stable, for programs and Slack."""

    code = "refused"

    def __init__(self, message: str, approval_id: str = "") -> None:
        super().__init__(message)
        self.approval_id = approval_id


class NotAuthorizedError(DecisionRefused):
    code = "not_approver"


class DelegationRefused(NotAuthorizedError):
    """A delegate may not decide for the away approver who named them: the action does not
    allow delegation (`delegation = true`), or is critical and the policy does not name it
    (`delegation = "critical"`). Attributes: `principal` (the away approver), `critical`."""

    code = "delegation_refused"

    def __init__(
        self, message: str, approval_id: str = "", *, principal: str = "", critical: bool = False
    ) -> None:
        super().__init__(message, approval_id)
        self.principal = principal
        self.critical = critical


class SelfApprovalError(DecisionRefused):
    """Attributes: `service`, the service whose owner tried to approve what it asked (its
    `[services.NAME] owners`), or None when the voter asked for it themselves."""

    code = "self_approval"

    def __init__(self, message: str, approval_id: str = "", service: str | None = None) -> None:
        super().__init__(message, approval_id)
        self.service = service


class AlreadyDecidedError(DecisionRefused):
    """Attributes: `status`, `decided_by` (user ids or the rule), `decided_at` (epoch seconds)."""

    code = "already_decided"

    def __init__(
        self,
        message: str,
        approval_id: str,
        status: str,
        decided_by: list[str],
        decided_at: float | None,
    ) -> None:
        super().__init__(message, approval_id)
        self.status = status
        self.decided_by = decided_by
        self.decided_at = decided_at


class AlreadyVotedError(DecisionRefused):
    code = "already_voted"


class ApprovalExpiredError(DecisionRefused):
    code = "expired"


class GrantRefused(DecisionRefused):
    """A grant ("Approve, and allow up to N more like this for T") the action's policy does not
    allow (none, more uses or a longer window than it allows, a vote that does not decide), or
    the revocation of one by someone who may not. Nothing was recorded."""

    code = "grant_refused"


class InvalidEditError(DecisionRefused):
    """Attributes: `field`, the edited field that is wrong, when it is one ("" otherwise)."""

    code = "invalid_edit"

    def __init__(self, message: str, approval_id: str = "", *, field: str = "") -> None:
        super().__init__(message, approval_id)
        self.field = field


class StaleRevisionError(DecisionRefused):
    """The vote was cast on values that an approver's edit has changed since: it is not counted.

    Attributes: `revision`, the one the vote was for; `current`, the approval's now.
    """

    code = "stale_revision"

    def __init__(self, message: str, approval_id: str, revision: int, current: int) -> None:
        super().__init__(message, approval_id)
        self.revision = revision
        self.current = current


class UnknownWorkflowError(ApprovalError, LookupError):
    pass


class StartRefused(ApprovalError):
    pass


class AlreadyStartedError(StartRefused):
    """The request that asks for this run started one already (a replayed or repeated
    request, `Runs.start`'s `request_key`); nothing new was started.

    Attributes:
        thread_id: the run that request started.
    """

    def __init__(self, message: str, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.thread_id))


class ServiceNotAllowed(StartRefused):
    """A service asked for an action its `[services.NAME] actions` does not list (or is not a
    service of the policy); nothing was recorded but the refusal.

    Attributes: `service`, `action`.
    """

    def __init__(self, message: str, service: str, action: str) -> None:
        super().__init__(message)
        self.service = service
        self.action = action


class UnknownAction(StartRefused):
    """An approval was asked for an action the policy does not name: denied by default, and
    nothing was recorded but the refusal.

    Attributes: `action`.
    """

    def __init__(self, message: str, action: str) -> None:
        super().__init__(message)
        self.action = action


class IdempotencyConflict(ApprovalError):
    """An idempotency key was sent again with a request that differs from the one it first
    came with; nothing new was recorded. Use a new key for a new request.

    Attributes: `approval_id`, the approval the key names.
    """

    def __init__(self, message: str, approval_id: str) -> None:
        super().__init__(message)
        self.approval_id = approval_id


class UnknownRunError(ApprovalError, LookupError):
    """Attributes:
    thread_id: the thread id no run has."""

    def __init__(self, message: str, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.thread_id))


class RunStateError(ApprovalError):
    """A retry or a cancel of a run that is not in a state for it (a retry of a run that is not
    failed, or that another operator retried first; a cancel of a finished run)."""


class RunControlRefused(ApprovalError):
    """The user may not retry or cancel the run: only approvers of its actions and starters
    of its workflow may, from Slack."""


class InvalidInputError(ApprovalError):
    """A run was asked for with inputs its workflow's schema refuses; nothing was recorded.

    Attributes: `workflow`; `problems`, field name -> what is wrong with it.
    """

    def __init__(
        self, workflow: str, problems: Mapping[str, str], message: str | None = None
    ) -> None:
        super().__init__(
            message
            or (
                f"workflow {workflow!r} cannot start with these inputs: "
                + "; ".join(f"{k} {v}" for k, v in problems.items())
                + "; nothing was started"
            )
        )
        self.workflow = workflow
        self.problems = dict(problems)


class MissingInputError(InvalidInputError):
    """A run was asked for without inputs its workflow cannot start without; nothing was recorded."""

    def __init__(
        self,
        workflow: str,
        missing: Sequence[str],
        inputs: Sequence[str],
        problems: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            workflow,
            problems or dict.fromkeys(missing, "is required"),
            f"workflow {workflow!r} needs {', '.join(missing)} (it takes {', '.join(inputs)}); "
            "nothing was started",
        )
        self.missing = tuple(missing)
        self.inputs = tuple(inputs)


class Unreachable(ApprovalError):
    """A request no one could be asked about: no channel for its card, or fewer people who may
    approve it than it needs (a misspelt group, the requester as the only approver). A 400:
    the message says which and what to configure."""


class GroupsUnavailable(ApprovalError):
    """Who is in a group could not be found out right now. Nothing was decided: deny by default
    means no one is let in on a guess, and no one is told they are not an approver either."""


class StorageError(ApprovalError):
    """The database did not do what was asked, and nothing was recorded."""


class DatabaseUnavailable(StorageError, ConnectionError):
    """The database cannot be reached: a server that is down or not where the URL says, or a
    SQLite file that cannot be opened. The message names the database and what to check.

    Attributes:
        url: the database URL, password hidden.
    """

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.url))


class DatabaseBusy(DatabaseUnavailable):
    """The database could not take a write within the time the caller can wait (a burst of
    writes on SQLite); nothing was written, and the same request can be made again."""
