"""The public surface of `bot.approvals`: pinned, complete, and light to import."""

import subprocess
import sys
import types

import bot.approvals
import bot.approvals.errors

APPROVALS_API = [
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

LAZY = {
    "AuditLog", "Database", "DecideResult", "PendingView", "RunReport", "Signoff", "approval_gate",
    "ExternalApproval", "ExternalApprovals", "request_approval",
}  # fmt: skip
"""Imported on first use, so that `import bot.approvals` needs no SQLAlchemy (nor, for
`approval_gate`, langchain_core, nor, for `request_approval`, the graph runtime)."""


def public_names(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in ("TYPE_CHECKING", "Any", "annotations")
    }


def test_the_approvals_all_is_pinned_and_sorted() -> None:
    assert bot.approvals.__all__ == APPROVALS_API
    assert sorted(APPROVALS_API) == APPROVALS_API


def test_every_exported_name_resolves_and_nothing_public_is_left_out() -> None:
    for name in bot.approvals.__all__:
        assert getattr(bot.approvals, name) is not None
    assert public_names(bot.approvals) == set(bot.approvals.__all__) - LAZY


def test_the_documented_import_works() -> None:
    from bot.approvals import Decision, request_approval
    from bot.approvals.models import Decision as ModelDecision
    from bot.approvals.request import request_approval as request
    from bot.approvals.service import Signoff

    assert Decision is ModelDecision
    assert request_approval is request
    assert bot.approvals.Signoff is Signoff


def test_every_error_is_exported_and_under_the_root() -> None:
    for name in bot.approvals.errors.__all__:
        error = getattr(bot.approvals.errors, name)
        assert getattr(bot.approvals, name) is error
        assert issubclass(error, bot.approvals.ApprovalError)


def test_importing_approvals_pulls_in_neither_sqlalchemy_nor_slack() -> None:
    code = (
        "import sys, bot.approvals\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'alembic', 'slack_sdk', 'slack_bolt', 'aiohttp', 'psycopg'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_name_is_an_attribute_error() -> None:
    try:
        bot.approvals.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert str(e) == "module 'bot.approvals' has no attribute 'NoSuchThing'"
    else:
        raise AssertionError("bot.approvals.NoSuchThing resolved")
