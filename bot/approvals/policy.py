"""Who may approve what: the policy file, checked at start-up, and the pure decisions made from it.

signoff denies by default. An action the policy does not name is refused, any error while
evaluating policy is a refusal, and an unknown key in the file is an error rather than a
setting quietly ignored, because a typo (`aprovers`, `requierd`) must never weaken policy.

This module does no I/O besides reading the policy file in `load_policy`: no database, no Slack.
Group membership is asked of a `GroupResolver` (a static map here and in the CLI and tests,
Slack user groups in the Slack app).

The file (`signoff.toml`, or the path in `SIGNOFF_POLICY`), complete::

    [groups]                          # static groups: used by the CLI, tests and the demo.
    finance = ["U_ALICE", "U_BOB"]    # In Slack, a name not listed here is resolved as a
    finance-leads = ["U_ERIN"]        # Slack user group (by its handle).

    [workflows.refund]                # who may start the workflow from Slack or the API
    starters = ["@support", "U_CAROL"]    # (the CLI is trusted); default: nobody
    # path = "mypkg.flows:build"      # a workflow of your own, by dotted path (module:attribute)

    [actions.send_refund]             # one table per action a workflow may ask approval for
    title = "Send a refund"           # shown on the card; default: the action name
    tier = "high"                     # low | medium | high | critical; default high
    approvers = ["@finance", "U_DAVE"]    # required: "@name" is a group, anything else a user id
    required = 1                      # M of N distinct people; default 1
    allow_self_approval = false       # may the requester approve their own request; default false
    editable = ["amount", "reason"]   # fields an approver may change when approving; default none
    secret = ["card_number"]          # never shown in clear on cards, logs or the audit log
    remind_after = "4h"               # durations: "30s", "15m", "4h", "2d", "1w", "1h30m"
    escalate_after = "1d"             # then escalate_to join the approvers
    escalate_to = ["@finance-leads"]  # (needs escalate_after)
    expire_after = "3d"               # remind_after < escalate_after < expire_after
    on_expiry = "reject"              # "reject" (default), or "approve" for tiers low and medium

    [[actions.send_refund.auto_approve]]  # routine cases decided by a rule; never for critical
    name = "small refunds"            # required; the audit log says which rule decided
    when = { amount = { le = 50 } }   # every condition must hold; ops: eq ne lt le gt ge in

Conditions compare the request's top-level arguments: `{ le = 50 }` (lt, le, gt, ge take a
number), `{ eq = "EUR" }` or the shorthand `currency = "EUR"`, `{ ne = ... }`, and
`{ in = ["EUR", "USD"] }`. A missing argument, or one of another type (a string where a number
is expected; true is not 1), does not match. `when = {}` matches every request of the action.

Errors name the file, line and key, e.g. with `tier` misspelt in the example above::

    signoff.toml:11: actions.send_refund.teir: unknown key; did you mean 'tier'?
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from ._policy_edits import validate_edits
from ._policy_fingerprint import canonical_json, fingerprint, redact
from .errors import DecisionRefused, NotAuthorizedError, PolicyError, SelfApprovalError

__all__ = [
    "MINIMAL_POLICY",
    "RISK_TIERS",
    "ActionPolicy",
    "AutoApproveRule",
    "Condition",
    "ExpiryOutcome",
    "GroupResolver",
    "Policy",
    "RequestVerdict",
    "RiskTier",
    "StaticGroups",
    "WorkflowPolicy",
    "canonical_json",
    "check_voter",
    "evaluate_request",
    "fingerprint",
    "format_duration",
    "load_policy",
    "may_start",
    "parse_duration",
    "parse_policy",
    "redact",
    "resolve_members",
    "validate_edits",
]

RiskTier = Literal["low", "medium", "high", "critical"]
"""How much harm the action can do, which bounds what policy may relax for it.

- `low`: routine and easy to undo. Auto-approval rules and `on_expiry = "approve"` are allowed.
- `medium`: limited harm. The same relaxations as `low` are allowed.
- `high`: costly or hard to undo (the default). Auto-approval rules are allowed; an unanswered
  request is always rejected when it expires.
