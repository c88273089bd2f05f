"""The JSON answers the HTTP routes share: an error body, and the one mapping of a governance
error to its status (and, for a 503, its `Retry-After`)."""

from __future__ import annotations

from aiohttp import web

from ..approvals.errors import (
    ApprovalError,
    DatabaseBusy,
    DatabaseUnavailable,
    GroupsUnavailable,
    IdempotencyConflict,
    InvalidInputError,
    StartRefused,
    UnknownApprovalError,
    UnknownWorkflowError,
)

__all__ = ["RETRY_AFTER", "error_response", "json_error", "problems_response"]


def json_error(status: int, message: str) -> web.Response:
    """An error answer: `{"ok": false, "error": message}` with `status`."""
    return web.json_response({"ok": False, "error": message}, status=status)


_STATUSES: tuple[tuple[type[ApprovalError], int], ...] = (
    (UnknownWorkflowError, 404),
    (UnknownApprovalError, 404),
    (StartRefused, 403),
    (GroupsUnavailable, 503),  # Slack could not say who is in a group: ask again later
    (DatabaseUnavailable, 503),
    (ApprovalError, 400),
)
"""The HTTP status of each governance error, most specific first."""


RETRY_AFTER: tuple[tuple[type[ApprovalError], int], ...] = (
    (DatabaseBusy, 2),  # every connection was in use: a burst, over in moments
    (DatabaseUnavailable, 10),  # down or unreachable: a restart takes some seconds
    (GroupsUnavailable, 10),
)
"""The `Retry-After` (seconds) of each 503: when asking again is worth it. Nothing was
recorded, so the same request can be made again as it is."""


def error_response(error: ApprovalError) -> web.Response:
    """The one place the HTTP API turns a governance error into a status and a message."""
    status = next(code for kind, code in _STATUSES if isinstance(error, kind))
    if status != 503:
        return json_error(status, error.message)
    after = next(seconds for kind, seconds in RETRY_AFTER if isinstance(error, kind))
    message = error.message
    if isinstance(error, DatabaseUnavailable) and "nothing was recorded" not in message:
        message += f"; nothing was recorded, try again in {after} s or more"
    return web.json_response(
        {"ok": False, "error": message}, status=503, headers={"Retry-After": str(after)}
    )


def problems_response(error: InvalidInputError | IdempotencyConflict) -> web.Response:
    """422: what is wrong, field by field (`[{"field", "message"}]`)."""
    if isinstance(error, IdempotencyConflict):
        problems = [{"field": "Idempotency-Key", "message": "was used for a different request"}]
    else:
        problems = [{"field": k, "message": v} for k, v in error.problems.items()]
    return web.json_response(
        {"ok": False, "error": error.message, "problems": problems}, status=422
    )
