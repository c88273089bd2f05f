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

import base64
import datetime as dt
import decimal
import difflib
import hashlib
import hmac
import json
import math
import os
import re
import tomllib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from .errors import (
    DecisionRefused,
    InvalidEditError,
    NotAuthorizedError,
    PolicyError,
    SelfApprovalError,
)

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

_OPS: tuple[str, ...] = get_args(Op)
_OP_ALIASES = {
    "lte": "le", "gte": "ge", "<=": "le", ">=": "ge", "<": "lt", ">": "gt", "==": "eq", "=": "eq",
    "!=": "ne", "neq": "ne", "equals": "eq", "is": "eq", "not": "ne", "one_of": "in", "any": "in",
}  # fmt: skip
_ORDER_OPS = frozenset({"lt", "le", "gt", "ge"})
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
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PolicyError("invalid TOML: nested too deeply", source=source) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing thousands of digits
        raise _syntax_error(str(exc), text, source) from None
    return _Reader(text, source).policy(data)


_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)$")


def _syntax_error(message: str, text: str, source: str) -> PolicyError:
    m = _POSITION.search(message)
    line: int | None = None
    if m:
        message = message[: m.start()]
        if m.group(1):
            line = int(m.group(1))
            message += f" (column {m.group(2)})"
    if line is None and message.startswith("Cannot overwrite a value"):
        line = _Locator(text).first_duplicate()
    if line is None and m:  # at end of document
        line = text.count("\n") + 1
    return PolicyError(f"invalid TOML: {message}", source=source, line=line)


_TOP_KEYS = ("actions", "groups", "workflows")
_ACTION_KEYS = (
    "title", "tier", "approvers", "required", "allow_self_approval", "editable", "secret",
    "remind_after", "escalate_after", "escalate_to", "expire_after", "on_expiry", "auto_approve",
)  # fmt: skip
_RULE_KEYS = ("name", "when")
_WORKFLOW_KEYS = ("starters", "path")
_ACTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_NO_APPROVERS = 'must name at least one approver (a user id or "@group")'
_AUTO_CRITICAL = "not allowed for critical actions: a person must decide every request"

Path = tuple[str | int, ...]