- `critical`: irreversible or dangerous. A person always decides: no auto-approval rules, and
  expiry always rejects.
"""

RISK_TIERS: tuple[RiskTier, ...] = get_args(RiskTier)
"""The tiers, lowest first."""

ExpiryOutcome = Literal["reject", "approve"]
"""What an expired request resolves to: `reject` (the default), or `approve` (low and medium)."""

Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in"]
"""A condition's comparison: equal, not equal, <, <=, >, >=, one of a list."""

_SELF_EXPIRY_TIERS = frozenset({"low", "medium"})


# --------------------------------------------------------------------------------------------
# The policy, as values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """One test on one argument of a request, e.g. `amount le 50`."""

    field: str
    """The top-level argument tested."""
    op: Op
    """The comparison."""
    value: Any
    """A string, number or boolean; a tuple of them for `in`."""

    def holds(self, args: Mapping[str, Any]) -> bool:
        """True when the argument is present, of a comparable type and passes. Never raises."""
        try:
            if self.field not in args:
                return False
            actual = args[self.field]
            if self.op == "in":
                return any(_compare(actual, "eq", v) for v in self.value)
            return _compare(actual, self.op, self.value)
        except Exception:  # noqa: BLE001 - a condition that cannot be tested does not hold
            return False


@dataclass(frozen=True)
class AutoApproveRule:
    """Requests of an action that are decided by a rule instead of a person. Audited by name."""

    name: str
    """Required; shown in the audit log as the decider."""
    conditions: tuple[Condition, ...] = ()
    """All must hold. Default none, which matches every request of the action."""

    def matches(self, args: Mapping[str, Any]) -> bool:
        """True when every condition holds. A missing field or a type mismatch does not match;
        never raises."""
        try:
            if not isinstance(args, Mapping):
                return False
            return all(c.holds(args) for c in self.conditions)
        except Exception:  # noqa: BLE001 - a condition that cannot be tested does not hold
            return False


@dataclass(frozen=True)
class ActionPolicy:
    """Who may approve one action, how many must, and what happens when nobody answers."""

    action: str
    """The action name, as passed to `request_approval`."""
    title: str = ""
    """Shown on cards. Default: the action name."""
    tier: RiskTier = "high"
    """Default `high`."""
    approvers: tuple[str, ...] = ()
    """Required: user ids, and group names written `@name`. The default, none, is refused."""
    required: int = 1
    """Approvals needed from distinct people. Default 1."""
    allow_self_approval: bool = False
    """Whether the requester may approve their own request. Default False."""
    editable: tuple[str, ...] = ()
    """Argument names an approver may change when approving. Default none."""
    secret: tuple[str, ...] = ()
    """Argument names never shown in clear (only a hash). Default none."""
    remind_after: dt.timedelta | None = None
    """When to remind the approvers of a pending request. Default never."""
    escalate_after: dt.timedelta | None = None
    """When to escalate a pending request. Default never."""
    escalate_to: tuple[str, ...] = ()
    """Users and `@groups` added to the approvers on escalation. Default none."""
    expire_after: dt.timedelta | None = None
    """When a pending request expires. Default never."""
    on_expiry: ExpiryOutcome = "reject"
    """What expiry decides. Default `reject`; `approve` only for tiers low and medium."""
    auto_approve: tuple[AutoApproveRule, ...] = ()
    """Rules deciding routine requests without a person. Default none; never for critical."""

    def __post_init__(self) -> None:
        # The parser reports these with a line number first; this guards policies built in code.
        key = f"actions.{self.action}"
        if not self.title:
            object.__setattr__(self, "title", self.action)
        if self.tier not in RISK_TIERS:
            raise PolicyError(_one_of(RISK_TIERS, self.tier), key=f"{key}.tier")
        if not self.approvers:
            raise PolicyError(_NO_APPROVERS, key=f"{key}.approvers")
        if type(self.required) is not int or self.required < 1:
            raise PolicyError(f"must be at least 1, got {self.required!r}", key=f"{key}.required")
        if self.on_expiry not in ("reject", "approve"):
            raise PolicyError(
                _one_of(("reject", "approve"), self.on_expiry), key=f"{key}.on_expiry"
            )
        if self.on_expiry == "approve" and self.tier not in _SELF_EXPIRY_TIERS:
            raise PolicyError(_expiry_approve_refused(self.tier), key=f"{key}.on_expiry")
        if self.auto_approve and self.tier == "critical":
            raise PolicyError(_AUTO_CRITICAL, key=f"{key}.auto_approve")
        for name in self.secret:
            if name in self.editable:
                raise PolicyError(_secret_editable(name), key=f"{key}.secret")

    def approver_entries(self, *, escalated: bool = False) -> tuple[str, ...]:
        """The approvers, plus the escalation targets once the request has been escalated."""
        if not escalated:
            return self.approvers
        return self.approvers + tuple(e for e in self.escalate_to if e not in self.approvers)


