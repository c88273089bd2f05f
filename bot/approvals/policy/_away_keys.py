"""Reading the policy's keys about people who are away: `[away] statuses` and an action's
`delegation`. Beside the file reader (`_file.py`), which calls these, so that it stays one
module a reader can hold."""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import PolicyError
from ._locate import Path
from .model import Delegation

__all__ = ["AWAY_KEYS", "read_away", "read_delegation"]

AWAY_KEYS = ("statuses",)

_DELEGATION_HELP = (
    'must be true (a delegate may decide, except for critical actions), false, or "critical" '
    "(a delegate may decide even a critical action)"
)


class _Reader(Protocol):
    def error(self, path: Path, message: str) -> PolicyError: ...

    def table(
        self, path: Path, value: Any, allowed: tuple[str, ...], header: str
    ) -> dict[str, Any]: ...


def read_away(reader: _Reader, value: Any) -> tuple[str, ...]:
    """`[away] statuses = [":palm_tree:", "vacation"]`: the Slack statuses that mean away."""
    t = reader.table(("away",), value, AWAY_KEYS, "[away]")
    raw = t.get("statuses", [])
    path: Path = ("away", "statuses")
    if not isinstance(raw, list) or not all(isinstance(s, str) and s.strip() for s in raw):
        raise reader.error(
            path,
            'must be a list of statuses, an emoji or words, like [":palm_tree:", "vacation"]',
        )
    return tuple(dict.fromkeys(s.strip() for s in raw))


def read_delegation(reader: _Reader, path: Path, value: Any) -> Delegation:
    """An action's `delegation = true | false | "critical"`."""
    if value is True:
        return "allowed"
    if value is False:
        return "never"
    if value == "critical":
        return "critical"
    raise reader.error(path, _DELEGATION_HELP)
