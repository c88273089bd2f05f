"""The pure decisions made from a policy: is a request asked, denied or approved by a rule; may
this person vote; may this person start a workflow; may this service ask for this action."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import (
    DecisionRefused,
    NotAuthorizedError,
    SelfApprovalError,
    ServiceNotAllowed,
    UnknownAction,
)
from .model import ActionPolicy, Policy, WorkflowPolicy

__all__ = [
    "RequestVerdict",
    "check_service",
    "check_voter",
    "evaluate_request",
    "may_start",
    "reach_problem",
]


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

    An action the policy does not name is denied, and so is any request whose evaluation fails
    or whose arguments do not fit the action's schema (checked before any auto-approval rule:
    a rule never approves a value the schema refuses).
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
        if rule.args is not None:
            problems = rule.args.problems(args)
            if problems:
                return RequestVerdict(
                    "deny",
                    f"the arguments do not fit {action}'s schema, so the request is denied: "
                    + "; ".join(f"{k} {v}" for k, v in problems.items()),
                    rule,
                )
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


def reach_problem(
    rule: ActionPolicy,
    *,
    requester: str | None,
    members: frozenset[str],
    groups: Mapping[str, int],
) -> str | None:
    """Why a request of `requester` for `rule`'s action could never be approved, or None: fewer
    people may approve it than it needs (`required`), counting the escalation targets and
    leaving out the requester unless self-approval is allowed.

    Args:
        requester: who asks; None: anyone (for a check made before any request).
        members: the user ids `rule.approver_entries(escalated=True)` resolve to.
        groups: how many members each `@group` among those entries has (by name, with `@`).
    """
    asker = {requester} if requester is not None and not rule.allow_self_approval else set()
    may = members - asker
    if len(may) >= rule.required:
        return None
    entries = rule.approver_entries(escalated=True)
    empty = [g for g in entries if g.startswith("@") and not groups.get(g)]
    found = f"only {', '.join(sorted(may))} may" if may else "nobody may"
    whom = f" for {requester}" if requester is not None else ""
    why = [f"{found} approve {rule.action}{whom}, and it needs {rule.required}"]
    why.append(f"its approvers are {', '.join(entries)}")
    if empty:
        why.append(
            f"{', '.join(empty)} {'has' if len(empty) == 1 else 'have'} no members (defined "
            "neither under [groups] in the policy nor as a Slack user group with members: a "
            "typo?)"
        )
    if asker and requester in members:
        why.append(f"{requester} asks, and may not approve their own request")
    return (
        "; ".join(why)
        + f"{'; nothing was recorded' if requester is not None else ''}: add people to "
        f"[actions.{rule.action}] approvers (or escalate_to), or members to its groups"
    )


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


def check_service(
    policy: Policy, service: str, action: Any
) -> ServiceNotAllowed | UnknownAction | None:
    """Why `service` may not ask for an approval of `action`, or None when it may. Deny by
    default: a service the policy does not name, an action it does not name, and an action the
    service's `[services.NAME] actions` does not list are each refused.

    Args:
        policy: the policy in force.
        service: the service's name (authenticated by its token).
        action: the action asked for, as the request gave it (maybe not a string).
    """
    svc = policy.services.get(service)
    if svc is None:
        return ServiceNotAllowed(
            f"{service!r} is not a service of the policy ([services.{service}])",
            service,
            str(action),
        )
    rule = policy.actions.get(action) if isinstance(action, str) else None
    if rule is None:
        return UnknownAction(
            f"action {action!r} is not in the policy; signoff denies actions the policy "
            f"does not name (add [actions.{action}] and list it in "
            f"[services.{service}] actions)",
            str(action),
        )
    if action not in svc.actions:
        return ServiceNotAllowed(
            f"service {service!r} may not ask for {action!r}; it may ask for "
            + (", ".join(svc.actions) or "nothing")
            + f" (add it to [services.{service}] actions)",
            service,
            action,
        )
    return None
