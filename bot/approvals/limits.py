"""What a caller may send signoff, in one place: how long one text value of a request's arguments
(or a run's inputs) may be, how large they may be together, and how long a decision's note may
be. Each is checked before anything is recorded; what is over is refused, naming the field.

They bound what every read of an approval carries (cards, Home, `/agent status`, the API's
answers): a thousand pending requests at these limits hold at most a few tens of megabytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .policy import canonical_json

__all__ = ["MAX_NOTE", "MAX_TEXT_VALUE", "MAX_VALUES_BYTES", "note_problem", "value_problems"]

MAX_TEXT_VALUE: Final = 4000
"""Characters of one string in a request's arguments or a run's inputs (at any depth); a longer
text is sent by reference (an id, a URL). A card shows 3,000 characters of a field at most."""
MAX_VALUES_BYTES: Final = 32 * 1024
"""Bytes of a request's arguments (or a run's inputs) together, as canonical JSON."""
MAX_NOTE: Final = 3000
"""Characters of a decision's note: what Slack's text input takes, from the CLI too."""
_SHOWN = 10
"""At most this many fields are named in one refusal."""


def value_problems(values: Mapping[str, Any], field: str) -> dict[str, str]:
    """What is over the limits in `values` (a request's `args`, a run's inputs), by field:
    each string longer than `MAX_TEXT_VALUE` by its path (`args.reason`, `args.items[2]`),
    and the whole, named `field`, when it is larger than `MAX_VALUES_BYTES`."""
    problems: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [(f"{field}.{k}" if field else k, v) for k, v in values.items()]
    while stack and len(problems) < _SHOWN:
        path, value = stack.pop(0)
        if isinstance(value, str) and len(value) > MAX_TEXT_VALUE:
            problems[path] = (
                f"is {len(value):,} characters; at most {MAX_TEXT_VALUE:,} are taken (send a "
                "longer text by reference: an id or a URL)"
            )
        elif isinstance(value, Mapping):
            stack.extend((f"{path}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
    try:
        size = len(canonical_json(dict(values)).encode())
    except (TypeError, ValueError):
        return problems  # not plain JSON: the caller's own check says so
    if size > MAX_VALUES_BYTES:
        problems[field or "(inputs)"] = (
            f"are {size:,} bytes as JSON; at most {MAX_VALUES_BYTES:,} (32 KiB) are taken"
        )
    return problems


def note_problem(note: str) -> str | None:
    """Why a decision's `note` is refused (longer than `MAX_NOTE`), or None."""
    if len(note) <= MAX_NOTE:
        return None
    return f"the note is {len(note):,} characters; at most {MAX_NOTE:,} are kept: shorten it"
