"""The refusals a vote meets, in words a person can act on: the approval was decided (or
expired) already, or an edit changed it since the voter saw it; and the text a note keeps of
what was typed, without what nobody would see around it."""

from __future__ import annotations

import unicodedata
from typing import Any

from .errors import AlreadyDecidedError, ApprovalExpiredError, StaleRevisionError
from .models import Approval, iso

__all__ = ["already", "stale", "visible_text"]


def already(a: Approval) -> AlreadyDecidedError | ApprovalExpiredError:
    """The refusal for a vote on `a`, which is not pending any more."""
    if a.status == "expired":
        return ApprovalExpiredError(
            f"approval {a.id} expired{' at ' + iso(a.decided_at) if a.decided_at else ''}", a.id
        )
    by = a.decided_by
    when = f" at {iso(a.decided_at)}" if a.decided_at else ""
    return AlreadyDecidedError(
        f"approval {a.id} was {a.status} already by {', '.join(by) or 'someone'}{when}",
        a.id,
        a.status,
        by,
        a.decided_at,
    )


def stale(a: Approval, revision: int) -> StaleRevisionError:
    """The refusal for a vote on revision `revision` of `a`, which an edit has changed since."""
    changed = "; ".join(
        f"{k}: {a.shown(k, before) or _short(before)} → {a.shown(k, after) or _short(after)} "
        f"(edited by {who})"
        for k, before, after, who in a.changes
    )
    return StaleRevisionError(
        f"the request changed since you saw it ({changed or 'edited'}); nothing was recorded. "
        f"Here is the new one: look at the current values and decide again",
        a.id,
        revision,
        a.revision,
    )


_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Characters that are letters or symbols to Unicode but show nothing (Hangul fillers, the blank
Braille pattern)."""


def _invisible(ch: str) -> bool:
    return ch.isspace() or ch in _BLANK_LETTERS or unicodedata.category(ch) in ("Cc", "Cf")


def visible_text(text: str) -> str:
    """`text` without what nobody would see around it (spaces, zero-width characters, BOM,
    control characters, blank fillers): "" when nothing visible is left, so a reason made only
    of those counts as blank."""
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
