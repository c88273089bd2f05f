"""Comparing a request's argument with a condition's value: like with like only."""

from __future__ import annotations

import decimal
import math
from typing import Any


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