@dataclass(frozen=True)
class WorkflowPolicy:
    """Who may start one workflow from Slack or the API (the CLI is trusted)."""

    name: str
    """The workflow's registered name."""
    starters: tuple[str, ...] = ()
    """User ids and `@groups` allowed to start it. Default none: nobody."""
    path: str | None = None
    """`module:attribute` of a user's own workflow builder. Default None (a bundled workflow)."""


@dataclass(frozen=True)
class Policy:
    """A whole policy file, validated."""

    actions: Mapping[str, ActionPolicy] = field(default_factory=dict)
    """By action name. Default none: every action is denied."""
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Static groups, name (without `@`) to user ids. Default none."""
    workflows: Mapping[str, WorkflowPolicy] = field(default_factory=dict)
    """By workflow name. Default none: nobody may start a workflow from Slack."""
    source: str = ""
    """The file it was read from. Default "" (built in code)."""
    external_groups: frozenset[str] = frozenset()
    """Groups referenced (`@name`) but not defined in `[groups]`: the group resolver (Slack user
    groups) must know them. Default none."""

    @classmethod
    def empty(cls) -> Policy:
        """A policy that names nothing, so denies every action and every start."""
        return cls()


# --------------------------------------------------------------------------------------------
# Loading and validating the file
# --------------------------------------------------------------------------------------------

MINIMAL_POLICY = """\
[actions.send_refund]
tier = "high"
approvers = ["U_ALICE"]
"""
"""The smallest useful policy, shown when the file is missing."""


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy file at `path`.

    Raises:
        PolicyError: the file is missing, unreadable or invalid (with file, line and key).
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise PolicyError(
            "no policy file here; signoff denies every action until one names it. Create it "
            "(or point SIGNOFF_POLICY at yours), for example:\n\n" + MINIMAL_POLICY,
            source=source,
        ) from None
    except OSError as exc:
        raise PolicyError(
            f"cannot read the policy file: {exc.strerror or exc}", source=source
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise PolicyError(
            "is not UTF-8 text (TOML must be UTF-8)", source=source, line=line
        ) from None
    return parse_policy(text.removeprefix("\ufeff"), source)


def parse_policy(text: str, source: str = "signoff.toml") -> Policy:
    """Parse and validate policy text.

    Raises:
        PolicyError: never anything else; the message starts with `source:line:` and the key.
    """
    from ._policy_file import _Reader, _syntax_error  # here: it imports this module

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PolicyError("invalid TOML: nested too deeply", source=source) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing thousands of digits
        raise _syntax_error(str(exc), text, source) from None
    return _Reader(text, source).policy(data)


# Messages given both by the values above, when built in code, and by the file reader.

_NO_APPROVERS = 'must name at least one approver (a user id or "@group")'
_AUTO_CRITICAL = "not allowed for critical actions: a person must decide every request"


def _one_of(choices: Iterable[str], got: Any) -> str:
    return f"must be one of {', '.join(choices)}, got {_got(got)}"


def _secret_editable(name: str) -> str:
    return f"{name!r} is also editable; a secret field cannot be edited (the form would show it)"


def _expiry_approve_refused(tier: str) -> str:
    return f'"approve" is only allowed for tiers low and medium; this action is {tier}'


def _got(value: Any) -> str:
    """A short description of a TOML value for an error message."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        text = str(value) if abs(value) < 10**40 else "(too long)"
        return f"integer {text}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


