"""An approver's edits to a request, checked and converted to the types they replace."""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidEditError
from .schema import SchemaError

if TYPE_CHECKING:
    from .model import ActionPolicy


def validate_edits(
    rule: ActionPolicy, edits: Mapping[str, Any], args: Mapping[str, Any]
) -> dict[str, Any]:
    """Check an approver's edits and convert each to the type of the value it replaces.

    A string edit of a number, a boolean, a Decimal, a list or a table is parsed as one (the CLI
    and Slack forms send strings; numbers are written in ASCII digits). When the action declares
    its arguments (`rule.args`), the new value must fit the field's schema too. Edits that leave
    a value unchanged are left out.

    Returns:
        The changed fields only, with their new values: run `{**args, **result}`.

    Raises:
        InvalidEditError: a field that is not editable, or a value that does not fit (its
            `field` names the field).
    """
    out: dict[str, Any] = {}
    for name, value in edits.items():
        try:
            changed, new = _edit(rule, name, value, args)
        except InvalidEditError as e:
            if not e.field and isinstance(name, str) and name in rule.editable:
                e.field = name
            raise
        if changed:
            out[name] = new
    return out


def _edit(rule: ActionPolicy, name: Any, value: Any, args: Mapping[str, Any]) -> tuple[bool, Any]:
    """(whether the edit changes the value, the new value) for one field."""
    if not isinstance(name, str) or name not in rule.editable:
        if not rule.editable:
            raise InvalidEditError(
                f"nothing in {rule.title} ({rule.action}) can be edited; "
                "approve or reject it as it is"
            )
        raise InvalidEditError(
            f"{name!r} cannot be edited in {rule.title} ({rule.action}); "
            f"editable: {', '.join(rule.editable)}"
        )
    spec = rule.args.fields.get(name) if rule.args is not None else None
    original = args.get(name)
    if original is not None:
        new = _coerce(name, value, original)
    elif spec is not None and isinstance(value, str):
        try:
            new = spec.parse_text(value)
        except ValueError as e:
            raise InvalidEditError(f"{name} {e}", field=name) from None
    else:
        new = value
    if rule.args is not None:
        try:
            new = rule.args.check_field(name, new)
        except SchemaError as e:
            raise InvalidEditError(
                "; ".join(f"{k} {v}" for k, v in e.problems.items()), field=name
            ) from None
    if name in args and type(new) is type(original) and new == original:
        return False, new
    return True, new


def _coerce(name: str, value: Any, original: Any) -> Any:
    kind = type(original)
    text = value.strip() if isinstance(value, str) else None
    if (
        text is not None
        and not text.isascii()
        and isinstance(original, (bool, int, float, decimal.Decimal))
    ):
        text = None  # "４２" is not 42: numbers and booleans are written in ASCII
    if original is None:
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "yes", "1", "false", "no", "0"):
            return text.lower() in ("true", "yes", "1")
        raise InvalidEditError(f"{name} must be true or false, got {value!r}")
    if isinstance(original, int) and not isinstance(original, bool):
        if isinstance(value, int) and not isinstance(value, bool):
            return kind(value) if kind is not int else value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if text is not None:
            try:
                return int(text)
            except ValueError:
                pass
        raise InvalidEditError(f"{name} must be a whole number, got {value!r}")
    if isinstance(original, float):
        number: float | None = None
        try:
            if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
                number = float(value)
            elif text is not None:
                number = float(text)
        except (ValueError, OverflowError):
            number = None
        if number is None or not math.isfinite(number):
            raise InvalidEditError(f"{name} must be a number, got {value!r}")
        return number
    if isinstance(original, decimal.Decimal):
        try:
            if isinstance(value, bool) or not isinstance(value, (str, int, float, decimal.Decimal)):
                raise decimal.InvalidOperation
            d = decimal.Decimal(text if text is not None else str(value))
        except (decimal.InvalidOperation, ValueError):
            d = None
        if d is None or not d.is_finite():
            raise InvalidEditError(f"{name} must be a number, like 12.50, got {value!r}")
        return d
    if isinstance(original, str):
        if not isinstance(value, str):
            raise InvalidEditError(f"{name} must be text, got {value!r}")
        return value
    if isinstance(original, (list, dict)):
        parsed = value
        if text is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                raise InvalidEditError(
                    f"{name} must be JSON ({_json_kind(original)}), got {value!r}"
                ) from None
        if not isinstance(parsed, (list, dict)) or isinstance(parsed, list) != isinstance(
            original, list
        ):
            raise InvalidEditError(f"{name} must be {_json_kind(original)}, got {value!r}")
        return parsed
    if isinstance(value, kind):
        return value
    raise InvalidEditError(f"{name} holds a {kind.__name__}, which cannot be edited from text")


def _json_kind(value: Any) -> str:
    return "a JSON array" if isinstance(value, list) else "a JSON object"
