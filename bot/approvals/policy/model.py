"""The policy, as values: risk tiers, an action's policy, its auto-approval rules and
conditions, who may start a workflow. Built by the file reader (`load_policy`) or in code, and
checked either way."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..errors import PolicyError
from ._callbacks import CallbackOrigin, callback_problem
from ._compare import _compare
from ._messages import (
    _AUTO_CRITICAL,
    _NO_APPROVERS,
    _after_cycle,
    _after_cycle_of,
    _after_itself,
    _after_unknown,
    _expiry_approve_refused,
    _free_and_action,
    _one_of,
    _secret_editable,
    _service_action_unknown,
)
from .durations import format_duration
from .grants import GrantLimits
from .schema import Schema

__all__ = [
    "NOTIFY_MODES",
    "RISK_TIERS",
    "ActionPolicy",
    "AutoApproveRule",
    "Condition",
    "Delegation",
    "ExpiryOutcome",
    "NotifyMode",
    "Op",
    "Policy",
    "RiskTier",
    "ServicePolicy",
    "WorkflowPolicy",
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

Delegation = Literal["never", "allowed", "critical"]
"""Whether a delegate may decide for an approver who is away (`/agent away ... delegate @bob`):
`never` (the default), `allowed` (`delegation = true`: any tier but `critical`), `critical`
(`delegation = "critical"`: every tier, `critical` too, because the policy says so by name)."""

ExpiryOutcome = Literal["reject", "approve"]
"""What an expired request resolves to: `reject` (the default), or `approve` (low and medium)."""

NotifyMode = Literal["channel", "dm", "both"]
"""Where approvers are pinged (`ActionPolicy.notify`)."""

NOTIFY_MODES: tuple[NotifyMode, ...] = get_args(NotifyMode)

Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in"]
"""A condition's comparison: equal, not equal, <, <=, >, >=, one of a list."""

_SELF_EXPIRY_TIERS = frozenset({"low", "medium"})


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
class AutoBudget:
    """How much an auto-approval rule may approve in a window before a person is asked again
    (`budget = { count = 5, total = 25, of = "amount", per = ["customer_id"], window = "1d" }`):
    one request at a time, twelve refunds of 5.00 all look routine."""

    window: dt.timedelta
    """The sliding window the caps count over (`"1h"`, `"1d"`)."""
    count: int | None = None
    """At most this many approvals by the rule in the window. Default no cap."""
    total: float | None = None
    """At most this much of the argument `of`, summed over the rule's approvals in the window
    (this request's included). Default no cap."""
    of: str | None = None
    """The numeric argument `total` sums (`"amount"`)."""
    per: tuple[str, ...] = ()
    """The caps hold per value of these arguments (`"customer_id"`), and per requester with
    `"requester"`. Default: over every request of the action."""

    def describe(self) -> str:
        """`at most 5 approvals and 25 of amount per customer_id in 1d`."""
        caps = []
        if self.count is not None:
            caps.append(f"{self.count} approval{'s' if self.count != 1 else ''}")
        if self.total is not None:
            caps.append(f"{self.total:g} of {self.of}")
        per = f" per {' and '.join(self.per)}" if self.per else ""
        return f"at most {' and '.join(caps)}{per} in {format_duration(self.window)}"