# --------------------------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------------------------

_DURATION = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def parse_duration(text: str) -> dt.timedelta:
    """`"30s"`, `"15m"`, `"4h"`, `"2d"`, `"1w"`, or a combination largest first, `"1h30m"`.

    Raises:
        PolicyError: not such a string, zero, or absurdly long.
    """
    hint = 'durations are written like "30s", "15m", "4h", "2d", "1w" or "1h30m"'
    if not isinstance(text, str):
        raise PolicyError(f"{hint}, got {_got(text)}")
    m = _DURATION.fullmatch(text.strip())
    if not text.strip() or m is None or len(text.strip()) > 40:
        raise PolicyError(f"{hint}, got {_got(text)}")
    seconds = sum(int(g) * size for g, (_, size) in zip(m.groups(), _UNITS) if g)
    if seconds == 0:
        raise PolicyError(f"must be longer than zero, got {text!r}")
    if seconds > 10 * 365 * 86400:
        raise PolicyError(f"must be at most ten years, got {text!r}")
    return dt.timedelta(seconds=seconds)


def format_duration(delta: dt.timedelta) -> str:
    """The inverse of `parse_duration` for whole seconds: 5400 seconds -> `"1h30m"`."""
    seconds = int(delta.total_seconds())
    if seconds <= 0:
        return "0s"
    out = ""
    for unit, size in _UNITS:
        n, seconds = divmod(seconds, size)
        if n:
            out += f"{n}{unit}"
    return out


# --------------------------------------------------------------------------------------------
# Deciding
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestVerdict:
    """What policy says about a new request, before anyone has looked at it."""

    outcome: Literal["ask", "deny", "auto_approve"]
    """`ask` people, `deny` outright, or `auto_approve` by a rule."""
    reason: str
    """One sentence for the audit log, the card and the graph."""
    rule: ActionPolicy | None = None
    """The action's policy; None when denied because the action is not listed."""
    auto_rule: str | None = None
    """The name of the auto-approval rule that decided. Default None."""


def evaluate_request(policy: Policy, action: str, args: Mapping[str, Any]) -> RequestVerdict:
    """Decide whether a request is asked, denied or approved by a rule. Never raises.

    An action the policy does not name is denied, and so is any request whose evaluation fails.
    """
    rule: ActionPolicy | None = None
    try:
        rule = policy.actions.get(action)
        if rule is None:
            where = f" ({policy.source})" if policy.source else ""
            return RequestVerdict(
                "deny",
                f"action {action!r} is not in the policy{where}; signoff denies actions the policy "
                f"does not name. Add [actions.{action}] to allow it to be asked for.",
            )
        if not isinstance(args, Mapping):
            raise TypeError(f"the arguments must be a mapping, got {type(args).__name__}")
        if rule.tier != "critical":
            for auto in rule.auto_approve:
                if auto.matches(args):
                    return RequestVerdict(
                        "auto_approve",
                        f"approved by the rule {auto.name!r} of {action}",
                        rule,
                        auto.name,
                    )
        need = f"{rule.required} approval{'s' if rule.required != 1 else ''}"
        return RequestVerdict(
            "ask", f"{rule.title}: needs {need} from {_who(rule.approvers)}", rule
        )
    except Exception as exc:  # noqa: BLE001 - deny on any error: never let a bug approve
        return RequestVerdict(
            "deny",
            f"policy evaluation failed, so the request is denied: {type(exc).__name__}: {exc}",
            rule,
        )