class _Reader:
    """Turns the parsed TOML into a `Policy`, raising the first problem with its line."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self._locator: _Locator | None = None
        self.referenced: set[str] = set()

    def error(self, path: Path, message: str) -> PolicyError:
        if self._locator is None:
            self._locator = _Locator(self.text)
        line = self._locator.line(path)
        return PolicyError(message, source=self.source, line=line, key=_dotted(path))

    # -- structure ------------------------------------------------------------------------

    def table(
        self, path: Path, value: Any, allowed: tuple[str, ...], header: str
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(path, f"must be a table ({header}), got {_got(value)}")
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "allowed: " + ", ".join(allowed)
                raise self.error(path + (key,), f"unknown key; {hint}")
        return value

    def policy(self, data: dict[str, Any]) -> Policy:
        self.table((), data, _TOP_KEYS, "the top level")
        groups = self.groups(data.get("groups", {}))
        workflows = self.workflows(data.get("workflows", {}))
        actions = self.actions(data.get("actions", {}), groups)
        return Policy(
            actions=actions,
            groups=groups,
            workflows=workflows,
            source=self.source,
            external_groups=frozenset(self.referenced - set(groups)),
        )

    def named_tables(self, key: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error((key,), f"must be a table ([{key}.NAME]), got {_got(value)}")
        return value

    # -- values ---------------------------------------------------------------------------

    def string(self, path: Path, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(path, f"must be a non-empty string, got {_got(value)}")
        return value

    def names(self, path: Path, value: Any) -> tuple[str, ...]:
        """An array of argument names (editable, secret)."""
        if not isinstance(value, list):
            raise self.error(path, f"must be an array of field names, got {_got(value)}")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise self.error(path, f"field names must be non-empty strings, got {_got(item)}")
            if item not in out:
                out.append(item)
        return tuple(out)

    def entries(self, path: Path, value: Any, *, what: str) -> tuple[str, ...]:
        """An array of user ids and `@group` names."""
        if not isinstance(value, list):
            raise self.error(
                path, f'must be an array of user ids and "@group" names, got {_got(value)}'
            )
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not item or item == "@" or _has_space(item):
                raise self.error(
                    path,
                    f'{what} must be user ids or "@group" names without spaces, got {_got(item)}',
                )
            if item.startswith("@"):
                self.referenced.add(item[1:])
            if item not in out:
                out.append(item)
        return tuple(out)

    def duration(self, path: Path, value: Any) -> dt.timedelta:
        if not isinstance(value, str):
            raise self.error(
                path, f'must be a duration string like "4h" or "1h30m", got {_got(value)}'
            )
        try:
            return parse_duration(value)
        except PolicyError as exc:
            raise self.error(path, exc.message) from None

    # -- sections -------------------------------------------------------------------------

    def groups(self, value: Any) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for name, members in self.named_tables("groups", value).items():
            path: Path = ("groups", name)
            if name.startswith("@") or not name or _has_space(name):
                raise self.error(path, 'group names are written without "@" and without spaces')
            if not isinstance(members, list):
                raise self.error(path, f"must be an array of user ids, got {_got(members)}")
            ids: list[str] = []
            for m in members:
                if not isinstance(m, str) or not m or _has_space(m) or m.startswith("@"):
                    raise self.error(
                        path,
                        f"members must be user ids (groups cannot contain groups), got {_got(m)}",
                    )
                if m not in ids:
                    ids.append(m)
            out[name] = tuple(ids)
        return out

    def workflows(self, value: Any) -> dict[str, WorkflowPolicy]:
        out: dict[str, WorkflowPolicy] = {}
        for name, raw in self.named_tables("workflows", value).items():
            path: Path = ("workflows", name)
            table = self.table(path, raw, _WORKFLOW_KEYS, f"[workflows.{name}]")
            starters = self.entries(
                path + ("starters",), table.get("starters", []), what="starters"
            )
            wf_path = table.get("path")
            if wf_path is not None and (
                not isinstance(wf_path, str) or not _PATH.fullmatch(wf_path)
            ):
                raise self.error(
                    path + ("path",),
                    f'must be "module:attribute", like "mypkg.flows:build", got {_got(wf_path)}',
                )
            out[name] = WorkflowPolicy(name=name, starters=starters, path=wf_path)
        return out

    def actions(self, value: Any, groups: Mapping[str, tuple[str, ...]]) -> dict[str, ActionPolicy]:
        return {
            name: self.action(name, raw, groups)
            for name, raw in self.named_tables("actions", value).items()
        }

    def action(self, name: str, raw: Any, groups: Mapping[str, tuple[str, ...]]) -> ActionPolicy:
        p: Path = ("actions", name)
        if not _ACTION_NAME.fullmatch(name):
            raise self.error(
                p,
                "action names are 1 to 100 letters, digits, '_', '-' or '.', "
                "not starting with '-' or '.'",
            )
        t = self.table(p, raw, _ACTION_KEYS, f"[actions.{name}]")

        title = self.string(p + ("title",), t["title"]).strip() if "title" in t else name
        tier = t.get("tier", "high")
        if tier not in RISK_TIERS:
            raise self.error(p + ("tier",), _one_of(RISK_TIERS, tier))

        if "approvers" not in t:
            raise self.error(p, 'needs approvers = [...] (user ids or "@group" names)')
        approvers = self.entries(p + ("approvers",), t["approvers"], what="approvers")
        if not approvers:
            raise self.error(p + ("approvers",), _NO_APPROVERS)

        required = t.get("required", 1)
        if type(required) is not int:
            raise self.error(p + ("required",), f"must be a whole number, got {_got(required)}")
        if required < 1:
            raise self.error(p + ("required",), f"must be at least 1, got {required}")
        pool = _static_pool(approvers, groups)
        if pool is not None and required > len(pool):
            raise self.error(
                p + ("required",),
                f"needs {required} distinct approvers but the approvers hold only {len(pool)} "
                f"({', '.join(sorted(pool))})",
            )

        allow_self = t.get("allow_self_approval", False)
        if not isinstance(allow_self, bool):
            raise self.error(
                p + ("allow_self_approval",), f"must be true or false, got {_got(allow_self)}"
            )

        editable = self.names(p + ("editable",), t.get("editable", []))
        secret = self.names(p + ("secret",), t.get("secret", []))
        for f in secret:
            if f in editable:
                raise self.error(p + ("secret",), _secret_editable(f))

        durations: dict[str, dt.timedelta] = {}
        for key in ("remind_after", "escalate_after", "expire_after"):
            if key in t:
                durations[key] = self.duration(p + (key,), t[key])
        escalate_to: tuple[str, ...] = ()
        if "escalate_to" in t:
            escalate_to = self.entries(p + ("escalate_to",), t["escalate_to"], what="escalate_to")
            if not escalate_to:
                raise self.error(p + ("escalate_to",), 'must name at least one user id or "@group"')
            if "escalate_after" not in durations:
                raise self.error(p + ("escalate_to",), "needs escalate_after (when to escalate)")
        order = [k for k in ("remind_after", "escalate_after", "expire_after") if k in durations]
        for i, later in enumerate(order):
            for earlier in reversed(order[:i]):
                if durations[later] <= durations[earlier]:
                    raise self.error(
                        p + (later,),
                        f"must be later than {earlier} ({format_duration(durations[earlier])}), "
                        f"got {format_duration(durations[later])}",
                    )

        on_expiry = t.get("on_expiry", "reject")
        if on_expiry not in ("reject", "approve"):
            raise self.error(p + ("on_expiry",), _one_of(("reject", "approve"), on_expiry))
        if on_expiry == "approve" and tier not in _SELF_EXPIRY_TIERS:
            raise self.error(p + ("on_expiry",), _expiry_approve_refused(tier))
        if "on_expiry" in t and "expire_after" not in durations:
            raise self.error(
                p + ("on_expiry",), "has no effect without expire_after (when to expire)"
            )

        rules = self.auto_rules(p + ("auto_approve",), t.get("auto_approve", []))
        if rules and tier == "critical":
            raise self.error(p + ("auto_approve",), _AUTO_CRITICAL)

        return ActionPolicy(
            action=name,
            title=title,
            tier=tier,
            approvers=approvers,
            required=required,
            allow_self_approval=allow_self,
            editable=editable,
            secret=secret,
            remind_after=durations.get("remind_after"),
            escalate_after=durations.get("escalate_after"),
            escalate_to=escalate_to,
            expire_after=durations.get("expire_after"),
            on_expiry=on_expiry,
            auto_approve=rules,
        )

    def auto_rules(self, path: Path, value: Any) -> tuple[AutoApproveRule, ...]:
        if not isinstance(value, list):
            raise self.error(
                path, f"must be an array of tables ([[{_dotted(path)}]]), got {_got(value)}"
            )
        rules: list[AutoApproveRule] = []
        for i, raw in enumerate(value):
            rp = path + (i,)
            t = self.table(rp, raw, _RULE_KEYS, f"[[{_dotted(path)}]]")
            if "name" not in t:
                raise self.error(
                    rp, 'needs name = "..." (the audit log names the rule that decided)'
                )
            name = self.string(rp + ("name",), t["name"]).strip()
            if any(r.name == name for r in rules):
                raise self.error(rp + ("name",), f"another rule of this action is named {name!r}")
            if "when" not in t:
                raise self.error(rp, "needs when = { ... } (use when = {} to match every request)")
            rules.append(
                AutoApproveRule(name=name, conditions=self.conditions(rp + ("when",), t["when"]))
            )
        return tuple(rules)

    def conditions(self, path: Path, value: Any) -> tuple[Condition, ...]:
        if not isinstance(value, dict):
            raise self.error(
                path,
                "must be a table of conditions, like { amount = { le = 50 } }, "
                f"got {_got(value)}",
            )
        out: list[Condition] = []
        for fname, spec in value.items():
            fp = path + (fname,)
            if not fname.strip():
                raise self.error(fp, "field names must be non-empty")
            if not isinstance(spec, dict):
                if isinstance(spec, list):
                    raise self.error(fp, "to match one of several values write { in = [...] }")
                out.append(Condition(fname, "eq", self.scalar(fp, spec)))
                continue
            if not spec:
                raise self.error(fp, "needs an operator: " + ", ".join(_OPS))
            for op, operand in spec.items():
                op_path = fp + (op,)
                if op not in _OPS:
                    close = (
                        [_OP_ALIASES[op]]
                        if op in _OP_ALIASES
                        else difflib.get_close_matches(op, _OPS, n=1)
                    )
                    hint = (
                        f"did you mean {close[0]!r}?" if close else "use one of " + ", ".join(_OPS)
                    )
                    raise self.error(op_path, f"unknown operator; {hint}")
                if op == "in":
                    if not isinstance(operand, list) or not operand:
                        raise self.error(op_path, f"must be a non-empty array, got {_got(operand)}")
                    out.append(
                        Condition(fname, "in", tuple(self.scalar(op_path, v) for v in operand))
                    )
                elif op in _ORDER_OPS:
                    if _kind(operand) != "number":
                        raise self.error(op_path, f"must be a number, got {_got(operand)}")
                    out.append(Condition(fname, op, operand))  # type: ignore[arg-type]
                else:
                    scalar = self.scalar(op_path, operand)
                    out.append(Condition(fname, op, scalar))  # type: ignore[arg-type]
        return tuple(out)

    def scalar(self, path: Path, value: Any) -> str | int | float | bool:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(path, f"must be a finite number, got {value}")
        if not isinstance(value, (str, int, float, bool)):
            raise self.error(path, f"must be a string, number or boolean, got {_got(value)}")
        return value


def _static_pool(entries: Iterable[str], groups: Mapping[str, tuple[str, ...]]) -> set[str] | None:
    """The distinct people `entries` can name, or None when a group is resolved elsewhere."""
    pool: set[str] = set()
    for e in entries:
        if e.startswith("@"):
            if e[1:] not in groups:
                return None
            pool.update(groups[e[1:]])
        else:
            pool.add(e)
    return pool


def _has_space(s: str) -> bool:
    return any(c.isspace() for c in s)


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


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _dotted(path: Path) -> str:
    """`("actions", "x", "auto_approve", 0, "when")` -> `actions.x.auto_approve[0].when`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            out += f".{text}" if out else text
    return out