@dataclass(frozen=True)
class AutoApproveRule:
    """Requests of an action that are decided by a rule instead of a person. Audited by name."""

    name: str
    """Required; shown in the audit log as the decider."""
    conditions: tuple[Condition, ...] = ()
    """All must hold. Default none, which matches every request of the action."""
    budget: AutoBudget | None = None
    """How much it may approve in a window; past it, a person is asked and the card says
    which cap. Default none: every matching request is approved."""

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
    notify: NotifyMode = "channel"
    """Where approvers are pinged: `channel` (mentioned on the card in its channel), `dm` (each
    sent a copy of the card in a direct message; the channel card mentions nobody) or `both`.
    Default `channel`."""
    args: Schema | None = None
    """What the request's arguments must be (`[actions.NAME.args]`): checked before any rule
    is considered and on every edit. A request whose arguments do not fit is denied. Default
    None: not checked (the policy loader warns)."""
    after: tuple[str, ...] = ()
    """Actions a call of this one runs after when an agent proposes them in the same model
    turn (`after = ["send_refund"]` on `email_customer`): it never runs before they are
    settled, does not run when one of them is rejected, denied or expires, and is decided
    again when one of them is approved with edits. Default none."""
    grants: GrantLimits | None = None
    """What an approver may grant from the card: "Approve, and allow up to N more like this
    for T" (`grants = { most = 5, longest = "4h", key = ["customer_id"] }`). Default none:
    every request is asked. Never for critical actions, nor for those that need a quorum."""
    delegation: Delegation = "never"
    """Whether the delegate an away approver named may decide in their place (`Delegation`).
    Never the requester. Default `never`."""

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
        if self.notify not in NOTIFY_MODES:
            raise PolicyError(_one_of(NOTIFY_MODES, self.notify), key=f"{key}.notify")
        if self.action in self.after:
            raise PolicyError(_after_itself(self.action), key=f"{key}.after")
        if self.grants is not None and (self.tier == "critical" or self.required != 1):
            raise PolicyError(
                "not allowed for critical actions, nor for those that need more than one "
                "approval: a person must decide every such request",
                key=f"{key}.grants",
            )

    def grant_fingerprint(self) -> str | None:
        """What a grant of this action rests on (`GrantLimits.fingerprint`); None: no grants."""
        if self.grants is None:
            return None
        return self.grants.fingerprint(
            approvers=self.approvers, tier=self.tier, required=self.required
        )

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
class ServicePolicy:
    """A program outside signoff that may ask for approvals over the HTTP API (or MCP), with a
    bearer token of its own (`[services.NAME]`). A service may request and read approvals of
    the actions it lists; it can never decide one."""

    name: str
    """How the service is named on the audit log and in the API's answers."""
    token_env: str
    """The environment variable that holds its bearer token (never the token itself: the
    policy file is not a secret store)."""
    actions: tuple[str, ...] = ()
    """The actions it may ask for. Default none: it may ask for nothing."""
    webhook_secret_env: str | None = None
    """The environment variable holding the secret its webhooks are signed with. Default None:
    they are signed with its token."""
    channel: str | None = None
    """Where the cards of its requests go. Default None: the bot's default channel."""
    callback_urls: tuple[CallbackOrigin, ...] = ()
    """The origins (scheme, host, port) its `callback_url` may name. Default none: a request
    with a `callback_url` is refused."""
    callback_private: bool = False
    """Whether its webhooks may go to private, loopback or link-local addresses (a receiver on
    this machine or the internal network). Default false: such an address is refused, in the
    request and again at delivery, once the host's name is resolved."""

    may_act_for: tuple[str, ...] = ()
    """The people (user ids, `@groups`) it may name as a request's `requester`. A request that
    names anyone else is asked as the service itself ("via NAME" on the card). Default none:
    every request is the service's own."""
    owners: tuple[str, ...] = ()
    """The people (user ids, `@groups`) who hold its token: they may not approve what it asks,
    as nobody may approve their own request. Default none."""

    check_url: str | None = None
    """Where signoff asks for the facts its requests rest on (`bot.approvals.checks`): a POST,
    signed as its webhooks are, answered with a JSON object of named facts; read when each
    request is asked (its card shows them) and again once it is approved, before the service
    can read "approved". It may name the origins `callback_urls` allows (`callback_private`
    too). Default None: no check."""

    def check_url_problem(self) -> str | None:
        """Why `check_url` cannot be used (None when it can, or there is none)."""
        if self.check_url is None:
            return None
        if not isinstance(self.check_url, str) or not self.check_url.startswith(
            ("http://", "https://")
        ):
            return f"must be an http(s) URL, got {self.check_url!r}"
        return self.callback_problem(self.check_url)

    def callback_problem(self, url: str) -> str | None:
        """Why `url` may not be this service's `callback_url` (None when it may)."""
        return callback_problem(
            url, self.callback_urls, allow_private=self.callback_private, service=self.name
        )

    def __post_init__(self) -> None:
        if not self.token_env:
            raise PolicyError("needs token_env", key=f"services.{self.name}.token_env")


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
    free_tools: frozenset[str] = frozenset()
    """Agent tools that run without anyone's approval (`[agents] free_tools`): read-only ones,
    like an order lookup. A tool call the policy names neither here nor in `[actions]` is
    denied. Default none."""
    services: Mapping[str, ServicePolicy] = field(default_factory=dict)
    """Programs that may ask for approvals from outside (`[services.NAME]`), by name. Default
    none: the approvals API lets nobody in."""
    away_statuses: tuple[str, ...] = ()
    """Slack statuses that mean "away" (`[away] statuses`): an emoji (`":palm_tree:"`) matches
    the status emoji, any other text is found in the status text, ignoring case. Default none:
    only `/agent away` and do-not-disturb say someone is away."""

    def __post_init__(self) -> None:
        both = sorted(self.free_tools & set(self.actions))
        if both:
            raise PolicyError(_free_and_action(both[0]), key="agents.free_tools")
        for service in self.services.values():
            for action in service.actions:
                if action not in self.actions:
                    raise PolicyError(
                        _service_action_unknown(action, self.actions),
                        key=f"services.{service.name}.actions",
                    )
        for rule in self.actions.values():
            for name in rule.after:
                if name not in self.actions:
                    raise PolicyError(
                        _after_unknown(name, self.actions), key=f"actions.{rule.action}.after"
                    )
        cycle = _after_cycle_of({name: rule.after for name, rule in self.actions.items()})
        if cycle:
            raise PolicyError(_after_cycle(cycle), key=f"actions.{cycle[0]}.after")

    @classmethod
    def empty(cls) -> Policy:
        """A policy that names nothing, so denies every action and every start."""
        return cls()
