"""Durations in the policy file: `"30s"`, `"15m"`, `"4h"`, `"2d"`, `"1w"`, `"1h30m"`."""

from __future__ import annotations

import datetime as dt
import re

from ..errors import PolicyError
from ._messages import _got

__all__ = ["format_duration", "parse_duration"]

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