# --------------------------------------------------------------------------------------------
# Finding a key's line (tomllib gives no positions)
# --------------------------------------------------------------------------------------------


class _Locator:
    """Finds the line where a key is set. Best effort, on text tomllib has already accepted.

    Knows `[table]` and `[[array.of.tables]]` headers (counting the entries of arrays of
    tables), dotted and quoted keys, and skips multi-line strings and arrays. A key inside an
    inline table or a multi-line array is found at the line of the enclosing key; a key that is
    not written at all (a missing required key) at its table's header.
    """

    def __init__(self, text: str) -> None:
        self.entries: list[tuple[Path, int]] = []
        self._scan(text.split("\n"))

    def line(self, path: Path) -> int | None:
        """The line setting `path`; else the first line setting a key under it (dotted keys);
        else the line of its closest enclosing table or inline table."""
        if not path:
            return None
        under: int | None = None
        best: tuple[int, int] | None = None  # (prefix length, line)
        for entry, lineno in self.entries:
            if entry == path:
                return lineno
            n = len(entry)
            if under is None and entry[: len(path)] == path:
                under = lineno
            elif path[:n] == entry and (best is None or n > best[0]):
                best = (n, lineno)
        if under is not None:
            return under
        return best[1] if best else None

    def first_duplicate(self) -> int | None:
        seen: set[Path] = set()
        for entry, lineno in self.entries:
            if entry in seen:
                return lineno
            seen.add(entry)
        return None

    def _scan(self, lines: list[str]) -> None:
        table: Path = ()
        arrays: dict[Path, int] = {}  # resolved path of an array of tables -> its last index
        state = _ScanState()
        for lineno, line in enumerate(lines, start=1):
            if state.busy:
                state.scan(line, 0)
                continue
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith("["):
                is_array = stripped.startswith("[[")
                start = 2 if is_array else 1
                end = _find_unquoted(stripped, "]", start)
                names = _parse_key(stripped[start:end]) if end >= 0 else None
                if names is None:
                    continue
                resolved: Path = ()
                for i, name in enumerate(names):
                    resolved += (name,)
                    if resolved in arrays and not (is_array and i == len(names) - 1):
                        resolved += (arrays[resolved],)
                if is_array:
                    index = arrays.get(resolved, -1) + 1
                    arrays[resolved] = index
                    if index == 0:
                        self.entries.append((resolved, lineno))
                    resolved += (index,)
                table = resolved
                self.entries.append((table, lineno))
                continue
            eq = _find_unquoted(stripped, "=", 0)
            if eq < 0:
                continue
            names = _parse_key(stripped[:eq])
            if names is not None:
                self.entries.append((table + names, lineno))
            state.scan(stripped, eq + 1)


