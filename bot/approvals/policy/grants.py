"""`grants`: how far an approver may let one approval stand for later ones of the same kind
(`grants = { most = 5, longest = "4h", key = ["customer_id"] }`), and the pure test of whether
a later request lies inside a grant made under it.

Why it is bounded twice: by the policy (at most `most` more requests, for at most `longest`),
and by the call that was approved (same requester or service, the same `key` arguments, each
number at most what was approved). The approver lets through more of *what they saw*, never
something else. A grant records the fingerprint of the policy it was made under
(`GrantLimits.fingerprint`); a policy that changes what it rests on ends it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_json, fingerprint_default
from ..errors import PolicyError
from .durations import format_duration

if TYPE_CHECKING:
    from .schema import Schema

__all__ = ["GRANT_KEYS", "GrantAsk", "GrantLimits", "grant_problem", "outside_grant", "read_grants"]

GRANT_KEYS = ("most", "longest", "key", "vary")
"""The keys of `grants = { ... }`."""

MOST_MAX = 100
"""The most uses a policy may allow one grant: past this a grant is an auto-approval rule,
which belongs in `auto_approve`, with a budget."""

LONGEST_MAX = dt.timedelta(days=7)
"""The longest window a policy may allow one grant."""


@dataclass(frozen=True, slots=True)
class GrantAsk:
    """What an approver asks to allow beside their approval: `uses` more requests like it,
    for `window` (a card's Allow more like this, `signoff approve --grant`)."""

    uses: int
    window: dt.timedelta


@dataclass(frozen=True)
class GrantLimits:
    """What an approver may grant from an action's card: "Approve, and allow up to N more like
    this for T" (N at most `most`, T at most `longest`)."""

    most: int
    """The most later requests one grant may approve (1 to 100)."""
    longest: dt.timedelta
    """The longest a grant may last (at most 7 days)."""
    key: tuple[str, ...] = ()
    """Arguments a later request must have exactly as approved (`"customer_id"`). Default
    none: only the requester (or service) and the other rules bound it."""
    vary: tuple[str, ...] = ()
    """Arguments a later request may set as it likes (`"reason"`, `"order_id"`): shown on its
    card, never compared. Default none: every argument that is not a number must be equal."""

    def describe(self) -> str:
        """`up to 5 more for at most 4h, same customer_id`."""
        same = f", same {', '.join(self.key)}" if self.key else ""
        return f"up to {self.most} more for at most {format_duration(self.longest)}{same}"

    def fingerprint(self, *, approvers: tuple[str, ...], tier: str, required: int) -> str:
        """What a grant rests on, as a short digest: these limits and who may approve the
        action, at which tier. A grant made under one fingerprint approves nothing once the
        action's policy has another (`outside_grant`)."""
        text = canonical_json(
            {
                "most": self.most,
                "longest": self.longest.total_seconds(),
                "key": list(self.key),
                "vary": list(self.vary),
                "approvers": list(approvers),
                "tier": tier,
                "required": required,
            },
            default=fingerprint_default,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def grant_problem(
    value: Any,
    *,
    tier: str,
    required: int,
    fields: tuple[str, ...] | None,
    duration: Callable[[Any], dt.timedelta],
) -> tuple[str | None, str] | None:
    """What is wrong with a `grants = {...}` value, as (the sub-key at fault or None, the
    message), or None when it is right. `fields`: the arguments the action declares (None: not
    declared); `duration` parses `longest` (raising `PolicyError`)."""
    if tier == "critical":
        return None, "not allowed for critical actions: a person must decide every request"
    if required != 1:
        return None, (
            f"needs required = 1 (this action needs {required}): a grant is one person's, and "
            "one person cannot stand for a quorum"
        )
    if not isinstance(value, dict):
        return None, (
            'must be a table like { most = 5, longest = "4h", key = ["customer_id"] }, '
            f"got {type(value).__name__}"
        )
    for sub in value:
        if sub not in GRANT_KEYS:
            return sub, f"unknown key; allowed: {', '.join(GRANT_KEYS)}"
    most = value.get("most")
    if type(most) is not int or not 1 <= most <= MOST_MAX:
        return "most", f"must be a whole number from 1 to {MOST_MAX} (the most uses), got {most!r}"
    if "longest" not in value:
        return "longest", 'is needed: the longest a grant may last, like "4h"'
    longest = duration(value["longest"])
    if longest > LONGEST_MAX:
        return "longest", f"must be at most {format_duration(LONGEST_MAX)}, got {value['longest']}"
    for sub in ("key", "vary"):
        names = value.get(sub, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            return sub, f"must be an array of argument names, got {names!r}"
        unknown = [n for n in names if fields is not None and n not in fields]
        if unknown:
            return sub, (
                f"{unknown[0]!r} is not an argument of this action (args declares "
                f"{', '.join(fields or ())})"
            )
    both = set(value.get("key", [])) & set(value.get("vary", []))
    if both:
        return "vary", f"{min(both)!r} is in key too; an argument is either fixed or free"
    return None


def read_grants(
    table: Mapping[str, Any],
    path: tuple[str | int, ...],
    tier: str,
    required: int,
    schema: Schema | None,
    error: Callable[[Any, str], PolicyError],
    duration: Callable[[Any, Any], dt.timedelta],
) -> GrantLimits | None:
    """`[actions.NAME] grants = {...}` as the file reader reads it (`_file`): its `error`
    (path, message) and `duration` (path, value) say where a problem is."""
    if "grants" not in table:
        return None
    path = (*path, "grants")
    value = table["grants"]
    problem = grant_problem(
        value,
        tier=tier,
        required=required,
        fields=schema.names if schema is not None else None,
        duration=lambda v: duration((*path, "longest"), v),
    )
    if problem is not None:
        sub, message = problem
        raise error((*path, sub) if sub else path, message)
    return GrantLimits(
        most=value["most"],
        longest=duration((*path, "longest"), value["longest"]),
        key=tuple(value.get("key", [])),
        vary=tuple(value.get("vary", [])),
    )


def outside_grant(
    bound: Mapping[str, Any], args: Mapping[str, Any], limits: GrantLimits
) -> str | None:
    """Why a request with `args` lies outside a grant whose approved call had `bound` (both
    with their secrets redacted alike), or None when it lies inside.

    The rule, argument by argument:
    - a `key` argument: present exactly when it was, and equal;
    - a `vary` argument: anything;
    - a number (approved as a number, not a boolean): a number from 0 to the approved value
      (an approved negative number: only that number);
    - anything else: equal. An argument the approved call had not, or lacks one it had, is
      outside: the grant covers the call that was seen, not another shape of it.
    """
    for name in limits.key:
        if (name in bound) != (name in args) or _text(bound.get(name)) != _text(args.get(name)):
            return f"{name} is not {_short(bound.get(name))}"
    for name in sorted(set(bound) | set(args)):
        if name in limits.key or name in limits.vary:
            continue
        if name not in args or name not in bound:
            return f"{name} {'is missing' if name not in args else 'was not in the approved call'}"
        approved, asked = bound[name], args[name]
        if _number(approved):
            if not _number(asked):
                return f"{name} is not a number"
            low = min(0, approved)
            if not low <= asked <= approved:
                return f"{name} {_short(asked)} is more than the approved {_short(approved)}"
        elif _text(approved) != _text(asked):
            return f"{name} is not {_short(approved)}"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> str:
    return canonical_json(value, default=fingerprint_default)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