def check_voter(
    rule: ActionPolicy, *, requester: str, actor: str, approvers: frozenset[str]
) -> DecisionRefused | None:
    """Why `actor` may not vote on `requester`'s request, or None when they may.

    Args:
        rule: the action's policy.
        requester: who asked (the user who started the run).
        actor: who is voting.
        approvers: the user ids allowed to vote, resolved from `rule.approver_entries(...)`
            (including the escalation targets once escalated).
    """
    if actor == requester and not rule.allow_self_approval:
        others = tuple(e for e in rule.approvers if e != requester)
        who = _who(others) if others else "another approver"
        return SelfApprovalError(
            f"you asked for this ({rule.title}), and {rule.action} does not allow approving your "
            f"own request; ask {who}"
        )
    if actor not in approvers:
        return NotAuthorizedError(
            f"you ({actor}) are not an approver of {rule.title} ({rule.action}); "
            f"ask {_who(rule.approvers)}"
        )
    return None


def _who(entries: Iterable[str]) -> str:
    """`["@finance", "U_DAVE"]` -> `someone in @finance or U_DAVE`."""
    names = [f"someone in {e}" if e.startswith("@") else e for e in entries]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def may_start(workflow_policy: WorkflowPolicy | None, user: str, members: frozenset[str]) -> bool:
    """Whether `user` may start the workflow from Slack or the API. Deny by default.

    Args:
        workflow_policy: `policy.workflows.get(name)`; None (not listed) denies.
        user: the user id.
        members: `await resolve_members(workflow_policy.starters, resolver)`.
    """
    if workflow_policy is None:
        return False
    return user in members or (not user.startswith("@") and user in workflow_policy.starters)


# --------------------------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------------------------


class GroupResolver(Protocol):
    """Resolves a group name (without `@`) to the user ids in it."""

    async def members(self, group: str) -> frozenset[str]:
        """The user ids in `group`; an empty set when there is no such group."""
        ...


class StaticGroups:
    """Groups from a fixed map (the `[groups]` table): for the CLI, tests and the demo.

    A name that is not in the map is asked of `fallback` (e.g. Slack user groups) when one is
    given, else it has no members.
    """

    def __init__(
        self, groups: Mapping[str, Iterable[str]], fallback: GroupResolver | None = None
    ) -> None:
        self._groups = {name.removeprefix("@"): frozenset(ids) for name, ids in groups.items()}
        self._fallback = fallback

    async def members(self, group: str) -> frozenset[str]:
        name = group.removeprefix("@")
        if name in self._groups:
            return self._groups[name]
        if self._fallback is not None:
            return await self._fallback.members(name)
        return frozenset()


async def resolve_members(rule_entries: Iterable[str], resolver: GroupResolver) -> frozenset[str]:
    """The user ids named by `entries`: the user ids themselves and the members of each `@group`."""
    out: set[str] = set()
    for entry in rule_entries:
        if entry.startswith("@"):
            out.update(await resolver.members(entry[1:]))
        else:
            out.add(entry)
    return frozenset(out)


# --------------------------------------------------------------------------------------------
# Comparing (conditions)
# --------------------------------------------------------------------------------------------


def _compare(actual: Any, op: str, expected: Any) -> bool:
    """Compare only like with like: strings with strings, booleans with booleans, numbers
    (int, float, Decimal; finite) with numbers. Anything else does not match."""
    a, b = _kind(actual), _kind(expected)
    if a is None or a != b:
        return False
    if a == "number" and (
        isinstance(actual, decimal.Decimal) or isinstance(expected, decimal.Decimal)
    ):
        actual, expected = _to_decimal(actual), _to_decimal(expected)
    if op == "eq":
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    if a == "bool":
        return False
    if op == "lt":
        return bool(actual < expected)
    if op == "le":
        return bool(actual <= expected)
    if op == "gt":
        return bool(actual > expected)
    if op == "ge":
        return bool(actual >= expected)
    return False


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, decimal.Decimal)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return None
        return "number"
    if isinstance(value, str):
        return "str"
    return None


def _to_decimal(value: float | decimal.Decimal) -> decimal.Decimal:
    return value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(value))
