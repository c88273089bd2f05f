"""Canonical JSON: sorted keys, no spaces, the same text for equal values in every process.

The one place signoff writes JSON that is hashed (audit chain, fingerprints, redactions) or
stored as a column (approvals, votes, jobs, runs, effects). Callers differ only in what they
accept beyond JSON's own types, and those choices are part of the stored bytes, so each keeps
its own (`default`, `ensure_ascii`, `allow_nan`); the layout is the same for all.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["canonical_json", "stored_json"]


def canonical_json(
    value: Any,
    *,
    default: Callable[[Any], Any] | None = None,
    ensure_ascii: bool = False,
    allow_nan: bool = False,
) -> str:
    """`value` as canonical JSON.

    Args:
        default: turns a value of another type into JSON (as `json.dumps`' own); None refuses it.
        ensure_ascii: escape every non-ASCII character (`\\u00e9`) instead of writing UTF-8.
        allow_nan: write NaN and infinity as JSON cannot (`NaN`), instead of refusing them.

    Raises:
        TypeError: a value `default` does not take. ValueError: NaN or infinity, unless allowed.
    """
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=ensure_ascii,
        allow_nan=allow_nan,
        default=default,
    )


def stored_json(value: Any) -> str:
    """What the governance tables store in their JSON columns: canonical, ASCII, and anything
    that is not JSON written as its `str()` (a record must never fail for a stray value)."""
    return canonical_json(value, default=str, ensure_ascii=True, allow_nan=True)


def fingerprint_default(value: Any) -> Any:
    """The values a fingerprint takes besides JSON's own: tuples, sets and frozensets are arrays
    (sets sorted), Decimal and UUID their strings, datetimes ISO 8601, timedelta its seconds,
    bytes base64."""
    if isinstance(value, (set, frozenset)):
        return sorted(
            (json.loads(canonical_json(v, default=fingerprint_default)) for v in value),
            key=lambda v: canonical_json(v, default=fingerprint_default),
        )
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
