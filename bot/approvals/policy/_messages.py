"""Messages given both by the policy values, when built in code, and by the file reader."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

# Messages given both by the values above, when built in code, and by the file reader.

_NO_APPROVERS = 'must name at least one approver (a user id or "@group")'
_AUTO_CRITICAL = "not allowed for critical actions: a person must decide every request"


def _one_of(choices: Iterable[str], got: Any) -> str:
    return f"must be one of {', '.join(choices)}, got {_got(got)}"


def _secret_editable(name: str) -> str:
    return f"{name!r} is also editable; a secret field cannot be edited (the form would show it)"


def _expiry_approve_refused(tier: str) -> str:
    return f'"approve" is only allowed for tiers low and medium; this action is {tier}'


def _free_and_action(name: str) -> str:
    return (
        f"{name!r} is also an action ([actions.{name}]), which asks for approval; a tool is "
        "either free or gated: remove it from one of them"
    )


def _after_itself(name: str) -> str:
    return f"{name!r} cannot run after itself; name the actions it waits for"


def _after_unknown(action: str, actions: Iterable[str]) -> str:
    known = sorted(actions)
    close = difflib.get_close_matches(action, known, n=1)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else "the policy has " + (", ".join(known) if known else "no actions")
    )
    return f"{action!r} is not an action of this policy ([actions.{action}]); {hint}"


def _after_cycle(chain: Iterable[str]) -> str:
    return (
        f"the actions wait for each other ({' -> '.join(chain)}), so none of them could ever "
        "run: remove one `after`"
    )


def _after_cycle_of(after: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A chain of actions that wait for each other (`a -> b -> a`), or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return path[path.index(name) :] + [name]
        if name in done:
            return None
        for nxt in after.get(name, ()):
            found = visit(nxt, path + [name])
            if found:
                return found
        done.add(name)
        return None

    for name in sorted(after):
        found = visit(name, [])
        if found:
            return found
    return None


def _service_action_unknown(action: str, actions: Iterable[str]) -> str:
    known = sorted(actions)
    close = difflib.get_close_matches(action, known, n=1)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else "the policy has " + (", ".join(known) if known else "no actions")
    )
    return (
        f"{action!r} is not an action of this policy ([actions.{action}]), so nobody could "
        f"approve it; {hint}"
    )


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