class _ScanState:
    """Tracks multi-line strings and open brackets across lines of a value."""

    def __init__(self) -> None:
        self.closer: str | None = None  # '"""' or "'''" while inside a multi-line string
        self.depth = 0

    @property
    def busy(self) -> bool:
        return self.closer is not None or self.depth > 0

    def scan(self, s: str, i: int) -> None:
        n = len(s)
        while i < n:
            if self.closer is not None:
                j = s.find(self.closer, i)
                if self.closer == '"""':  # skip escaped quotes
                    while j > 0 and _escaped(s, j):
                        j = s.find(self.closer, j + 1)
                if j < 0:
                    return
                i = j + 3
                self.closer = None
                continue
            c = s[i]
            if c == "#":
                return
            if c in "\"'":
                if s.startswith(c * 3, i):
                    self.closer = c * 3
                    i += 3
                    continue
                j = i + 1
                while j < n and (s[j] != c or (c == '"' and _escaped(s, j))):
                    j += 1
                i = j + 1
                continue
            if c in "[{":
                self.depth += 1
            elif c in "]}":
                self.depth = max(0, self.depth - 1)
            i += 1


def _escaped(s: str, j: int) -> bool:
    backslashes = 0
    while j - backslashes - 1 >= 0 and s[j - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _find_unquoted(s: str, target: str, i: int) -> int:
    quote: str | None = None
    while i < len(s):
        c = s[i]
        if quote:
            if c == quote and not (quote == '"' and _escaped(s, i)):
                quote = None
        elif c in "\"'":
            quote = c
        elif c == target:
            return i
        elif c == "#":
            return -1
        i += 1
    return -1


def _parse_key(text: str) -> tuple[str, ...] | None:
    """`a."b.c" . d` -> ("a", "b.c", "d"), using tomllib itself; None if it is not a key."""
    try:
        node: Any = tomllib.loads(text.strip() + " = 0")
    except (ValueError, RecursionError):
        return None
    parts: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        parts.append(key)
    return tuple(parts) if parts and node == 0 else None


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
# Fingerprints and redaction
# --------------------------------------------------------------------------------------------


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces, the same for equal values in every process.

    Besides JSON's own types: tuples, sets and frozensets are arrays (sets sorted), Decimal and
    UUID their strings, datetimes ISO 8601, timedelta its seconds, bytes base64.

    Raises:
        TypeError: a value of another type. ValueError: NaN or infinity.
    """
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_json_default,
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted((json.loads(canonical_json(v)) for v in value), key=canonical_json)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"cannot fingerprint the non-finite number {value}")
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(
        f"cannot fingerprint a value of type {type(value).__qualname__}; use JSON types"
    )


def fingerprint(action: str, args: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the action and its arguments.

    Two requests with the same fingerprint ask for exactly the same thing.
    """
    data = canonical_json({"action": action, "args": dict(args)})
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def redact(
    rule: ActionPolicy | None, args: Mapping[str, Any], *, key: bytes | None = None
) -> dict[str, Any]:
    """A copy of `args` fit for cards, logs and the audit log: each secret field becomes
    `{"redacted": "sha256:<hex>"}`, the hash of its canonical JSON.

    A short secret (a card number) can be found again from its plain hash by trying every
    value; pass `key` (e.g. the audit HMAC key) to get `"hmac-sha256:<hex>"` instead.
    """
    out = dict(args)
    if rule is None:
        return out
    for name in rule.secret:
        if name in out:
            data = canonical_json(out[name]).encode("utf-8")
            if key is None:
                digest = "sha256:" + hashlib.sha256(data).hexdigest()
            else:
                digest = "hmac-sha256:" + hmac.new(key, data, hashlib.sha256).hexdigest()
            out[name] = {"redacted": digest}
    return out


# --------------------------------------------------------------------------------------------
# Edits
# --------------------------------------------------------------------------------------------


def validate_edits(
    rule: ActionPolicy, edits: Mapping[str, Any], args: Mapping[str, Any]
) -> dict[str, Any]:
    """Check an approver's edits and convert each to the type of the value it replaces.

    A string edit of a number, a boolean, a Decimal, a list or a table is parsed as one (the CLI
    and Slack forms send strings). Edits that leave a value unchanged are left out.

    Returns:
        The changed fields only, with their new values: run `{**args, **result}`.

    Raises:
        InvalidEditError: a field that is not editable, or a value that does not fit.
    """
    out: dict[str, Any] = {}
    for name, value in edits.items():
        if not isinstance(name, str) or name not in rule.editable:
            if not rule.editable:
                raise InvalidEditError(
                    f"nothing in {rule.title} ({rule.action}) can be edited; "
                    "approve or reject it as it is"
                )
            raise InvalidEditError(
                f"{name!r} cannot be edited in {rule.title} ({rule.action}); "
                f"editable: {', '.join(rule.editable)}"
            )
        if name in args:
            new = _coerce(name, value, args[name])
            original = args[name]
            if type(new) is type(original) and new == original:
                continue
        else:
            new = value
        out[name] = new
    return out


def _coerce(name: str, value: Any, original: Any) -> Any:
    kind = type(original)
    text = value.strip() if isinstance(value, str) else None
    if original is None:
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "yes", "1", "false", "no", "0"):
            return text.lower() in ("true", "yes", "1")
        raise InvalidEditError(f"{name} must be true or false, got {value!r}")
    if isinstance(original, int) and not isinstance(original, bool):
        if isinstance(value, int) and not isinstance(value, bool):
            return kind(value) if kind is not int else value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if text is not None:
            try:
                return int(text)
            except ValueError:
                pass
        raise InvalidEditError(f"{name} must be a whole number, got {value!r}")
    if isinstance(original, float):
        number: float | None = None
        try:
            if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
                number = float(value)
            elif text is not None:
                number = float(text)
        except (ValueError, OverflowError):
            number = None
        if number is None or not math.isfinite(number):
            raise InvalidEditError(f"{name} must be a number, got {value!r}")
        return number
    if isinstance(original, decimal.Decimal):
        try:
            if isinstance(value, bool) or not isinstance(value, (str, int, float, decimal.Decimal)):
                raise decimal.InvalidOperation
            d = decimal.Decimal(text if text is not None else str(value))
        except (decimal.InvalidOperation, ValueError):
            d = None
        if d is None or not d.is_finite():
            raise InvalidEditError(f"{name} must be a number, like 12.50, got {value!r}")
        return d
    if isinstance(original, str):
        if not isinstance(value, str):
            raise InvalidEditError(f"{name} must be text, got {value!r}")
        return value
    if isinstance(original, (list, dict)):
        parsed = value
        if text is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                raise InvalidEditError(
                    f"{name} must be JSON ({_json_kind(original)}), got {value!r}"
                ) from None
        if not isinstance(parsed, (list, dict)) or isinstance(parsed, list) != isinstance(
            original, list
        ):
            raise InvalidEditError(f"{name} must be {_json_kind(original)}, got {value!r}")
        return parsed
    if isinstance(value, kind):
        return value
    raise InvalidEditError(f"{name} holds a {kind.__name__}, which cannot be edited from text")


def _json_kind(value: Any) -> str:
    return "a JSON array" if isinstance(value, list) else "a JSON object"


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
